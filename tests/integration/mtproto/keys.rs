//! Auth keys in Postgres: expired temporary keys are deleted (`PgMtprotoKeys::delete_expired`,
//! which the front runs every `KEY_SWEEP_INTERVAL` and at start); keys are stored sealed
//! (AES-256-GCM under the server's key-encryption key), and keys stored in plaintext before that
//! still load and get sealed.

use std::time::Duration;

use infrastructure::{AuthKeyCipher, PgMtprotoKeys};
use ptslog_tests::{database_url, drop_database, fresh_database};

#[tokio::test]
async fn expired_temporary_keys_are_deleted_and_nothing_else() {
    let db = fresh_database().await.expect("fresh database");
    let pool = sqlx::PgPool::connect(&database_url(&db))
        .await
        .expect("pool");
    let keys = PgMtprotoKeys::new(pool.clone(), AuthKeyCipher::new(&[1; 32]));
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

async fn stored(pool: &sqlx::PgPool, id: i64) -> Vec<u8> {
    sqlx::query_scalar("SELECT auth_key FROM mtproto_auth_keys WHERE auth_key_id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn auth_keys_are_stored_sealed_and_old_plaintext_keys_still_load() {
    let db = fresh_database().await.expect("fresh database");
    let pool = sqlx::PgPool::connect(&database_url(&db))
        .await
        .expect("pool");
    let keys = PgMtprotoKeys::new(pool.clone(), AuthKeyCipher::new(&[7; 32]));
    let auth_key: Vec<u8> = (0..256).map(|i| (i * 7 % 251) as u8).collect();
    assert!(keys.create(10, &auth_key, 5, None).await.unwrap());
    let at_rest = stored(&pool, 10).await;
    assert_eq!(at_rest.len(), 285, "version, nonce, ciphertext, tag");
    assert!(
        !at_rest
            .windows(16)
            .any(|w| auth_key.windows(16).any(|k| k == w)),
        "what Postgres holds is not the key"
    );
    assert_eq!(keys.load(10).await.unwrap().unwrap().auth_key, auth_key);

    // Another server key opens nothing: an error, never a wrong key, and no bytes in it.
    let other = PgMtprotoKeys::new(pool.clone(), AuthKeyCipher::new(&[8; 32]));
    let err = other
        .load(10)
        .await
        .expect_err("the wrong key-encryption key");
    let shown = format!("{err} {err:?}");
    assert!(shown.contains("does not open"), "{shown}");
    assert!(!shown.contains(&format!("{:?}", &auth_key[..4])), "{shown}");
    assert_eq!(
        stored(&pool, 10).await,
        at_rest,
        "a failed load changes nothing"
    );

    // Rows written before encryption at rest: plaintext, 256 bytes.
    for (id, b) in [(20_i64, 2_u8), (21, 3), (22, 4)] {
        sqlx::query(
            "INSERT INTO mtproto_auth_keys (auth_key_id, auth_key, server_salt) VALUES ($1, $2, 0)",
        )
        .bind(id)
        .bind(vec![b; 256])
        .execute(&pool)
        .await
        .unwrap();
    }
    // Loading one seals it on the way.
    assert_eq!(keys.load(20).await.unwrap().unwrap().auth_key, vec![2; 256]);
    assert_eq!(stored(&pool, 20).await.len(), 285);
    // The start-up pass seals the rest, and then there is nothing left to do.
    assert_eq!(keys.seal_plaintext().await.unwrap(), 2);
    assert_eq!(keys.seal_plaintext().await.unwrap(), 0);
    for (id, b) in [(20_i64, 2_u8), (21, 3), (22, 4)] {
        assert_eq!(stored(&pool, id).await.len(), 285);
        assert_eq!(keys.load(id).await.unwrap().unwrap().auth_key, vec![b; 256]);
    }
    // A sealed value copied onto another row does not open there (the id is associated data).
    sqlx::query("UPDATE mtproto_auth_keys SET auth_key = $1 WHERE auth_key_id = 21")
        .bind(&at_rest)
        .execute(&pool)
        .await
        .unwrap();
    assert!(keys.load(21).await.is_err());
    pool.close().await;
    drop_database(&db).await;
}
