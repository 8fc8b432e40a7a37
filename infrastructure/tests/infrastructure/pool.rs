//! The serving pool's connection checks: a busy connection is handed out without a ping, one that
//! sat idle for [`PING_WHEN_IDLE_FOR`] is pinged first, so a connection the database closed
//! meanwhile (a restart, a failover, an operator) is replaced before any call uses it.

use infrastructure::postgres::{connect_with, SessionSettings, PING_WHEN_IDLE_FOR};
use sqlx::PgPool;

use crate::common::{database_url, TestDb};

async fn backend_pid(pool: &PgPool) -> i32 {
    sqlx::query_scalar("SELECT pg_backend_pid()")
        .fetch_one(pool)
        .await
        .expect("a query on the pool")
}

#[tokio::test]
async fn an_idle_connection_closed_by_the_server_is_replaced_before_use() {
    let db = TestDb::new().await;
    let url = match database_url().rsplit_once('/') {
        Some((server, _)) => format!("{server}/{}", db.name),
        None => panic!("a database URL with a path"),
    };
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
