use application::ports::Store;
use domain::events::ClearHistory;
use domain::UserId;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::{block, delete, edit, read_contents, read_history, send, send_with, TestDb};

/// A random but reproducible mix of every kind of event among three accounts.
async fn random_history(db: &TestDb, users: &[UserId], seed: u64, steps: usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut sent = Vec::new();
    for step in 0..steps {
        let date = 10_000 + step as i32;
        let from = users[rng.gen_range(0..users.len())];
        let to = users[rng.gen_range(0..users.len())];
        match rng.gen_range(0..10) {
            0..=3 => sent.push((
                from,
                to,
                send(&db.store, from, to, "random text", date).await,
            )),
            4 => sent.push((
                from,
                to,
                send_with(&db.store, from, to, "with media", date, |m| {
                    m.media_unread = true
                })
                .await,
            )),
            5 if !sent.is_empty() => {
                let (f, t, s) = sent[rng.gen_range(0..sent.len())];
                edit(&db.store, [f, t], s.message_id, "edited", date).await;
            }
            6 if !sent.is_empty() => {
                let (f, _, s) = sent[rng.gen_range(0..sent.len())];
                let mut tx = db.store.begin().await.unwrap();
                let visible = tx.messages(f, &[s.sender_box]).await.unwrap();
                drop(tx);
                if !visible.is_empty() {
                    delete(&db.store, f, vec![s.sender_box], None).await;
                }
            }
            7 => {
                let mut tx = db.store.begin().await.unwrap();
                let newest = tx.newest_ids(to, from, 0, 1).await.unwrap();
                drop(tx);
                if let Some(max) = newest.first() {
                    read_history(&db.store, to, from, *max, date).await;
                }
            }
            8 if !sent.is_empty() => {
                let (_, t, s) = sent[rng.gen_range(0..sent.len())];
                read_contents(&db.store, t, vec![s.recipient_box], date).await;
            }
            9 if from != to => block(&db.store, from, to, rng.gen_bool(0.5), date).await,
            _ => {}
        }
    }
    // A Saved Messages chat, a cleared-but-kept chat and a removed one, so each is replayed too.
    send(&db.store, users[2], users[2], "note to self", 20_000).await;
    let (b, c) = (users[1], users[2]);
    let mut tx = db.store.begin().await.unwrap();
    let ids = tx.newest_ids(b, c, 0, 1000).await.unwrap();
    drop(tx);
    delete(
        &db.store,
        b,
        ids,
        Some(ClearHistory {
            peer_id: c,
            just_clear: true,
        }),
    )
    .await;
    // And one cleared chat, removed, so removal is replayed too.
    let (a, b) = (users[0], users[1]);
    let mut tx = db.store.begin().await.unwrap();
    let ids = tx.newest_ids(a, b, 0, 1000).await.unwrap();
    drop(tx);
    delete(
        &db.store,
        a,
        ids,
        Some(ClearHistory {
            peer_id: b,
            just_clear: false,
        }),
    )
    .await;
}

/// One database: rebuilding reproduces the live read models, verifying finds nothing, then finds
/// every kind of tampering, and rebuilding repairs what is not the log's own fault.
#[tokio::test]
async fn rebuild_and_verify() {
    let db = TestDb::new().await;
    let users = [
        db.user("+500").await,
        db.user("+501").await,
        db.user("+502").await,
    ];
    random_history(&db, &users, 7, 120).await;
    let before = db.snapshot_all().await;
    assert!(!before[0].is_empty() && !before[1].is_empty() && !before[2].is_empty());

    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let report = projections::rebuild_all(&db.pool).await.unwrap();
    assert_eq!(report.events_applied, events as u64);
    assert_eq!(db.snapshot_all().await, before);

    let report = projections::verify(&db.pool).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.differences);
    assert_eq!(report.events_replayed, events as u64);
    assert_eq!(report.tables_checked.len(), 12);

    // A read model edited behind the projector's back.
    let tampered = sqlx::query(
        "UPDATE dialogs SET unread_count = unread_count + 5 WHERE (user_id, peer_user_id) = \
         (SELECT user_id, peer_user_id FROM dialogs ORDER BY 1, 2 LIMIT 1)",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    assert_eq!(tampered.rows_affected(), 1);
    // A box that vanished: a replay difference and a hole in the box ids.
    let deleted = sqlx::query("DELETE FROM message_boxes WHERE owner_user_id = $1 AND box_id = 1")
        .bind(users[2].get())
        .execute(&db.pool)
        .await
        .unwrap();
    assert_eq!(deleted.rows_affected(), 1);
    // A row only the live table has.
    sqlx::query("INSERT INTO contact_blocks VALUES ($1, 987654, 1)")
        .bind(users[2].get())
        .execute(&db.pool)
        .await
        .unwrap();
    // A hole in the log itself (inserting is all the log allows).
    let last = db.store.pts(users[1]).await.unwrap().get();
    sqlx::query(
        "INSERT INTO user_update_events (user_id, pts, pts_count, kind, payload_version, payload) \
         VALUES ($1, $2, 1, 'peer_blocked', 1, $3)",
    )
    .bind(users[1].get())
    .bind(last + 3)
    .bind(serde_json::json!({"peer_id": 987_653, "blocked": false, "date": 1}))
    .execute(&db.pool)
    .await
    .unwrap();

    let live = db.snapshot_all().await;
    let report = projections::verify(&db.pool).await.unwrap();
    assert!(!report.is_clean());
    let all = report.differences.join("\n");
    assert_eq!(report.total_differences, 6, "{all}");
    assert!(all.contains("unread_count: live"), "{all}");
    assert!(
        all.contains(&format!("dialogs (user_id={}", users[0])),
        "{all}"
    );
    assert!(
        all.contains(&format!(
            "message_boxes (owner_user_id={}, box_id=1): allocated but missing",
            users[2]
        )),
        "{all}"
    );
    assert!(
        all.contains(&format!(
            "message_boxes (owner_user_id={}, box_id=1): missing from the live table",
            users[2]
        )),
        "{all}"
    );
    assert!(
        all.contains("contact_blocks") && all.contains("only in the live table"),
        "{all}"
    );
    assert!(
        all.contains(&format!(
            "pts={}): starts at {} but the previous event ends at {last}",
            last + 3,
            last + 2
        )),
        "{all}"
    );
    assert!(
        all.contains(&format!(
            "user_sequences (user_id={}): pts {last} but the log ends at {}",
            users[1],
            last + 3
        )),
        "{all}"
    );
    // Verifying rolled its replay back: the live tables are as they were.
    assert_eq!(db.snapshot_all().await, live);

    // Rebuilding repairs the read models; the log's own holes stay (it is append-only).
    projections::rebuild_all(&db.pool).await.unwrap();
    let report = projections::verify(&db.pool).await.unwrap();
    assert_eq!(report.total_differences, 2, "{:?}", report.differences);
    assert!(
        report.differences.iter().all(|d| d.starts_with("user_")),
        "{:?}",
        report.differences
    );
    db.drop().await;
}
