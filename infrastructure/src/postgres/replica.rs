//! Reads served by a streaming replica (`DATABASE_READ_URL`) that still see the caller's writes.
//!
//! A physical standby replays the primary's WAL a little behind it. A client that just sent must
//! find its message in the next getHistory, so each account this instance wrote keeps a mark:
//! the primary's WAL position after that commit. A read of the account's own data goes to the
//! replica once the replica has replayed past the mark, waits at most
//! [`REPLICA_CATCH_UP_WAIT`] for it, and otherwise reads on the primary. Accounts with no mark
//! (nothing written here lately) read on the replica at once; a getDifference the client asks
//! from a pts the replica has not reached is answered from the primary (`PgStore::difference`),
//! which covers writes made by other instances. Other accounts' data (users) is as fresh as the
//! replica. docs/performance.md, "A read replica".

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use application::ports::StoreError;
use domain::UserId;
use sqlx::{PgConnection, PgPool};

use super::read_pool::{ReadConn, ReadPool};

/// The longest a read waits for the replica to replay the caller's last write before it reads on
/// the primary instead. A replica on the same network replays within a millisecond or two; one
/// further behind than this is better relieved of the read than waited for.
pub const REPLICA_CATCH_UP_WAIT: Duration = Duration::from_millis(20);
/// How often a waiting read asks the replica how far it has replayed.
pub const REPLICA_POLL_INTERVAL: Duration = Duration::from_millis(1);
/// At most this many accounts' marks are kept. Past it the marks the replica has passed are
/// dropped, and if that is not enough all of them fold into one floor every read waits for (the
/// newest mark), which is safe and costs only some reads a short wait.
pub const MAX_TRACKED_ACCOUNTS: usize = 100_000;
/// After the replica failed to give a connection, reads go to the primary this long before it is
/// tried again, so that a replica that is down costs one read a connect timeout, not every read.
pub const REPLICA_RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long opening a replica connection may take (a read falls back to the primary after it).
pub const REPLICA_CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// A position in the primary's WAL, as a byte offset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lsn(pub u64);

impl Lsn {
    fn of(raw: i64) -> Lsn {
        Lsn(u64::try_from(raw).unwrap_or(0))
    }
}

/// What the accounts' reads must wait for.
#[derive(Debug, Default)]
struct Marks {
    by_account: HashMap<i64, Lsn>,
    /// Every read waits for at least this (marks folded together, or a lost track's end).
    floor: Lsn,
    /// A commit's position could not be learnt at this instant: every owner's reads go to the
    /// primary until a position asked for after it arrives.
    lost_since: Option<Instant>,
}

impl Marks {
    fn wrote(&mut self, accounts: &[UserId], lsn: Lsn, asked_at: Instant, replayed: Lsn) {
        if self.lost_since.is_some_and(|since| asked_at > since) {
            // Asked after the lost commit had committed, so at or past its end.
            self.lost_since = None;
            self.floor = self.floor.max(lsn);
        }
        for account in accounts {
            if self.by_account.len() >= MAX_TRACKED_ACCOUNTS
                && !self.by_account.contains_key(&account.get())
            {
                self.by_account.retain(|_, mark| *mark > replayed);
                if self.by_account.len() >= MAX_TRACKED_ACCOUNTS {
                    let newest = self.by_account.values().copied().max();
                    self.floor = self.floor.max(newest.unwrap_or(lsn));
                    self.by_account.clear();
                }
            }
            let mark = self.by_account.entry(account.get()).or_insert(lsn);
            *mark = (*mark).max(lsn);
        }
    }

    /// The position `owner`'s reads wait for; `None`: read on the primary.
    fn needed(&self, owner: Option<UserId>) -> Option<Lsn> {
        let Some(owner) = owner else {
            return Some(self.floor);
        };
        if self.lost_since.is_some() {
            return None;
        }
        let mark = self.by_account.get(&owner.get()).copied().unwrap_or(Lsn(0));
        Some(mark.max(self.floor))
    }

