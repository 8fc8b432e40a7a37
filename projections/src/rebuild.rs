//! Rebuilding the read models from the log in place, in one transaction: writers wait for the whole
//! rebuild, and so do reads of the read models (the tables are truncated and refilled). Meant for
//! tests and empty databases; operators use the online rebuild (`online.rs`), which keeps serving.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgPool, Row};

use crate::{apply_events, table_list, Projection, ProjectionError};

/// Events fetched from the replay cursor at a time: memory stays constant however long the log is.
const REPLAY_BATCH: i64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RebuildReport {
    pub events_applied: u64,
}

/// Empties every read model and replays the whole log into it, in one transaction.
pub async fn rebuild_all(pool: &PgPool) -> Result<RebuildReport, ProjectionError> {
    let mut tx = pool.begin().await?;
    lock_for_replay(&mut tx).await?;
    truncate_projections(&mut tx).await?;
    let events_applied = replay_log(&mut tx).await?;
    tx.commit().await?;
    tracing::info!(events_applied, "projections rebuilt from the log");
    Ok(RebuildReport { events_applied })
}

/// Stops every writer and takes the projection tables for a replay.
///
/// First `user_sequences` in EXCLUSIVE mode: every writer locks its accounts' rows there before it
/// projects anything, so this waits for the writers in flight (whose events are then committed and
/// visible to the replay) and holds back new ones, while plain reads go on. Only then the projection
/// tables, ACCESS EXCLUSIVE (what TRUNCATE needs, so there is no lock upgrade later). In that order
/// no writer can hold one projection table while waiting for another we hold: no deadlock.
pub(crate) async fn lock_for_replay(conn: &mut PgConnection) -> Result<(), ProjectionError> {
    sqlx::query("LOCK TABLE user_sequences IN EXCLUSIVE MODE")
        .execute(&mut *conn)
        .await?;
    sqlx::query(&format!(
        "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
        table_list()
    ))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

pub(crate) async fn truncate_projections(conn: &mut PgConnection) -> Result<(), ProjectionError> {
    sqlx::query(&format!("TRUNCATE {}", table_list()))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Replays the whole log, in (user, pts) order, through the projectors on this connection. A server
/// side cursor is used rather than a row stream because the projectors need the same connection
/// between fetches. Answers the number of events applied.
pub async fn replay_log(conn: &mut PgConnection) -> Result<u64, ProjectionError> {
    sqlx::query(
        "DECLARE ptslog_replay NO SCROLL CURSOR FOR \
         SELECT user_id, pts, kind, payload_version, payload::text AS payload FROM user_update_events ORDER BY user_id, pts",
    )
    .execute(&mut *conn)
    .await?;
    let mut applied = 0u64;
    loop {
        let rows = sqlx::query(&format!("FETCH {REPLAY_BATCH} FROM ptslog_replay"))
            .fetch_all(&mut *conn)
            .await?;
        if rows.is_empty() {
            break;
        }
        let mut events = Vec::with_capacity(rows.len());
        for row in rows {
            let (owner, at, event) = decode_row(&row)?;
            if let Some(event) = event {
                events.push((owner, at, event));
            }
        }
        apply_events(&mut *conn, &Projection::ALL, &events).await?;
        applied += events.len() as u64;
    }
    sqlx::query("CLOSE ptslog_replay")
        .execute(&mut *conn)
        .await?;
    Ok(applied)
}

/// The log columns a replay reads, for `SELECT {LOG_COLUMNS} FROM user_update_events e`.
/// The payload is read as text and parsed here, so a payload serde_json cannot read fails only
/// its own row.
pub(crate) const LOG_COLUMNS: &str =
    "e.user_id, e.pts, e.kind, e.payload_version, e.payload::text AS payload";

/// One log row (selected with [`LOG_COLUMNS`]) as the owner, pts and event to project. A row
/// whose payload cannot be read or decoded has no event: it is logged and left out, like
/// getDifference leaves it out, so one bad row never stops a rebuild, repair or verify
/// (docs/events.md, "Rows that cannot be read"). Only an unreadable position is an error.
pub(crate) fn decode_row(row: &PgRow) -> Result<(UserId, Pts, Option<UserEvent>), ProjectionError> {
    let user_id: i64 = row.try_get("user_id")?;
    let pts: i32 = row.try_get("pts")?;
    let kind: String = row.try_get("kind")?;
    let version: i16 = row.try_get("payload_version")?;
    let payload: String = row.try_get("payload")?;
    let owner = UserId::new(user_id)
        .map_err(|_| ProjectionError::Corrupt(format!("log row with user_id {user_id}")))?;
    let at = Pts::new(pts).ok_or_else(|| {
        ProjectionError::Corrupt(format!("log row of user {user_id} with pts {pts}"))
    })?;
    let event = serde_json::from_str(&payload)
        .map_err(|e| format!("payload is not readable JSON: {e}"))
        .and_then(|payload| UserEvent::decode(&kind, version, payload).map_err(|e| e.to_string()));
    match event {
        Ok(event) => Ok((owner, at, Some(event))),
        Err(reason) => {
            tracing::error!(user_id, pts, kind = %kind, reason = %reason, "skipping a log row that cannot be read");
            Ok((owner, at, None))
        }
    }
}
