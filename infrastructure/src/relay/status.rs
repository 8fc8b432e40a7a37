//! What the relay is doing, shared with `/metrics` and `/healthz/relay`: lock-free counters the
//! relay updates and the HTTP front reads.

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use pgwire_replication::Lsn;
use serde::Serialize;

use crate::histogram::{Histogram, STAGE_BUCKETS};

/// The relay's part in the one-active-relay election.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// This process runs no relay (`PTSLOG_RELAY=off`).
    Off,
    /// Waiting for the leader lock (another relay is active, or Postgres is unreachable).
    Standby,
    /// Holds the lock and streams (or is setting up the stream).
    Leader,
    /// Cannot run as configured (e.g. `wal_level` is not `logical`); `last_error` says why.
    Failed,
}

/// What the relay knows of whatever is behind its sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BrokerState {
    /// No broker (local sink).
    None,
    Unknown,
    Up,
    Down,
}

#[derive(Debug)]
pub struct RelayStatus {
    role: AtomicU8,
    broker: AtomicU8,
    sink: &'static str,
    /// The last WAL position confirmed to Postgres (everything before it is in the sink).
    confirmed_lsn: AtomicU64,
    /// The newest WAL position the server reported.
    wal_end: AtomicU64,
    /// Commit time (unix µs) of the oldest transaction read but not yet confirmed; 0 when none.
    unconfirmed_since_micros: AtomicI64,
    records_produced: AtomicU64,
    produce_errors: AtomicU64,
    undecodable_records: AtomicU64,
    sessions_started: AtomicU64,
    last_error: Mutex<Option<String>>,
    /// From a transaction's commit to the relay reading its Commit message off the slot: the
    /// walsender's decoding and the stream (a push's first stage).
    pub commit_to_read: Histogram,
    /// From handing a transaction's records to the sink to the sink's acknowledgement (for Kafka:
    /// the producer's batching and the broker's acks=all write).
    pub sink_ack: Histogram,
}

/// A snapshot, as `/healthz/relay` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct RelayHealth {
    pub role: Role,
    pub sink: &'static str,
    pub broker: BrokerState,
    pub confirmed_lsn: String,
    pub lag_bytes: u64,
    pub lag_seconds: f64,
    pub records_produced: u64,
    pub produce_errors: u64,
    /// Rows published as undecodable records or skipped (docs/events.md).
    pub undecodable_records: u64,
    pub sessions_started: u64,
    pub last_error: Option<String>,
}

fn role_from(v: u8) -> Role {
    match v {
        1 => Role::Standby,
        2 => Role::Leader,
        3 => Role::Failed,
        _ => Role::Off,
    }
}

fn broker_from(v: u8) -> BrokerState {
    match v {
        1 => BrokerState::Unknown,
        2 => BrokerState::Up,
        3 => BrokerState::Down,
        _ => BrokerState::None,
    }
}

fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

impl RelayStatus {
    /// A status for a relay whose sink is of this kind (`"kafka"`, `"local"`, or `"none"`).
    pub fn new(sink: &'static str) -> Self {
        let broker = if sink == "kafka" {
            BrokerState::Unknown
        } else {
            BrokerState::None
        };
        Self {
            role: AtomicU8::new(Role::Off as u8),
            broker: AtomicU8::new(broker as u8),
            sink,
            confirmed_lsn: AtomicU64::new(0),
            wal_end: AtomicU64::new(0),
            unconfirmed_since_micros: AtomicI64::new(0),
            records_produced: AtomicU64::new(0),
            produce_errors: AtomicU64::new(0),
            undecodable_records: AtomicU64::new(0),
            sessions_started: AtomicU64::new(0),
            last_error: Mutex::new(None),
            commit_to_read: Histogram::new(STAGE_BUCKETS),
            sink_ack: Histogram::new(STAGE_BUCKETS),
        }
    }

    pub fn role(&self) -> Role {
        role_from(self.role.load(Ordering::Relaxed))
    }

