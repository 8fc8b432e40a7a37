//! Repairing some accounts' rows in place: their rows of the chosen read models are deleted and
//! their logs replayed into the live tables, in one transaction that holds those accounts' sequence
//! rows (as every writer of them does), so their commands wait for the repair and nobody else's do.
//! Exact because every projector reads and writes only the rows of the event's owner.

use std::time::{Duration, Instant};

use domain::UserId;
use sqlx::{Connection, PgPool};

use crate::rebuild::{decode_row, LOG_COLUMNS};
use crate::{apply_events, with_dependencies, Projection, ProjectionError};

/// Events fetched per round trip.
const BATCH: i64 = 1000;

#[derive(Debug, Clone, PartialEq)]
pub struct RepairReport {
    /// What was repaired: the requested projections and what they read.
    pub projections: Vec<Projection>,
    pub rows_deleted: u64,
    pub events_applied: u64,
    /// How long those accounts' writers were held back.
    pub accounts_held: Duration,
}

/// Replays `users`' logs into `selected` (and what they read), replacing those users' rows.
pub async fn repair_users(
    pool: &PgPool,
    selected: &[Projection],
    users: &[UserId],
) -> Result<RepairReport, ProjectionError> {
    let projections = with_dependencies(selected);
    let mut ids: Vec<i64> = users.iter().map(|u| u.get()).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut conn = pool.acquire().await?;
    let mut tx = conn.begin().await?;
    let held = Instant::now();
    // The same statement and order as every writer: no deadlock with them.
    sqlx::query(
        "SELECT user_id FROM user_sequences WHERE user_id = ANY($1) ORDER BY user_id FOR UPDATE",
    )
    .bind(&ids)
    .fetch_all(&mut *tx)
    .await?;
    let mut rows_deleted = 0;
    for p in &projections {
        rows_deleted += sqlx::query(&format!(
            "DELETE FROM {} WHERE {} = ANY($1)",
            p.name(),
            p.owner_column()
        ))
        .bind(&ids)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    }
    let page = format!(
        "SELECT {LOG_COLUMNS} FROM user_update_events e \
         WHERE e.user_id = ANY($1) AND (e.user_id, e.pts) > ($2, $3) ORDER BY e.user_id, e.pts LIMIT $4"
    );
    let mut after: (i64, i32) = (i64::MIN, 0);
    let mut events_applied = 0;
    loop {
        let rows = sqlx::query(&page)
            .bind(&ids)
            .bind(after.0)
            .bind(after.1)
            .bind(BATCH)
            .fetch_all(&mut *tx)
            .await?;
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            let (owner, pts, event) = decode_row(row)?;
            if let Some(event) = event {
                events.push((owner, pts, event));
            }
            after = (owner.get(), pts.get());
        }
        apply_events(&mut tx, &projections, &events).await?;
        events_applied += rows.len() as u64;
        if (rows.len() as i64) < BATCH {
            break;
        }
    }
    tx.commit().await?;
    Ok(RepairReport {
        projections,
        rows_deleted,
        events_applied,
        accounts_held: held.elapsed(),
    })
}
