//! Bearer tokens have a lifetime (`TOKEN_LIFETIME`, docs/security.md "Sessions and devices"):
//! set at sign-in, accepted up to its end, refused past it, and an expired device is no longer
//! listed.

use application::devices::TOKEN_LIFETIME;
use ptslog_tests::TestServer;
use serde_json::json;

#[tokio::test]
async fn tokens_expire_at_their_lifetime() {
    let s = TestServer::start().await;
    let old = s.login("+15557310001", "Old").await;
    let other = s.login("+15557310001", "Old").await;
    // Signed in now: the token ends TOKEN_LIFETIME after its creation.
    let lifetime: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM expires_at - created_at)::float8 FROM authorizations \
         WHERE user_id = $1 LIMIT 1",
    )
    .bind(old.user_id)
    .fetch_one(&s.pool)
    .await
    .expect("lifetime");
    assert!(
        (lifetime - TOKEN_LIFETIME.as_secs_f64()).abs() < 5.0,
        "lifetime {lifetime}"
    );
    let hash = |list: &serde_json::Value| -> Vec<i64> {
        list["authorizations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["hash"].as_i64().unwrap())
            .collect()
    };
    let listed = old.rpc("account.getAuthorizations", json!({})).await;
    assert_eq!(hash(&listed).len(), 2);
    let old_id = hash(&listed)[0];
    let set_end = |offset_ms: i64| {
        sqlx::query(
            "UPDATE authorizations SET expires_at = now() + make_interval(secs => $2::float8 / 1000) \
             WHERE auth_key_id = $1",
        )
        .bind(old_id)
        .bind(offset_ms as f64)
    };
    // Just before its end: still accepted.
    set_end(5_000).execute(&s.pool).await.expect("update");
    old.rpc("updates.getState", json!({})).await;
    // Just past it: refused, and no longer among the account's devices.
    set_end(-1).execute(&s.pool).await.expect("update");
    // Changed by hand, behind the application's back: each instance's token cache hears it from
    // the trigger's notification (docs/security.md, "The token cache"), within milliseconds.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    let (status, e) = loop {
        let (status, body) = old.call("updates.getState", json!({})).await;
        if status != 200 || std::time::Instant::now() > deadline {
            break (
                status,
                body["error_message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    };
    assert_eq!((status, e.as_str()), (401, "AUTH_KEY_UNREGISTERED"));
    let listed = other.rpc("account.getAuthorizations", json!({})).await;
    assert_eq!(hash(&listed).len(), 1, "{listed}");
    assert_ne!(hash(&listed)[0], old_id);
    s.stop().await;
}
