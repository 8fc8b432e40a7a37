use application::ports::Store;
use domain::events::{ClearHistory, NewMessage, ReadHistoryInbox, UserEvent};
use domain::message::{ForwardHeader, OwnerMessage, ReplyHeader};
use domain::{MessageId, Pts, UserId};

use crate::common::{
    block, bx, delete, dialog, edit, message, read_contents, read_history, send, send_with, TestDb,
};

/// One database; each part uses its own accounts, and the whole must verify clean at the end.
#[tokio::test]
async fn read_models_follow_events() {
    let db = TestDb::new().await;
    message_boxes_follow_new_edit_delete_and_read_contents(&db).await;
    dialogs_follow_messages_reads_and_deletes(&db).await;
    blocks_follow_peer_blocked(&db).await;
    let report = projections::verify(&db.pool).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.differences);
    db.drop().await;
}

async fn message_boxes_follow_new_edit_delete_and_read_contents(db: &TestDb) {
    let (a, b) = (db.user("+400").await, db.user("+401").await);
    let first = send(&db.store, a, b, "hello", 1000).await;
    let second = send_with(&db.store, b, a, "reply", 1001, |m| {
        m.reply_to = Some(ReplyHeader {
            reply_to_msg_id: bx(1),
            quote_text: Some("he".into()),
            quote_entities: vec![],
            quote_offset: Some(0),
        });
        m.fwd_from = Some(ForwardHeader {
            from_id: a,
            date: 5,
        });
        m.media_unread = true;
        m.entities = vec![domain::message_entity::MessageEntity::Bold {
            offset: 0,
            length: 2,
        }];
    })
    .await;

    let mine = db.store.messages(a, &[bx(2), bx(1), bx(9)]).await.unwrap();
    assert_eq!(
        mine.iter().map(|m| m.id).collect::<Vec<_>>(),
        vec![bx(2), bx(1)]
    );
    assert!(mine[1].out && !mine[0].out);
    assert_eq!(
        mine[0].reply_to.as_ref().map(|r| r.reply_to_msg_id),
        Some(bx(1))
    );
    assert_eq!(
        mine[0].fwd_from,
        Some(ForwardHeader {
            from_id: a,
            date: 5
        })
    );
    assert_eq!(mine[0].entities.len(), 1);
    assert!(mine[0].media_unread);

    // The sender's box remembers its random_id and the pts of its event, deleted or not.
    let random_id = sqlx::query_scalar::<_, i64>(
        "SELECT random_id FROM message_boxes WHERE owner_user_id = $1 AND box_id = 1",
    )
    .bind(a.get())
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let mut tx = db.store.begin().await.unwrap();
    let (found, pts) = tx
        .find_by_random_id(a, random_id)
        .await
        .unwrap()
        .expect("by random id");
    assert_eq!(
        (found.id, found.message_id, pts.get()),
        (bx(1), first.message_id, 1)
    );
    assert!(tx
        .find_by_random_id(a, random_id ^ 2)
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        tx.content_unread(a, &[bx(2), bx(1), bx(2)]).await.unwrap(),
        vec![bx(2)]
    );
    drop(tx);

    edit(&db.store, [a, b], first.message_id, "hello, edited", 1005).await;
    for owner in [a, b] {
        let m = db
            .store
            .messages(owner, &[first.sender_box])
            .await
            .unwrap()
            .remove(0);
        assert_eq!(
            (m.text.as_str(), m.edit_date),
            ("hello, edited", Some(1005))
        );
    }
    // An edit is not a new top message.
    assert_eq!(dialog(&db.store, a, b).await.unwrap().top_message, 2);

    read_contents(&db.store, a, vec![second.recipient_box], 1006).await;
    assert!(!db.store.messages(a, &[bx(2)]).await.unwrap()[0].media_unread);

    delete(&db.store, a, vec![bx(1)], None).await;
    assert!(db.store.messages(a, &[bx(1)]).await.unwrap().is_empty());
    assert_eq!(db.store.messages(b, &[bx(1)]).await.unwrap().len(), 1);
    let mut tx = db.store.begin().await.unwrap();
    assert!(
        tx.find_by_random_id(a, random_id).await.unwrap().is_some(),
        "deleted boxes still answer retries"
    );
    assert!(tx
        .message_by_shared_id(a, first.message_id)
        .await
        .unwrap()
        .is_none());
    assert!(!tx.has_messages_besides(a, b, &[bx(2)]).await.unwrap());
    assert!(tx.has_messages_besides(a, b, &[]).await.unwrap());
    drop(tx);
}

