use crate::common::{send, TestDb};

pub async fn the_log_rejects_update_delete_and_truncate(db: &TestDb) {
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let (a, b) = (db.user("+200").await, db.user("+201").await);
    send(&db.store, a, b, "kept", 1).await;
    for statement in [
        "UPDATE user_update_events SET kind = 'x'",
        "DELETE FROM user_update_events",
        "TRUNCATE user_update_events",
        "TRUNCATE user_update_events_p0",
    ] {
        let err = sqlx::query(statement)
            .execute(&db.pool)
            .await
            .expect_err(statement);
        assert!(
            err.to_string().contains("append-only"),
            "{statement}: {err}"
        );
    }
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(n, before + 2);
}
