//! The serving pool's connection checks: a busy connection is handed out without a ping, one that
//! sat idle for [`PING_WHEN_IDLE_FOR`] is pinged first, so a connection the database closed
//! meanwhile (a restart, a failover, an operator) is replaced before any call uses it.

use infrastructure::postgres::{connect_with, SessionSettings, PING_WHEN_IDLE_FOR};
use sqlx::PgPool;

use crate::common::{database_url, TestDb};

/// The URL of the test's own database.
fn url_of(db: &TestDb) -> String {
    match database_url().rsplit_once('/') {
        Some((server, _)) => format!("{server}/{}", db.name),
        None => panic!("a database URL with a path"),
    }
}

async fn backend_pid(pool: &PgPool) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(pool)
        .await
        .expect("a query on the pool")
}

#[tokio::test]
async fn an_idle_connection_closed_by_the_server_is_replaced_before_use() {
    let db = TestDb::new().await;
    let url = url_of(&db);
    // One connection, so the pool can only hand out that one or a new one.
    let pool = connect_with(&url, 1, SessionSettings::SERVING)
        .await
        .expect("the serving pool");
    let first = backend_pid(&pool).await;
    // Busy: the same connection again at once.
    assert_eq!(backend_pid(&pool).await, first);

    let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(first)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert!(ended);
    // Idle past the threshold: pinged on acquire, found closed, replaced; the query succeeds.
    tokio::time::sleep(PING_WHEN_IDLE_FOR + std::time::Duration::from_millis(300)).await;
    let second = backend_pid(&pool).await;
    assert_ne!(second, first, "a new connection");
    assert_eq!(backend_pid(&pool).await, second);
    pool.close().await;
    db.drop().await;
}

/// The read pool hands a connection back without a round trip and checks it before use only when
/// it sat idle: one the server closed meanwhile is replaced; one that fails a statement on the
/// connection itself is closed, not handed out again.
#[tokio::test]
async fn read_connections_closed_by_the_server_are_replaced() {
    use infrastructure::postgres::read_pool::ReadPool;

    let db = TestDb::new().await;
    let url = url_of(&db);
    let pool = ReadPool::new(&url, 1, SessionSettings::SERVING).expect("the read pool");
    let pid = |pool: ReadPool| async move {
        let mut conn = pool.get().await.expect("a read connection");
        sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()")
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| conn.failed(e))
    };
    let first = pid(pool.clone()).await.unwrap();
    assert_eq!(
        pid(pool.clone()).await.unwrap(),
        first,
        "the same connection again"
    );
    // The serving settings reached the session.
    let mut conn = pool.get().await.unwrap();
    let mode: String = sqlx::query_scalar("SHOW plan_cache_mode")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(mode, "force_generic_plan");
    let pending: String = sqlx::query_scalar("SHOW gin_pending_list_limit")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(pending, "256kB");
    drop(conn);

    // A statement given up half way (its caller cancelled): the connection goes back without a
    // round trip, and its next user still gets its own answer, in a transaction of its own.
    {
        let mut conn = pool.get().await.unwrap();
        let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
        sqlx::query("SET LOCAL application_name = 'cancelled'")
            .execute(&mut *tx)
            .await
            .unwrap();
        let slow = sqlx::query_scalar::<_, i32>("SELECT 7 FROM pg_sleep(0.3)").fetch_one(&mut *tx);
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(50), slow)
                .await
                .is_err()
        );
    }
    let mut conn = pool.get().await.unwrap();
    let (answer, name): (i32, String) =
        sqlx::query_as("SELECT 42, current_setting('application_name')")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
    assert_eq!(answer, 42);
    assert_ne!(
        name, "cancelled",
        "the cancelled transaction was still open"
    );
    drop(conn);
    let first = pid(pool.clone()).await.unwrap();

    // Closed while idle: pinged before the next use and replaced.
    terminate(&db.pool, first).await;
    tokio::time::sleep(PING_WHEN_IDLE_FOR + std::time::Duration::from_millis(300)).await;
    let second = pid(pool.clone()).await.unwrap();
    assert_ne!(second, first);

    // Closed while in use: the next statement fails, and the connection is not handed out again.
    terminate(&db.pool, second).await;
    let failed = pid(pool.clone()).await;
    assert!(failed.is_err());
    let third = pid(pool.clone()).await;
    let third = third.unwrap();
    assert!(third != second && third != first);
    db.drop().await;
}

