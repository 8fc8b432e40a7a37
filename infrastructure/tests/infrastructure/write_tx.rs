use std::time::Duration;

use application::ports::{LogEntry, Origin, Store, StoreError, StoredEvent};
use domain::events::{NewMessage, PeerBlocked, UserEvent};
use domain::{AuthKeyId, Pts, SessionId, UserId};

use crate::common::{bx, delete, message, send, TestDb};
use infrastructure::PgStore;

/// The events after `after`, in pts order (every row these tests write decodes).
async fn events_after(store: &PgStore, owner: UserId, after: Pts, limit: i64) -> Vec<StoredEvent> {
    let entries = store.log_after(owner, after, limit).await.unwrap();
    entries
        .into_iter()
        .map(|entry| match entry {
            LogEntry::Event(e) => e,
            LogEntry::Undecodable(u) => panic!("undecodable row at pts {}", u.pts.get()),
        })
        .collect()
}

fn blocked(peer: UserId) -> UserEvent {
    UserEvent::PeerBlocked(PeerBlocked {
        peer_id: peer,
        blocked: true,
        my_stories_from: false,
        date: 1,
    })
}

/// One database for the checks that only touch their own accounts.
#[tokio::test]
async fn write_transactions() {
    let db = TestDb::new().await;
    append_assigns_dense_pts_and_box_ids(&db).await;
    lock_users_only_once_with_new_accounts(&db).await;
    counters_that_would_overflow_are_exhausted(&db).await;
    new_messages_are_seen_by_the_transactions_own_reads(&db).await;
    crate::log::the_log_rejects_update_delete_and_truncate(&db).await;
    crate::log::the_log_keeps_the_payload_as_written(&db).await;
    db.drop().await;
}

async fn append_assigns_dense_pts_and_box_ids(db: &TestDb) {
    let (a, b) = (db.user("+100").await, db.user("+101").await);
    for i in 0..3 {
        let sent = send(&db.store, a, b, "hi", 1000 + i).await;
        assert_eq!(sent.sender_box, bx(i + 1));
        assert_eq!(sent.recipient_box, bx(i + 1));
    }
    assert_eq!(db.store.pts(a).await.unwrap(), Pts::new(3).unwrap());
    delete(&db.store, a, vec![bx(1), bx(2)], None).await;
    assert_eq!(db.store.pts(a).await.unwrap(), Pts::new(5).unwrap());
    assert_eq!(db.store.pts(b).await.unwrap(), Pts::new(3).unwrap());

    let events = events_after(&db.store, a, Pts::ZERO, 100).await;
    let shape: Vec<(i32, i32)> = events.iter().map(|e| (e.pts.get(), e.pts_count)).collect();
    assert_eq!(shape, vec![(1, 1), (2, 1), (3, 1), (5, 2)]);
    assert!(events.iter().all(|e| e.date > 1_600_000_000));
    let tail = events_after(&db.store, a, Pts::new(2).unwrap(), 1).await;
    assert_eq!(tail.len(), 1);
    assert_eq!(tail[0].pts.get(), 3);

    // Within a transaction: current_pts moves with each append; the origin is recorded.
    let mut tx = db.store.begin().await.unwrap();
    let missing = UserId::new(999_999).unwrap();
    assert_eq!(tx.lock_users(&[b, missing, a]).await.unwrap(), vec![a, b]);
    assert_eq!(tx.current_pts(a).unwrap().get(), 5);
    let origin = Origin {
        auth_key_id: AuthKeyId(77),
        session_id: SessionId(78),
    };
    assert_eq!(tx.append(a, blocked(b), origin).await.unwrap().get(), 6);
    assert_eq!(tx.current_pts(a).unwrap().get(), 6);
    // Reads in the transaction see its own appends.
    assert!(tx.is_blocked(a, b).await.unwrap());
    // Unlocked accounts are refused.
    assert!(matches!(
        tx.append(missing, blocked(a), origin).await,
        Err(StoreError::Bug(_))
    ));
    assert!(matches!(tx.next_box_id(missing), Err(StoreError::Bug(_))));
    assert!(matches!(tx.current_pts(missing), Err(StoreError::Bug(_))));
    tx.commit().await.unwrap();
    let last = events_after(&db.store, a, Pts::new(5).unwrap(), 10).await;
    assert_eq!(last[0].origin, origin);

    // A transaction dropped without commit leaves nothing behind.
    let mut tx = db.store.begin().await.unwrap();
    tx.lock_users(&[a]).await.unwrap();
    tx.next_box_id(a).unwrap();
    tx.append(a, blocked(b), Origin::default()).await.unwrap();
    drop(tx);
    assert_eq!(db.store.pts(a).await.unwrap().get(), 6);
    let seq: (i32, i32) =
        sqlx::query_as("SELECT pts, box_id FROM user_sequences WHERE user_id = $1")
            .bind(a.get())
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(seq, (6, 3));
}

