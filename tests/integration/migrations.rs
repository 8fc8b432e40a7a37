//! Migrations that derive a new read model from an existing one fill it from the rows already
//! there: a database migrated up to the previous version, with data, then upgraded.

use std::borrow::Cow;

use ptslog_tests::{blank_database, database_url, drop_database};
use sqlx::migrate::Migrator;
use sqlx::PgPool;

/// The migrations before `version` applied to `pool`.
async fn migrate_before(pool: &PgPool, version: i64) {
    let mut older: Migrator = sqlx::migrate!("../migrations");
    older.migrations = Cow::Owned(
        older
            .migrations
            .iter()
            .filter(|m| m.version < version)
            .cloned()
            .collect(),
    );
    older.run(pool).await.expect("the older migrations");
}

/// 0023: `reverse_contacts` holds the keys of the contacts saved before the upgrade, the index it
/// replaces is gone, and its projector version is recorded.
#[tokio::test]
async fn reverse_contacts_are_filled_from_the_contacts_of_before() {
    let db = blank_database().await.expect("database");
    let pool = infrastructure::postgres::connect(&database_url(&db), 2)
        .await
        .expect("connect");
    migrate_before(&pool, 23).await;
    let saved: Vec<(i64, i64)> = vec![(1, 2), (2, 1), (1, 3), (4_000_000_001, 1)];
    for (owner, contact) in &saved {
        sqlx::query(
            "INSERT INTO contacts (owner_user_id, contact_user_id, first_name, last_name, phone, imported, date) \
             VALUES ($1, $2, 'F', '', '', false, 1)",
        )
        .bind(owner)
        .bind(contact)
        .execute(&pool)
        .await
        .expect("a contact of before");
    }

    infrastructure::postgres::migrate(&pool)
        .await
        .expect("the upgrade");

    let reverse: Vec<(i64, i64)> =
        sqlx::query_as("SELECT owner_user_id, contact_user_id FROM reverse_contacts ORDER BY 1, 2")
            .fetch_all(&pool)
            .await
            .unwrap();
    let mut expected = saved.clone();
    expected.sort_unstable();
    assert_eq!(reverse, expected);
    // Who has account 1: one partition's look-up.
    let holders: Vec<i64> = sqlx::query_scalar(
        "SELECT owner_user_id FROM reverse_contacts WHERE contact_user_id = 1 ORDER BY 1",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(holders, [2, 4_000_000_001]);
    let old_index: Option<String> =
        sqlx::query_scalar("SELECT to_regclass('contacts_reverse')::text")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        old_index, None,
        "nothing reads contacts by contact any more"
    );
    let version: Option<i32> =
        sqlx::query_scalar("SELECT version FROM projection_status WHERE name = 'reverse_contacts'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(version, Some(projections::reverse_contacts::VERSION));
    pool.close().await;
    drop_database(&db).await;
}
