//! The write-ahead log's segment files around the open-loop phases.
//!
//! Postgres writes a new 16 MB WAL segment full of zeros and fsyncs it while holding the lock
//! every commit's flush takes (`WALWriteLock`), so while a server creates segments, instead of
//! reusing the ones its checkpoints recycle, every write waits for that file every few seconds
//! (27–38 ms each time at 1,000 sends/s on a bench machine's disk with a build beside it;
//! docs/performance.md, "WAL segments"). A server that has run for a while reuses recycled
//! segments (at least as many as `min_wal_size` keeps); a fresh instance would measure its first
//! gigabyte's creation instead. So the bench checkpoints before its closed loops and again before
//! its open loops, and reports the segments each open-loop phase created.

use sqlx::PgPool;

/// `CHECKPOINT`: recycles the segments written so far for the phases that follow (needs a
/// superuser or pg_checkpoint; skipped with a warning otherwise, as the figures still stand).
pub async fn checkpoint(pool: &PgPool, before: &str) {
    if let Err(e) = sqlx::query("CHECKPOINT").execute(pool).await {
        eprintln!("warning: CHECKPOINT before {before} failed ({e})");
    }
}

/// The files in `pg_wal` (`None` without the right to list it: a superuser or pg_monitor). A
/// recycled segment is renamed, a new one added, so across a phase with no checkpoint in it the
/// difference is the segments the phase created.
pub async fn segment_files(pool: &PgPool) -> Option<i64> {
    sqlx::query_scalar("SELECT count(*) FROM pg_ls_waldir()")
        .fetch_one(pool)
        .await
        .ok()
}

/// The segments created between two readings of [`segment_files`], for a phase's params.
pub fn created(before: Option<i64>, after: Option<i64>) -> serde_json::Value {
    match (before, after) {
        (Some(b), Some(a)) => serde_json::json!(a - b),
        _ => serde_json::Value::Null,
    }
}
