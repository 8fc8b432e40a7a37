//! Postgres over TLS (docs/security.md, "TLS and secrets at rest"): a server whose `DATABASE_URL`
//! says `sslmode=verify-full&sslrootcert=<private CA>` runs with every connection encrypted and
//! verified, its pool's and its relay's replication connection alike (`pg_stat_ssl`); and
//! `sslmode=require` against a server without TLS fails at start with a clear error.
//!
//! The test Postgres serves TLS when scripts/lib/services.sh started it (it exports the CA as
//! `PTSLOG_TEST_PG_SSLROOTCERT`); otherwise the test gives it a certificate of its own (`openssl`
//! CLI, written into the data directory with `COPY … TO PROGRAM`, turned on with `ALTER SYSTEM` and a
//! reload: clients that do not ask for TLS are unaffected).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ptslog_tests::certificates::make_certificates;
use ptslog_tests::{admin_url, database_url, drop_database, fresh_database, test_config};
use sqlx::{Connection, PgConnection};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Writes `text` to `name` in the server's data directory, as the server's OS user with mode
/// 0600, which is what it wants of a key file (`COPY … TO PROGRAM`: superuser only, as the test
/// Postgres's `postgres` role is).
async fn write_server_file(admin: &mut PgConnection, name: &str, text: &str) {
    // PEM is base64, dashes and spaces: nothing COPY's text format or a literal would escape.
    assert!(text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"+/=- \n".contains(&b)));
    let lines: Vec<String> = text.lines().map(|l| format!("('{l}')")).collect();
    let dir: String = sqlx::query_scalar("SHOW data_directory")
        .fetch_one(&mut *admin)
        .await
        .unwrap();
    assert!(!dir.contains(['\'', '"', '$', '`', '\\']), "{dir}");
    let sql = format!(
        "COPY (SELECT l FROM (VALUES {}) AS t(l)) TO PROGRAM 'umask 077 && cat > \"{dir}/{name}\" && chmod 600 \"{dir}/{name}\"'",
        lines.join(",")
    );
    sqlx::query(&sql)
        .execute(&mut *admin)
        .await
        .expect("COPY the file");
}

/// The CA file that verifies the test Postgres, turning TLS on first if need be; once per test
/// process, since two certificates installed at once would race.
async fn tls_ca() -> PathBuf {
    static CA: tokio::sync::OnceCell<PathBuf> = tokio::sync::OnceCell::const_new();
    CA.get_or_init(install_tls).await.clone()
}

