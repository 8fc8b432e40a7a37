//! The SQL one `messages.sendMessage` between two accounts runs, statement by statement, as a
//! pgbench script. Keep in step with `infrastructure/src/postgres/write_tx.rs` (lock_users,
//! send_preflight, write_out) and `projections/src/{message_boxes,dialogs}.rs` (the
//! inline projectors): the bench's baseline is only meaningful while the two do the same work.
//!
//! Values the application computes in Rust (the next pts and box ids from the locked counters, the
//! event payload) are computed by pgbench's `\set` or, for the JSON payload, by `json_build_object`
//! on the server, sent on as text like the application's; the statements, tables, indexes touched
//! and their order are the application's.

/// The columns `find_by_random_id` reads (rows::BOX_COLUMNS plus pts).
const BOX_COLUMNS: &str =
    "box_id, message_id, peer_user_id, sender_user_id, outgoing, random_id, date, \
     text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date";

const TEXT: &str = "benchmark message: the quick brown fox jumps over the lazy dog";

fn payload(
    box_var: &str,
    peer: &str,
    from: &str,
    out: bool,
    date: i32,
    random_id: Option<&str>,
) -> String {
    let rid = random_id
        .map(|r| format!(", 'random_id', :{r}::bigint"))
        .unwrap_or_default();
    format!(
        "json_build_object('message', json_build_object('id', :{box_var}::int, 'message_id', :mid::bigint, \
         'peer_id', :{peer}::bigint, 'from_id', :{from}::bigint, 'out', {out}, 'date', {date}, 'text', '{TEXT}'::text, \
         'entities', '[]'::json, 'silent', false, 'noforwards', false, 'media_unread', false{rid}))::text"
    )
}

fn box_insert(
    owner: &str,
    box_var: &str,
    peer: &str,
    out: bool,
    random_id: &str,
    date: i32,
    pts_var: &str,
) -> String {
    format!(
        "INSERT INTO message_boxes (owner_user_id, box_id, peer_user_id, message_id, sender_user_id, outgoing, \
         random_id, date, text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date, pts) \
         VALUES (:{owner}, :{box_var}, :{peer}, :mid, :s, {out}, {random_id}, {date}, '{TEXT}', '[]', false, false, \
         NULL, NULL, false, NULL, :{pts_var});"
    )
}

fn dialog_upsert(owner: &str, peer: &str, box_var: &str, date: i32, out: bool) -> String {
    format!(
        "INSERT INTO dialogs (user_id, peer_user_id, top_message, top_message_date, unread_count, message_count) \
         VALUES (:{owner}, :{peer}, :{box_var}, {date}, CASE WHEN {out} THEN 0 ELSE 1 END, 1) \
         ON CONFLICT (user_id, peer_user_id) DO UPDATE SET \
           message_count = dialogs.message_count + 1, \
           top_message = GREATEST(dialogs.top_message, EXCLUDED.top_message), \
           top_message_date = CASE WHEN EXCLUDED.top_message > dialogs.top_message \
                                   THEN EXCLUDED.top_message_date ELSE dialogs.top_message_date END, \
           unread_count = dialogs.unread_count \
                          + CASE WHEN NOT {out} AND EXCLUDED.top_message > dialogs.read_inbox_max_id THEN 1 ELSE 0 END;"
    )
}

