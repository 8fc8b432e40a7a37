//! The MTProto front against a real client nobody here wrote: Telethon (from PyPI, installed once
//! into a virtualenv under the target directory) runs `tests/mtproto/telethon_e2e.py` against a
//! `ptslog serve` process: sign-in with the development code (one account made over HTTP first:
//! the same phone is the same account), resolving each other, messages, an edit, a deletion, a
//! read, each seen live through Telethon's own update handling, and a second device of the first
//! account that was offline and catches up with getDifference; over the abridged, full and
//! obfuscated transports. Kurigram (a Pyrogram fork) then signs up two more accounts and chats,
//! and so does GramJS (JavaScript, layer 198, RSA_PAD key exchange, obfuscated abridged).
//! Then the server restarts and a saved client session reconnects with its
//! auth key (kept in Postgres) and server key (kept in the data folder).

mod account_cap;
mod gramjs_media;
mod keys;
mod kurigram_media;
mod layer152;
mod limits;
mod media;
mod raw;
mod tdesktop;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ptslog_tests::{admin_url, database_url, drop_database, fresh_database, redis_url};
use serde_json::Value;
use sqlx::Connection;

use crate::two_processes::ptslog_binary;

/// The every-method lists name media that does not exist: these are its refusals on the merits.
fn media_refused(method: &str, error: &str) -> bool {
    matches!(
        (method, error),
        ("messages.sendMedia", "DOCUMENT_INVALID")
            | ("messages.sendMultiMedia", "PHOTO_INVALID")
            | ("messages.uploadMedia", "PHOTO_INVALID")
            | ("upload.getFile", "FILE_ID_INVALID")
            | ("photos.uploadProfilePhoto", "IMAGE_PROCESS_FAILED")
            | ("photos.updateProfilePhoto", "PHOTO_INVALID")
    ) || (method == "upload.saveBigFilePart" && error.starts_with("FILE_PART"))
}

const TELETHON: &str = "1.45.0";
const KURIGRAM: &str = "2.2.26";

