use crate::common::TestDb;

/// Two processes starting at once: the advisory lock makes one wait, and it then finds nothing to do.
#[tokio::test]
async fn concurrent_migrations_both_succeed() {
    let db = TestDb::empty().await;
    let other = db.another_pool().await;
    let (first, second) = tokio::join!(
        infrastructure::migrate(&db.pool),
        infrastructure::migrate(&other)
    );
    first.expect("first migrator");
    second.expect("second migrator");
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../migrations"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "sql"))
        })
        .count();
    assert_eq!(applied, files as i64, "every migration applied once");
    infrastructure::migrate(&db.pool)
        .await
        .expect("again: nothing to do");
    other.close().await;
    db.drop().await;
}
