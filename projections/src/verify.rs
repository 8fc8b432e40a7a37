//! Checking that the read models are exactly what the log projects to, and that the log itself is
//! well formed, without holding writers back.
//!
//! The accounts are taken in chunks, shared out among four connections. For each chunk one
//! REPEATABLE READ transaction replays the chunk's logs into temporary tables (same columns,
//! constraints and indexes as the live ones; on that connection they hide the live tables, so the
//! projectors write into them) and compares them with the chunk's live rows, row by row, joined on
//! the primary key. Log and read models are
//! written in the same transactions, so one snapshot always shows them consistent: no lock is taken
//! beyond what a plain SELECT takes, and a chunk's snapshot lives only as long as the chunk.

use std::sync::atomic::{AtomicUsize, Ordering};

use domain::UserId;
use sqlx::{Connection, PgConnection, PgPool, Row};

use crate::rebuild::{decode_row, LOG_COLUMNS};
use crate::shadow::live_schema;
use crate::{apply_events, with_dependencies, Projection, ProjectionError};

/// At most this many differences are described; all are counted.
pub const MAX_REPORTED_DIFFERENCES: usize = 20;

/// Accounts replayed and compared per transaction.
const CHUNK_USERS: usize = 256;

/// Connections replaying chunks at once.
const VERIFY_CONNECTIONS: usize = 4;

/// Log rows fetched per round trip.
const BATCH: i64 = 1000;

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

/// Verifies the log and every read model, for every account.
pub async fn verify(pool: &PgPool) -> Result<VerifyReport, ProjectionError> {
    verify_selected(pool, &Projection::ALL, None).await
}

/// Which accounts a chunk covers: owners from `lo` to `hi` (inclusive), and among them only
/// `only` when given.
struct Owners {
    lo: i64,
    hi: i64,
    only: Option<Vec<i64>>,
}

impl Owners {
    /// The SQL condition on `column`, with the bounds as $1, $2 and the list as $3.
    fn condition(column: &str) -> String {
        format!("{column} BETWEEN $1 AND $2 AND ($3::bigint[] IS NULL OR {column} = ANY($3))")
    }
}

/// Verifies `selected` read models (each replayed with what it reads), for every account or only
/// `users`, and the log of those accounts.
pub async fn verify_selected(
    pool: &PgPool,
    selected: &[Projection],
    users: Option<&[UserId]>,
) -> Result<VerifyReport, ProjectionError> {
    let replayed = with_dependencies(selected);
    let compared: Vec<Projection> = Projection::ALL
        .into_iter()
        .filter(|p| selected.contains(p))
        .collect();
    let only: Option<Vec<i64>> = users.map(|u| {
        let mut ids: Vec<i64> = u.iter().map(|u| u.get()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    });
    // A connection of its own: its temporary tables and search_path must not reach the pool.
    let mut conn: PgConnection = pool.acquire().await?.detach();
    let live = live_schema(&mut conn).await?;
    let mut report = VerifyReport::default();

    {
        let mut tx = conn.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        check_pts_density(&mut tx, only.as_deref(), &mut report).await?;
        check_sequences(&mut tx, only.as_deref(), &mut report).await?;
        if compared.contains(&Projection::MessageBoxes) {
            check_box_density(&mut tx, only.as_deref(), &mut report).await?;
        }
        tx.commit().await?;
    }
    report.tables_checked.extend([
        "user_update_events".to_string(),
        "user_sequences".to_string(),
    ]);

    // The chunks are shared out among a few connections (accounts are independent), and their
    // results put back in the accounts' order.
    let chunks = chunks(&mut conn, only).await?;
    let mut conns = vec![conn];
    for _ in 1..VERIFY_CONNECTIONS.min(chunks.len()) {
        conns.push(pool.acquire().await?.detach());
    }
    for c in conns.iter_mut() {
        prepare_scratch(c, &live, &replayed).await?;
    }
    let next = AtomicUsize::new(0);
    let per_connection = futures::future::try_join_all(conns.iter_mut().map(|c| {
        let (next, chunks, live, replayed, compared) =
            (&next, &chunks, &live, &replayed, &compared);
        async move {
            let mut done = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(chunk) = chunks.get(i) else {
                    return Ok::<_, ProjectionError>(done);
                };
                done.push((i, verify_chunk(c, live, replayed, compared, chunk).await?));
            }
        }
    }))
    .await;
    for c in conns {
        let _ = c.close().await;
    }
    let mut results: Vec<(usize, VerifyReport)> = per_connection?.into_iter().flatten().collect();
    results.sort_by_key(|(i, _)| *i);
    for (_, chunk) in results {
        report.events_replayed += chunk.events_replayed;
        report.add(
            i64::try_from(chunk.total_differences).unwrap_or(i64::MAX),
            chunk.differences,
        );
    }
    report
        .tables_checked
        .extend(compared.iter().map(|p| p.name().to_string()));
    Ok(report)
}