async fn dialogs_follow_messages_reads_and_deletes(db: &TestDb) {
    let (a, b) = (db.user("+410").await, db.user("+411").await);
    for i in 0..3 {
        send(&db.store, a, b, "m", 2000 + i).await;
    }
    let mine = dialog(&db.store, a, b).await.unwrap();
    let theirs = dialog(&db.store, b, a).await.unwrap();
    assert_eq!(
        (mine.top_message, mine.top_message_date, mine.unread_count),
        (3, 2002, 0)
    );
    assert_eq!((theirs.top_message, theirs.unread_count), (3, 3));
    assert_eq!(db.store.unread_total(b).await.unwrap(), 3);

    read_history(&db.store, b, a, bx(2), 2010).await;
    let theirs = dialog(&db.store, b, a).await.unwrap();
    assert_eq!((theirs.read_inbox_max_id, theirs.unread_count), (2, 1));
    assert_eq!(dialog(&db.store, a, b).await.unwrap().read_outbox_max_id, 2);
    assert_eq!(
        db.store.outbox_read_date(a, b, bx(1)).await.unwrap(),
        Some(2010)
    );
    assert_eq!(db.store.outbox_read_date(a, b, bx(3)).await.unwrap(), None);
    // Reading lower again does not move anything back.
    read_history(&db.store, b, a, bx(1), 2011).await;
    let theirs = dialog(&db.store, b, a).await.unwrap();
    assert_eq!((theirs.read_inbox_max_id, theirs.unread_count), (2, 1));
    assert_eq!(
        db.store.outbox_read_date(a, b, bx(1)).await.unwrap(),
        Some(2010)
    );

    // Deleting the top message moves the top down and recounts unread.
    delete(&db.store, b, vec![bx(3)], None).await;
    let theirs = dialog(&db.store, b, a).await.unwrap();
    assert_eq!(
        (
            theirs.top_message,
            theirs.top_message_date,
            theirs.unread_count
        ),
        (2, 2001, 0)
    );

    // Clearing history without just_clear removes the dialog once nothing is left ...
    delete(
        &db.store,
        b,
        vec![bx(1), bx(2)],
        Some(ClearHistory {
            peer_id: a,
            just_clear: false,
        }),
    )
    .await;
    assert!(dialog(&db.store, b, a).await.is_none());
    // ... and a new message brings it back, in folder 0, counting only itself.
    send(&db.store, a, b, "again", 2020).await;
    let theirs = dialog(&db.store, b, a).await.unwrap();
    assert_eq!(
        (
            theirs.folder_id,
            theirs.top_message,
            theirs.unread_count,
            theirs.read_inbox_max_id
        ),
        (0, 4, 1, 0)
    );

    // just_clear keeps the empty dialog.
    delete(
        &db.store,
        a,
        vec![bx(1), bx(2), bx(3), bx(4)],
        Some(ClearHistory {
            peer_id: b,
            just_clear: true,
        }),
    )
    .await;
    let mine = dialog(&db.store, a, b).await.unwrap();
    assert_eq!(
        (mine.top_message, mine.top_message_date, mine.unread_count),
        (0, 0, 0)
    );

    // Saved Messages: one box, outgoing, never unread.
    send(&db.store, a, a, "note", 2030).await;
    let saved = dialog(&db.store, a, a).await.unwrap();
    assert_eq!((saved.top_message, saved.unread_count), (5, 0));
}

async fn blocks_follow_peer_blocked(db: &TestDb) {
    let (a, b, c) = (
        db.user("+420").await,
        db.user("+421").await,
        db.user("+422").await,
    );
    block(&db.store, a, b, true, 10).await;
    block(&db.store, a, c, true, 20).await;
    block(&db.store, a, b, true, 30).await;
    let (page, count) = db.store.blocked(a, 0, 10).await.unwrap();
    assert_eq!(count, 2);
    assert_eq!(
        page.iter().map(|r| (r.peer_id, r.date)).collect::<Vec<_>>(),
        vec![(c, 20), (b, 10)]
    );
    let (page, count) = db.store.blocked(a, 1, 10).await.unwrap();
    assert_eq!((page.len(), count), (1, 2));
    let mut tx = db.store.begin().await.unwrap();
    assert!(tx.is_blocked(a, b).await.unwrap());
    assert!(!tx.is_blocked(b, a).await.unwrap());
    drop(tx);
    block(&db.store, a, b, false, 40).await;
    let mut tx = db.store.begin().await.unwrap();
    assert!(!tx.is_blocked(a, b).await.unwrap());
    drop(tx);
    assert_eq!(db.store.blocked(a, 0, 10).await.unwrap().1, 1);
}

