//! The online rebuild: fresh copies of some read models are built from the log while the server
//! keeps serving (and writing the live tables inline), then swapped in within one short
//! transaction. docs/operations.md describes it for operators.
//!
//! 1. **Copy.** Shadow tables are created in the schema `ptslog_rebuild` (shadow.rs). The log is
//!    replayed into them in (user, pts) order, in batches of one transaction each, on a connection
//!    whose `search_path` puts the shadow schema first: the projectors are the very code that runs
//!    inline, and their unqualified table names land in the shadow tables. Each batch records, in
//!    the same transaction, the last pts applied per account (`replay_watermarks`).
//! 2. **Catch-up.** Events committed meanwhile are those above an account's watermark (pts are
//!    dense and commit-ordered per account, docs/architecture.md). Rounds apply them until one
//!    round finds only a few.
//! 3. **Swap.** One transaction locks `user_sequences` EXCLUSIVE — every writer locks its rows
//!    there first, so in-flight writers finish and new ones wait, while plain reads go on — applies
//!    the last few events, takes the live tables ACCESS EXCLUSIVE (readers wait from here), moves
//!    them to `ptslog_retired` and the shadows into the live schema, records the new status and
//!    commits. Writers wait for the last delta plus a few renames: milliseconds.
//!
//! A projection whose projector reads another (dialogs reads message_boxes) is replayed with that
//! one, into the shadow too, and both are swapped. An error or an abort before the commit leaves the
//! live tables untouched and drops the shadow.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{Connection, PgConnection, PgPool, Postgres};

use crate::rebuild::{decode_row, LOG_COLUMNS};
use crate::shadow::{self, watermarks_table, RETIRED_SCHEMA, SHADOW_SCHEMA};
use crate::status::{self, RebuildState};
use crate::{apply_events, with_dependencies, Projection, ProjectionError};

/// The session advisory lock that lets only one rebuild run at a time (on a database).
const REBUILD_LOCK: i64 = 0x7074_736c_6f67_0001;

/// How a rebuild runs and how it is stopped.
#[derive(Debug, Clone)]
pub struct RebuildControl {
    /// Set (e.g. on Ctrl-C) to stop at the next batch: the shadow is dropped, the live tables stay.
    pub cancel: Arc<AtomicBool>,
    /// Events replayed per transaction.
    pub batch_events: i64,
    /// Connections replaying the log in parallel during the copy, each a share of the accounts.
    pub copy_workers: usize,
    /// A catch-up round that applies at most this many events is followed by the swap.
    pub swap_below_events: u64,
    /// Catch-up rounds before the swap is tried anyway.
    pub max_catch_up_rounds: u32,
    /// How long the swap waits for a lock (writers in flight, readers of the live tables) before
    /// it gives up, catches up again and retries; this bounds how long it can hold writers back
    /// while it waits.
    pub lock_timeout: Duration,
    pub swap_attempts: u32,
    /// How often progress is reported.
    pub progress_every: Duration,
}

impl Default for RebuildControl {
    fn default() -> Self {
        Self {
            cancel: Arc::new(AtomicBool::new(false)),
            batch_events: 2000,
            copy_workers: 4,
            swap_below_events: 200,
            max_catch_up_rounds: 20,
            lock_timeout: Duration::from_secs(2),
            swap_attempts: 5,
            progress_every: Duration::from_secs(1),
        }
    }
}

/// What a rebuild is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Copy,
    CatchUp,
    Swap,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Copy => "copy",
            Phase::CatchUp => "catch-up",
            Phase::Swap => "swap",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Progress {
    pub phase: Phase,
    pub events_done: u64,
    /// The log's size when the copy started plus what catch-up found since.
    pub events_total: u64,
    pub elapsed: Duration,
    /// Events per second since the copy started.
    pub rate: f64,
}

