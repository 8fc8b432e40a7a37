//! The hot reads addressed to the account's partition: the partition computed in the server is the
//! one Postgres routes the account's rows to, each addressed statement answers exactly what the
//! same statement over the parents answers, and a database partitioned otherwise is read through
//! the parents.

use application::ports::Store;
use domain::history_window::HistoryWindow;
use domain::{Pts, UserId};
use infrastructure::postgres::partitions::{self, Partition, USER_PARTITIONS};
use infrastructure::postgres::store::statements;
use infrastructure::PgStore;
use sqlx::PgPool;

use crate::common::{send, TestDb};

#[tokio::test]
async fn each_account_is_in_the_partition_postgres_routes_it_to() {
    let db = TestDb::new().await;
    let mut conn = db.pool.acquire().await.unwrap();
    assert!(partitions::verify(&mut conn).await.unwrap());

    // Small ids as a sequence hands them out, and ids across the whole positive range.
    let mut keys: Vec<i64> = (1..=3000).collect();
    keys.extend((0..3000).map(|_| rand::random::<i64>().unsigned_abs() as i64 >> 1));
    keys.extend([i64::MAX, 1 << 32, (1 << 32) - 1, (1 << 31) - 1, 1 << 31]);
    keys.retain(|k| *k > 0);
    let ours: Vec<i32> = keys
        .iter()
        .map(|k| Partition::of(UserId::new(*k).unwrap()).get() as i32)
        .collect();
    // Postgres's routing, asked of every table the reads are addressed to.
    for table in partitions::ADDRESSABLE_TABLES {
        let wrong: Vec<i64> = sqlx::query_scalar(&format!(
            "SELECT k FROM unnest($1::bigint[], $2::int[]) AS s(k, r) \
             WHERE NOT satisfies_hash_partition('{table}'::regclass, {USER_PARTITIONS}, r, k)"
        ))
        .bind(&keys)
        .bind(&ours)
        .fetch_all(&mut *conn)
        .await
        .unwrap();
        assert!(wrong.is_empty(), "{table}: {wrong:?}");
    }
    // Each partition gets its share.
    let mut counts = vec![0usize; USER_PARTITIONS as usize];
    for p in &ours[..3000] {
        counts[*p as usize] += 1;
    }
    assert!(counts.iter().all(|c| *c > 100), "{counts:?}");
    drop(conn);
    db.drop().await;
}

/// A statement's argument.
#[derive(Clone)]
enum Arg {
    I64(i64),
    I32(i32),
    I16(i16),
    Bool(bool),
    I64s(Vec<i64>),
    I32s(Vec<i32>),
}

/// Rows of `sql` with `args`, as JSON text, in the statement's own order.
async fn rows(pool: &PgPool, sql: &str, args: &[Arg]) -> Vec<String> {
    let wrapped = format!("SELECT to_jsonb(t)::text FROM ({sql}) t");
    let mut q = sqlx::query_scalar::<_, String>(&wrapped);
    for a in args {
        q = match a.clone() {
            Arg::I64(v) => q.bind(v),
            Arg::I32(v) => q.bind(v),
            Arg::I16(v) => q.bind(v),
            Arg::Bool(v) => q.bind(v),
            Arg::I64s(v) => q.bind(v),
            Arg::I32s(v) => q.bind(v),
        };
    }
    q.fetch_all(pool)
        .await
        .unwrap_or_else(|e| panic!("{e}: {sql}"))
}

/// `statement` for the partition and for the parents answer the same, and something.
async fn same(
    pool: &PgPool,
    name: &str,
    statement: impl Fn(Option<Partition>) -> &'static str,
    owner: UserId,
    args: &[Arg],
) -> Vec<String> {
    let addressed = statement(Some(Partition::of(owner)));
    assert!(
        addressed.contains(&format!("_p{} ", Partition::of(owner).get())),
        "{addressed}"
    );
    let answer = rows(pool, addressed, args).await;
    assert!(!answer.is_empty(), "{name} of {owner} answered nothing");
    assert_eq!(
        answer,
        rows(pool, statement(None), args).await,
        "{name} of {owner}"
    );
    answer
}