/// `<target dir>/mtproto-venv/bin/python` with Telethon and Kurigram installed (reused when
/// present).
fn telethon_python() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/<profile>/deps/integration-<hash>
    let target = me
        .ancestors()
        .nth(3)
        .ok_or("unexpected test binary location")?
        .to_path_buf();
    let venv = target.join("mtproto-venv");
    let python = venv.join("bin").join("python");
    let has_it = |python: &Path| {
        Command::new(python)
            .args([
                "-c",
                &format!(
                    "import sys, telethon, pyrogram; \
                     sys.exit(telethon.__version__ != '{TELETHON}' or pyrogram.__version__ != '{KURIGRAM}')"
                ),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if has_it(&python) {
        return Ok(python);
    }
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .map_err(|e| format!("python3 -m venv: {e} (is python3 installed?)"))?;
    if !status.success() {
        return Err(format!("python3 -m venv failed: {status}"));
    }
    let status = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .arg(format!("telethon=={TELETHON}"))
        .arg(format!("kurigram=={KURIGRAM}"))
        .status()
        .map_err(|e| format!("pip: {e}"))?;
    if !status.success() || !has_it(&python) {
        return Err(format!(
            "pip install telethon=={TELETHON} kurigram=={KURIGRAM} failed: {status}"
        ));
    }
    Ok(python)
}

const GRAMJS: &str = "2.26.22";

/// `<target dir>/mtproto-node/node_modules` with GramJS (`telegram` on npm) installed (reused
/// when present).
fn gramjs_modules() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = me
        .ancestors()
        .nth(3)
        .ok_or("unexpected test binary location")?
        .join("mtproto-node");
    let modules = dir.join("node_modules");
    let installed = std::fs::read_to_string(modules.join("telegram/package.json"))
        .is_ok_and(|p| p.contains(&format!("\"version\": \"{GRAMJS}\"")));
    if installed {
        return Ok(modules);
    }
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let status = Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund", "--prefix"])
        .arg(&dir)
        .arg(format!("telegram@{GRAMJS}"))
        .status()
        .map_err(|e| format!("npm: {e} (are node and npm installed?)"))?;
    if !status.success() {
        return Err(format!("npm install telegram@{GRAMJS} failed: {status}"));
    }
    Ok(modules)
}

/// A free port below 32768: GramJS writes the port it dials into a signed 16-bit field and
/// throws on the ephemeral range's higher ports.
fn free_low_port() -> u16 {
    for _ in 0..200 {
        let port = 20000 + rand::random::<u16>() % 12000;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between 20000 and 32000");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("local addr")
        .port()
}

/// A `ptslog serve` process, killed when dropped.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Setup {
    bin: PathBuf,
    db: String,
    slot: String,
    data_dir: PathBuf,
    http_port: u16,
    mt_port: u16,
}

impl Setup {
    /// A fresh database, free ports and a data folder named for `label`, with the ptslog binary
    /// (built if needed): what every test that starts its own `ptslog serve` needs.
    async fn fresh(label: &str) -> Setup {
        let bin = tokio::task::spawn_blocking(ptslog_binary)
            .await
            .expect("build thread")
            .expect("the ptslog binary");
        let db = fresh_database().await.expect("fresh database");
        let suffix = db.trim_start_matches("ptslog_t_").to_string();
        Setup {
            bin,
            data_dir: std::env::temp_dir().join(format!("ptslog-{label}-{suffix}")),
            slot: format!("relay_{suffix}"),
            db,
            http_port: free_port(),
            mt_port: free_low_port(),
        }
    }

    fn spawn(&self) -> Server {
        Server(self.command().spawn().expect("spawning ptslog serve"))
    }

    /// `ptslog serve` as [`Setup::spawn`] starts it, for a test to add to.
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("serve")
            .env_remove("PTSLOG_CONFIG")
            // The real clients type the development code 12345.
            .env("PTSLOG_DEV_LOGIN", "true")
            .env("DATABASE_URL", database_url(&self.db))
            .env("REDIS_URL", redis_url())
            .env("PTSLOG_REDIS_PREFIX", format!("test:{}:", self.db))
            .env("PTSLOG_HTTP_ADDR", format!("127.0.0.1:{}", self.http_port))
            .env("PTSLOG_MTPROTO_ADDR", format!("127.0.0.1:{}", self.mt_port))
            .env("PTSLOG_DATA_DIR", &self.data_dir)
            .env("PTSLOG_RELAY_SLOT", &self.slot)
            .env("PTSLOG_SEND_RATE_PER_MINUTE", "0")
            .env("PTSLOG_DB_MAX_CONNECTIONS", "8")
            // Every client here connects from loopback, which is not exempt.
            .env("PTSLOG_MTPROTO_HANDSHAKES_PER_MINUTE", "10000")
            .env(
                "RUST_LOG",
                // A refused key exchange or frame logs at info: a real client never causes one,
                // so a test that sees one failing shows why.
                std::env::var("PTSLOG_TEST_SERVER_LOG")
                    .unwrap_or_else(|_| "warn,ptslog_server::mtproto=info".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        cmd
    }

    fn http(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// A second server on the same database and key, as production runs it: development sign-in
    /// off, no relay. Answers it and its (HTTP, MTProto) ports once it serves.
    async fn spawn_production(&self) -> (Server, u16, u16) {
        let (http_port, mt_port) = (free_port(), free_low_port());
        let mut server = Server(
            Command::new(&self.bin)
                .arg("serve")
                .env_remove("PTSLOG_CONFIG")
                .env("DATABASE_URL", database_url(&self.db))
                .env("REDIS_URL", redis_url())
                .env("PTSLOG_HTTP_ADDR", format!("127.0.0.1:{http_port}"))
                .env("PTSLOG_MTPROTO_ADDR", format!("127.0.0.1:{mt_port}"))
                .env("PTSLOG_DATA_DIR", &self.data_dir)
                .env("PTSLOG_DEV_LOGIN", "false")
                .env("PTSLOG_RELAY", "off")
                .env("PTSLOG_DB_MAX_CONNECTIONS", "4")
                .env("PTSLOG_MTPROTO_HANDSHAKES_PER_MINUTE", "10000")
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawning ptslog serve"),
        );
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(status) = server.0.try_wait().expect("child status") {
                panic!("ptslog serve (production) exited early: {status}");
            }
            let up = http
                .get(format!(
                    "http://127.0.0.1:{http_port}/v1/mtproto/public-key"
                ))
                .send()
                .await
                .is_ok_and(|r| r.status() == 200);
            if up {
                return (server, http_port, mt_port);
            }
            assert!(
                Instant::now() < deadline,
                "production server not up within 120 s"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Healthy, the MTProto key published, and the relay streaming (live updates need it).
    async fn wait_ready(&self, server: &mut Server) -> Value {
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            if let Some(status) = server.0.try_wait().expect("child status") {
                panic!("ptslog serve exited early: {status}");
            }
            let key = match http
                .get(format!("{}/v1/mtproto/public-key", self.http()))
                .send()
                .await
            {
                Ok(r) if r.status() == 200 => r.json::<Value>().await.ok(),
                _ => None,
            };
            if let Some(key) = key {
                if self.relay_streaming(&http).await {
                    return key;
                }
                // Creating the slot waits for "running transactions" records; a checkpoint
                // writes one at once (the push tests do the same).
                if let Ok(mut admin) = sqlx::PgConnection::connect(&admin_url()).await {
                    let _ = sqlx::query("CHECKPOINT").execute(&mut admin).await;
                    let _ = admin.close().await;
                }
            }
            assert!(Instant::now() < deadline, "server not ready within 300 s");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }

    /// The relay leads and its stream has started (the slot exists and its snapshot is built:
    /// commits from now on are pushed). The push tests wait the same way.
    async fn relay_streaming(&self, http: &reqwest::Client) -> bool {
        let health: Option<Value> = match http
            .get(format!("{}/healthz/relay", self.http()))
            .send()
            .await
        {
            Ok(r) => r.json().await.ok(),
            Err(_) => None,
        };
        health.is_some_and(|h| {
            h["relay"]["role"] == "leader" && h["relay"]["sessions_started"].as_u64() > Some(0)
        })
    }

    /// Runs a client script; answers its stdout, after asserting it exited 0.
    fn run_script(&self, python: &Path, script: &str, args: &[&str]) -> String {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("mtproto")
            .join(script);
        let out = Command::new(python)
            .arg(&script)
            .arg(self.http())
            .arg("127.0.0.1")
            .arg(self.mt_port.to_string())
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("running the Telethon script");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{} {args:?} failed ({}):\n{stdout}\n{}",
            script.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    /// Runs a GramJS script (`node <script> HTTP HOST PORT <prefix> <args>`) and answers its
    /// output; fails the test if it fails. GramJS 2.26 hashes the new key without its leading
    /// zero byte when it has one (1 key in 256), so its own check of dh_gen_ok fails: such a run
    /// is tried once more with the second phone prefix.
    fn run_gramjs(
        &self,
        modules: &Path,
        script: &str,
        prefixes: [&str; 2],
        args: &[&str],
    ) -> String {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("mtproto")
            .join(script);
        let run = |prefix: &str| {
            let out = Command::new("node")
                .arg(&path)
                .arg(self.http())
                .arg("127.0.0.1")
                .arg(self.mt_port.to_string())
                .arg(prefix)
                .args(args)
                .env("NODE_PATH", modules)
                .stdin(Stdio::null())
                .output()
                .expect("running node");
            let text = format!(
                "{}\n--- stderr ---\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status.success(), text)
        };
        let (mut ok, mut out) = tokio::task::block_in_place(|| run(prefixes[0]));
        if !ok && out.contains("invalid new nonce hash") {
            (ok, out) = tokio::task::block_in_place(|| run(prefixes[1]));
        }
        assert!(ok, "{script} failed:\n{out}");
        out
    }
}

/// The database (its replication slot goes with it) and the data folder are removed however the
/// test ends: a failed run would otherwise leave an inactive slot holding WAL on the shared
/// server until the harness drops old databases an hour later.
impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.data_dir);
        let db = self.db.clone();
        // Drop cannot await, and the test's runtime cannot be entered again from here.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                // The server was killed just before; its replication session may still be ending.
                for _ in 0..40 {
                    let dropped = async {
                        let mut admin = sqlx::PgConnection::connect(&admin_url()).await?;
                        sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                            .execute(&mut admin)
                            .await
                    };
                    if dropped.await.is_ok() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                drop_database(&db).await;
            });
        })
        .join();
    }
}

const CHECKS: &[&str] = &[
    "sign_in",
    "same_account_as_http",
    "get_me",
    "second_device_same_account",
    "resolve_phone",
    "get_full_user",
    "live_new_message",
    "sender_resolved",
    "live_reply",
    "live_edit",
    "live_delete",
    "live_read",
    "no_gap_after_updates_without_pts",
    "history",
    "dialogs",
    "catch_up",
    "same_history_on_both_devices",
    "same_dialogs_on_both_devices",
    "log_out",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telethon_kurigram_and_gramjs_sign_in_and_chat() {
    let python = tokio::task::spawn_blocking(telethon_python)
        .await
        .expect("installer thread")
        .unwrap_or_else(|e| panic!("Telethon from PyPI is needed for this test: {e}"));
    let setup = Setup::fresh("mtproto").await;
    let mut server = setup.spawn();
    let key = setup.wait_ready(&mut server).await;
    assert!(key["pem"]
        .as_str()
        .is_some_and(|p| p.starts_with("-----BEGIN RSA PUBLIC KEY-----")));
    assert_eq!(key["address"], format!("127.0.0.1:{}", setup.mt_port));
    let key_file = setup.data_dir.join("mtproto_rsa_key.pem");
    assert!(key_file.exists(), "the key is kept in the data folder");

    let mut saved_session = String::new();
    for (i, transport) in ["abridged", "full", "obfuscated"].iter().enumerate() {
        let prefix = format!("1555{i}0");
        let python2 = python.clone();
        let out = {
            let s = &setup;
            tokio::task::block_in_place(|| {
                s.run_script(&python2, "telethon_e2e.py", &[transport, &prefix])
            })
        };
        for check in CHECKS {
            assert!(
                out.lines().any(|l| l == format!("CHECK {check}")),
                "{transport}: check {check} missing:\n{out}"
            );
        }
        assert!(
            out.lines().any(|l| l == format!("E2E OK {transport}")),
            "{out}"
        );
        if let Some(line) = out.lines().find_map(|l| l.strip_prefix("SESSION ")) {
            saved_session = line.to_string();
        }
    }

    // The protocol at the byte level: RSA_PAD, temporary keys, hostile input.
    raw::protocol_checks(&setup, &key).await;

    // A second client, another code base: Kurigram (a Pyrogram fork).
    let out =
        tokio::task::block_in_place(|| setup.run_script(&python, "kurigram_e2e.py", &["155590"]));
    for check in [
        "sign_up_and_in",
        "get_me",
        "resolve_phone",
        "send",
        "live_receive",
        "live_reply",
        "history",
    ] {
        assert!(
            out.lines().any(|l| l == format!("CHECK {check}")),
            "kurigram: check {check} missing:\n{out}"
        );
    }
    assert!(out.lines().any(|l| l == "E2E OK kurigram"), "{out}");

    // A third, in JavaScript at layer 198 with the RSA_PAD key exchange: GramJS.
    let modules = tokio::task::spawn_blocking(gramjs_modules)
        .await
        .expect("installer thread")
        .unwrap_or_else(|e| panic!("GramJS from npm is needed for this test: {e}"));
    let out = setup.run_gramjs(&modules, "gramjs_e2e.js", ["155591", "155592"], &[]);
    for check in [
        "sign_up",
        "get_me",
        "resolve_phone",
        "live_receive",
        "live_reply",
        "history",
        "dialogs",
    ] {
        assert!(
            out.lines().any(|l| l == format!("CHECK {check}")),
            "gramjs: check {check} missing:\n{out}"
        );
    }
    assert!(out.lines().any(|l| l == "E2E OK gramjs"), "{out}");

    // What happened shows in /metrics: keys, calls, refused errors and connections.
    let metrics = reqwest::get(format!("{}/metrics", setup.http()))
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics body");
    let value = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{metrics}"))
    };
    assert!(value("ptslog_mtproto_auth_keys_created_total") >= 10);
    assert!(value("ptslog_mtproto_calls_total") >= 100);
    assert!(value("ptslog_mtproto_call_errors_total") >= 3);
    // The unknown key, the oversized frame and the garbage header at least.
    assert!(value("ptslog_mtproto_refused_total") >= 3);
    assert!(value("ptslog_mtproto_connections_total") >= 10);

    // Every auth key is stored sealed (285 bytes, not the 256 of a key), under the key file the
    // server made in its data folder; the restart below must read both back.
    let mut conn = sqlx::PgConnection::connect(&database_url(&setup.db))
        .await
        .expect("a connection");
    let (sealed, total): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE length(auth_key) = 285), count(*) FROM mtproto_auth_keys",
    )
    .fetch_one(&mut conn)
    .await
    .expect("count keys");
    assert!(
        total >= 10 && sealed == total,
        "{sealed} of {total} keys sealed"
    );
    drop(conn);
    assert!(setup
        .data_dir
        .join(ptslog_server::secrets_at_rest::DEFAULT_KEY_FILE)
        .exists());

    // A restart keeps the server key (data folder) and the client's auth key (Postgres).
    drop(server);
    let mut server = setup.spawn();
    let again = setup.wait_ready(&mut server).await;
    assert_eq!(again["fingerprint"], key["fingerprint"]);
    let out = tokio::task::block_in_place(|| {
        setup.run_script(
            &python,
            "telethon_e2e.py",
            &["intermediate", "reconnect", &saved_session],
        )
    });
    assert!(out.contains("CHECK same_user_after_reconnect"), "{out}");
    assert!(out.lines().any(|l| l == "RECONNECT OK"), "{out}");

    drop(server);
    drop(setup);
}

