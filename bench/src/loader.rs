//! The fast loader for the scale phases: grows the log by bulk `INSERT … SELECT` to a given number
//! of events, writing exactly what sending those messages through the application would have
//! written — the events (with payloads that decode), the boxes, the dialogs and the counters — so
//! `projections::verify` passes on the result.
//!
//! Each loaded message goes from a random account to one of its ten "friends" (the accounts 1..=10
//! ids after it, wrapping), so dialogs get deep as the log grows, as real chats do.

use std::time::Instant;

use anyhow::Context;
use sqlx::PgPool;

/// Events added per transaction.
const CHUNK_EVENTS: i64 = 1_000_000;
/// How many friends each account talks to.
pub const FRIENDS: i64 = 10;

/// Appends new_message events (two per message) until the log holds at least `target_events`
/// events; answers how many were added.
pub async fn load_to(
    pool: &PgPool,
    n_users: usize,
    target_events: u64,
    verbose: bool,
) -> anyhow::Result<u64> {
    let n = n_users as i64;
    let mut added = 0u64;
    loop {
        let have: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
            .fetch_one(pool)
            .await?;
        let missing = i64::try_from(target_events).unwrap_or(i64::MAX) - have;
        if missing <= 0 {
            return Ok(added);
        }
        let events = missing.min(CHUNK_EVENTS);
        let messages = (events + 1) / 2;
        let t = Instant::now();
        load_chunk(pool, n, messages)
            .await
            .context("loading a chunk of the log")?;
        added += u64::try_from(messages * 2).unwrap_or(0);
        if verbose {
            println!(
                "  loaded {} events ({:.0} events/s), log now ~{}",
                messages * 2,
                (messages * 2) as f64 / t.elapsed().as_secs_f64(),
                have + messages * 2
            );
        }
    }
}

/// Workers inserting a chunk's boxes and events, each for the owners `owner % WORKERS = w`.
const WORKERS: i64 = 2;

async fn load_chunk(pool: &PgPool, n: i64, messages: i64) -> anyhow::Result<()> {
    // 1. The chunk's copies, numbered per owner from the counters, in an unlogged staging table the
    //    workers can all read. Nothing else writes while the bench loads.
    let mut tx = pool.begin().await?;
    // Bulk statements outlast the serving pool's statement_timeout on a busy machine.
    sqlx::query("SET LOCAL statement_timeout = 0")
        .execute(&mut *tx)
        .await?;
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut *tx)
        .await?;
    sqlx::query("SET LOCAL work_mem = '256MB'")
        .execute(&mut *tx)
        .await?;
    let now: i32 = sqlx::query_scalar("SELECT extract(epoch FROM now())::int")
        .fetch_one(&mut *tx)
        .await?;
    sqlx::query("DROP TABLE IF EXISTS bench_load_copies")
        .execute(&mut *tx)
        .await?;
    // k orders the messages; both copies of message k come before any copy of k+1 in each owner's
    // log. Dates rise with k and end a little before now.
    sqlx::query(
        "CREATE UNLOGGED TABLE bench_load_copies AS \
         WITH msgs AS ( \
           SELECT k, nextval('private_message_ids') AS mid, s, \
                  1 + ((s + floor(random() * $3)::bigint) % $1) AS r, \
                  $4 - ($2 - k) / 50 AS date, \
                  (floor(random() * 9.2e18)::bigint + 1) AS rid \
           FROM (SELECT k, 1 + floor(random() * $1)::bigint AS s FROM generate_series(1, $2) k) g) \
         SELECT c.k, c.mid, c.owner, c.peer, c.s, c.out, c.date::int AS date, c.rid, \
                (q.pts + row_number() OVER w)::int AS pts, (q.box_id + row_number() OVER w)::int AS box_id \
         FROM (SELECT k, mid, s AS owner, r AS peer, s, true AS out, date, rid FROM msgs \
               UNION ALL \
               SELECT k, mid, r, s, s, false, date, NULL FROM msgs) c \
         JOIN user_sequences q ON q.user_id = c.owner \
         WINDOW w AS (PARTITION BY c.owner ORDER BY c.k)",
    )
    .bind(n)
    .bind(messages)
    .bind(FRIENDS.min(n - 1) as f64)
    .bind(now - 1)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;

    // 2. Boxes and events, one worker per owner class, in parallel.
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let pool = pool.clone();
        workers.push(tokio::spawn(
            async move { load_owner_class(&pool, w).await },
        ));
    }
    for w in workers {
        w.await
            .map_err(|e| anyhow::anyhow!("loader worker: {e}"))??;
    }

    // 3. Dialogs and counters, then drop the staging table.
    let mut tx = pool.begin().await?;
    // Bulk statements outlast the serving pool's statement_timeout on a busy machine.
    sqlx::query("SET LOCAL statement_timeout = 0")
        .execute(&mut *tx)
        .await?;
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut *tx)
        .await?;
    sqlx::query("SET LOCAL work_mem = '256MB'")
        .execute(&mut *tx)
        .await?;
    // What the dialogs projector does for each new_message, folded over the chunk: the top message
    // moves up to the newest box (all loaded boxes are newer than any existing one), every incoming
    // box is unread (it is above any read watermark), every box counts in the chat's messages.
    sqlx::query(
        "INSERT INTO dialogs (user_id, peer_user_id, top_message, top_message_date, unread_count, message_count) \
         SELECT owner, peer, max(box_id), (array_agg(date ORDER BY box_id DESC))[1], count(*) FILTER (WHERE NOT out), count(*) \
         FROM bench_load_copies GROUP BY owner, peer \
         ON CONFLICT (user_id, peer_user_id) DO UPDATE SET \
           message_count = dialogs.message_count + EXCLUDED.message_count, \
           top_message = GREATEST(dialogs.top_message, EXCLUDED.top_message), \
           top_message_date = CASE WHEN EXCLUDED.top_message > dialogs.top_message \
                                   THEN EXCLUDED.top_message_date ELSE dialogs.top_message_date END, \
           unread_count = dialogs.unread_count + EXCLUDED.unread_count",
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE user_sequences q SET pts = q.pts + c.n, box_id = q.box_id + c.n \
         FROM (SELECT owner, count(*) AS n FROM bench_load_copies GROUP BY owner) c WHERE q.user_id = c.owner",
    )
    .execute(&mut *tx)
    .await?;
    sqlx::query("DROP TABLE bench_load_copies")
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