    /// The replica passed `owner`'s mark: forget it.
    fn passed(&mut self, owner: UserId, replayed: Lsn) {
        if let Some(mark) = self.by_account.get(&owner.get()) {
            if *mark <= replayed {
                self.by_account.remove(&owner.get());
            }
        }
    }
}

/// The marks of the accounts this instance wrote, shared by the store's writes and its reads
/// (and by sign-in, which creates accounts outside the store).
#[derive(Debug, Default)]
pub struct Freshness {
    marks: Mutex<Marks>,
    /// The furthest the replica was last seen to have replayed.
    replayed: AtomicU64,
}

impl Freshness {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn marks(&self) -> std::sync::MutexGuard<'_, Marks> {
        self.marks.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn replayed(&self) -> Lsn {
        Lsn(self.replayed.load(Ordering::Relaxed))
    }

    fn saw_replayed(&self, lsn: Lsn) {
        self.replayed.fetch_max(lsn.0, Ordering::Relaxed);
    }

    /// `accounts` were changed by a commit that ended at or before `lsn`, a position asked for at
    /// `asked_at`.
    pub fn wrote(&self, accounts: &[UserId], lsn: Lsn, asked_at: Instant) {
        let replayed = self.replayed();
        self.marks().wrote(accounts, lsn, asked_at, replayed);
    }

    /// A commit's position could not be learnt: owners read on the primary until one is.
    pub fn lost_track(&self) {
        self.marks().lost_since = Some(Instant::now());
    }

    /// After a commit of `accounts`: marks them at the primary's WAL insert position (asked on
    /// `primary`, a connection or pool of the primary), which is past the commit's record.
    pub async fn note_commit<'c>(&self, primary: impl sqlx::PgExecutor<'c>, accounts: &[UserId]) {
        if accounts.is_empty() {
            return;
        }
        let asked_at = Instant::now();
        match insert_position(primary).await {
            Ok(lsn) => self.wrote(accounts, lsn, asked_at),
            Err(e) => {
                tracing::warn!(error = %e, "no WAL position after a commit; reads of accounts go to the primary until one is learnt");
                self.lost_track();
            }
        }
    }

    /// Every read waits for what the primary has committed so far (the migrations applied at
    /// start: a replica still replaying them would not have the tables).
    pub async fn wait_for_everything_committed(&self, pool: &PgPool) -> Result<(), StoreError> {
        let lsn = insert_position(pool)
            .await
            .map_err(crate::error::db_error)?;
        let mut marks = self.marks();
        marks.floor = marks.floor.max(lsn);
        Ok(())
    }
}

/// The primary's WAL insert position: past the record of every commit that has returned.
async fn insert_position<'c>(primary: impl sqlx::PgExecutor<'c>) -> Result<Lsn, sqlx::Error> {
    let raw: i64 = sqlx::query_scalar("SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::int8")
        .fetch_one(primary)
        .await?;
    Ok(Lsn::of(raw))
}

/// How the replica's reads went (also on `/metrics`).
#[derive(Debug, Default)]
pub struct ReplicaCounts {
    /// Reads the replica served.
    pub on_replica: AtomicU64,
    /// Reads sent to the primary: the replica had not replayed the caller's write in time, was
    /// down, or the position of a commit was lost; and getDifferences asked from a pts the
    /// replica had not reached, read again there.
    pub on_primary: AtomicU64,
    /// Reads whose account had a write here the replica was not known to have replayed: they
    /// asked the replica how far it had (and waited if it had not yet), served by either.
    pub waited: AtomicU64,
}

/// The replica's read pool, the marks, and where each read goes.
pub struct Replica {
    pool: ReadPool,
    freshness: Arc<Freshness>,
    down_until: Mutex<Option<Instant>>,
    pub counts: ReplicaCounts,
}