impl Progress {
    pub fn eta(&self) -> Option<Duration> {
        let left = self.events_total.saturating_sub(self.events_done) as f64;
        (self.rate > 0.0).then(|| Duration::from_secs_f64(left / self.rate))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct OnlineRebuildReport {
    /// What was rebuilt and swapped in: the requested projections and what they read.
    pub projections: Vec<Projection>,
    pub events_applied: u64,
    pub catch_up_rounds: u32,
    /// Events applied inside the swap transaction.
    pub swap_delta_events: u64,
    /// From the request for the `user_sequences` lock to the commit of the swap: the longest any
    /// writer waited for the rebuild.
    pub writers_held: Duration,
    /// Swap transactions tried (more than 1 when a lock wait timed out).
    pub swap_attempts: u32,
    pub elapsed: Duration,
}

/// Rebuilds `selected` (and what they read) online. See the module documentation.
pub async fn rebuild_online(
    pool: &PgPool,
    selected: &[Projection],
    control: &RebuildControl,
    on_progress: &mut (dyn FnMut(&Progress) + Send),
) -> Result<OnlineRebuildReport, ProjectionError> {
    let projections = with_dependencies(selected);
    // A connection of its own: its search_path is changed, so it must never go back to the pool.
    let mut conn: PgConnection = pool.acquire().await?.detach();
    let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(REBUILD_LOCK)
        .fetch_one(&mut conn)
        .await?;
    if !locked {
        return Err(ProjectionError::Busy(
            "another projections rebuild is running on this database".into(),
        ));
    }
    status::begin(pool, &projections).await?;
    let mut run = Run {
        pool,
        projections: projections.clone(),
        control,
        started: Instant::now(),
        last_report: Instant::now(),
        done: 0,
        total: 0,
        on_progress,
    };
    let result = run.run(&mut conn).await;
    match &result {
        Ok(_) => {}
        Err(e) => {
            // Whatever failed, the live tables were not touched: only the shadow goes.
            let cleanup = async {
                let mut c = match conn.ping().await {
                    Ok(()) => MaybePooled::Own(&mut conn),
                    Err(_) => MaybePooled::Pooled(pool.acquire().await?),
                };
                shadow::drop_schemas(c.conn()).await
            };
            if let Err(cleanup_error) = cleanup.await {
                tracing::error!(%cleanup_error, "could not drop the rebuild's shadow schema");
            }
            let (state, text) = match e {
                ProjectionError::Aborted(why) => {
                    (RebuildState::Live, format!("last rebuild aborted: {why}"))
                }
                other => (RebuildState::Failed, other.to_string()),
            };
            if let Err(status_error) =
                status::end_without_swap(pool, &projections, state, &text).await
            {
                tracing::error!(%status_error, "could not record the rebuild's end");
            }
        }
    }
    // Released explicitly: a closed connection's backend lets go of it only once it has exited,
    // which a rebuild started right after could beat.
    if let Err(e) = sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(REBUILD_LOCK)
        .execute(&mut conn)
        .await
    {
        tracing::warn!(error = %e, "could not release the rebuild lock; it goes with the connection");
    }
    let _ = conn.close().await;
    result
}

enum MaybePooled<'a> {
    Own(&'a mut PgConnection),
    Pooled(PoolConnection<Postgres>),
}

impl MaybePooled<'_> {
    fn conn(&mut self) -> &mut PgConnection {
        match self {
            MaybePooled::Own(c) => c,
            MaybePooled::Pooled(c) => c,
        }
    }
}

struct Run<'a> {
    pool: &'a PgPool,
    projections: Vec<Projection>,
    control: &'a RebuildControl,
    started: Instant,
    last_report: Instant,
    done: u64,
    total: u64,
    on_progress: &'a mut (dyn FnMut(&Progress) + Send),
}

/// The lagging accounts' next events, at most `$1`, in (user, pts) order.
fn delta_query() -> String {
    format!(
        "SELECT {LOG_COLUMNS} FROM user_sequences s \
         LEFT JOIN {w} w ON w.user_id = s.user_id \
         JOIN user_update_events e ON e.user_id = s.user_id AND e.pts > COALESCE(w.pts, 0) \
         WHERE s.pts > COALESCE(w.pts, 0) ORDER BY e.user_id, e.pts LIMIT $1",
        w = watermarks_table()
    )
}

