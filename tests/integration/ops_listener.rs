//! `PTSLOG_OPS_ON_ADMIN_ONLY`: `/metrics` and `/healthz/relay` move to the admin listener (served
//! there without the admin token, like on the public one); the public listener answers 404 for
//! them but keeps `/healthz` for load balancers.

use ptslog_tests::{with_admin, TestServer};

async fn status(server: &TestServer, url: String) -> u16 {
    server
        .http
        .get(url)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

#[tokio::test]
async fn ops_endpoints_can_live_on_the_admin_listener_only() {
    let server = TestServer::start_with(|c| {
        with_admin(c, true);
        c.ops_on_admin_only = true;
    })
    .await;
    assert_ne!(server.admin_base, server.base);
    for path in ["/metrics", "/healthz/relay"] {
        assert_eq!(
            status(&server, format!("{}{path}", server.base)).await,
            404,
            "public {path}"
        );
        assert_eq!(
            status(&server, format!("{}{path}", server.admin_base)).await,
            200,
            "admin {path}"
        );
    }
    let metrics = server
        .http
        .get(format!("{}/metrics", server.admin_base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("ptslog_devices_online"), "{metrics}");
    assert_eq!(
        status(&server, format!("{}/healthz", server.base)).await,
        200
    );
    server.stop().await;
}

#[tokio::test]
async fn by_default_ops_endpoints_stay_on_the_public_listener() {
    let server = TestServer::start_with(|c| with_admin(c, true)).await;
    for path in ["/metrics", "/healthz/relay"] {
        assert_eq!(
            status(&server, format!("{}{path}", server.base)).await,
            200,
            "public {path}"
        );
        assert_eq!(
            status(&server, format!("{}{path}", server.admin_base)).await,
            404,
            "admin {path}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn ops_on_admin_only_without_an_admin_listener_does_not_start() {
    let db = ptslog_tests::fresh_database().await.unwrap();
    let mut config = ptslog_tests::test_config(&db);
    config.ops_on_admin_only = true;
    let started = ptslog_server::start(&config).await;
    assert!(started.is_err(), "nowhere to serve /metrics");
    ptslog_tests::drop_database(&db).await;
}
