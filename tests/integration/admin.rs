//! The admin endpoints' guard: only the operator token opens them, never a user's token; without a
//! configured token they do not exist; `PTSLOG_ADMIN_ADDR` moves them off the public listener.

use ptslog_tests::{with_admin, TestServer, TEST_ADMIN_TOKEN};

async fn get(server: &TestServer, base: &str, token: Option<&str>) -> (u16, String) {
    let mut req = server.http.get(format!("{base}/admin/ping"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("admin request");
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

#[tokio::test]
async fn admin_endpoints_need_the_operator_token() {
    let server = TestServer::start_with(|c| with_admin(c, false)).await;
    let alice = server.login("+15557000001", "Alice").await;
    let base = server.admin_base.clone();
    assert_eq!(base, server.base, "admin routes share the public listener");

    let (status, body) = get(&server, &base, None).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("ADMIN_TOKEN_INVALID"), "{body}");
    let (status, _) = get(&server, &base, Some(&alice.token)).await;
    assert_eq!(status, 401, "a user token never opens the admin endpoints");
    let (status, _) = get(&server, &base, Some("test-admin-token-012345678")).await;
    assert_eq!(status, 401, "a prefix of the token is refused");
    let (status, body) = get(&server, &base, Some(TEST_ADMIN_TOKEN)).await;
    assert_eq!((status, body.as_str()), (200, "ok"));
    // Every admin route is behind the same guard.
    let projections = format!("{base}/admin/projections");
    let resp = server.http.get(&projections).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let resp = server
        .http
        .get(&projections)
        .bearer_auth(&alice.token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let resp = server
        .http
        .get(&projections)
        .bearer_auth(TEST_ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert!(body["projections"].is_array(), "{body}");
    // The operator token is not a user token either.
    let (status, _) = alice.call("updates.getState", serde_json::json!({})).await;
    assert_eq!(status, 200);
    let resp = server
        .http
        .post(format!("{}/v1/rpc/updates.getState", server.base))
        .bearer_auth(TEST_ADMIN_TOKEN)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    server.stop().await;
}

#[tokio::test]
async fn without_a_token_there_are_no_admin_endpoints() {
    let server = TestServer::start().await;
    let alice = server.login("+15557000002", "Alice").await;
    for token in [None, Some(alice.token.as_str()), Some(TEST_ADMIN_TOKEN)] {
        let (status, _) = get(&server, &server.base, token).await;
        assert_eq!(status, 404);
    }
    server.stop().await;
}

#[tokio::test]
async fn a_separate_admin_listener_takes_them_off_the_public_one() {
    let server = TestServer::start_with(|c| with_admin(c, true)).await;
    assert_ne!(server.admin_base, server.base);
    let (status, _) = get(&server, &server.base, Some(TEST_ADMIN_TOKEN)).await;
    assert_eq!(status, 404, "not on the public listener");
    let admin_base = server.admin_base.clone();
    let (status, _) = get(&server, &admin_base, None).await;
    assert_eq!(status, 401);
    let (status, _) = get(&server, &admin_base, Some(TEST_ADMIN_TOKEN)).await;
    assert_eq!(status, 200);
    server.stop().await;
}
