use application::ports::{DialogCursor, SearchFilter, Store, StoreError};
use domain::history_window::HistoryWindow;
use domain::message::OwnerMessage;

use crate::common::{bx, delete, send, TestDb};

fn ids(page: &[OwnerMessage]) -> Vec<i32> {
    page.iter().map(|m| m.id.get()).collect()
}

#[tokio::test]
async fn store_reads() {
    let db = TestDb::new().await;
    history_windows(&db).await;
    search_escapes_and_windows(&db).await;
    dialog_pages_follow_the_list_order(&db).await;
    profile_watchers_stop_at_their_limit(&db).await;
    db.drop().await;
}

/// A result's columns are checked to be of their types once, when their positions are found
/// (each value is then read unchecked in release builds): a column altered to another type reads
/// as corrupt, naming the column, rather than as wrong values.
#[tokio::test]
async fn a_column_of_another_type_reads_as_corrupt() {
    let db = TestDb::new().await;
    let (a, b) = (db.user("+15550700001").await, db.user("+15550700002").await);
    send(&db.store, a, b, "typed", 100).await;
    let window = HistoryWindow::new(0, 0, 0, 10, 0, 0);
    // Before any read, so no prepared statement has the old result type.
    sqlx::query("ALTER TABLE message_boxes ALTER COLUMN grouped_id TYPE text")
        .execute(&db.pool)
        .await
        .unwrap();
    match db.store.history(a, b, &window).await {
        Err(StoreError::Corrupt(why)) => assert!(why.contains("grouped_id"), "{why}"),
        other => panic!("expected a corrupt column, got {other:?}"),
    }
    db.drop().await;
}

/// Who is pushed a profile photo change: the owner's dialog peers (and contacts), each once, at
/// most `limit` of them (the gateway passes `MAX_PROFILE_PUSH_WATCHERS`).
async fn profile_watchers_stop_at_their_limit(db: &TestDb) {
    let owner = db.user("+15550400001").await;
    let mut peers = Vec::new();
    for i in 2..=4 {
        let peer = db.user(&format!("+1555040000{i}")).await;
        send(&db.store, owner, peer, "hi", 100).await;
        // A reply: the peer's dialog with the owner does not make it a second watcher.
        send(&db.store, peer, owner, "hello", 101).await;
        peers.push(peer);
    }
    let mut all = db.store.profile_watchers(owner, 3).await.unwrap();
    all.sort();
    peers.sort();
    assert_eq!(all, peers, "at the limit: every peer, once");
    assert_eq!(db.store.profile_watchers(owner, 2).await.unwrap().len(), 2);
    assert_eq!(
        db.store.profile_watchers(owner, 100).await.unwrap().len(),
        3
    );
    assert!(db.store.profile_watchers(peers[0], 100).await.unwrap() == vec![owner]);
}

async fn history_windows(db: &TestDb) {
    let (a, b, c) = (
        db.user("+600").await,
        db.user("+601").await,
        db.user("+602").await,
    );
    // Boxes 1..=30 with b, dated 100, 110, ...; then one with c (box 31).
    for i in 0..30 {
        send(&db.store, a, b, &format!("message {i}"), 100 + 10 * i).await;
    }
    send(&db.store, a, c, "elsewhere", 1000).await;
    delete(&db.store, a, vec![bx(25)], None).await;
    let h = |offset_id, offset_date, add_offset, limit, max_id, min_id| {
        let w = HistoryWindow::new(offset_id, offset_date, add_offset, limit, max_id, min_id);
        let store = db.store.clone();
        async move { ids(&store.history(a, b, &w).await.unwrap()) }
    };
    assert_eq!(h(0, 0, 0, 5, 0, 0).await, vec![30, 29, 28, 27, 26]);
    assert_eq!(h(27, 0, 0, 3, 0, 0).await, vec![26, 24, 23]);
    // A negative add_offset reaches up past the anchor (the anchor included).
    assert_eq!(h(15, 0, -3, 6, 0, 0).await, vec![17, 16, 15, 14, 13, 12]);
    // Only two rows are newer, and the older part keeps its share (limit - newer_count).
    assert_eq!(h(29, 0, -5, 6, 0, 0).await, vec![30, 29, 28]);
    // A positive add_offset skips older rows.
    assert_eq!(h(20, 0, 5, 3, 0, 0).await, vec![14, 13, 12]);
    // max_id and min_id are exclusive bounds.
    assert_eq!(h(0, 0, 0, 100, 10, 6).await, vec![9, 8, 7]);
    assert_eq!(h(15, 0, -3, 6, 16, 12).await, vec![15, 14, 13]);
    // offset_date: strictly older than the date (box 11 is dated 200).
    assert_eq!(h(0, 200, 0, 3, 0, 0).await, vec![10, 9, 8]);
    assert_eq!(h(0, 205, -2, 4, 0, 0).await, vec![13, 12, 11, 10]);
    assert_eq!(h(0, 50, 0, 3, 0, 0).await, Vec::<i32>::new());
    assert_eq!(h(0, 50, -2, 3, 0, 0).await, vec![2, 1]);
    assert_eq!(db.store.history_count(a, b).await.unwrap(), 29);
    assert_eq!(db.store.history_count(a, c).await.unwrap(), 1);
}