/// Creates the temporary tables the replay writes into, and puts them first on the path.
async fn prepare_scratch(
    conn: &mut PgConnection,
    live: &str,
    replayed: &[Projection],
) -> Result<(), ProjectionError> {
    let live = quote(conn, live).await?;
    for p in replayed {
        sqlx::query(&format!(
            "CREATE TEMP TABLE {0} (LIKE {live}.{0} INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES) \
             ON COMMIT DELETE ROWS",
            p.name()
        ))
        .execute(&mut *conn)
        .await?;
    }
    // The temporary tables first, explicitly (unqualified names already resolve there first).
    sqlx::query(&format!("SET search_path = pg_temp, {live}"))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// One chunk in one repeatable-read transaction: its logs replayed into the temporary tables
/// (emptied at the commit), then compared with its live rows.
async fn verify_chunk(
    conn: &mut PgConnection,
    live: &str,
    replayed: &[Projection],
    compared: &[Projection],
    chunk: &Owners,
) -> Result<VerifyReport, ProjectionError> {
    let mut report = VerifyReport::default();
    let mut tx = conn.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        .execute(&mut *tx)
        .await?;
    report.events_replayed = replay_chunk(&mut tx, replayed, chunk).await?;
    for p in compared {
        compare(&mut tx, live, *p, chunk, &mut report).await?;
    }
    tx.commit().await?;
    Ok(report)
}

async fn quote(conn: &mut PgConnection, ident: &str) -> Result<String, ProjectionError> {
    Ok(sqlx::query_scalar("SELECT quote_ident($1)")
        .bind(ident)
        .fetch_one(&mut *conn)
        .await?)
}

/// The chunks of accounts: `only` in groups, or the whole id range cut at every CHUNK_USERS-th
/// account of `user_sequences` (the ranges cover every id, so rows of owners without a sequence
/// row are compared too).
async fn chunks(
    conn: &mut PgConnection,
    only: Option<Vec<i64>>,
) -> Result<Vec<Owners>, ProjectionError> {
    if let Some(ids) = only {
        return Ok(ids
            .chunks(CHUNK_USERS)
            .map(|c| Owners {
                lo: c[0],
                hi: c[c.len() - 1],
                only: Some(c.to_vec()),
            })
            .collect());
    }
    let cuts: Vec<i64> = sqlx::query_scalar(
        "SELECT user_id FROM (SELECT user_id, row_number() OVER (ORDER BY user_id) AS n FROM user_sequences) s \
         WHERE n % $1 = 0 ORDER BY user_id",
    )
    .bind(CHUNK_USERS as i64)
    .fetch_all(&mut *conn)
    .await?;
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut lo = i64::MIN;
    for hi in cuts {
        out.push(Owners { lo, hi, only: None });
        lo = hi.saturating_add(1);
    }
    out.push(Owners {
        lo,
        hi: i64::MAX,
        only: None,
    });
    Ok(out)
}

/// Replays the chunk's logs into the temporary tables. Answers the events replayed.
async fn replay_chunk(
    conn: &mut PgConnection,
    replayed: &[Projection],
    chunk: &Owners,
) -> Result<u64, ProjectionError> {
    let page = format!(
        "SELECT {LOG_COLUMNS} FROM user_update_events e WHERE {} AND (e.user_id, e.pts) > ($4, $5) \
         ORDER BY e.user_id, e.pts LIMIT $6",
        Owners::condition("e.user_id")
    );
    let mut after: (i64, i32) = (i64::MIN, 0);
    let mut applied = 0;
    loop {
        let rows = sqlx::query(&page)
            .bind(chunk.lo)
            .bind(chunk.hi)
            .bind(chunk.only.as_deref())
            .bind(after.0)
            .bind(after.1)
            .bind(BATCH)
            .fetch_all(&mut *conn)
            .await?;
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            let (owner, pts, event) = decode_row(row)?;
            if let Some(event) = event {
                events.push((owner, pts, event));
            }
            after = (owner.get(), pts.get());
        }
        apply_events(&mut *conn, replayed, &events).await?;
        applied += rows.len() as u64;
        if (rows.len() as i64) < BATCH {
            return Ok(applied);
        }
    }
}

