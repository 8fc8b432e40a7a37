//! Auth keys in Postgres: expired temporary keys are deleted (`PgMtprotoKeys::delete_expired`,
//! which the front runs every `KEY_SWEEP_INTERVAL` and at start).

use std::time::Duration;

use infrastructure::PgMtprotoKeys;
use ptslog_tests::{database_url, drop_database, fresh_database};

#[tokio::test]
async fn expired_temporary_keys_are_deleted_and_nothing_else() {
    let db = fresh_database().await.expect("fresh database");
    let pool = sqlx::PgPool::connect(&database_url(&db))
        .await
        .expect("pool");
    let keys = PgMtprotoKeys::new(pool.clone());
    let key = |b: u8| vec![b; 256];
    assert!(
        keys.create(1, &key(1), 11, None).await.unwrap(),
        "permanent"
    );
    assert!(
        keys.create(2, &key(2), 22, Some(3600)).await.unwrap(),
        "temporary, valid"
    );
    assert!(
        keys.create(3, &key(3), 33, Some(1)).await.unwrap(),
        "temporary, expiring"
    );
    // Expired a day ago, as a client's forgotten key would be.
    sqlx::query(
        "UPDATE mtproto_auth_keys SET expires_at = now() - interval '1 day' WHERE auth_key_id = 2",
    )
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(
        keys.delete_expired().await.unwrap(),
        1,
        "only the one already expired"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        keys.delete_expired().await.unwrap(),
        1,
        "the one just expired"
    );
    assert_eq!(keys.delete_expired().await.unwrap(), 0);
    let left: Vec<i64> = sqlx::query_scalar("SELECT auth_key_id FROM mtproto_auth_keys ORDER BY 1")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(left, vec![1], "the permanent key stays");
    let stored = keys.load(1).await.unwrap().expect("permanent key loads");
    assert_eq!(stored.server_salt, 11);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(
        (stored.created_at - now).abs() < 60,
        "created_at is the insert time"
    );
    pool.close().await;
    drop_database(&db).await;
}