async fn search_escapes_and_windows(db: &TestDb) {
    let (a, b, c) = (
        db.user("+610").await,
        db.user("+611").await,
        db.user("+612").await,
    );
    send(&db.store, a, b, "100% sure", 1).await; // 1
    send(&db.store, a, b, "1000 sure", 2).await; // 2
    send(&db.store, a, c, "Sure thing", 3).await; // 3
    send(&db.store, a, b, "snake_case", 4).await; // 4
    send(&db.store, a, b, "snakeXcase", 5).await; // 5
    send(&db.store, a, b, "back\\slash", 6).await; // 6
    send(&db.store, a, b, "sure? deleted", 7).await; // 7
    delete(&db.store, a, vec![bx(7)], None).await;
    let w = HistoryWindow::new(0, 0, 0, 20, 0, 0);
    let s = |peer, q: &'static str, w: HistoryWindow| {
        let store = db.store.clone();
        async move {
            let filter = SearchFilter {
                peer,
                ..SearchFilter::default()
            };
            let (page, count) = store.search(a, &filter, q, &w).await.unwrap();
            (ids(&page), count)
        }
    };
    assert_eq!(s(None, "sure", w).await, (vec![3, 2, 1], 3));
    assert_eq!(s(Some(b), "SURE", w).await, (vec![2, 1], 2));
    assert_eq!(s(None, "0%", w).await, (vec![1], 1));
    assert_eq!(s(None, "e_c", w).await, (vec![4], 1));
    assert_eq!(s(None, "k\\s", w).await, (vec![6], 1));
    // Sender and date bounds narrow the match itself, so the count is exact.
    let by_sender = |from| SearchFilter {
        from: Some(from),
        ..SearchFilter::default()
    };
    assert_eq!(
        ids(&db
            .store
            .search(a, &by_sender(a), "sure", &w)
            .await
            .unwrap()
            .0),
        vec![3, 2, 1]
    );
    assert_eq!(
        db.store
            .search(a, &by_sender(b), "sure", &w)
            .await
            .unwrap()
            .1,
        0
    );
    let future = SearchFilter {
        min_date: i32::MAX - 1,
        ..SearchFilter::default()
    };
    assert_eq!(
        db.store.search(a, &future, "sure", &w).await.unwrap(),
        (vec![], 0)
    );
    assert_eq!(
        s(None, "sure", HistoryWindow::new(3, 0, 0, 20, 0, 0)).await,
        (vec![2, 1], 3)
    );
    assert_eq!(
        s(None, "sure", HistoryWindow::new(2, 0, -1, 20, 0, 0)).await,
        (vec![2, 1], 3)
    );
    assert_eq!(
        s(None, "sure", HistoryWindow::new(0, 3, 0, 20, 0, 0)).await,
        (vec![2, 1], 3)
    );
    assert_eq!(
        s(None, "sure", HistoryWindow::new(0, 0, 0, 20, 3, 1)).await,
        (vec![2], 3)
    );
}

async fn dialog_pages_follow_the_list_order(db: &TestDb) {
    let a = db.user("+620").await;
    let mut peers = Vec::new();
    for i in 0..5 {
        peers.push(db.user(&format!("+62{}", i + 1)).await);
    }
    // Two dialogs share a date so the tie-breakers matter.
    for (i, p) in peers.iter().enumerate() {
        let date = if i == 3 { 500 + 2 } else { 500 + i as i32 };
        send(&db.store, *p, a, "hi", date).await;
    }
    let all = db.store.dialogs_page(a, 0, None, 10).await.unwrap();
    let order: Vec<(i32, i32)> = all
        .iter()
        .map(|d| (d.top_message_date, d.top_message))
        .collect();
    assert_eq!(
        order,
        vec![(504, 5), (502, 4), (502, 3), (501, 2), (500, 1)]
    );
    let first = db.store.dialogs_page(a, 0, None, 2).await.unwrap();
    let last = &first[1];
    let cursor = DialogCursor {
        top_message_date: last.top_message_date,
        top_message: last.top_message,
        peer_id: last.peer_id.get(),
    };
    let next = db.store.dialogs_page(a, 0, Some(cursor), 2).await.unwrap();
    assert_eq!(next, all[2..4].to_vec());
    assert!(db
        .store
        .dialogs_page(a, 1, None, 10)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(db.store.dialogs_count(a, 0).await.unwrap(), 5);
    let hash = db.store.dialogs_hash_input(a, 0).await.unwrap();
    assert_eq!(hash[0], (peers[4].get(), 5, 504));
    assert_eq!(db.store.unread_total(a).await.unwrap(), 5);
    let some = db
        .store
        .dialogs_of_peers(a, &[peers[2], peers[0]])
        .await
        .unwrap();
    assert_eq!(
        some.iter().map(|d| d.peer_id).collect::<Vec<_>>(),
        vec![peers[2], peers[0]]
    );
}
