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

/// The log keeps a payload as the text the application serialized once from the typed event
/// (migration 0022: a `json` column, not a jsonb tree printed back on every read), and that text
/// reads back as the same event.
pub async fn the_log_keeps_the_payload_as_written(db: &TestDb) {
    let (a, b) = (db.user("+202").await, db.user("+203").await);
    send(&db.store, a, b, "as \"written\": {1, 2}", 7).await;
    let (kind, version, text, column_type): (String, i16, String, String) = sqlx::query_as(
        "SELECT kind, payload_version, payload::text, pg_typeof(payload)::text \
         FROM user_update_events WHERE user_id = $1 ORDER BY pts DESC LIMIT 1",
    )
    .bind(a.get())
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(column_type, "json");
    let event = domain::events::UserEvent::decode_text(&kind, version, &text).unwrap();
    assert_eq!(event.checked_payload().unwrap(), text);
}
