//! Reads on a real streaming replica (`DATABASE_READ_URL`): `PTSLOG_TEST_PAIR_PRIMARY_URL` and
//! `PTSLOG_TEST_PAIR_REPLICA_URL`, a primary and its physical standby of their own
//! (`start_postgres_pair` in scripts/lib/services.sh).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use application::ports::{Accounts, Store};
use domain::history_window::HistoryWindow;
use domain::{Pts, UserId};
use infrastructure::postgres::read_pool::ReadPool;
use infrastructure::postgres::replica::{Freshness, Replica};
use infrastructure::postgres::{connect_with, SessionSettings};
use infrastructure::{PgAccounts, PgStore};
use sqlx::{Connection, Executor, PgConnection, PgPool};

use crate::common::{database_url, send, TestDb};

struct Pair {
    primary: String,
    replica: String,
}

fn pair() -> Option<Pair> {
    match (
        std::env::var("PTSLOG_TEST_PAIR_PRIMARY_URL"),
        std::env::var("PTSLOG_TEST_PAIR_REPLICA_URL"),
    ) {
        (Ok(primary), Ok(replica)) => Some(Pair { primary, replica }),
        _ => {
            eprintln!("PTSLOG_TEST_PAIR_*_URL unset: skipping (scripts/test sets them)");
            None
        }
    }
}

fn with_db(url: &str, db: &str) -> String {
    match url.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{db}"),
        None => panic!("a database URL with a path"),
    }
}

/// A migrated database on the pair's primary, once the replica has it too.
struct PairDb {
    name: String,
    primary_url: String,
    replica_url: String,
    pool: PgPool,
    admin: String,
}

impl PairDb {
    async fn new(pair: &Pair) -> PairDb {
        let name = format!("ptslog_rep_{:016x}", rand::random::<u64>());
        let mut admin = PgConnection::connect(&pair.primary)
            .await
            .expect("the pair's primary");
        admin
            .execute(format!("CREATE DATABASE {name}").as_str())
            .await
            .expect("create database");
        let _ = admin.close().await;
        let primary_url = with_db(&pair.primary, &name);
        let pool = connect_with(&primary_url, 4, SessionSettings::SERVING)
            .await
            .expect("the primary's pool");
        infrastructure::migrate(&pool).await.expect("migrate");
        let replica_url = with_db(&pair.replica, &name);
        // The replica has the database and its schema once it replayed the migrations.
        let start = Instant::now();
        loop {
            if let Ok(mut conn) = PgConnection::connect(&replica_url).await {
                let migrated: Result<i64, _> =
                    sqlx::query_scalar("SELECT count(*) FROM user_sequences")
                        .fetch_one(&mut conn)
                        .await;
                if migrated.is_ok() {
                    break;
                }
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the replica never replayed the new database"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        PairDb {
            name,
            primary_url,
            replica_url,
            pool,
            admin: pair.primary.clone(),
        }
    }

    /// A store and accounts as `serve` wires them with `DATABASE_READ_URL`: a replica of their
    /// own with its own marks (one instance).
    fn instance(&self) -> (PgStore, PgAccounts, Arc<Replica>) {
        let read = ReadPool::new(&self.primary_url, 4, SessionSettings::SERVING).expect("read");
        let replica_pool =
            ReadPool::new(&self.replica_url, 4, SessionSettings::SERVING).expect("replica");
        let replica = Arc::new(Replica::new(replica_pool, Freshness::new()));
        let store = PgStore::with_read_pool(self.pool.clone(), read).with_replica(replica.clone());
        let accounts =
            PgAccounts::new(self.pool.clone()).with_freshness(replica.freshness().clone());
        (store, accounts, replica)
    }

    async fn replica_conn(&self) -> PgConnection {
        PgConnection::connect(&self.replica_url)
            .await
            .expect("the replica")
    }

    async fn drop(self) {
        self.pool.close().await;
        if let Ok(mut conn) = PgConnection::connect(&self.admin).await {
            let _ = conn
                .execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
                .await;
        }
    }
}

/// Replay paused on the replica; resumed when dropped too, so that a failing test does not leave
/// the replica (which later tests and runs reuse) paused.
struct Paused {
    url: Option<String>,
}

impl Paused {
    async fn new(standby: &mut PgConnection, url: &str) -> Paused {
        standby
            .execute("SELECT pg_wal_replay_pause()")
            .await
            .expect("pause replay");
        Paused {
            url: Some(url.to_string()),
        }
    }

    async fn resume(mut self, standby: &mut PgConnection) {
        self.url = None;
        standby
            .execute("SELECT pg_wal_replay_resume()")
            .await
            .expect("resume replay");
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        let Some(url) = self.url.take() else { return };
        // Off the test's runtime, which may be unwinding.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async {
                if let Ok(mut conn) = PgConnection::connect(&url).await {
                    let _ = conn.execute("SELECT pg_wal_replay_resume()").await;
                }
            });
        })
        .join();
    }
}

fn counts(replica: &Replica) -> (u64, u64, u64) {
    let c = &replica.counts;
    (
        c.on_replica.load(Ordering::Relaxed),
        c.on_primary.load(Ordering::Relaxed),
        c.waited.load(Ordering::Relaxed),
    )
}

