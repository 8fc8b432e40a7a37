//! Checking that the read models are exactly what the log projects to, and that the log itself is
//! well formed. Everything happens in one transaction that is rolled back: the live tables are copied
//! aside, the log is replayed into the real tables (so the real indexes and constraints apply), the
//! two are compared, and the rollback restores the live rows untouched.

use sqlx::{PgConnection, PgPool, Row};

use crate::rebuild::{lock_for_replay, replay_log, truncate_projections};
use crate::{Projection, ProjectionError};

/// At most this many differences are described; all are counted.
pub const MAX_REPORTED_DIFFERENCES: usize = 20;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// The first differences found, human-readable.
    pub differences: Vec<String>,
    /// How many differences there are in all.
    pub total_differences: u64,
    /// The tables that were checked.
    pub tables_checked: Vec<String>,
    /// Events replayed from the log.
    pub events_replayed: u64,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.total_differences == 0
    }

    fn add(&mut self, total: i64, described: impl IntoIterator<Item = String>) {
        self.total_differences += u64::try_from(total).unwrap_or(0);
        for d in described {
            if self.differences.len() < MAX_REPORTED_DIFFERENCES {
                self.differences.push(d);
            }
        }
    }
}

/// Verifies the log and every read model. Writers and reads of the read models wait while it runs.
pub async fn verify(pool: &PgPool) -> Result<VerifyReport, ProjectionError> {
    let mut tx = pool.begin().await?;
    lock_for_replay(&mut tx).await?;
    let mut report = VerifyReport::default();
    check_pts_density(&mut tx, &mut report).await?;
    check_sequences(&mut tx, &mut report).await?;
    check_box_density(&mut tx, &mut report).await?;
    report.tables_checked.extend([
        "user_update_events".to_string(),
        "user_sequences".to_string(),
    ]);

    for p in Projection::ALL {
        sqlx::query(&format!(
            "CREATE TEMP TABLE live_{0} ON COMMIT DROP AS SELECT * FROM {0}",
            p.name()
        ))
        .execute(&mut *tx)
        .await?;
    }
    truncate_projections(&mut tx).await?;
    report.events_replayed = replay_log(&mut tx).await?;
    for p in Projection::ALL {
        compare(&mut tx, p, &mut report).await?;
        report.tables_checked.push(p.name().to_string());
    }
    tx.rollback().await?;
    Ok(report)
}

/// Each event must start right where the previous one of its user ended (the first at 0).
async fn check_pts_density(
    conn: &mut PgConnection,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let rows = sqlx::query(
        "SELECT user_id, pts, pts_count, prev, count(*) OVER () AS total FROM ( \
           SELECT user_id, pts, pts_count, lag(pts, 1, 0) OVER (PARTITION BY user_id ORDER BY pts) AS prev \
           FROM user_update_events) e \
         WHERE pts - pts_count <> prev ORDER BY user_id, pts LIMIT $1",
    )
    .bind(MAX_REPORTED_DIFFERENCES as i64)
    .fetch_all(&mut *conn)
    .await?;
    let mut total = 0;
    let mut described = Vec::new();
    for row in rows {
        total = row.try_get::<i64, _>("total")?;
        let (user, pts, count, prev): (i64, i32, i32, i32) = (
            row.try_get("user_id")?,
            row.try_get("pts")?,
            row.try_get("pts_count")?,
            row.try_get("prev")?,
        );
        described.push(format!(
            "user_update_events (user_id={user}, pts={pts}): starts at {} but the previous event ends at {prev}",
            pts - count
        ));
    }
    report.add(total, described);
    Ok(())
}

/// The allocator's pts must be the last event's pts (0 with no events).
async fn check_sequences(
    conn: &mut PgConnection,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let rows = sqlx::query(
        "WITH last AS (SELECT user_id, max(pts) AS pts FROM user_update_events GROUP BY user_id) \
         SELECT COALESCE(s.user_id, l.user_id) AS user_id, s.pts AS seq_pts, l.pts AS log_pts, \
                count(*) OVER () AS total \
         FROM user_sequences s FULL JOIN last l ON l.user_id = s.user_id \
         WHERE COALESCE(s.pts, -1) <> COALESCE(l.pts, 0) ORDER BY 1 LIMIT $1",
    )
    .bind(MAX_REPORTED_DIFFERENCES as i64)
    .fetch_all(&mut *conn)
    .await?;
    let mut total = 0;
    let mut described = Vec::new();
    for row in rows {
        total = row.try_get::<i64, _>("total")?;
        let user: i64 = row.try_get("user_id")?;
        let seq: Option<i32> = row.try_get("seq_pts")?;
        let log: Option<i32> = row.try_get("log_pts")?;
        described.push(format!(
            "user_sequences (user_id={user}): pts {} but the log ends at {}",
            seq.map_or("missing".to_string(), |p| p.to_string()),
            log.unwrap_or(0)
        ));
    }
    report.add(total, described);
    Ok(())
}

