//! `EXPLAIN (ANALYZE, BUFFERS)` of every statement on the send, getHistory, getDifference and
//! getDialogs paths (and the HTTP token lookup), with realistic parameters taken from the data.
//! The send statements run in one transaction that is rolled back.

use serde::{Deserialize, Serialize};
use sqlx::{PgPool, Row};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plan {
    pub path: String,
    pub statement: String,
    pub sql: String,
    pub plan: Vec<String>,
    pub seq_scan: bool,
    pub execution_ms: f64,
}

const BOX_COLUMNS: &str =
    "box_id, message_id, peer_user_id, sender_user_id, outgoing, random_id, date, \
     text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date";
const DIALOG_COLUMNS: &str =
    "peer_user_id, folder_id, top_message, top_message_date, read_inbox_max_id, read_outbox_max_id, unread_count, unread_mark";

pub async fn explain_hot_paths(pool: &PgPool) -> anyhow::Result<Vec<Plan>> {
    // The busiest chat between two accounts: its owner and peer. Not a Saved Messages chat (owner
    // = peer), where the send statements below would append the same pts twice (a duplicate key).
    let row = sqlx::query(
        "SELECT user_id, peer_user_id, top_message FROM dialogs WHERE user_id <> peer_user_id \
         ORDER BY top_message DESC LIMIT 1",
    )
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let (u, p, top): (i64, i64, i32) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    let (lo, hi) = (u.min(p), u.max(p));
    // The send statements run at the accounts' next pts, inside a transaction that is rolled
    // back. Their sequences are locked first, so a send still finishing from the phase before
    // cannot take that pts between the read and the insert (a duplicate key, seen once).
    let mut tx = pool.begin().await?;
    let seq = "SELECT pts, box_id FROM user_sequences WHERE user_id = $1 FOR UPDATE";
    let (pts, box_id): (i32, i32) = sqlx::query_as(seq).bind(lo).fetch_one(&mut *tx).await?;
    let (ppts, pbox): (i32, i32) = sqlx::query_as(seq).bind(hi).fetch_one(&mut *tx).await?;
    let ((pts, box_id), (ppts, pbox)) = if u == lo {
        ((pts, box_id), (ppts, pbox))
    } else {
        ((ppts, pbox), (pts, box_id))
    };
    let token_hash: Option<Vec<u8>> =
        sqlx::query_scalar("SELECT token_hash FROM authorizations WHERE user_id = $1 LIMIT 1")
            .bind(u)
            .fetch_optional(pool)
            .await?;
    let token_hex = token_hash.map(hex::encode).unwrap_or_default();
    let from = (pts - 100).max(0);
    let tops: Vec<i32> = sqlx::query_scalar("SELECT top_message FROM dialogs WHERE user_id = $1 ORDER BY top_message_date DESC LIMIT 100").bind(u).fetch_all(pool).await?;
    let tops = tops
        .iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let date = 1_700_000_000;

    let send: Vec<(&str, String)> = vec![
        ("lock_users", format!("SELECT user_id, pts, box_id FROM user_sequences WHERE user_id = ANY('{{{lo},{hi}}}'::bigint[]) ORDER BY user_id FOR UPDATE")),
        ("send_preflight", format!(
            "SELECT b.*, EXISTS (SELECT 1 FROM contact_blocks WHERE owner_user_id = {u} AND blocked_user_id = {p}) AS sender_blocked_peer, \
             EXISTS (SELECT 1 FROM contact_blocks WHERE owner_user_id = {p} AND blocked_user_id = {u}) AS peer_blocked_sender, \
             EXISTS (SELECT 1 FROM dialogs d WHERE d.user_id = {p} AND d.peer_user_id = {u} AND d.folder_id = 1 \
               AND NOT EXISTS (SELECT 1 FROM notify_settings n WHERE n.owner_user_id = {p} AND n.peer_user_id = {u} AND n.mute_until > {date})) AS peer_archived_unmuted, \
             nextval('private_message_ids') AS next_message_id \
             FROM (SELECT 1) AS one LEFT JOIN LATERAL (SELECT {BOX_COLUMNS}, pts FROM message_boxes WHERE owner_user_id = {u} AND random_id = 42) b ON true")),
        ("message_boxes insert", format!(
            "INSERT INTO message_boxes (owner_user_id, box_id, peer_user_id, message_id, sender_user_id, outgoing, random_id, date, text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date, pts) \
             VALUES ({u}, {}, {p}, 9000000000, {u}, true, 42, {date}, 'explain', '[]', false, false, NULL, NULL, false, NULL, {})", box_id + 1, pts + 1)),
        ("dialogs upsert", format!(
            "INSERT INTO dialogs (user_id, peer_user_id, top_message, top_message_date, unread_count, message_count) VALUES ({p}, {u}, {}, {date}, 1, 1) \
             ON CONFLICT (user_id, peer_user_id) DO UPDATE SET message_count = dialogs.message_count + 1, top_message = GREATEST(dialogs.top_message, EXCLUDED.top_message), \
             top_message_date = CASE WHEN EXCLUDED.top_message > dialogs.top_message THEN EXCLUDED.top_message_date ELSE dialogs.top_message_date END, \
             unread_count = dialogs.unread_count + CASE WHEN EXCLUDED.top_message > dialogs.read_inbox_max_id THEN 1 ELSE 0 END", pbox + 1)),
        ("commit: counters + events", format!(
            "WITH counters AS (UPDATE user_sequences s SET pts = v.pts, box_id = v.box_id FROM unnest('{{{u},{p}}}'::bigint[], '{{{},{}}}'::int[], '{{{},{}}}'::int[]) AS v(user_id, pts, box_id) WHERE s.user_id = v.user_id) \
             INSERT INTO user_update_events (user_id, pts, pts_count, kind, payload_version, payload, auth_key_id, session_id) \
             SELECT * FROM unnest('{{{u},{p}}}'::bigint[], '{{{},{}}}'::int[], '{{1,1}}'::int[], '{{new_message,new_message}}'::text[], '{{1,1}}'::smallint[], \
             ARRAY['{{}}'::jsonb, '{{}}'::jsonb], '{{0,0}}'::bigint[], '{{0,0}}'::bigint[])",
            pts + 1, ppts + 1, box_id + 1, pbox + 1, pts + 1, ppts + 1)),
    ];
    let reads: Vec<(&str, &str, String)> = vec![
        ("http", "authenticate", format!("SELECT auth_key_id, user_id FROM authorizations WHERE token_hash = '\\x{token_hex}'::bytea")),
        ("getHistory", "users_for", format!("SELECT id, phone, first_name, last_name FROM users WHERE id = ANY('{{{u},{p}}}'::bigint[])")),
        ("getHistory", "history page", format!(
            "SELECT {BOX_COLUMNS} FROM message_boxes WHERE owner_user_id = {u} AND peer_user_id = {p} AND NOT deleted AND box_id < 9223372036854775807 AND box_id > 0 ORDER BY box_id DESC OFFSET 0 LIMIT 50")),
        ("getHistory", "history_count", format!("SELECT count(*) FROM message_boxes WHERE owner_user_id = {u} AND peer_user_id = {p} AND NOT deleted")),
        ("getDifference", "pts", format!("SELECT pts FROM user_sequences WHERE user_id = {u}")),
        ("getDifference", "events_after", format!(
            "SELECT user_id, pts, pts_count, kind, payload_version, payload, auth_key_id, session_id, floor(extract(epoch FROM committed_at))::bigint AS date \
             FROM user_update_events WHERE user_id = {u} AND pts > {from} ORDER BY pts LIMIT 101")),
        ("getDifference", "unread_total", format!("SELECT COALESCE(sum(unread_count), 0)::bigint FROM dialogs WHERE user_id = {u}")),
        ("getDialogs", "dialogs_count", format!("SELECT count(*) FROM dialogs WHERE user_id = {u} AND folder_id = 0")),
        ("getDialogs", "dialogs page", format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = {u} AND folder_id = 0 ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC LIMIT 100")),
        ("getDialogs", "top messages", format!(
            "SELECT {BOX_COLUMNS} FROM message_boxes WHERE owner_user_id = {u} AND box_id = ANY('{{{tops}}}'::int[]) AND NOT deleted")),
    ];
    let _ = top;

    let mut plans = Vec::new();
    for (name, sql) in send {
        plans.push(explain(&mut tx, "sendMessage", name, &sql).await?);
    }
    tx.rollback().await?;
    let mut conn = pool.acquire().await?;
    for (path, name, sql) in reads {
        plans.push(explain(&mut conn, path, name, &sql).await?);
    }
    Ok(plans)
}

async fn explain(
    conn: &mut sqlx::PgConnection,
    path: &str,
    name: &str,
    sql: &str,
) -> anyhow::Result<Plan> {
    let lines: Vec<String> = sqlx::query_scalar(&format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"))
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| anyhow::anyhow!("EXPLAIN {name}: {e}"))?;
    let execution_ms = lines
        .iter()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Execution Time: ")
                .and_then(|r| r.trim_end_matches(" ms").parse().ok())
        })
        .unwrap_or(0.0);
    Ok(Plan {
        path: path.to_string(),
        statement: name.to_string(),
        sql: sql.to_string(),
        // A seq scan of an empty partition (estimated cost 0) is how Postgres reads nothing; only
        // real ones count.
        seq_scan: lines
            .iter()
            .any(|l| l.contains("Seq Scan") && !l.contains("(cost=0.00..0.00 ")),
        plan: lines,
        execution_ms,
    })
}