/// Two-step verification with Telethon unpatched (tests/mtproto/telethon_2fa.py): `edit_2fa`
/// sets, changes and removes a password; a new device's right code answers
/// SESSION_PASSWORD_NEEDED, a wrong password PASSWORD_HASH_INVALID, the right one signs it in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telethon_two_step_verification() {
    let python = tokio::task::spawn_blocking(telethon_python)
        .await
        .expect("installer thread")
        .unwrap_or_else(|e| panic!("Telethon from PyPI is needed for this test: {e}"));
    let setup = Setup::fresh("2fa").await;
    let mut server = setup.spawn();
    // Only the MTProto key is needed (no live updates): serving is enough.
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = server.0.try_wait().expect("child status") {
            panic!("ptslog serve exited early: {status}");
        }
        let up = http
            .get(format!("{}/v1/mtproto/public-key", setup.http()))
            .send()
            .await
            .is_ok_and(|r| r.status() == 200);
        if up {
            break;
        }
        assert!(Instant::now() < deadline, "server not up within 120 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let out = tokio::task::block_in_place(|| {
        setup.run_script(&python, "telethon_2fa.py", &["+15559900001"])
    });
    for check in [
        "nothing_before_code",
        "no_password",
        "set",
        "has_password",
        "session_password_needed",
        "wrong_password",
        "password_sign_in",
        "change_needs_current",
        "change",
        "changed_hint",
        "remove",
        "removed",
        "sign_in_without_password",
    ] {
        assert!(
            out.lines().any(|l| l == format!("CHECK {check}")),
            "2fa: check {check} missing:\n{out}"
        );
    }
    assert!(out.lines().any(|l| l == "E2E OK 2fa"), "{out}");
    drop(server);
    drop(setup);
}