const LOADED_TEXT: &str = "loaded message: the quick brown fox jumps over the lazy dog";

async fn load_owner_class(pool: &PgPool, class: i64) -> anyhow::Result<()> {
    let mut tx = pool.begin().await?;
    // Bulk statements outlast the serving pool's statement_timeout on a busy machine.
    sqlx::query("SET LOCAL statement_timeout = 0")
        .execute(&mut *tx)
        .await?;
    sqlx::query("SET LOCAL synchronous_commit = off")
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO message_boxes (owner_user_id, box_id, peer_user_id, message_id, sender_user_id, outgoing, \
           random_id, date, text, entities, silent, noforwards, media_unread, pts) \
         SELECT owner, box_id, peer, mid, s, out, rid, date, $1, '[]', false, false, false, pts FROM bench_load_copies \
         WHERE owner % $2 = $3 ORDER BY owner, box_id",
    )
    .bind(LOADED_TEXT)
    .bind(WORKERS)
    .bind(class)
    .execute(&mut *tx)
    .await?;
    // The payload is the serde form of NewMessage { message: OwnerMessage }.
    sqlx::query(
        "INSERT INTO user_update_events (user_id, pts, pts_count, kind, payload_version, payload) \
         SELECT owner, pts, 1, 'new_message', 1, jsonb_build_object('message', \
           jsonb_build_object('id', box_id, 'message_id', mid, 'peer_id', peer, 'from_id', s, 'out', out, \
             'date', date, 'text', $1::text, 'entities', '[]'::jsonb, 'silent', false, 'noforwards', false, \
             'media_unread', false) \
           || CASE WHEN rid IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('random_id', rid) END) \
         FROM bench_load_copies WHERE owner % $2 = $3 ORDER BY owner, pts",
    )
    .bind(LOADED_TEXT)
    .bind(WORKERS)
    .bind(class)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Vacuums and analyzes what the loader wrote, as autovacuum would after a bulk insert, so the
/// measured plans are the steady-state ones; then a CHECKPOINT, so the measurement does not share
/// the disk with the write-back of gigabytes of freshly loaded pages (needs a superuser or
/// pg_checkpoint; skipped with a warning otherwise).
pub async fn vacuum_analyze(pool: &PgPool) -> anyhow::Result<()> {
    for t in [
        "user_update_events",
        "message_boxes",
        "dialogs",
        "user_sequences",
        "contact_blocks",
        "users",
    ] {
        sqlx::query(&format!("VACUUM (ANALYZE) {t}"))
            .execute(pool)
            .await
            .with_context(|| format!("VACUUM {t}"))?;
    }
    crate::wal::checkpoint(pool, "the phases on the loaded log").await;
    Ok(())
}
