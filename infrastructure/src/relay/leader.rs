//! Exactly one active relay per database: the leader holds a session-level advisory lock on a
//! connection of its own. Others try again every second and take over when the lock is released,
//! which Postgres does when the holder's connection ends (a crashed or killed relay included).
//! The slot itself is a second fence: Postgres lets only one session stream it at a time.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{Connection, PgConnection};
use tokio::sync::watch;

use super::error::RelayError;
use super::sink::RecordSink;
use super::slot::{prepare, valid_slot_name};
use super::status::{RelayStatus, Role};
use super::stream;

pub const DEFAULT_SLOT: &str = "ptslog_relay";

/// The advisory lock key of the relay leader ("ptslogR1").
const LEADER_LOCK: i64 = 0x7074_736c_6f67_5231;

const STANDBY_RETRY: Duration = Duration::from_secs(1);
/// How often the leader checks that its lock connection is alive.
const LOCK_CHECK: Duration = Duration::from_secs(2);
/// Pause after a failed session; doubles up to the maximum while failures repeat.
const RETRY_MIN: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(10);
/// Pause after a failure that needs an operator (e.g. `wal_level`), when not exiting on it.
const FATAL_RETRY: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct RelayConfig {
    pub database_url: String,
    pub slot: String,
    /// Return the error instead of retrying when the setup cannot work (`ptslog relay` exits,
    /// `ptslog serve` keeps serving RPCs and retries slowly).
    pub exit_on_fatal: bool,
}

impl RelayConfig {
    pub fn new(
        database_url: impl Into<String>,
        slot: impl Into<String>,
    ) -> Result<Self, RelayError> {
        let slot = slot.into();
        if !valid_slot_name(&slot) {
            return Err(RelayError::Fatal(format!(
                "replication slot name {slot:?} must be 1-63 characters of a-z, 0-9 and _"
            )));
        }
        Ok(Self {
            database_url: database_url.into(),
            slot,
            exit_on_fatal: false,
        })
    }
}

pub struct Relay {
    config: RelayConfig,
    sink: Arc<dyn RecordSink>,
    status: Arc<RelayStatus>,
}

impl Relay {
    pub fn new(config: RelayConfig, sink: Arc<dyn RecordSink>, status: Arc<RelayStatus>) -> Self {
        Self {
            config,
            sink,
            status,
        }
    }

    pub fn status(&self) -> &Arc<RelayStatus> {
        &self.status
    }

    /// Contends for leadership and streams while leader, until `shutdown` turns true (or its
    /// sender is dropped). Answers an error only for a fatal setup problem with `exit_on_fatal`.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>) -> Result<(), RelayError> {
        let mut retry = RETRY_MIN;
        while !*shutdown.borrow() {
            let sessions_before = self.status.sessions_started();
            let outcome = self.term(&mut shutdown).await;
            if self.status.sessions_started() > sessions_before {
                // It streamed for a while: this failure is news, not the same one repeating.
                retry = RETRY_MIN;
            }
            let pause = match outcome {
                Ok(()) => break,
                Err(e) if e.is_fatal() => {
                    tracing::error!(error = %e, "relay cannot run");
                    self.status.set_role(Role::Failed);
                    self.status.set_error(Some(e.to_string()));
                    if self.config.exit_on_fatal {
                        return Err(e);
                    }
                    FATAL_RETRY
                }
                Err(e) => {
                    tracing::warn!(error = %e, retry_in = ?retry, "relay session ended");
                    self.status.set_role(Role::Standby);
                    self.status.set_error(Some(e.to_string()));
                    let p = retry;
                    retry = (retry * 2).min(RETRY_MAX);
                    p
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = stopped(&mut shutdown) => break,
            }
        }
        self.status.set_role(Role::Off);
        Ok(())
    }

    /// One term: wait for the lock, then stream until failure or shutdown. The lock is released
    /// when the lock connection is dropped at the end, so a failing leader lets another try.
    async fn term(&self, shutdown: &mut watch::Receiver<bool>) -> Result<(), RelayError> {
        let mut lock = PgConnection::connect(&self.config.database_url).await?;
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            let got: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                .bind(LEADER_LOCK)
                .fetch_one(&mut lock)
                .await?;
            if got {
                break;
            }
            if self.status.role() != Role::Standby {
                tracing::info!("another relay is active; standing by");
            }
            self.status.set_role(Role::Standby);
            tokio::select! {
                _ = tokio::time::sleep(STANDBY_RETRY) => {}
                _ = stopped(shutdown) => return Ok(()),
            }
        }
        tracing::info!(slot = %self.config.slot, "relay is the leader");
        self.status.set_role(Role::Leader);
        prepare(&mut lock, &self.config.slot).await?;
        let streamed = {
            let streaming = stream::run(
                &self.config.database_url,
                &self.config.slot,
                self.sink.as_ref(),
                &self.status,
                shutdown,
            );
            tokio::pin!(streaming);
            loop {
                tokio::select! {
                    r = &mut streaming => break r,
                    _ = tokio::time::sleep(LOCK_CHECK) => {
                        // Losing the lock connection means another relay may become leader; stop
                        // before both stream (the slot would refuse one of them anyway).
                        if let Err(e) = sqlx::query("SELECT 1").execute(&mut lock).await {
                            break Err(RelayError::Transient(format!("lost the leader lock connection: {e}")));
                        }
                    }
                }
            }
        };
        if streamed.is_ok() {
            self.status.set_error(None);
        }
        let _ = lock.close().await;
        streamed
    }
}

/// Resolves when shutdown turns true or its sender goes away. (The value `wait_for` answers must
/// not live across an await: it holds a lock.)
pub(crate) async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}