async fn terminate(admin: &PgPool, pid: i32) {
    let ended: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
        .bind(pid)
        .fetch_one(admin)
        .await
        .unwrap();
    assert!(ended);
    // pg_terminate_backend only signals: wait until the backend is gone.
    for _ in 0..200 {
        let alive: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)")
                .bind(pid)
                .fetch_one(admin)
                .await
                .unwrap();
        if !alive {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("backend {pid} did not end");
}

/// Every read of the store runs on the read pool: with the write pool's one connection held (a
/// writer waiting on its commit), each read still answers at once. getMessages, the action bar's
/// settings and the notification settings ran on the write pool until 2026-12-06.
#[tokio::test]
async fn the_stores_reads_never_wait_for_a_write_connection() {
    use application::ports::Store;
    use domain::history_window::HistoryWindow;
    use domain::Pts;
    use infrastructure::postgres::read_pool::ReadPool;
    use infrastructure::PgStore;

    use crate::common::bx;

    let db = TestDb::new().await;
    let (a, b) = (db.user("+15550710001").await, db.user("+15550710002").await);
    crate::common::send(&db.store, a, b, "on the read pool", 100).await;
    let url = url_of(&db);
    let write = connect_with(&url, 1, SessionSettings::SERVING)
        .await
        .expect("the write pool");
    let read = ReadPool::new(&url, 2, SessionSettings::SERVING).expect("the read pool");
    let store = PgStore::with_read_pool(write.clone(), read);
    let held = write.acquire().await.expect("the only write connection");

    let window = HistoryWindow::new(0, 0, 0, 10, 0, 0);
    let messages = at_once("messages", store.messages(a, &[bx(1)])).await;
    assert_eq!(messages.len(), 1);
    let page = at_once("history_page", store.history_page(a, b, &window)).await;
    assert_eq!(page.messages.len(), 1);
    let (_, entries) = at_once("difference", store.difference(a, Pts::new(0).unwrap(), 10)).await;
    assert_eq!(entries.len(), 1);
    let users = at_once("users_seen_by", store.users_seen_by(a, &[a, b])).await;
    assert_eq!(users.len(), 2);
    assert!(!at_once("peer_bar_hidden", store.peer_bar_hidden(a, b)).await);
    let notify = at_once("notify_settings", store.notify_settings(a, b)).await;
    assert_eq!(notify, domain::events::PeerNotify::default());
    drop(held);
    write.close().await;
    db.drop().await;
}

/// The read's answer, which must come well before the write pool's acquire timeout.
async fn at_once<T>(
    what: &str,
    read: impl std::future::Future<Output = Result<T, application::ports::StoreError>>,
) -> T {
    match tokio::time::timeout(std::time::Duration::from_secs(2), read).await {
        Ok(answer) => answer.unwrap_or_else(|e| panic!("{what}: {e}")),
        Err(_) => panic!("{what} waited for the write pool"),
    }
}

/// A serving connection keeps [`STATEMENT_CACHE_CAPACITY`] prepared statements (the hot reads
/// once per partition, and the rest) and no more: the next one pushes the oldest out.
#[tokio::test]
async fn a_serving_connection_keeps_its_statement_cache_capacity_of_prepared_statements() {
    use infrastructure::postgres::STATEMENT_CACHE_CAPACITY;

    let db = TestDb::new().await;
    let pool = connect_with(&url_of(&db), 1, SessionSettings::SERVING)
        .await
        .expect("the serving pool");
    let prepared = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM pg_prepared_statements")
            .fetch_one(&pool)
            .await
            .unwrap()
    };
    // With the count's own statement, the cache is then full.
    for i in 0..STATEMENT_CACHE_CAPACITY - 1 {
        sqlx::query(&format!("SELECT {i}::int AS n"))
            .execute(&pool)
            .await
            .unwrap();
    }
    assert_eq!(prepared().await, STATEMENT_CACHE_CAPACITY as i64);
    sqlx::query("SELECT -1::int AS n")
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(prepared().await, STATEMENT_CACHE_CAPACITY as i64);
    pool.close().await;
    db.drop().await;
}

/// The warm-up at start leaves every read connection with each hot read prepared and planned
/// for every partition, and the reads then answer as before.
#[tokio::test]
async fn warmed_read_connections_hold_every_partitions_hot_reads_planned() {
    use application::ports::Store;
    use domain::Pts;
    use infrastructure::postgres::hot_reads::WARMED_PER_PARTITION;
    use infrastructure::postgres::partitions::USER_PARTITIONS;
    use infrastructure::postgres::read_pool::ReadPool;
    use infrastructure::PgStore;

    let db = TestDb::new().await;
    let (a, b) = (db.user("+15550740001").await, db.user("+15550740002").await);
    crate::common::send(&db.store, a, b, "warm", 100).await;
    let url = url_of(&db);
    let read = ReadPool::new(&url, 2, SessionSettings::SERVING).expect("the read pool");
    let store = PgStore::with_read_pool(db.pool.clone(), read.clone());
    assert_eq!(store.warm_read_connections().await.unwrap(), 2);

    // Both connections (held together, so each is a different one): every addressed statement
    // prepared, each with its generic plan made.
    let mut conns = vec![read.get().await.unwrap(), read.get().await.unwrap()];
    for conn in &mut conns {
        let (addressed, planned): (i64, i64) = sqlx::query_as(
            "SELECT count(*), count(*) FILTER (WHERE generic_plans > 0) FROM pg_prepared_statements \
             WHERE statement ~ '_p[0-9]+ '",
        )
        .fetch_one(&mut **conn)
        .await
        .unwrap();
        let want = (WARMED_PER_PARTITION * USER_PARTITIONS as usize) as i64;
        assert_eq!((addressed, planned), (want, want));
    }
    drop(conns);
    let (_, entries) = store.difference(a, Pts::new(0).unwrap(), 10).await.unwrap();
    assert_eq!(entries.len(), 1);
    db.drop().await;
}
