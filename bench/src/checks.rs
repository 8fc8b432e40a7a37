//! Correctness, asserted as the bench runs: after each phase the log must be dense per account, the
//! counters must match it, no message may be duplicated, and every successful send must have put
//! its boxes in place.

use serde::{Deserialize, Serialize};
use sqlx::PgPool;

/// Logs up to this many events are checked whole after each phase; longer ones only where the
/// phase wrote (each new event's predecessor must exist).
const FULL_CHECK_MAX_EVENTS: i64 = 1_000_000;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub phase: String,
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

fn check(phase: &str, name: &str, ok: bool, detail: String) -> Check {
    Check {
        phase: phase.to_string(),
        name: name.to_string(),
        ok,
        detail,
    }
}

/// Runs every check; `expected_boxes` is the number of message_boxes rows the run must have made
/// (two per successful send, one per Saved Messages send, plus what pgbench and the loader wrote),
/// `since` the start of the phase (for the incremental density check of large logs).
pub async fn after_phase(
    pool: &PgPool,
    phase: &str,
    expected_boxes: u64,
    since: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<Vec<Check>> {
    let mut out = Vec::new();
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(pool)
        .await?;

    // Density: every event starts right where the previous one of its account ended.
    let gaps: i64 = if events <= FULL_CHECK_MAX_EVENTS {
        sqlx::query_scalar(
            "SELECT count(*) FROM (SELECT pts, pts_count, lag(pts, 1, 0) OVER (PARTITION BY user_id ORDER BY pts) AS prev \
             FROM user_update_events) e WHERE pts - pts_count <> prev",
        )
        .fetch_one(pool)
        .await?
    } else {
        sqlx::query_scalar(
            "SELECT count(*) FROM user_update_events e WHERE e.committed_at >= $1 AND e.pts - e.pts_count > 0 \
             AND NOT EXISTS (SELECT 1 FROM user_update_events p WHERE p.user_id = e.user_id AND p.pts = e.pts - e.pts_count)",
        )
        .bind(since)
        .fetch_one(pool)
        .await?
    };
    let scope = if events <= FULL_CHECK_MAX_EVENTS {
        "whole log"
    } else {
        "events of this phase"
    };
    out.push(check(
        phase,
        "pts dense",
        gaps == 0,
        format!("{gaps} gaps or overlaps ({scope}, {events} events)"),
    ));

    // The allocator agrees with the log.
    let off: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM user_sequences s \
         LEFT JOIN LATERAL (SELECT pts FROM user_update_events e WHERE e.user_id = s.user_id ORDER BY pts DESC LIMIT 1) l ON true \
         WHERE s.pts <> COALESCE(l.pts, 0)",
    )
    .fetch_one(pool)
    .await?;
    out.push(check(
        phase,
        "counters match the log",
        off == 0,
        format!("{off} accounts whose user_sequences.pts is not their last event"),
    ));

    // No message delivered twice, no send answered twice.
    // (On a large log, only the newest million message ids: more than any phase sends.)
    let dup_messages: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT message_id FROM message_boxes \
           WHERE $1 OR message_id > (SELECT last_value FROM private_message_ids) - 1000000 \
           GROUP BY message_id HAVING count(*) > 2) d",
    )
    .bind(events <= FULL_CHECK_MAX_EVENTS)
    .fetch_one(pool)
    .await?;
    out.push(check(
        phase,
        "no duplicate delivery",
        dup_messages == 0,
        format!("{dup_messages} messages in more than two boxes"),
    ));

    // Every successful send is in the boxes (deleted ones stay as soft-deleted rows).
    let boxes: i64 = sqlx::query_scalar("SELECT count(*) FROM message_boxes")
        .fetch_one(pool)
        .await?;
    let new_message_events: i64 =
        sqlx::query_scalar("SELECT count(*) FROM user_update_events WHERE kind = 'new_message'")
            .fetch_one(pool)
            .await?;
    let expected = i64::try_from(expected_boxes).unwrap_or(i64::MAX);
    out.push(check(
        phase,
        "every message delivered",
        boxes == expected && new_message_events == expected,
        format!("{boxes} boxes and {new_message_events} new_message events; expected {expected}"),
    ));
    Ok(out)
}

/// `projections::verify` (the read models equal a replay of the log; pts and box ids dense).
pub async fn verify(pool: &PgPool, phase: &str) -> anyhow::Result<Check> {
    let t = std::time::Instant::now();
    let report = projections::verify(pool).await?;
    Ok(check(
        phase,
        "projections verify",
        report.is_clean(),
        format!(
            "{} events replayed in {:.1} s, {} differences{}",
            report.events_replayed,
            t.elapsed().as_secs_f64(),
            report.total_differences,
            if report.differences.is_empty() {
                String::new()
            } else {
                format!(": {}", report.differences.join("; "))
            }
        ),
    ))
}