impl Run<'_> {
    async fn run(
        &mut self,
        conn: &mut PgConnection,
    ) -> Result<OnlineRebuildReport, ProjectionError> {
        let live = shadow::live_schema(conn).await?;
        shadow::create(conn, &live, &self.projections).await?;
        sqlx::query(&format!(
            "SET search_path = {SHADOW_SCHEMA}, {}",
            quote(conn, &live).await?
        ))
        .execute(&mut *conn)
        .await?;

        let total: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
            .fetch_one(&mut *conn)
            .await?;
        self.total = u64::try_from(total).unwrap_or(0);
        self.report(Phase::Copy, true).await?;

        // 1. Copy.
        self.copy(conn, &live).await?;
        // Statistics for the planner before the tables serve.
        for p in &self.projections {
            sqlx::query(&format!("ANALYZE {SHADOW_SCHEMA}.{}", p.name()))
                .execute(&mut *conn)
                .await?;
        }

        // 2. Catch up until a round finds only a few new events.
        let mut rounds = 0;
        loop {
            self.check_cancel()?;
            rounds += 1;
            let found = self.catch_up_round(conn).await?;
            if found <= self.control.swap_below_events || rounds >= self.control.max_catch_up_rounds
            {
                break;
            }
        }

        // 3. Swap.
        let mut attempts = 0;
        loop {
            self.check_cancel()?;
            attempts += 1;
            match self.swap(conn, &live).await {
                Ok((delta, held)) => {
                    let report = OnlineRebuildReport {
                        projections: self.projections.clone(),
                        events_applied: self.done,
                        catch_up_rounds: rounds,
                        swap_delta_events: delta,
                        writers_held: held,
                        swap_attempts: attempts,
                        elapsed: self.started.elapsed(),
                    };
                    // The swap is committed: from here a failure only leaves litter behind (the
                    // next rebuild clears it), not a failed rebuild. The retired tables may still
                    // be read by statements that began before the swap; dropping them waits for
                    // those alone.
                    let cleanup = async {
                        sqlx::query("RESET search_path").execute(&mut *conn).await?;
                        shadow::drop_schemas(conn).await
                    };
                    if let Err(e) = cleanup.await {
                        tracing::warn!(error = %e, "the retired tables could not be dropped; the next rebuild will");
                    }
                    tracing::info!(
                        projections = ?self.projections.iter().map(|p| p.name()).collect::<Vec<_>>(),
                        events = self.done,
                        writers_held_ms = held.as_secs_f64() * 1000.0,
                        "projections rebuilt online and swapped in"
                    );
                    return Ok(report);
                }
                Err(e) if is_lock_timeout(&e) && attempts < self.control.swap_attempts => {
                    tracing::warn!(
                        attempt = attempts,
                        "swap lock wait timed out; catching up and retrying"
                    );
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempts))).await;
                    rounds += 1;
                    self.catch_up_round(conn).await?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Applies every event above the watermarks, in batches of one transaction each. Answers how
    /// many there were.
    async fn catch_up_round(&mut self, conn: &mut PgConnection) -> Result<u64, ProjectionError> {
        let query = delta_query();
        let mut found = 0;
        loop {
            self.check_cancel()?;
            let mut tx = conn.begin().await?;
            let rows = sqlx::query(&query)
                .bind(self.control.batch_events)
                .fetch_all(&mut *tx)
                .await?;
            let n = self.apply_rows(&mut tx, &rows).await?;
            tx.commit().await?;
            found += n;
            self.total = self.total.max(self.done);
            self.report(Phase::CatchUp, false).await?;
            if n < self.control.batch_events as u64 {
                return Ok(found);
            }
        }
    }

    /// The swap transaction. Answers the events it applied and how long writers were held.
    async fn swap(
        &mut self,
        conn: &mut PgConnection,
        live: &str,
    ) -> Result<(u64, Duration), ProjectionError> {
        self.report(Phase::Swap, true).await?;
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {RETIRED_SCHEMA}"))
            .execute(&mut *conn)
            .await?;
        let script = shadow::swap_script(conn, live, &self.projections).await?;
        let mut tx = conn.begin().await?;
        sqlx::query(&format!(
            "SET LOCAL lock_timeout = {}",
            self.control.lock_timeout.as_millis().max(1)
        ))
        .execute(&mut *tx)
        .await?;
        let held = Instant::now();
        sqlx::query("LOCK TABLE user_sequences IN EXCLUSIVE MODE")
            .execute(&mut *tx)
            .await?;
        let locked = held.elapsed();
        let query = delta_query();
        let mut delta = 0;
        loop {
            let rows = sqlx::query(&query)
                .bind(self.control.batch_events)
                .fetch_all(&mut *tx)
                .await?;
            let n = self.apply_rows(&mut tx, &rows).await?;
            delta += n;
            if n < self.control.batch_events as u64 {
                break;
            }
        }
        let applied = held.elapsed();
        sqlx::raw_sql(&script).execute(&mut *tx).await?;
        let swapped = held.elapsed();
        let lock_ms = held.elapsed().as_secs_f64() * 1000.0;
        status::finish(&mut tx, &self.projections, self.done, lock_ms).await?;
        // The last moment an abort can still leave everything as it was.
        self.check_cancel()?;
        tx.commit().await?;
        let held = held.elapsed();
        // The figure recorded inside the transaction lacks its commit; the whole of it, now.
        status::record_lock(self.pool, &self.projections, held.as_secs_f64() * 1000.0).await?;
        tracing::info!(
            lock_wait_ms = locked.as_secs_f64() * 1000.0,
            delta_ms = (applied - locked).as_secs_f64() * 1000.0,
            renames_ms = (swapped - applied).as_secs_f64() * 1000.0,
            commit_ms = (held - swapped).as_secs_f64() * 1000.0,
            delta,
            "swap"
        );
        Ok((delta, held))
    }

    /// Projects `rows` into the shadow and moves the watermarks of their accounts, on `conn`
    /// (inside the caller's transaction).
    async fn apply_rows(
        &mut self,
        conn: &mut PgConnection,
        rows: &[sqlx::postgres::PgRow],
    ) -> Result<u64, ProjectionError> {
        let n = apply_rows(conn, &self.projections, rows).await?;
        self.done += n;
        Ok(n)
    }

    /// The copy: `copy_workers` connections, each replaying the accounts `user_id % workers = k`
    /// by keyset pages of the log (accounts are independent: every projector touches only its
    /// event's owner's rows, so the workers never touch the same row). Progress is reported by
    /// this task meanwhile.
    async fn copy(&mut self, conn: &mut PgConnection, live: &str) -> Result<(), ProjectionError> {
        let workers = self.control.copy_workers.max(1);
        let live_q = quote(conn, live).await?;
        let mut extra = Vec::new();
        for _ in 1..workers {
            let mut c: PgConnection = self.pool.acquire().await?.detach();
            sqlx::query(&format!("SET search_path = {SHADOW_SCHEMA}, {live_q}"))
                .execute(&mut c)
                .await?;
            extra.push(c);
        }
        let done = AtomicU64::new(self.done);
        let (projections, control) = (self.projections.clone(), self.control);
        let result = {
            let work = futures::future::try_join_all(
                std::iter::once(conn)
                    .chain(extra.iter_mut())
                    .enumerate()
                    .map(|(k, c)| {
                        copy_worker(c, &projections, control, k as i64, workers as i64, &done)
                    }),
            );
            let mut work = std::pin::pin!(work);
            loop {
                tokio::select! {
                    r = &mut work => break r.map(|_| ()),
                    _ = tokio::time::sleep(control.progress_every.max(Duration::from_millis(10))) => {
                        self.done = done.load(Ordering::Relaxed);
                        self.report(Phase::Copy, true).await?;
                    }
                }
            }
        };
        self.done = done.load(Ordering::Relaxed);
        for c in extra {
            let _ = c.close().await;
        }
        result
    }

    fn check_cancel(&self) -> Result<(), ProjectionError> {
        if self.control.cancel.load(Ordering::Relaxed) {
            Err(aborted())
        } else {
            Ok(())
        }
    }

    fn progress(&self, phase: Phase) -> Progress {
        let elapsed = self.started.elapsed();
        Progress {
            phase,
            events_done: self.done,
            events_total: self.total.max(self.done),
            elapsed,
            rate: if elapsed.as_secs_f64() > 0.0 {
                self.done as f64 / elapsed.as_secs_f64()
            } else {
                0.0
            },
        }
    }

    /// Reports progress to the caller and to `projection_status`, at most every `progress_every`
    /// unless `now`.
    async fn report(&mut self, phase: Phase, now: bool) -> Result<(), ProjectionError> {
        if !now && self.last_report.elapsed() < self.control.progress_every {
            return Ok(());
        }
        self.last_report = Instant::now();
        let p = self.progress(phase);
        (self.on_progress)(&p);
        status::progress(
            self.pool,
            &self.projections,
            phase.as_str(),
            p.events_done,
            p.events_total,
            p.rate,
        )
        .await
    }
}

