//! The connections every read of the store runs on, handed out and taken back without a round
//! trip.
//!
//! sqlx's pool tests each connection as it goes back (a `Sync` and its `ReadyForQuery`). A read
//! is one statement on a connection taken for it, so that doubled its round trips: a tenth or more
//! of its CPU, in the server and in Postgres (docs/performance.md, "Reads"). Here a connection
//! goes back as it is, which is safe with sqlx's connection: before its next statement it drains
//! whatever a cancelled one left (a pending answer, a queued `ROLLBACK`). It is tested before use
//! only when it sat idle for [`super::PING_WHEN_IDLE_FOR`] (a restart or a failover may have closed it
//! meanwhile), and one whose statement failed on the connection itself (I/O, protocol) is closed
//! instead of going back.

use std::ops::{Deref, DerefMut};
use std::time::Duration;

use application::ports::StoreError;
use deadpool::managed::{self, Metrics, Object, RecycleResult};
use sqlx::pool::PoolConnection;
use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection, PgPool, Postgres};

use super::{needs_ping, SessionSettings, ACQUIRE_TIMEOUT};
use crate::error::db_error;

/// Connections live at most this long: a long-lived backend keeps every plan and catalog entry
/// it ever cached.
pub const READ_CONNECTION_MAX_AGE: Duration = Duration::from_secs(30 * 60);

/// How long opening a connection may take before the read that waits for it fails.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Makes and checks the read connections.
pub struct Connector {
    options: PgConnectOptions,
}

impl managed::Manager for Connector {
    type Type = PgConnection;
    type Error = sqlx::Error;

    async fn create(&self) -> Result<PgConnection, sqlx::Error> {
        PgConnection::connect_with(&self.options).await
    }

    async fn recycle(
        &self,
        conn: &mut PgConnection,
        metrics: &Metrics,
    ) -> RecycleResult<sqlx::Error> {
        match before_use(metrics.age(), metrics.last_used()) {
            BeforeUse::Close => Err(managed::RecycleError::Message("past its age".into())),
            BeforeUse::Ping => Ok(conn.ping().await?),
            BeforeUse::Nothing => Ok(()),
        }
    }
}

/// What a pooled connection needs before it is handed out.
#[derive(Debug, PartialEq, Eq)]
enum BeforeUse {
    Nothing,
    Ping,
    Close,
}

fn before_use(age: Duration, idle: Duration) -> BeforeUse {
    if age >= READ_CONNECTION_MAX_AGE {
        BeforeUse::Close
    } else if needs_ping(idle) {
        BeforeUse::Ping
    } else {
        BeforeUse::Nothing
    }
}

/// Where reads take their connections: a pool of their own, or the write pool (then sqlx's).
#[derive(Clone)]
pub enum ReadPool {
    Own(managed::Pool<Connector>),
    Shared(PgPool),
}

impl ReadPool {
    /// At most `max` connections with `settings`, each opened on first use.
    pub fn new(url: &str, max: u32, settings: SessionSettings) -> Result<Self, sqlx::Error> {
        Self::with_connect_timeout(url, max, settings, CONNECT_TIMEOUT)
    }

    /// As [`ReadPool::new`], opening a connection failing after `connect_timeout`.
    pub fn with_connect_timeout(
        url: &str,
        max: u32,
        settings: SessionSettings,
        connect_timeout: Duration,
    ) -> Result<Self, sqlx::Error> {
        let options = settings.apply(url.parse()?);
        let pool = managed::Pool::builder(Connector { options })
            .max_size(max.max(1) as usize)
            // The connection used last first: the fewest backends stay busy, their caches warm,
            // and the rest sit idle (then pinged before use, and let go at their age).
            .queue_mode(managed::QueueMode::Lifo)
            .wait_timeout(Some(ACQUIRE_TIMEOUT))
            .create_timeout(Some(connect_timeout))
            .recycle_timeout(Some(connect_timeout))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .map_err(|e| sqlx::Error::Configuration(e.to_string().into()))?;
        Ok(ReadPool::Own(pool))
    }

    /// How many connections the pool may hold (0 for reads on the write pool).
    pub fn max_size(&self) -> usize {
        match self {
            ReadPool::Own(pool) => pool.status().max_size,
            ReadPool::Shared(_) => 0,
        }
    }