/// Each event must start right where the previous one of its user ended (the first at 0).
async fn check_pts_density(
    conn: &mut PgConnection,
    only: Option<&[i64]>,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let rows = sqlx::query(
        "SELECT user_id, pts, pts_count, prev, count(*) OVER () AS total FROM ( \
           SELECT user_id, pts, pts_count, lag(pts, 1, 0) OVER (PARTITION BY user_id ORDER BY pts) AS prev \
           FROM user_update_events WHERE ($1::bigint[] IS NULL OR user_id = ANY($1))) e \
         WHERE pts - pts_count <> prev ORDER BY user_id, pts LIMIT $2",
    )
    .bind(only)
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
    only: Option<&[i64]>,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let rows = sqlx::query(
        "WITH last AS (SELECT user_id, max(pts) AS pts FROM user_update_events \
                       WHERE ($1::bigint[] IS NULL OR user_id = ANY($1)) GROUP BY user_id), \
              seq AS (SELECT user_id, pts FROM user_sequences WHERE ($1::bigint[] IS NULL OR user_id = ANY($1))) \
         SELECT COALESCE(s.user_id, l.user_id) AS user_id, s.pts AS seq_pts, l.pts AS log_pts, \
                count(*) OVER () AS total \
         FROM seq s FULL JOIN last l ON l.user_id = s.user_id \
         WHERE COALESCE(s.pts, -1) <> COALESCE(l.pts, 0) ORDER BY 1 LIMIT $2",
    )
    .bind(only)
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
    only: Option<&[i64]>,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let rows = sqlx::query(
        "SELECT s.user_id, g.box_id, count(*) OVER () AS total \
         FROM user_sequences s CROSS JOIN LATERAL generate_series(1, s.box_id) AS g(box_id) \
         WHERE ($1::bigint[] IS NULL OR s.user_id = ANY($1)) AND NOT EXISTS \
           (SELECT 1 FROM message_boxes m WHERE m.owner_user_id = s.user_id AND m.box_id = g.box_id) \
         ORDER BY 1, 2 LIMIT $2",
    )
    .bind(only)
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
         WHERE ($1::bigint[] IS NULL OR m.owner_user_id = ANY($1)) AND (s.user_id IS NULL OR m.box_id > s.box_id) \
         ORDER BY 1, 2 LIMIT $2",
    )
    .bind(only)
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

/// The chunk's live rows against its replayed rows (in the temporary table), joined on the
/// primary key.
async fn compare(
    conn: &mut PgConnection,
    live: &str,
    p: Projection,
    chunk: &Owners,
    report: &mut VerifyReport,
) -> Result<(), ProjectionError> {
    let [k1, k2] = p.key_columns();
    let table = p.name();
    let live = quote(conn, live).await?;
    let rows = sqlx::query(&format!(
        "SELECT COALESCE(l.{k1}, r.{k1})::bigint AS k1, COALESCE(l.{k2}, r.{k2})::bigint AS k2, \
                to_jsonb(l) AS live, to_jsonb(r) AS replayed, count(*) OVER () AS total \
         FROM (SELECT * FROM {live}.{table} WHERE {cond}) l \
         FULL JOIN pg_temp.{table} r ON l.{k1} = r.{k1} AND l.{k2} = r.{k2} \
         WHERE to_jsonb(l) IS DISTINCT FROM to_jsonb(r) \
         ORDER BY 1, 2 LIMIT $4",
        cond = Owners::condition(k1)
    ))
    .bind(chunk.lo)
    .bind(chunk.hi)
    .bind(chunk.only.as_deref())
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