/// How far the server behind `conn` has replayed the primary's WAL (`None`: it is not a standby,
/// so it is the primary and has everything).
async fn replay_position(conn: &mut PgConnection) -> Result<Option<Lsn>, sqlx::Error> {
    let raw: Option<i64> =
        sqlx::query_scalar("SELECT (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::int8")
            .fetch_one(conn)
            .await?;
    Ok(raw.map(Lsn::of))
}

impl Replica {
    pub fn new(pool: ReadPool, freshness: Arc<Freshness>) -> Self {
        Self {
            pool,
            freshness,
            down_until: Mutex::new(None),
            counts: ReplicaCounts::default(),
        }
    }

    pub fn freshness(&self) -> &Arc<Freshness> {
        &self.freshness
    }

    pub(crate) fn pool(&self) -> &ReadPool {
        &self.pool
    }

    /// Whether the server at the read pool is the primary at `primary` or a physical standby of
    /// it (both report the same system identifier). Anything else (another cluster, a logical
    /// copy) could not be waited for, so the server refuses to start with it.
    pub async fn same_cluster(&self, primary: &PgPool) -> Result<bool, StoreError> {
        const ID: &str = "SELECT system_identifier FROM pg_control_system()";
        let ours: i64 = sqlx::query_scalar(ID)
            .fetch_one(primary)
            .await
            .map_err(crate::error::db_error)?;
        let mut conn = self.pool.get().await?;
        let theirs: i64 = sqlx::query_scalar(ID)
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| conn.failed(e))?;
        Ok(ours == theirs)
    }

    fn down(&self) -> bool {
        let mut until = self.down_until.lock().unwrap_or_else(|e| e.into_inner());
        match *until {
            Some(t) if Instant::now() < t => true,
            Some(_) => {
                *until = None;
                false
            }
            None => false,
        }
    }

    fn went_down(&self, e: &StoreError) {
        tracing::warn!(error = %e, "the read replica gave no connection; reading on the primary");
        *self.down_until.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Instant::now() + REPLICA_RETRY_AFTER);
    }

    async fn on_primary(&self, primary: &ReadPool) -> Result<ReadConn, StoreError> {
        self.counts.on_primary.fetch_add(1, Ordering::Relaxed);
        primary.get().await
    }

    /// A connection for one read of `owner`'s data (`None`: data of no one account in
    /// particular): the replica's once it has replayed `owner`'s last write here, else
    /// `primary`'s.
    pub async fn connection(
        &self,
        owner: Option<UserId>,
        primary: &ReadPool,
    ) -> Result<ReadConn, StoreError> {
        let needed = self.freshness.marks().needed(owner);
        let Some(needed) = needed else {
            return self.on_primary(primary).await;
        };
        if self.down() {
            return self.on_primary(primary).await;
        }
        let mut conn = match self.pool.get().await {
            Ok(conn) => conn,
            Err(e) => {
                self.went_down(&e);
                return self.on_primary(primary).await;
            }
        };
        if needed > self.freshness.replayed() {
            self.counts.waited.fetch_add(1, Ordering::Relaxed);
            let deadline = Instant::now() + REPLICA_CATCH_UP_WAIT;
            loop {
                let replayed = match replay_position(&mut conn).await {
                    Ok(p) => p.unwrap_or(Lsn(u64::MAX)),
                    Err(e) => {
                        let e = conn.failed(e);
                        self.went_down(&e);
                        return self.on_primary(primary).await;
                    }
                };
                self.freshness.saw_replayed(replayed);
                if replayed >= needed {
                    break;
                }
                if Instant::now() + REPLICA_POLL_INTERVAL > deadline {
                    drop(conn);
                    return self.on_primary(primary).await;
                }
                tokio::time::sleep(REPLICA_POLL_INTERVAL).await;
            }
        }
        if let Some(owner) = owner {
            self.freshness
                .marks()
                .passed(owner, self.freshness.replayed());
        }
        self.counts.on_replica.fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(id: i64) -> UserId {
        UserId::new(id).unwrap()
    }

    #[test]
    fn an_account_waits_for_its_own_mark_and_others_for_nothing() {
        let mut m = Marks::default();
        let t = Instant::now();
        m.wrote(&[u(1), u(2)], Lsn(100), t, Lsn(0));
        m.wrote(&[u(1)], Lsn(90), t, Lsn(0));
        assert_eq!(
            m.needed(Some(u(1))),
            Some(Lsn(100)),
            "a mark only moves forward"
        );
        assert_eq!(m.needed(Some(u(2))), Some(Lsn(100)));
        assert_eq!(m.needed(Some(u(3))), Some(Lsn(0)));
        assert_eq!(m.needed(None), Some(Lsn(0)));
        m.passed(u(1), Lsn(99));
        assert_eq!(m.needed(Some(u(1))), Some(Lsn(100)), "not passed yet");
        m.passed(u(1), Lsn(100));
        assert!(!m.by_account.contains_key(&1));
    }

    #[test]
    fn past_the_bound_passed_marks_go_and_then_all_fold_into_a_floor() {
        let mut m = Marks::default();
        let t = Instant::now();
        let ids: Vec<UserId> = (1..=MAX_TRACKED_ACCOUNTS as i64).map(u).collect();
        m.wrote(&ids[..10], Lsn(5), t, Lsn(0));
        m.wrote(&ids[10..], Lsn(50), t, Lsn(0));
        assert_eq!(m.by_account.len(), MAX_TRACKED_ACCOUNTS);
        // One more account, the replica past the first ten: they make room.
        let extra = u(MAX_TRACKED_ACCOUNTS as i64 + 1);
        m.wrote(&[extra], Lsn(60), t, Lsn(5));
        assert_eq!(m.by_account.len(), MAX_TRACKED_ACCOUNTS - 9);
        assert_eq!(m.floor, Lsn(0));
        // Full again with nothing passed: everything folds into the newest mark.
        let more: Vec<UserId> = (0..9)
            .map(|i| u(MAX_TRACKED_ACCOUNTS as i64 + 2 + i))
            .collect();
        m.wrote(&more, Lsn(70), t, Lsn(5));
        assert_eq!(m.by_account.len(), MAX_TRACKED_ACCOUNTS);
        m.wrote(&[u(3 * MAX_TRACKED_ACCOUNTS as i64)], Lsn(80), t, Lsn(5));
        assert_eq!(m.by_account.len(), 1);
        assert_eq!(m.floor, Lsn(70));
        assert_eq!(
            m.needed(Some(u(20))),
            Some(Lsn(70)),
            "a folded mark still waited for"
        );
        assert_eq!(
            m.needed(Some(u(3 * MAX_TRACKED_ACCOUNTS as i64))),
            Some(Lsn(80))
        );
    }

    #[test]
    fn a_lost_position_sends_owners_to_the_primary_until_a_later_one_is_learnt() {
        let mut m = Marks::default();
        let before = Instant::now();
        std::thread::sleep(Duration::from_millis(2));
        m.lost_since = Some(Instant::now());
        assert_eq!(m.needed(Some(u(1))), None);
        assert_eq!(
            m.needed(None),
            Some(Lsn(0)),
            "no one account's data: not affected"
        );
        // A position asked for before the loss may be older than the lost commit.
        m.wrote(&[u(2)], Lsn(40), before, Lsn(0));
        assert_eq!(m.needed(Some(u(1))), None);
        std::thread::sleep(Duration::from_millis(2));
        m.wrote(&[u(2)], Lsn(50), Instant::now(), Lsn(0));
        assert_eq!(
            m.needed(Some(u(1))),
            Some(Lsn(50)),
            "the lost commit is at or before 50"
        );
        assert_eq!(m.floor, Lsn(50));
    }
}
