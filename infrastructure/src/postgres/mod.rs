//! The Postgres adapters.

pub mod accounts;
pub mod auth_key_cipher;
pub mod hot_reads;
pub mod log_export;
pub mod login_codes;
pub mod media_catalog;
pub mod mtproto_keys;
pub mod partitions;
pub mod passwords;
pub(crate) mod profile_photos;
pub(crate) mod queries;
pub mod read_pool;
pub mod replica;
pub mod revocations;
pub(crate) mod rows;
pub mod secrets;
pub mod store;
pub mod uploads;
pub mod write_tx;

use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};

static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// The longest one statement of the serving pool may run before Postgres cancels it
/// (`PTSLOG_DB_STATEMENT_TIMEOUT_MS`; answered `503 TIMEOUT`). The slowest statement an RPC runs
/// is a search or a 100-event getDifference page, well under a second on a loaded server; 10 s
/// means something waits on a lock or the database is in trouble, and the connection is better
/// given back.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a serving connection may sit idle inside a transaction before Postgres ends the
/// session (`PTSLOG_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS`). Handlers never wait on anything but the
/// database inside a transaction, so an idle one is a stuck or cancelled task whose locks would
/// otherwise block the accounts it locked.
pub const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a call waits for a free connection of the pool.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// A pooled connection idle at least this long is pinged before it is handed out. sqlx pings
/// every connection on acquire by default: a round trip more per statement, which on a busy
/// server (connections idle for microseconds between calls) was a third of a read's round trips
/// for nothing. A connection that sat idle may have been closed by a restart or a failover
/// meanwhile, so those are still checked (and replaced) before a call uses them. (sqlx also pings
/// each connection when it goes back to the pool, which no option turns off.)
pub const PING_WHEN_IDLE_FOR: Duration = Duration::from_secs(1);

/// How many prepared statements each serving connection keeps (sqlx's default is 100). The hot
/// reads are prepared once per partition they are addressed to ([`partitions`]: six statements
/// × 16 partitions), and a statement pushed out of the cache is closed and prepared and planned
/// again at its next use. Each is a plan over one partition, smaller than the one plan over all
/// sixteen it replaces.
pub const STATEMENT_CACHE_CAPACITY: usize = 256;

/// How Postgres plans the pool's prepared statements (`plan_cache_mode`).
///
/// Every hot statement is a seek on a hash-partitioned table by its partition key. Left to itself
/// (`auto`), Postgres plans such a statement again on every execution: a generic plan's estimate
/// counts every partition, so it never looks cheaper than a custom plan pruned to one, and the
/// planning (partition expansion, sublinks) was a third of the database's CPU under load. A
/// generic plan is made once per connection and prunes to the one partition when it starts
/// (docs/performance.md, "Generic plans").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanCacheMode {
    Auto,
    ForceGenericPlan,
    ForceCustomPlan,
}

impl PlanCacheMode {
    /// The serving pools' mode.
    pub const SERVING: PlanCacheMode = PlanCacheMode::ForceGenericPlan;

    /// Postgres's name of the mode (also what `PTSLOG_DB_PLAN_CACHE_MODE` takes).
    pub fn as_str(self) -> &'static str {
        match self {
            PlanCacheMode::Auto => "auto",
            PlanCacheMode::ForceGenericPlan => "force_generic_plan",
            PlanCacheMode::ForceCustomPlan => "force_custom_plan",
        }
    }

    pub fn parse(s: &str) -> Option<PlanCacheMode> {
        [
            PlanCacheMode::Auto,
            PlanCacheMode::ForceGenericPlan,
            PlanCacheMode::ForceCustomPlan,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }
}

/// How large, in kB, a serving session lets the pending list of a GIN index with `fastupdate`
/// grow (`gin_pending_list_limit`; `PTSLOG_DB_GIN_PENDING_LIST_LIMIT_KB`). The message search index
/// (`message_boxes_search`, trigrams) queues new entries in that list, and the insert that takes
/// it past the limit merges the whole list into the index inside its own statement. At Postgres's
/// default of 4 MB that merge made a batch's `message_boxes` insert take 30–120 ms instead of
/// about 2, while the batch held its accounts, and every write behind it waited: the tail of the
/// `mixed` phase (docs/performance.md, "The search index's pending list, bounded"). A sixteenth
/// of it merges as often in total but in pieces a sixteenth as long.
pub const DEFAULT_GIN_PENDING_LIST_LIMIT_KB: u32 = 256;
/// The smallest `gin_pending_list_limit` Postgres accepts, in kB.
pub const MIN_GIN_PENDING_LIST_LIMIT_KB: u32 = 64;
/// The largest `gin_pending_list_limit` Postgres accepts, in kB (`MAX_KILOBYTES` on 64-bit).
pub const MAX_GIN_PENDING_LIST_LIMIT_KB: u32 = i32::MAX as u32;