#[tokio::test]
async fn addressed_statements_answer_what_the_parents_answer() {
    let db = TestDb::new().await;
    let users: Vec<UserId> = {
        let mut v = Vec::new();
        for i in 0..12 {
            v.push(db.user(&format!("+1555072{i:04}")).await);
        }
        v
    };
    // Chats between neighbours, contacts both ways, a muted chat and a pinned one.
    for (i, a) in users.iter().enumerate() {
        let b = users[(i + 1) % users.len()];
        let c = users[(i + 3) % users.len()];
        send(&db.store, *a, b, &format!("hello {i}"), 100 + i as i32).await;
        send(&db.store, c, *a, &format!("hi {i}"), 200 + i as i32).await;
        sqlx::raw_sql(&format!(
            "INSERT INTO contacts (owner_user_id, contact_user_id, first_name, date) VALUES ({}, {}, 'F', 1); \
             INSERT INTO reverse_contacts (contact_user_id, owner_user_id) VALUES ({}, {}); \
             INSERT INTO notify_settings (owner_user_id, peer_user_id, mute_until) VALUES ({}, {}, 2000000000); \
             UPDATE dialogs SET pinned_order = 1 WHERE user_id = {} AND peer_user_id = {}",
            a.get(), b.get(), b.get(), a.get(), a.get(), c.get(), a.get(), b.get()
        ))
        .execute(&db.pool)
        .await
        .unwrap();
    }
    let mut compared = 0;
    for (i, owner) in users.iter().enumerate() {
        let o = Arg::I64(owner.get());
        let peer = Arg::I64(users[(i + 1) % users.len()].get());
        let pool = &db.pool;
        let difference = [o.clone(), Arg::I32(0), Arg::I64(100)];
        same(
            pool,
            "difference",
            statements::difference,
            *owner,
            &difference,
        )
        .await;
        same(
            pool,
            "state",
            statements::state_head,
            *owner,
            std::slice::from_ref(&o),
        )
        .await;
        let page = [
            o.clone(),
            peer,
            Arg::I64(i64::MAX),
            Arg::I64(0),
            Arg::I64(0),
            Arg::I64(50),
        ];
        same(pool, "history", statements::history_page, *owner, &page).await;
        for cursor in [false, true] {
            let list = [
                o.clone(),
                Arg::I16(0),
                Arg::I64(100),
                Arg::Bool(true),
                Arg::I32(i32::MAX),
                Arg::I32(0),
                Arg::I64(0),
            ];
            let dialogs = same(
                pool,
                "dialogs",
                |p| statements::dialog_list(cursor, p),
                *owner,
                &list,
            )
            .await;
            // The pinned chat and the muted one's settings came through.
            assert!(
                dialogs.iter().any(|r| r.contains("\"pinned\": true")),
                "{dialogs:?}"
            );
            assert!(
                dialogs.iter().any(|r| r.contains("2000000000")),
                "{dialogs:?}"
            );
        }
        let ids = [o.clone(), Arg::I32s(vec![1, 2, 3])];
        same(pool, "messages", statements::messages_by_ids, *owner, &ids).await;
        let seen = [
            o.clone(),
            Arg::I64s(users.iter().map(|u| u.get()).collect()),
        ];
        let users_seen = same(pool, "users", statements::users_seen_by, *owner, &seen).await;
        // The viewer's contact and someone who has the viewer as a contact are in the answer.
        assert!(
            users_seen
                .iter()
                .any(|r| r.contains("\"first_name\": \"F\"")),
            "{users_seen:?}"
        );
        assert!(
            users_seen
                .iter()
                .any(|r| r.contains("\"has_viewer\": true")),
            "{users_seen:?}"
        );
        compared += 1;
    }
    assert_eq!(compared, users.len());
    // And the store itself, which addresses its reads, answers them.
    let (a, b) = (users[0], users[1]);
    let page = db
        .store
        .history_page(a, b, &HistoryWindow::new(0, 0, 0, 10, 0, 0))
        .await
        .unwrap();
    assert_eq!(page.messages.len(), 1);
    assert_eq!(page.count, 1);
    db.drop().await;
}

#[tokio::test]
async fn a_database_partitioned_otherwise_is_read_through_the_parents() {
    let db = TestDb::new().await;
    let (a, b) = (db.user("+15550730001").await, db.user("+15550730002").await);
    send(&db.store, a, b, "through the parent", 100).await;
    // An operator split one partition's rows under another name: the names no longer follow
    // the migrations', so no statement may name a partition.
    sqlx::query("ALTER TABLE dialogs_p5 RENAME TO dialogs_old5")
        .execute(&db.pool)
        .await
        .unwrap();
    let mut conn = db.pool.acquire().await.unwrap();
    assert!(!partitions::verify(&mut conn).await.unwrap());
    drop(conn);

    let store = PgStore::new(db.pool.clone());
    let (state, entries) = store.difference(a, Pts::new(0).unwrap(), 10).await.unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(state.pts.get(), 1);
    let page = store
        .history_page(b, a, &HistoryWindow::new(0, 0, 0, 10, 0, 0))
        .await
        .unwrap();
    assert_eq!(page.messages.len(), 1);
    let list = store.dialog_list(a, 0, None, 10, false).await.unwrap();
    assert_eq!(list.page.len(), 1);
    db.drop().await;
}
