use crate::common::TestDb;

/// Two processes starting at once: the advisory lock makes one wait, and it then finds nothing to do.
#[tokio::test]
async fn concurrent_migrations_both_succeed() {
    let db = TestDb::empty().await;
    let other = db.another_pool().await;
    let (first, second) = tokio::join!(infrastructure::migrate(&db.pool), infrastructure::migrate(&other));
    first.expect("first migrator");
    second.expect("second migrator");
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations").fetch_one(&db.pool).await.unwrap();
    assert_eq!(applied, 1);
    infrastructure::migrate(&db.pool).await.expect("again: nothing to do");
    other.close().await;
    db.drop().await;
}