/// A run of new messages is projected with one statement per table (a send batch's at commit, a
/// rebuild page's): its rows must be exactly those of one box insert and one dialog upsert per
/// message in log order, the statements the projectors ran before, kept here as the reference.
/// With existing chats (one read up to the middle, one whose read mark is above every box), a
/// chat created by the run, Saved Messages, replies, forwards and entities; and, through
/// `apply_events`, with a read between two runs.
#[tokio::test]
async fn a_run_of_new_messages_writes_what_one_message_at_a_time_writes() {
    use rand::{Rng, SeedableRng};

    let db = TestDb::new().await;
    let (a, b, c) = (
        db.user("+420").await,
        db.user("+421").await,
        db.user("+422").await,
    );
    for i in 0..3 {
        send(&db.store, a, b, "before", 3000 + i).await;
    }
    read_history(&db.store, b, a, bx(2), 3010).await;
    send(&db.store, c, a, "before", 3011).await;
    sqlx::query(
        "UPDATE dialogs SET read_inbox_max_id = 50 WHERE user_id = $1 AND peer_user_id = $2",
    )
    .bind(a.get())
    .bind(c.get())
    .execute(&db.pool)
    .await
    .unwrap();
    let mut next_box: std::collections::HashMap<UserId, i32> = std::collections::HashMap::new();
    for u in [a, b, c] {
        let top: Option<i32> =
            sqlx::query_scalar("SELECT max(box_id) FROM message_boxes WHERE owner_user_id = $1")
                .bind(u.get())
                .fetch_one(&db.pool)
                .await
                .unwrap();
        next_box.insert(u, top.unwrap_or(0) + 1);
    }

    let mut rng = rand::rngs::StdRng::seed_from_u64(16);
    let pairs = [(a, b), (b, a), (a, c), (c, a), (b, c), (c, b), (a, a)];
    let mut run: Vec<(UserId, Pts, OwnerMessage)> = Vec::new();
    for i in 0..60 {
        let (owner, peer) = pairs[rng.gen_range(0..pairs.len())];
        let out = owner == peer || rng.gen_bool(0.5);
        let id = next_box[&owner];
        next_box.insert(owner, id + 1);
        let from = if out { owner } else { peer };
        let mut m = message(
            bx(id),
            MessageId(9000 + i64::from(i)),
            peer,
            from,
            out,
            4000 + i / 3,
            &format!("run {i}"),
        );
        if out {
            m.random_id = Some(rng.gen_range(1..i64::MAX));
        }
        if rng.gen_bool(0.3) {
            m.reply_to = Some(ReplyHeader {
                reply_to_msg_id: bx(1),
                quote_text: None,
                quote_entities: vec![],
                quote_offset: None,
            });
        }
        if rng.gen_bool(0.2) {
            m.fwd_from = Some(ForwardHeader {
                from_id: c,
                date: 7,
            });
        }
        if rng.gen_bool(0.3) {
            m.entities = vec![domain::message_entity::MessageEntity::Bold {
                offset: 0,
                length: 3,
            }];
        }
        m.silent = rng.gen_bool(0.2);
        m.media_unread = !out && rng.gen_bool(0.2);
        run.push((owner, Pts::new(5000 + i).unwrap(), m));
    }
    // A read of b's chat with a between the two halves (for apply_events).
    let read = UserEvent::ReadHistoryInbox(ReadHistoryInbox {
        peer_id: a,
        max_id: bx(next_box[&b] - 1),
        still_unread_count: 0,
    });
    let half = run.len() / 2;
    let read_at = Pts::new(6000).unwrap();

    let owners: Vec<i64> = [a, b, c].iter().map(|u| u.get()).collect();
    // One at a time, the reference statements; the read applied alone between the halves.
    let mut tx = db.pool.begin().await.unwrap();
    for (i, (owner, pts, m)) in run.iter().enumerate() {
        if i == half {
            projections::apply(&mut tx, b, read_at, &read)
                .await
                .unwrap();
        }
        reference_new_message(&mut tx, *owner, *pts, m).await;
    }
    let want = rows_of(&mut tx, &owners).await;
    tx.rollback().await.unwrap();

    // The whole run at once (no read: compared with the reference without it).
    let mut tx = db.pool.begin().await.unwrap();
    for (owner, pts, m) in &run {
        reference_new_message(&mut tx, *owner, *pts, m).await;
    }
    let want_without_read = rows_of(&mut tx, &owners).await;
    tx.rollback().await.unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    let at_once: Vec<projections::NewMessageAt<'_>> = run
        .iter()
        .map(|(owner, pts, m)| projections::NewMessageAt {
            owner: *owner,
            pts: *pts,
            message: m,
        })
        .collect();
    projections::apply_new_messages(&mut tx, &projections::Projection::ALL, &at_once)
        .await
        .unwrap();
    assert_eq!(rows_of(&mut tx, &owners).await, want_without_read);
    tx.rollback().await.unwrap();

    // As the log's events, the read between two runs.
    let mut events: Vec<(UserId, Pts, UserEvent)> = run
        .iter()
        .map(|(owner, pts, m)| {
            (
                *owner,
                *pts,
                UserEvent::NewMessage(NewMessage { message: m.clone() }),
            )
        })
        .collect();
    events.insert(half, (b, read_at, read.clone()));
    let mut tx = db.pool.begin().await.unwrap();
    projections::apply_events(&mut tx, &projections::Projection::ALL, &events)
        .await
        .unwrap();
    assert_eq!(rows_of(&mut tx, &owners).await, want);
    tx.rollback().await.unwrap();
    db.drop().await;
}

