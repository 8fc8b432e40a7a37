//! `projection_status` (migration 0004): per read model, the projector version that built the live
//! table, whether a rebuild runs (and how far it got), and how the last one ended. The rebuild is
//! usually another process than the servers, so this table is how `/metrics`, `GET
//! /admin/projections` and `ptslog projections status` see its progress.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool, Row};

use crate::shadow;
use crate::{Projection, ProjectionError};

/// A rebuild that has not reported progress for this long has probably died with its process.
pub const ABANDONED_AFTER_SECONDS: f64 = 60.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebuildState {
    /// Served and maintained inline by every command: never behind the log.
    Live,
    /// Served as is while a shadow copy is built from the log.
    Rebuilding,
    /// The last rebuild failed; the live table is untouched and still maintained inline.
    Failed,
}

impl RebuildState {
    pub fn as_str(self) -> &'static str {
        match self {
            RebuildState::Live => "live",
            RebuildState::Rebuilding => "rebuilding",
            RebuildState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> Result<Self, ProjectionError> {
        match s {
            "live" => Ok(RebuildState::Live),
            "rebuilding" => Ok(RebuildState::Rebuilding),
            "failed" => Ok(RebuildState::Failed),
            other => Err(ProjectionError::Corrupt(format!(
                "projection_status.state {other:?}"
            ))),
        }
    }
}

/// How far a running rebuild is.
#[derive(Debug, Clone, PartialEq)]
pub struct RebuildProgress {
    pub phase: String,
    pub started_at: Option<DateTime<Utc>>,
    pub events_done: i64,
    pub events_total: i64,
    /// Events per second since the copy started.
    pub rate: f64,
    /// Seconds since the rebuild last reported progress.
    pub seconds_since_update: f64,
    /// Sum over accounts of the pts the shadow copy is behind the log head (None when unknown).
    pub shadow_lag_pts: Option<i64>,
}

impl RebuildProgress {
    pub fn eta_seconds(&self) -> Option<f64> {
        let left = (self.events_total - self.events_done).max(0) as f64;
        (self.rate > 0.0).then(|| left / self.rate)
    }

    pub fn abandoned(&self) -> bool {
        self.seconds_since_update > ABANDONED_AFTER_SECONDS
    }
}

/// One row of `projection_status`, with what the running code says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionStatus {
    pub name: String,
    /// None for a row this code does not know (a projection removed from the code).
    pub projection: Option<Projection>,
    /// The projector version that built the live table (None: unknown).
    pub version: Option<i32>,
    /// The version of the projector in this code.
    pub code_version: Option<i32>,
    pub state: RebuildState,
    pub error: Option<String>,
    /// Events the last rebuild applied before its swap.
    pub events_applied: i64,
    pub last_rebuilt_at: Option<DateTime<Utc>>,
    /// How long the last swap held writers back.
    pub last_lock_ms: Option<f64>,
    /// Present while `state` is rebuilding.
    pub rebuild: Option<RebuildProgress>,
}

impl ProjectionStatus {
    /// The live table was built by another projector version than this code's: rebuild it.
    pub fn is_stale(&self) -> bool {
        self.projection.is_some() && self.version != self.code_version
    }

    /// Events of the log the live table has not applied: always 0, as every command applies its
    /// events to every read model in its own transaction.
    pub fn lag(&self) -> i64 {
        0
    }
}

/// Adds a row for every projection of this code that has none. Its version is unknown (NULL):
/// the table was not built by a rebuild this table knows of, so it shows as stale until rebuilt.
pub async fn register(conn: &mut PgConnection) -> Result<(), ProjectionError> {
    let names: Vec<&str> = Projection::ALL.iter().map(|p| p.name()).collect();
    sqlx::query(
        "INSERT INTO projection_status (name) SELECT unnest($1::text[]) ON CONFLICT (name) DO NOTHING",
    )
    .bind(&names)
    .execute(conn)
    .await?;
    Ok(())
}

/// Every projection's status, in dependency order (rows of unknown projections last). Read only: a
/// projection without a row shows with an unknown version. `with_shadow_lag` also measures how far
/// a running rebuild's shadow is behind the log (a scan of `user_sequences`).
pub async fn load(
    pool: &PgPool,
    with_shadow_lag: bool,
) -> Result<Vec<ProjectionStatus>, ProjectionError> {
    let mut conn = pool.acquire().await?;
    let rows = sqlx::query(
        "SELECT name, version, state, error, events_applied, last_rebuilt_at, last_lock_ms, \
                rebuild_phase, rebuild_started_at, rebuild_events_done, rebuild_events_total, rebuild_rate, \
                extract(epoch FROM now() - updated_at)::float8 AS since_update \
         FROM projection_status",
    )
    .fetch_all(&mut *conn)
    .await?;
    let lag = if with_shadow_lag {
        shadow_lag_pts(&mut conn).await?
    } else {
        None
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let name: String = row.try_get("name")?;
        let projection = Projection::from_name(&name);
        let state = RebuildState::parse(row.try_get::<&str, _>("state")?)?;
        let rebuild = (state == RebuildState::Rebuilding)
            .then(|| -> Result<RebuildProgress, ProjectionError> {
                Ok(RebuildProgress {
                    phase: row
                        .try_get::<Option<String>, _>("rebuild_phase")?
                        .unwrap_or_default(),
                    started_at: row.try_get("rebuild_started_at")?,
                    events_done: row.try_get("rebuild_events_done")?,
                    events_total: row.try_get("rebuild_events_total")?,
                    rate: row.try_get("rebuild_rate")?,
                    seconds_since_update: row.try_get("since_update")?,
                    shadow_lag_pts: lag,
                })
            })
            .transpose()?;
        out.push(ProjectionStatus {
            code_version: projection.map(Projection::version),
            projection,
            name,
            version: row.try_get("version")?,
            state,
            error: row.try_get("error")?,
            events_applied: row.try_get("events_applied")?,
            last_rebuilt_at: row.try_get("last_rebuilt_at")?,
            last_lock_ms: row.try_get("last_lock_ms")?,
            rebuild,
        });
    }
    for p in Projection::ALL {
        if !out.iter().any(|s| s.projection == Some(p)) {
            out.push(ProjectionStatus {
                name: p.name().to_string(),
                projection: Some(p),
                version: None,
                code_version: Some(p.version()),
                state: RebuildState::Live,
                error: None,
                events_applied: 0,
                last_rebuilt_at: None,
                last_lock_ms: None,
                rebuild: None,
            });
        }
    }
    let position = |s: &ProjectionStatus| {
        s.projection
            .and_then(|p| Projection::ALL.iter().position(|q| *q == p))
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| position(a).cmp(&position(b)).then(a.name.cmp(&b.name)));
    Ok(out)
}