    pub fn set_role(&self, role: Role) {
        self.role.store(role as u8, Ordering::Relaxed);
        if role != Role::Leader {
            // Lag is the leader's to report; a standby's old figures would mislead.
            self.wal_end.store(
                self.confirmed_lsn.load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
            self.unconfirmed_since_micros.store(0, Ordering::Relaxed);
        }
    }

    pub fn broker(&self) -> BrokerState {
        broker_from(self.broker.load(Ordering::Relaxed))
    }

    pub fn set_broker(&self, state: BrokerState) {
        if self.broker() != BrokerState::None {
            self.broker.store(state as u8, Ordering::Relaxed);
        }
    }

    pub fn set_error(&self, error: Option<String>) {
        *self.last_error.lock().unwrap_or_else(|e| e.into_inner()) = error;
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn session_started(&self) {
        self.sessions_started.fetch_add(1, Ordering::Relaxed);
    }

    pub fn sessions_started(&self) -> u64 {
        self.sessions_started.load(Ordering::Relaxed)
    }

    pub fn saw_wal_end(&self, lsn: Lsn) {
        self.wal_end.fetch_max(lsn.as_u64(), Ordering::Relaxed);
    }

    /// A transaction committed at `commit_micros` was read (its Commit message arrived).
    pub fn read_commit(&self, commit_micros: i64) {
        self.commit_to_read.observe_since(commit_micros);
    }

    /// A transaction committed at `commit_micros` was read and waits for its acknowledgement.
    pub fn read_transaction(&self, commit_micros: i64) {
        let _ = self.unconfirmed_since_micros.compare_exchange(
            0,
            commit_micros,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Everything up to `lsn` is in the sink; `oldest_pending_micros` is the commit time of the
    /// oldest transaction still waiting (0: none).
    pub fn confirmed(&self, lsn: Lsn, oldest_pending_micros: i64) {
        self.confirmed_lsn
            .fetch_max(lsn.as_u64(), Ordering::Relaxed);
        self.wal_end.fetch_max(lsn.as_u64(), Ordering::Relaxed);
        self.unconfirmed_since_micros
            .store(oldest_pending_micros, Ordering::Relaxed);
    }

    pub fn produced(&self, records: u64) {
        self.records_produced.fetch_add(records, Ordering::Relaxed);
    }

    pub fn produce_error(&self) {
        self.produce_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// A row could not be read and went out as an undecodable record (or was skipped).
    pub fn undecodable(&self) {
        self.undecodable_records.fetch_add(1, Ordering::Relaxed);
    }

    pub fn undecodable_records(&self) -> u64 {
        self.undecodable_records.load(Ordering::Relaxed)
    }

    pub fn confirmed_lsn(&self) -> Lsn {
        Lsn::from_u64(self.confirmed_lsn.load(Ordering::Relaxed))
    }

    pub fn lag_bytes(&self) -> u64 {
        self.wal_end
            .load(Ordering::Relaxed)
            .saturating_sub(self.confirmed_lsn.load(Ordering::Relaxed))
    }

    pub fn lag_seconds(&self) -> f64 {
        match self.unconfirmed_since_micros.load(Ordering::Relaxed) {
            0 => 0.0,
            since => (now_micros() - since).max(0) as f64 / 1e6,
        }
    }

    pub fn records_produced(&self) -> u64 {
        self.records_produced.load(Ordering::Relaxed)
    }

    pub fn produce_errors(&self) -> u64 {
        self.produce_errors.load(Ordering::Relaxed)
    }

    pub fn health(&self) -> RelayHealth {
        RelayHealth {
            role: self.role(),
            sink: self.sink,
            broker: self.broker(),
            confirmed_lsn: self.confirmed_lsn().to_string(),
            lag_bytes: self.lag_bytes(),
            lag_seconds: self.lag_seconds(),
            records_produced: self.records_produced(),
            produce_errors: self.produce_errors(),
            undecodable_records: self.undecodable_records(),
            sessions_started: self.sessions_started.load(Ordering::Relaxed),
            last_error: self.last_error(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_follows_reads_and_confirmations() {
        let s = RelayStatus::new("kafka");
        s.set_role(Role::Leader);
        assert_eq!(s.broker(), BrokerState::Unknown);
        s.saw_wal_end(Lsn::from_u64(1000));
        s.read_transaction(now_micros() - 2_000_000);
        assert_eq!(s.lag_bytes(), 1000);
        assert!(s.lag_seconds() >= 2.0);
        s.confirmed(Lsn::from_u64(900), 0);
        assert_eq!(s.lag_bytes(), 100);
        assert_eq!(s.lag_seconds(), 0.0);
        assert_eq!(s.health().confirmed_lsn, "0/384");
        let local = RelayStatus::new("local");
        local.set_broker(BrokerState::Up);
        assert_eq!(local.broker(), BrokerState::None);
    }
}
