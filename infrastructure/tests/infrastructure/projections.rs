use application::ports::Store;
use domain::events::ClearHistory;
use domain::message::{ForwardHeader, ReplyHeader};

use crate::common::{
    block, bx, delete, dialog, edit, read_contents, read_history, send, send_with, TestDb,
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