/// Each owner's boxes must be exactly 1..=user_sequences.box_id: none missing, none beyond.
async fn check_box_density(
    conn: &mut PgConnection,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let rows = sqlx::query(
        "SELECT s.user_id, g.box_id, count(*) OVER () AS total \
         FROM user_sequences s CROSS JOIN LATERAL generate_series(1, s.box_id) AS g(box_id) \
         WHERE NOT EXISTS (SELECT 1 FROM message_boxes m WHERE m.owner_user_id = s.user_id AND m.box_id = g.box_id) \
         ORDER BY 1, 2 LIMIT $1",
    )
    .bind(MAX_REPORTED_DIFFERENCES as i64)
    .fetch_all(&mut *conn)
    .await?;
    let mut total = 0;
    let mut described = Vec::new();
    for row in rows {
        total = row.try_get::<i64, _>("total")?;
        let (user, box_id): (i64, i32) = (row.try_get("user_id")?, row.try_get("box_id")?);
        described.push(format!(
            "message_boxes (owner_user_id={user}, box_id={box_id}): allocated but missing"
        ));
    }
    report.add(total, described);

    let rows = sqlx::query(
        "SELECT m.owner_user_id, m.box_id, s.box_id AS allocated, count(*) OVER () AS total \
         FROM message_boxes m LEFT JOIN user_sequences s ON s.user_id = m.owner_user_id \
         WHERE s.user_id IS NULL OR m.box_id > s.box_id ORDER BY 1, 2 LIMIT $1",
    )
    .bind(MAX_REPORTED_DIFFERENCES as i64)
    .fetch_all(&mut *conn)
    .await?;
    let mut total = 0;
    let mut described = Vec::new();
    for row in rows {
        total = row.try_get::<i64, _>("total")?;
        let (user, box_id): (i64, i32) = (row.try_get("owner_user_id")?, row.try_get("box_id")?);
        let allocated: Option<i32> = row.try_get("allocated")?;
        described.push(format!(
            "message_boxes (owner_user_id={user}, box_id={box_id}): beyond the allocator's box_id {}",
            allocated.map_or("(no user_sequences row)".to_string(), |b| b.to_string())
        ));
    }
    report.add(total, described);
    Ok(())
}

/// Live rows (copied aside) against replayed rows, joined on the primary key.
async fn compare(
    conn: &mut PgConnection,
    p: Projection,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let [k1, k2] = p.key_columns();
    let table = p.name();
    let rows = sqlx::query(&format!(
        "SELECT COALESCE(l.{k1}, r.{k1})::bigint AS k1, COALESCE(l.{k2}, r.{k2})::bigint AS k2, \
                to_jsonb(l) AS live, to_jsonb(r) AS replayed, count(*) OVER () AS total \
         FROM live_{table} l FULL JOIN {table} r ON l.{k1} = r.{k1} AND l.{k2} = r.{k2} \
         WHERE to_jsonb(l) IS DISTINCT FROM to_jsonb(r) \
         ORDER BY 1, 2 LIMIT $1"
    ))
    .bind(MAX_REPORTED_DIFFERENCES as i64)
    .fetch_all(&mut *conn)
    .await?;
    let mut total = 0;
    let mut described = Vec::new();
    for row in rows {
        total = row.try_get::<i64, _>("total")?;
        let (a, b): (i64, i64) = (row.try_get("k1")?, row.try_get("k2")?);
        let live: Option<serde_json::Value> = row.try_get("live")?;
        let replayed: Option<serde_json::Value> = row.try_get("replayed")?;
        described.push(format!(
            "{table} ({k1}={a}, {k2}={b}): {}",
            describe(live, replayed)
        ));
    }
    report.add(total, described);
    Ok(())
}

/// "field: live X vs replayed Y" for each differing column, or the whole row if one side is missing.
fn describe(live: Option<serde_json::Value>, replayed: Option<serde_json::Value>) -> String {
    match (live, replayed) {
        (Some(l), None) => format!("only in the live table: {l}"),
        (None, Some(r)) => format!("missing from the live table, replayed: {r}"),
        (None, None) => "no row on either side".to_string(),
        (Some(l), Some(r)) => {
            let (Some(lo), Some(ro)) = (l.as_object(), r.as_object()) else {
                return format!("live {l} vs replayed {r}");
            };
            let null = serde_json::Value::Null;
            let mut keys: Vec<&String> = lo.keys().chain(ro.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .filter_map(|k| {
                    let (lv, rv) = (lo.get(k).unwrap_or(&null), ro.get(k).unwrap_or(&null));
                    (lv != rv).then(|| format!("{k}: live {lv} vs replayed {rv}"))
                })
                .collect::<Vec<_>>()
                .join("; ")
        }
    }
}