    /// A connection for one read (waiting at most [`ACQUIRE_TIMEOUT`] for one to be free).
    pub async fn get(&self) -> Result<ReadConn, StoreError> {
        match self {
            ReadPool::Own(pool) => match pool.get().await {
                Ok(conn) => Ok(ReadConn::Own {
                    conn: Some(conn),
                    broken: false,
                }),
                Err(managed::PoolError::Timeout(_)) => Err(StoreError::Timeout(
                    "no read connection came free in time".into(),
                )),
                Err(managed::PoolError::Backend(e)) => Err(db_error(e)),
                Err(e) => Err(StoreError::Database(e.to_string())),
            },
            ReadPool::Shared(pool) => pool.acquire().await.map(ReadConn::Shared).map_err(db_error),
        }
    }
}

/// One read's connection; back to its pool when dropped, unless [`ReadConn::failed`] found it
/// broken.
pub enum ReadConn {
    Own {
        /// Always there until the drop takes it.
        conn: Option<Object<Connector>>,
        broken: bool,
    },
    Shared(PoolConnection<Postgres>),
}

const PRESENT: &str = "a read connection is there until it is dropped";

impl ReadConn {
    /// The store's error for `e`, a failure of a statement on this connection; a connection that
    /// failed itself (not its statement) is closed when dropped rather than handed out again.
    pub fn failed(&mut self, e: sqlx::Error) -> StoreError {
        if let ReadConn::Own { broken, .. } = self {
            *broken |= is_broken(&e);
        }
        db_error(e)
    }
}

impl Drop for ReadConn {
    fn drop(&mut self) {
        if let ReadConn::Own { conn, broken: true } = self {
            // Out of the pool, then dropped: closed.
            if let Some(conn) = conn.take() {
                drop(Object::take(conn));
            }
        }
    }
}

/// Whether a statement's error says its connection can no longer be trusted: anything but the
/// statement's own failure, and the server's word that it is ending the session (class 08,
/// connection exceptions; 57P01–57P05, shut down by an operator, a crash or idle timeouts).
fn is_broken(e: &sqlx::Error) -> bool {
    if let sqlx::Error::Database(d) = e {
        return d
            .code()
            .is_some_and(|c| c.starts_with("08") || c.starts_with("57P"));
    }
    !matches!(
        e,
        sqlx::Error::RowNotFound
            | sqlx::Error::ColumnNotFound(_)
            | sqlx::Error::ColumnIndexOutOfBounds { .. }
            | sqlx::Error::ColumnDecode { .. }
            | sqlx::Error::Decode(_)
            | sqlx::Error::TypeNotFound { .. }
    )
}

impl Deref for ReadConn {
    type Target = PgConnection;

    fn deref(&self) -> &PgConnection {
        match self {
            ReadConn::Own { conn, .. } => conn.as_ref().expect(PRESENT),
            ReadConn::Shared(conn) => conn,
        }
    }
}

impl DerefMut for ReadConn {
    fn deref_mut(&mut self) -> &mut PgConnection {
        match self {
            ReadConn::Own { conn, .. } => conn.as_mut().expect(PRESENT),
            ReadConn::Shared(conn) => conn,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::PING_WHEN_IDLE_FOR;
    use super::*;

    #[test]
    fn a_connection_is_pinged_after_a_second_idle_and_closed_at_its_age() {
        let ms = Duration::from_millis;
        assert_eq!(before_use(ms(5), ms(999)), BeforeUse::Nothing);
        assert_eq!(before_use(ms(5), PING_WHEN_IDLE_FOR), BeforeUse::Ping);
        let old = READ_CONNECTION_MAX_AGE - ms(1);
        assert_eq!(before_use(old, ms(1)), BeforeUse::Nothing);
        assert_eq!(before_use(READ_CONNECTION_MAX_AGE, ms(1)), BeforeUse::Close);
    }

    #[test]
    fn only_failures_of_the_connection_itself_close_it() {
        assert!(!is_broken(&sqlx::Error::RowNotFound));
        assert!(!is_broken(&sqlx::Error::ColumnNotFound("x".into())));
        assert!(is_broken(&sqlx::Error::Io(std::io::Error::other("reset"))));
        assert!(is_broken(&sqlx::Error::Protocol(
            "unexpected message".into()
        )));
        assert!(is_broken(&sqlx::Error::WorkerCrashed));
    }
}