async fn install_tls() -> PathBuf {
    let mut admin = PgConnection::connect(&admin_url())
        .await
        .expect("admin connection");
    // services.sh's CA, if the server really presents the certificate it signed.
    if let Ok(ca) = std::env::var("PTSLOG_TEST_PG_SSLROOTCERT") {
        if PgConnection::connect(&verify_full(Path::new(&ca)))
            .await
            .is_ok()
        {
            return ca.into();
        }
    }
    let dir = std::env::temp_dir().join(format!("ptslog-pg-tls-{}", std::process::id()));
    make_certificates(&dir);
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    write_server_file(&mut admin, "ptslog_test_server.crt", &read("server.crt")).await;
    write_server_file(&mut admin, "ptslog_test_server.key", &read("server.key")).await;
    for sql in [
        "ALTER SYSTEM SET ssl_cert_file = 'ptslog_test_server.crt'",
        "ALTER SYSTEM SET ssl_key_file = 'ptslog_test_server.key'",
        "ALTER SYSTEM SET ssl = on",
        "SELECT pg_reload_conf()",
    ] {
        sqlx::query(sql).execute(&mut admin).await.expect(sql);
    }
    // The reload is asynchronous (and TLS may have been on with another certificate already): wait
    // until a new session verifies against our CA.
    let ca = dir.join("ca.crt");
    let verified = verify_full(&ca);
    let deadline = Instant::now() + Duration::from_secs(10);
    while let Err(e) = PgConnection::connect(&verified).await {
        assert!(
            Instant::now() < deadline,
            "Postgres did not take the certificate: {e}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ca
}

/// The admin URL, verified against `ca`.
fn verify_full(ca: &Path) -> String {
    with_params(
        &admin_url(),
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    )
}

fn with_params(url: &str, params: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{params}")
}

#[tokio::test]
async fn the_server_runs_on_verified_tls_to_postgres() {
    let ca = tls_ca().await;
    let db = fresh_database().await.unwrap();
    let mut config = test_config(&db);
    config.database_url = with_params(
        &database_url(&db),
        &format!("sslmode=verify-full&sslrootcert={}", ca.display()),
    );
    let mut running = ptslog_server::start(&config)
        .await
        .expect("starts over TLS");
    running.start_feed(&config).expect("relay starts");
    let own: bool = sqlx::query_scalar("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .fetch_one(&running.pool)
        .await
        .unwrap();
    assert!(own, "the serving pool's connection is TLS");

    // Every session on the database is TLS, the relay's replication session included.
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let rows: Vec<(String, bool)> = sqlx::query_as(
            "SELECT coalesce(a.application_name, ''), s.ssl FROM pg_stat_activity a \
             JOIN pg_stat_ssl s USING (pid) WHERE a.datname = $1",
        )
        .bind(&db)
        .fetch_all(&mut admin)
        .await
        .unwrap();
        let relay = rows
            .iter()
            .find(|(app, _)| app.starts_with("ptslog-relay-"));
        if let Some((_, relay_ssl)) = relay {
            assert!(relay_ssl, "the replication connection is TLS");
            assert!(rows.iter().all(|(_, ssl)| *ssl), "{rows:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no relay session appeared: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And the server works: sign in and call over it.
    let resp = reqwest::Client::new()
        .post(format!("http://{}/v1/auth/login", running.addr))
        .json(&serde_json::json!({"phone": "+15557200001", "first_name": "Tess", "last_name": ""}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    running.shutdown().await;
    drop_database(&db).await;
}

#[tokio::test]
async fn a_wrong_ca_is_refused() {
    let _ = tls_ca().await;
    // A CA that did not sign the server's certificate.
    let other = std::env::temp_dir().join(format!("ptslog-pg-tls-other-{}", std::process::id()));
    make_certificates(&other);
    let url = with_params(
        &admin_url(),
        &format!(
            "sslmode=verify-full&sslrootcert={}",
            other.join("ca.crt").display()
        ),
    );
    let err = PgConnection::connect(&url)
        .await
        .expect_err("an unknown issuer");
    assert!(
        format!("{err}").contains("invalid peer certificate"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&other);
}

/// A stand-in for a Postgres without TLS: it answers the SSLRequest with `N`, as one does.
async fn no_tls_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 8];
                if socket.read_exact(&mut request).await.is_ok() {
                    // length 8, code 80877103: SSLRequest
                    assert_eq!(request, [0, 0, 0, 8, 4, 210, 22, 47]);
                    let _ = socket.write_all(b"N").await;
                    let mut rest = [0u8; 64];
                    let _ = socket.read(&mut rest).await;
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn sslmode_require_against_a_server_without_tls_fails_clearly() {
    let addr = no_tls_server().await;
    let mut config = test_config("unused");
    config.database_url = format!("postgres://postgres@{addr}/ptslog?sslmode=require");
    let err = match ptslog_server::start(&config).await {
        Ok(_) => panic!("started without TLS"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("connecting to Postgres"), "{err}");
    assert!(err.contains("server does not support TLS"), "{err}");
    // The relay reads the same URL the same way and refuses too.
    let replication =
        infrastructure::relay::connection::replication_config(&config.database_url, "s").unwrap();
    assert!(replication.tls.mode.requires_tls());
}