/// New messages are projected together before the transaction's next read (or at commit): every
/// read sees them, the random_id lookup of a send too.
async fn new_messages_are_seen_by_the_transactions_own_reads(db: &TestDb) {
    use application::ports::SendPreflight;
    let (a, b) = (db.user("+130").await, db.user("+131").await);
    let mut tx = db.store.begin().await.unwrap();
    tx.lock_users(&[a, b]).await.unwrap();
    let mut appended = Vec::new();
    for (i, random_id) in [(0, 501), (1, 502)] {
        let message_id = tx.next_message_id().await.unwrap();
        let mut mine = message(
            tx.next_box_id(a).unwrap(),
            message_id,
            b,
            a,
            true,
            1000 + i,
            "x",
        );
        mine.random_id = Some(random_id);
        let theirs = message(
            tx.next_box_id(b).unwrap(),
            message_id,
            a,
            a,
            false,
            1000 + i,
            "x",
        );
        let pts = tx
            .append(
                a,
                UserEvent::NewMessage(NewMessage { message: mine }),
                Origin::default(),
            )
            .await
            .unwrap();
        tx.append(
            b,
            UserEvent::NewMessage(NewMessage { message: theirs }),
            Origin::default(),
        )
        .await
        .unwrap();
        appended.push(pts);
    }
    // The random_id of a send earlier in the transaction is found (a retry within a batch).
    match tx.send_preflight(a, b, 502, 1002).await.unwrap() {
        SendPreflight::Retry(first, pts) => assert_eq!((first.id, pts), (bx(2), appended[1])),
        SendPreflight::New(_) => panic!("the random_id appended in this transaction was not found"),
    }
    assert!(matches!(
        tx.send_preflight(a, b, 503, 1002).await.unwrap(),
        SendPreflight::New(_)
    ));
    let d = tx
        .dialog(b, a)
        .await
        .unwrap()
        .expect("the recipient's dialog");
    assert_eq!((d.top_message, d.unread_count), (2, 2));
    let boxes = tx.messages(b, &[bx(1), bx(2)]).await.unwrap();
    assert_eq!(boxes.len(), 2);
    tx.commit().await.unwrap();
    assert_eq!(
        db.store.messages(a, &[bx(1), bx(2)]).await.unwrap().len(),
        2
    );
}

async fn lock_users_only_once_with_new_accounts(db: &TestDb) {
    let (a, b) = (db.user("+110").await, db.user("+111").await);
    let mut tx = db.store.begin().await.unwrap();
    tx.lock_users(&[a]).await.unwrap();
    assert_eq!(tx.lock_users(&[a]).await.unwrap(), vec![a]);
    assert!(matches!(
        tx.lock_users(&[a, b]).await,
        Err(StoreError::Bug(_))
    ));
}

async fn counters_that_would_overflow_are_exhausted(db: &TestDb) {
    let (a, b) = (db.user("+120").await, db.user("+121").await);
    sqlx::query(
        "UPDATE user_sequences SET pts = 2147483647, box_id = 2147483647 WHERE user_id = $1",
    )
    .bind(a.get())
    .execute(&db.pool)
    .await
    .unwrap();
    let mut tx = db.store.begin().await.unwrap();
    tx.lock_users(&[a]).await.unwrap();
    assert!(matches!(tx.next_box_id(a), Err(StoreError::Exhausted(u)) if u == a));
    assert!(
        matches!(tx.append(a, blocked(b), Origin::default()).await, Err(StoreError::Exhausted(u)) if u == a)
    );
}

/// Opposite lock orders from the callers' side are sorted into one order, so 50 rounds of racing
/// pairs finish, and every append lands exactly once; a rebuild racing with them neither deadlocks
/// nor loses anything.
#[tokio::test]
async fn opposite_lock_orders_do_not_deadlock() {
    let db = TestDb::new().await;
    let (a, b) = (db.user("+130").await, db.user("+131").await);
    let mut tasks = Vec::new();
    for i in 0..50 {
        for order in [[a, b], [b, a]] {
            let store = db.store.clone();
            tasks.push(tokio::spawn(async move {
                let mut tx = store.begin().await?;
                tx.lock_users(&order).await?;
                let message_id = tx.next_message_id().await?;
                let [from, to] = order;
                for owner in order {
                    let id = tx.next_box_id(owner)?;
                    let peer = if owner == from { to } else { from };
                    let m = message(id, message_id, peer, from, owner == from, i, "race");
                    tx.append(
                        owner,
                        UserEvent::NewMessage(NewMessage { message: m }),
                        Origin::default(),
                    )
                    .await?;
                }
                tx.commit().await
            }));
        }
    }
    let pool = db.pool.clone();
    let rebuild = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        projections::rebuild_all(&pool).await
    });
    let all = tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(tasks))
        .await
        .expect("no deadlock");
    for r in all {
        r.expect("task").expect("transaction");
    }
    rebuild.await.expect("task").expect("rebuild");
    assert_eq!(db.store.pts(a).await.unwrap().get(), 100);
    assert_eq!(db.store.pts(b).await.unwrap().get(), 100);
    let log = events_after(&db.store, a, Pts::ZERO, 1000).await;
    assert_eq!(
        log.iter().map(|e| e.pts.get()).collect::<Vec<_>>(),
        (1..=100).collect::<Vec<_>>()
    );
    let report = projections::verify(&db.pool).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.differences);
    assert_eq!(db.store.history_count(a, b).await.unwrap(), 100);
    db.drop().await;
}