async fn quote(conn: &mut PgConnection, ident: &str) -> Result<String, ProjectionError> {
    Ok(sqlx::query_scalar("SELECT quote_ident($1)")
        .bind(ident)
        .fetch_one(&mut *conn)
        .await?)
}

/// `lock_timeout` expired (SQLSTATE 55P03).
fn is_lock_timeout(e: &ProjectionError) -> bool {
    matches!(e, ProjectionError::Database(sqlx::Error::Database(d)) if d.code().as_deref() == Some("55P03"))
}

/// Projects `rows` into the shadow and moves the watermarks of their accounts, on `conn` (inside
/// the caller's transaction). Answers how many rows.
async fn apply_rows(
    conn: &mut PgConnection,
    projections: &[Projection],
    rows: &[sqlx::postgres::PgRow],
) -> Result<u64, ProjectionError> {
    let mut marks: Vec<(i64, i32)> = Vec::new();
    let mut events = Vec::with_capacity(rows.len());
    for row in rows {
        let (owner, pts, event) = decode_row(row)?;
        if let Some(event) = event {
            events.push((owner, pts, event));
        }
        match marks.last_mut() {
            Some(last) if last.0 == owner.get() => last.1 = pts.get(),
            _ => marks.push((owner.get(), pts.get())),
        }
    }
    apply_events(conn, projections, &events).await?;
    if !marks.is_empty() {
        let (users, pts): (Vec<i64>, Vec<i32>) = marks.into_iter().unzip();
        sqlx::query(&format!(
            "INSERT INTO {} (user_id, pts) SELECT * FROM unnest($1::bigint[], $2::int[]) \
             ON CONFLICT (user_id) DO UPDATE SET pts = EXCLUDED.pts",
            watermarks_table()
        ))
        .bind(&users)
        .bind(&pts)
        .execute(&mut *conn)
        .await?;
    }
    Ok(rows.len() as u64)
}