/// How far the shadow copy of a running rebuild is behind the log head, summed over accounts, in
/// pts (None when no rebuild has a shadow).
async fn shadow_lag_pts(conn: &mut PgConnection) -> Result<Option<i64>, ProjectionError> {
    let watermarks = shadow::watermarks_table();
    let exists: Option<String> = sqlx::query_scalar("SELECT to_regclass($1)::text")
        .bind(&watermarks)
        .fetch_one(&mut *conn)
        .await?;
    if exists.is_none() {
        return Ok(None);
    }
    // The shadow can be dropped between the check and the query (the rebuild ended): no lag then.
    let lag = sqlx::query_scalar::<_, i64>(&format!(
        "SELECT COALESCE(sum(s.pts - COALESCE(w.pts, 0)), 0)::bigint FROM user_sequences s \
         LEFT JOIN {watermarks} w ON w.user_id = s.user_id WHERE s.pts > COALESCE(w.pts, 0)"
    ))
    .fetch_one(&mut *conn)
    .await;
    match lag {
        Ok(lag) => Ok(Some(lag)),
        Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("42P01") => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn names(projections: &[Projection]) -> Vec<&'static str> {
    projections.iter().map(|p| p.name()).collect()
}

/// Marks `projections` as rebuilding from the start.
pub(crate) async fn begin(
    pool: &PgPool,
    projections: &[Projection],
) -> Result<(), ProjectionError> {
    let mut conn = pool.acquire().await?;
    register(&mut conn).await?;
    sqlx::query(
        "UPDATE projection_status SET state = 'rebuilding', error = NULL, rebuild_phase = 'prepare', \
           rebuild_started_at = now(), rebuild_events_done = 0, rebuild_events_total = 0, \
           rebuild_rate = 0, updated_at = now() \
         WHERE name = ANY($1)",
    )
    .bind(names(projections))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

pub(crate) async fn progress(
    pool: &PgPool,
    projections: &[Projection],
    phase: &str,
    done: u64,
    total: u64,
    rate: f64,
) -> Result<(), ProjectionError> {
    sqlx::query(
        "UPDATE projection_status SET rebuild_phase = $2, rebuild_events_done = $3, \
           rebuild_events_total = $4, rebuild_rate = $5, updated_at = now() \
         WHERE name = ANY($1)",
    )
    .bind(names(projections))
    .bind(phase)
    .bind(i64::try_from(done).unwrap_or(i64::MAX))
    .bind(i64::try_from(total).unwrap_or(i64::MAX))
    .bind(rate)
    .execute(pool)
    .await?;
    Ok(())
}

/// Records the swapped-in tables: this code's versions, live. Runs inside the swap's transaction,
/// so the status changes exactly when the tables do.
pub(crate) async fn finish(
    conn: &mut PgConnection,
    projections: &[Projection],
    events_applied: u64,
    lock_ms: f64,
) -> Result<(), ProjectionError> {
    let versions: Vec<i32> = projections.iter().map(|p| p.version()).collect();
    sqlx::query(
        "UPDATE projection_status s SET version = v.version, state = 'live', error = NULL, \
           events_applied = $3, last_rebuilt_at = now(), last_lock_ms = $4, rebuild_phase = NULL, \
           rebuild_events_done = $3, updated_at = now() \
         FROM unnest($1::text[], $2::int[]) AS v(name, version) WHERE s.name = v.name",
    )
    .bind(names(projections))
    .bind(&versions)
    .bind(i64::try_from(events_applied).unwrap_or(i64::MAX))
    .bind(lock_ms)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records how long the last swap held writers, commit included.
pub(crate) async fn record_lock(
    pool: &PgPool,
    projections: &[Projection],
    lock_ms: f64,
) -> Result<(), ProjectionError> {
    sqlx::query("UPDATE projection_status SET last_lock_ms = $2 WHERE name = ANY($1)")
        .bind(names(projections))
        .bind(lock_ms)
        .execute(pool)
        .await?;
    Ok(())
}

/// Records a rebuild that ended without a swap: `failed` with the error, or back to `live` (with
/// the reason kept in `error`) when an operator aborted it.
pub(crate) async fn end_without_swap(
    pool: &PgPool,
    projections: &[Projection],
    state: RebuildState,
    error: &str,
) -> Result<(), ProjectionError> {
    sqlx::query(
        "UPDATE projection_status SET state = $2, error = $3, rebuild_phase = NULL, updated_at = now() \
         WHERE name = ANY($1)",
    )
    .bind(names(projections))
    .bind(state.as_str())
    .bind(error)
    .execute(pool)
    .await?;
    Ok(())
}