/// The boxes and dialogs of `owners`, as JSON text, in key order.
async fn rows_of(conn: &mut sqlx::PgConnection, owners: &[i64]) -> Vec<String> {
    let mut all: Vec<String> = sqlx::query_scalar(
        "SELECT to_jsonb(t)::text FROM message_boxes t WHERE owner_user_id = ANY($1) ORDER BY owner_user_id, box_id",
    )
    .bind(owners)
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    all.extend(
        sqlx::query_scalar::<_, String>(
            "SELECT to_jsonb(t)::text FROM dialogs t WHERE user_id = ANY($1) ORDER BY user_id, peer_user_id",
        )
        .bind(owners)
        .fetch_all(&mut *conn)
        .await
        .unwrap(),
    );
    all
}

/// What the projectors ran per new message before runs were written together.
async fn reference_new_message(
    conn: &mut sqlx::PgConnection,
    owner: UserId,
    pts: Pts,
    m: &OwnerMessage,
) {
    sqlx::query(
        "INSERT INTO message_boxes (owner_user_id, box_id, peer_user_id, message_id, sender_user_id, outgoing, \
         random_id, date, text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date, pts, \
         media, media_id, media_class, grouped_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, NULL, NULL, NULL, $18)",
    )
    .bind(owner.get())
    .bind(m.id.get())
    .bind(m.peer_id.get())
    .bind(m.message_id.0)
    .bind(m.from_id.get())
    .bind(m.out)
    .bind(m.random_id)
    .bind(m.date)
    .bind(&m.text)
    .bind(sqlx::types::Json(&m.entities))
    .bind(m.silent)
    .bind(m.noforwards)
    .bind(m.reply_to.as_ref().map(|r| serde_json::to_value(r).unwrap()))
    .bind(m.fwd_from.as_ref().map(|f| serde_json::to_value(f).unwrap()))
    .bind(m.media_unread)
    .bind(m.edit_date)
    .bind(pts.get())
    .bind(m.grouped_id)
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO dialogs (user_id, peer_user_id, top_message, top_message_date, unread_count, message_count) \
         VALUES ($1, $2, $3, $4, CASE WHEN $5 THEN 0 ELSE 1 END, 1) \
         ON CONFLICT (user_id, peer_user_id) DO UPDATE SET \
           message_count = dialogs.message_count + 1, \
           top_message = GREATEST(dialogs.top_message, EXCLUDED.top_message), \
           top_message_date = CASE WHEN EXCLUDED.top_message > dialogs.top_message \
                                   THEN EXCLUDED.top_message_date ELSE dialogs.top_message_date END, \
           unread_count = dialogs.unread_count \
                          + CASE WHEN NOT $5 AND EXCLUDED.top_message > dialogs.read_inbox_max_id THEN 1 ELSE 0 END",
    )
    .bind(owner.get())
    .bind(m.peer_id.get())
    .bind(m.id.get())
    .bind(m.date)
    .bind(m.out)
    .execute(&mut *conn)
    .await
    .unwrap();
}