/// One copy worker: the accounts `user_id % workers = k`, page by page, one transaction each.
async fn copy_worker(
    conn: &mut PgConnection,
    projections: &[Projection],
    control: &RebuildControl,
    k: i64,
    workers: i64,
    done: &AtomicU64,
) -> Result<(), ProjectionError> {
    let page = format!(
        "SELECT {LOG_COLUMNS} FROM user_update_events e \
         WHERE (e.user_id, e.pts) > ($1, $2) AND e.user_id % $4 = $5 \
         ORDER BY e.user_id, e.pts LIMIT $3"
    );
    let mut after: (i64, i32) = (i64::MIN, 0);
    loop {
        if control.cancel.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        let mut tx = conn.begin().await?;
        let rows = sqlx::query(&page)
            .bind(after.0)
            .bind(after.1)
            .bind(control.batch_events)
            .bind(workers)
            .bind(k)
            .fetch_all(&mut *tx)
            .await?;
        let n = apply_rows(&mut tx, projections, &rows).await?;
        tx.commit().await?;
        done.fetch_add(n, Ordering::Relaxed);
        if let Some(last) = rows.last() {
            after = (
                sqlx::Row::try_get(last, "user_id")?,
                sqlx::Row::try_get(last, "pts")?,
            );
        }
        if n < control.batch_events as u64 {
            return Ok(());
        }
    }
}

fn aborted() -> ProjectionError {
    ProjectionError::Aborted("stopped before the swap; the live tables are untouched".into())
}