/// The pgbench script of one send from `:s` to `:r` (two distinct accounts in 1..=n).
pub fn pgbench_script(n: usize, date: i32) -> String {
    let n = n.max(2);
    let mut lines = vec![
        format!("\\set s random(1, {n})"),
        format!("\\set r 1 + (:s + random(0, {}) ) % {n}", n - 2),
        "\\set lo least(:s, :r)".to_string(),
        "\\set hi greatest(:s, :r)".to_string(),
        "\\set rid random(1, 9223372036854775806)".to_string(),
        "BEGIN;".to_string(),
        // lock_users: one statement, ascending ids. Wrapped in an aggregate only so that pgbench can
        // \gset the counters the application keeps in memory from the same rows.
        "SELECT max(pts) FILTER (WHERE user_id = :s) AS sp0, max(box_id) FILTER (WHERE user_id = :s) AS sb0, \
                max(pts) FILTER (WHERE user_id = :r) AS rp0, max(box_id) FILTER (WHERE user_id = :r) AS rb0 \
         FROM (SELECT user_id, pts, box_id FROM user_sequences WHERE user_id = ANY(ARRAY[:lo, :hi]::bigint[]) \
               ORDER BY user_id FOR UPDATE) l \\gset"
            .to_string(),
        "\\set sp :sp0 + 1".to_string(),
        "\\set sb :sb0 + 1".to_string(),
        "\\set rp :rp0 + 1".to_string(),
        "\\set rb :rb0 + 1".to_string(),
        // send_preflight: the random_id lookup, both block checks, the archive check and the message id, one statement
        format!(
            "SELECT b.*, \
               EXISTS (SELECT 1 FROM contact_blocks WHERE owner_user_id = :s AND blocked_user_id = :r) AS sender_blocked_peer, \
               EXISTS (SELECT 1 FROM contact_blocks WHERE owner_user_id = :r AND blocked_user_id = :s) AS peer_blocked_sender, \
               EXISTS (SELECT 1 FROM dialogs d WHERE d.user_id = :r AND d.peer_user_id = :s AND d.folder_id = 1 \
                 AND NOT EXISTS (SELECT 1 FROM notify_settings n WHERE n.owner_user_id = :r AND n.peer_user_id = :s \
                                 AND n.mute_until > {date})) AS unarchive, \
               nextval('private_message_ids') AS mid \
             FROM (SELECT 1) AS one LEFT JOIN LATERAL \
               (SELECT {BOX_COLUMNS}, pts FROM message_boxes WHERE owner_user_id = :s AND random_id = :rid) b ON true \\gset"
        ),
        // append(sender): message_boxes then dialogs projector
        box_insert("s", "sb", "r", true, ":rid", date, "sp"),
        dialog_upsert("s", "r", "sb", date, true),
        // append(recipient)
        box_insert("r", "rb", "s", false, "NULL", date, "rp"),
        dialog_upsert("r", "s", "rb", date, false),
        // commit: the counters and the buffered events in one statement
        format!(
            "WITH counters AS ( \
               UPDATE user_sequences s SET pts = v.pts, box_id = v.box_id \
               FROM unnest(ARRAY[:s, :r]::bigint[], ARRAY[:sp, :rp]::int[], ARRAY[:sb, :rb]::int[]) AS v(user_id, pts, box_id) \
               WHERE s.user_id = v.user_id) \
             INSERT INTO user_update_events (user_id, pts, pts_count, kind, payload_version, payload, auth_key_id, session_id) \
             SELECT u, p, c, k, v, t::json, a, s \
             FROM unnest(ARRAY[:s, :r]::bigint[], ARRAY[:sp, :rp]::int[], ARRAY[1, 1]::int[], \
                         ARRAY['new_message', 'new_message']::text[], ARRAY[1, 1]::smallint[], \
                         ARRAY[{}, {}]::text[], ARRAY[0, 0]::bigint[], ARRAY[0, 0]::bigint[]) AS e(u, p, c, k, v, t, a, s);",
            payload("sb", "r", "s", true, date, Some("rid")),
            payload("rb", "s", "s", false, date, None)
        ),
        "COMMIT;".to_string(),
    ];
    lines.push(String::new());
    // pgbench reads one SQL command per line unless it ends in a semicolon-less continuation: keep
    // each statement on one line.
    lines
        .into_iter()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// How many statements (round trips, BEGIN and COMMIT included) one send runs.
pub fn statements_per_send() -> usize {
    pgbench_script(10, 0)
        .lines()
        .filter(|l| !l.starts_with('\\') && !l.is_empty())
        .count()
}