async fn history_texts(store: &PgStore, owner: UserId, peer: UserId) -> Vec<String> {
    let window = HistoryWindow::new(0, 0, 0, 100, 0, 0);
    let page = store
        .history_page(owner, peer, &window)
        .await
        .expect("history");
    page.messages.into_iter().map(|m| m.text).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_serves_reads_and_each_account_still_sees_its_own_writes() {
    let Some(pair) = pair() else { return };
    let db = PairDb::new(&pair).await;
    let (store, accounts, replica) = db.instance();

    // A new account's first read: its state, which only the primary had a moment ago.
    let (a, _) = accounts.login("+15550990001", "A", "").await.expect("a");
    let (b, _) = accounts.login("+15550990002", "B", "").await.expect("b");
    let (c, _) = accounts.login("+15550990003", "C", "").await.expect("c");
    let (a, b, c) = (a.id, b.id, c.id);
    let state = store.account_state(a).await.expect("a's state");
    assert_eq!(state.pts.get(), 0);

    // Each send read back at once: never missing, whichever server answered.
    for i in 0..20 {
        let text = format!("message {i}");
        send(&store, a, b, &text, 100 + i).await;
        let texts = history_texts(&store, a, b).await;
        assert_eq!(
            texts.first(),
            Some(&text),
            "a's own send, read back at once"
        );
        let (state, _) = store
            .difference(b, Pts::new(0).unwrap(), 100)
            .await
            .expect("difference");
        assert_eq!(state.pts.get(), i + 1, "the recipient's state has the send");
    }
    let (on_replica, _, _) = counts(&replica);
    assert!(
        on_replica > 0,
        "the replica served reads: {:?}",
        counts(&replica)
    );

    // An account whose writes the replica is known to have replayed reads there without waiting.
    let before = counts(&replica);
    assert!(history_texts(&store, c, a).await.is_empty());
    let after = counts(&replica);
    assert_eq!(
        (after.0 - before.0, after.1 - before.1, after.2 - before.2),
        (1, 0, 0),
        "one read on the replica, no wait"
    );

    // The replica stops replaying: a's next send is read from the primary after a bounded wait.
    let mut standby = db.replica_conn().await;
    let paused = Paused::new(&mut standby, &db.replica_url).await;
    send(&store, a, b, "while the replica is paused", 200).await;
    let before = counts(&replica);
    let texts = history_texts(&store, a, b).await;
    assert_eq!(
        texts.first().map(String::as_str),
        Some("while the replica is paused")
    );
    let after = counts(&replica);
    assert_eq!(
        (after.1 - before.1, after.2 - before.2),
        (1, 1),
        "waited for the replica, then read on the primary"
    );

    // Another instance writes for c, which this one never marked: c's client, holding the new
    // pts from a push, asks for the difference from it and gets a state no older than its own.
    let (other, _, _) = db.instance();
    send(&other, c, a, "through another instance", 300).await;
    let c_pts: i32 = sqlx::query_scalar("SELECT pts FROM user_sequences WHERE user_id = $1")
        .bind(c.get())
        .fetch_one(&db.pool)
        .await
        .expect("c's pts on the primary");
    let replayed: i32 = sqlx::query_scalar("SELECT pts FROM user_sequences WHERE user_id = $1")
        .bind(c.get())
        .fetch_one(&mut standby)
        .await
        .expect("c's pts on the replica");
    assert!(
        replayed < c_pts,
        "the paused replica is behind ({replayed} < {c_pts})"
    );
    let before = counts(&replica);
    let (state, entries) = store
        .difference(c, Pts::new(c_pts).unwrap(), 100)
        .await
        .expect("difference");
    assert_eq!(
        state.pts.get(),
        c_pts,
        "never a state older than the client's"
    );
    assert!(entries.is_empty());
    let after = counts(&replica);
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (1, 1),
        "asked on the replica first, then on the primary"
    );

    // Replaying again: a's reads go back to the replica.
    paused.resume(&mut standby).await;
    let start = Instant::now();
    loop {
        let before = counts(&replica);
        let texts = history_texts(&store, a, b).await;
        assert_eq!(
            texts.first().map(String::as_str),
            Some("while the replica is paused")
        );
        if counts(&replica).0 > before.0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the replica never caught up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = standby.close().await;
    db.drop().await;
}

#[tokio::test]
async fn only_a_replica_of_the_primary_is_taken() {
    let Some(pair) = pair() else { return };
    let replica_pool =
        ReadPool::new(&pair.replica, 1, SessionSettings::SERVING).expect("replica pool");
    let replica = Replica::new(replica_pool, Freshness::new());
    let primary = connect_with(&pair.primary, 1, SessionSettings::SERVING)
        .await
        .expect("the pair's primary");
    assert!(replica.same_cluster(&primary).await.expect("check"));
    // The suite's main instance is another cluster.
    let other = connect_with(&database_url(), 1, SessionSettings::SERVING)
        .await
        .expect("the main instance");
    assert!(!replica.same_cluster(&other).await.expect("check"));
    primary.close().await;
    other.close().await;
}

#[tokio::test]
async fn a_replica_that_is_down_sends_reads_to_the_primary() {
    let db = TestDb::new().await;
    let (a, b) = (db.user("+15550990101").await, db.user("+15550990102").await);
    send(&db.store, a, b, "on the primary", 100).await;
    let url = with_db(&database_url(), &db.name);
    // Nothing listens on port 1.
    let down = ReadPool::with_connect_timeout(
        &format!("postgres://postgres@127.0.0.1:1/{}", db.name),
        2,
        SessionSettings::SERVING,
        Duration::from_secs(2),
    )
    .expect("pool");
    let replica = Arc::new(Replica::new(down, Freshness::new()));
    let read = ReadPool::new(&url, 2, SessionSettings::SERVING).expect("read");
    let store = PgStore::with_read_pool(db.pool.clone(), read).with_replica(replica.clone());
    for _ in 0..3 {
        assert_eq!(
            history_texts(&store, a, b).await,
            vec!["on the primary".to_string()]
        );
    }
    assert_eq!(counts(&replica), (0, 3, 0), "every read on the primary");
    db.drop().await;
}
