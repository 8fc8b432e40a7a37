//! The Postgres adapters.

pub mod accounts;
pub mod log_export;
pub mod mtproto_keys;
pub(crate) mod queries;
pub(crate) mod rows;
pub mod secrets;
pub mod store;
pub mod write_tx;

use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgPool};

static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// A pool of at most `max_conns` connections.
pub async fn connect(url: &str, max_conns: u32) -> Result<PgPool, sqlx::Error> {
    PgPoolOptions::new()
        .max_connections(max_conns.max(1))
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
}

/// Applies pending migrations. Safe when several processes start at once: sqlx's migrator holds a
/// session-level `pg_advisory_lock` (keyed by the database name) from before it creates its
/// bookkeeping table until it is done, so the others wait and then find nothing left to do.
pub async fn migrate(pool: &PgPool) -> Result<(), MigrateError> {
    let mut conn = pool.acquire().await?;
    let result = MIGRATOR.run(&mut *conn).await;
    if result.is_err() {
        // A failed run returns before it unlocks; closing the session releases the advisory lock,
        // which a connection handed back to the pool would keep holding.
        let _ = conn.detach().close().await;
    }
    result
}