/// Postgres session settings applied to every connection of a pool; `None` leaves the server's
/// default (usually no limit, `auto` plans and a 4 MB pending list).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionSettings {
    pub statement: Option<Duration>,
    pub idle_in_transaction: Option<Duration>,
    pub plan_cache_mode: Option<PlanCacheMode>,
    /// `gin_pending_list_limit` in kB, within [`MIN_GIN_PENDING_LIST_LIMIT_KB`] ..=
    /// [`MAX_GIN_PENDING_LIST_LIMIT_KB`].
    pub gin_pending_list_limit_kb: Option<u32>,
}

impl SessionSettings {
    /// The serving pools' defaults.
    pub const SERVING: SessionSettings = SessionSettings {
        statement: Some(DEFAULT_STATEMENT_TIMEOUT),
        idle_in_transaction: Some(DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT),
        plan_cache_mode: Some(PlanCacheMode::SERVING),
        gin_pending_list_limit_kb: Some(DEFAULT_GIN_PENDING_LIST_LIMIT_KB),
    };

    /// The settings as `name=value` pairs, in the order they are sent.
    pub fn options(&self) -> Vec<(&'static str, String)> {
        let mut settings = Vec::new();
        if let Some(t) = self.statement {
            settings.push(("statement_timeout", millis(t)));
        }
        if let Some(t) = self.idle_in_transaction {
            settings.push(("idle_in_transaction_session_timeout", millis(t)));
        }
        if let Some(mode) = self.plan_cache_mode {
            settings.push(("plan_cache_mode", mode.as_str().to_string()));
        }
        if let Some(kb) = self.gin_pending_list_limit_kb {
            settings.push(("gin_pending_list_limit", format!("{kb}kB")));
        }
        settings
    }

    pub(crate) fn apply(&self, options: PgConnectOptions) -> PgConnectOptions {
        let mut options = options.statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
        // Sent in the startup packet (`-c name=value`): no extra round trip per connection, and
        // a statement's own `SET LOCAL` can still change it for one transaction.
        let settings = self.options();
        if !settings.is_empty() {
            options = options.options(settings);
        }
        options
    }
}

/// Postgres reads a bare number as milliseconds; 0 would mean "no limit", so at least 1.
fn millis(d: Duration) -> String {
    d.as_millis().clamp(1, i32::MAX as u128).to_string()
}

/// A pool of at most `max_conns` connections with the server's default session settings: for the
/// CLI's long-running commands (migrations, rebuilds, exports) and tests.
pub async fn connect(url: &str, max_conns: u32) -> Result<PgPool, sqlx::Error> {
    connect_with(url, max_conns, SessionSettings::default()).await
}

/// A pool of at most `max_conns` connections whose sessions carry `settings`; connects at once.
pub async fn connect_with(
    url: &str,
    max_conns: u32,
    settings: SessionSettings,
) -> Result<PgPool, sqlx::Error> {
    let options = settings.apply(url.parse()?);
    pool_options(max_conns).connect_with(options).await
}

/// As [`connect_with`], but connections are made on first use.
pub fn connect_lazy_with(
    url: &str,
    max_conns: u32,
    settings: SessionSettings,
) -> Result<PgPool, sqlx::Error> {
    let options = settings.apply(url.parse()?);
    Ok(pool_options(max_conns).connect_lazy_with(options))
}

fn pool_options(max_conns: u32) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max_conns.max(1))
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if needs_ping(meta.idle_for) {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
}

/// Whether a connection idle for `idle_for` is pinged before use ([`PING_WHEN_IDLE_FOR`]).
pub(crate) fn needs_ping(idle_for: Duration) -> bool {
    idle_for >= PING_WHEN_IDLE_FOR
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_idle_from_the_threshold_on_are_pinged() {
        assert!(!needs_ping(Duration::ZERO));
        assert!(!needs_ping(PING_WHEN_IDLE_FOR - Duration::from_millis(1)));
        assert!(needs_ping(PING_WHEN_IDLE_FOR));
    }
}
