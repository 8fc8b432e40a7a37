//! Redis over TLS: the server's limiter (the same code path `ptslog serve` builds, with
//! `PTSLOG_REDIS_CA_FILE`) counts in a `rediss://` Redis whose certificate a private CA signed,
//! and an unverifiable certificate is refused (the limiter then fails open, as when Redis is down).
//! The Redis is a `redis-server --tls-port` of the test's own (Debian's is built with TLS).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use domain::UserId;
use infrastructure::RedisRateLimiter;
use ptslog_tests::certificates::make_certificates;

struct Redis(Child);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn the_limiter_counts_in_a_tls_redis_verified_by_a_private_ca() {
    let dir = std::env::temp_dir().join(format!("ptslog-redis-tls-{}", std::process::id()));
    make_certificates(&dir);
    let port = free_port();
    let file = |f: &str| dir.join(f).display().to_string();
    let _redis = Redis(
        Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .args(["--tls-port", &port.to_string(), "--tls-auth-clients", "no"])
            .args([
                "--tls-cert-file",
                &file("server.crt"),
                "--tls-key-file",
                &file("server.key"),
            ])
            .args(["--tls-ca-cert-file", &file("ca.crt")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not listen");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let url = format!("rediss://localhost:{port}");
    let ca = std::fs::read(dir.join("ca.crt")).unwrap();
    let verified = RedisRateLimiter::new(&url, "tls-test:", 1)
        .unwrap()
        .with_root_ca(&url, ca)
        .unwrap();
    let user = UserId::new(7).unwrap();
    let now = 1_000_000;
    // The first connection's TLS handshake may outlast one call's budget: retry until counted.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(verified.check_send_at(user, 1, now).await.is_ok());
        if verified.check_send_at(user, 1, now).await.is_err() {
            break; // the second send in the window is limited: Redis counted over TLS
        }
        assert!(Instant::now() < deadline, "never counted over TLS");
        tokio::time::sleep(Duration::from_millis(1100)).await; // past RECONNECT_BACKOFF
    }
    // Without the CA (the system's roots only) the certificate is refused: nothing is counted,
    // every call is allowed.
    let unverified = RedisRateLimiter::new(&url, "tls-test-2:", 1).unwrap();
    for _ in 0..3 {
        assert!(unverified.check_send_at(user, 1, now).await.is_ok());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
