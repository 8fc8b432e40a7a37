//! Operating the read models while the server serves: the online rebuild and its swap under a
//! running writer, the per-account repair, verify finding a planted difference, the status (stale
//! versions, progress in /metrics), and an aborted rebuild leaving the live tables as they were.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use domain::UserId;
use projections::online::RebuildControl;
use projections::status::RebuildState;
use projections::{Projection, ProjectionError};
use ptslog_tests::{with_admin, Device, TestServer, TEST_ADMIN_TOKEN};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::two_processes::{ptslog_binary, run_cli};

/// The documented bound (docs/operations.md) on how long the swap may hold a writer, with a wide
/// margin for a loaded test machine; the measured figure is printed.
const WRITER_STALL_BOUND: Duration = Duration::from_secs(5);

struct People {
    devices: Vec<Device>,
    /// peers[i][j]: device i's inputPeer of account j.
    peers: Vec<Vec<Value>>,
}

async fn people(s: &TestServer, n: usize, tag: &str) -> People {
    let mut devices = Vec::new();
    for i in 0..n {
        devices.push(
            s.login(&format!("+1555{tag}{i:03}"), &format!("P{i}"))
                .await,
        );
    }
    let mut peers = Vec::new();
    for d in &devices {
        let mut row = Vec::new();
        for j in 0..n {
            row.push(d.peer_of(&format!("+1555{tag}{j:03}")).await);
        }
        peers.push(row);
    }
    People { devices, peers }
}

/// `count` messages among the people, `parallel` at a time, with some reads and deletions so the
/// dialogs' recomputations are replayed too.
async fn history(p: &People, count: usize, parallel: usize) {
    let n = p.devices.len();
    let mut tasks = Vec::new();
    for t in 0..parallel {
        let devices: Vec<Device> = p.devices.clone();
        let peers = p.peers.clone();
        tasks.push(tokio::spawn(async move {
            for k in (t..count).step_by(parallel) {
                let from = k % n;
                let to = (k / n + from + 1) % n;
                if from == to {
                    continue;
                }
                let sent = devices[from].send(&peers[from][to], &format!("m{k}")).await;
                let id = sent["id"].as_i64().expect("id");
                match k % 10 {
                    3 => {
                        devices[from]
                            .rpc(
                                "messages.deleteMessages",
                                json!({"id": [id], "revoke": true}),
                            )
                            .await;
                    }
                    5 => {
                        devices[to]
                            .rpc(
                                "messages.readHistory",
                                json!({"peer": peers[to][from], "max_id": 0}),
                            )
                            .await;
                    }
                    _ => {}
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("history task");
    }
}

async fn assert_clean(pool: &PgPool) {
    let report = projections::verify(pool).await.expect("verify");
    assert!(report.is_clean(), "verify: {:?}", report.differences);
}

async fn oid(pool: &PgPool, table: &str) -> i64 {
    sqlx::query_scalar("SELECT to_regclass($1)::oid::bigint")
        .bind(table)
        .fetch_one(pool)
        .await
        .expect("oid")
}

async fn leftover_schemas(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname IN ('ptslog_rebuild', 'ptslog_retired')",
    )
    .fetch_all(pool)
    .await
    .expect("schemas")
}

/// Every row of a table as JSON, with its physical position (a rewritten row moves).
async fn rows_of(
    pool: &PgPool,
    table: &str,
    owner_column: &str,
    owner: i64,
) -> Vec<(String, Value)> {
    sqlx::query_as(&format!(
        "SELECT ctid::text, to_jsonb(t) FROM {table} t WHERE {owner_column} = $1 ORDER BY ctid"
    ))
    .bind(owner)
    .fetch_all(pool)
    .await
    .expect("rows")
}

/// What the writer saw: per request its latency, and the messages it sent.
#[derive(Default)]
struct Writes {
    latencies: Vec<(Instant, Duration)>,
    /// (sender, box id of the sender's copy) of the messages kept
    sent: Vec<(i64, i64)>,
    /// (sender, box id of the sender's copy) of the messages deleted again
    deleted: Vec<(i64, i64)>,
    reads: usize,
}

/// The acceptance test: message_boxes and dialogs are rebuilt online while two writers
/// keep sending, reading, deleting and marking read over the API. After the swap verify passes,
/// every acknowledged send is in the new tables (and every deletion), each sender saw its own
/// message at the top of the dialog right after sending (across the swap too), and no request
/// waited longer than the documented bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn online_rebuild_while_writers_send_and_read() {
    let s = TestServer::start().await;
    let p = people(&s, 6, "061").await;
    history(&p, 1500, 6).await;
    let logged: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    let (boxes_before, dialogs_before) = (
        oid(&s.pool, "message_boxes").await,
        oid(&s.pool, "dialogs").await,
    );

    let stop = Arc::new(AtomicBool::new(false));
    let writes = Arc::new(Mutex::new(Writes::default()));
    let mut writers = Vec::new();
    for w in 0..2 {
        let (stop, writes) = (stop.clone(), writes.clone());
        let devices = p.devices.clone();
        let peers = p.peers.clone();
        writers.push(tokio::spawn(async move {
            let mut k = 0usize;
            let mut previous: Option<(usize, i64)> = None;
            while !stop.load(Ordering::Relaxed) {
                let from = (w * 3 + k) % devices.len();
                let to = (from + 1 + k % 5) % devices.len();
                k += 1;
                let t = Instant::now();
                let sent = devices[from]
                    .send(&peers[from][to], &format!("live {w} {k}"))
                    .await;
                let send_took = t.elapsed();
                let id = sent["id"].as_i64().expect("id");
                let t2 = Instant::now();
                let dialogs = devices[from]
                    .rpc("messages.getDialogs", json!({"limit": 100}))
                    .await;
                let read_took = t2.elapsed();
                let top = dialogs["dialogs"]
                    .as_array()
                    .expect("dialogs")
                    .iter()
                    .find(|d| d["peer"]["user_id"] == devices[to].user_id)
                    .map(|d| d["top_message"].as_i64().unwrap_or(0))
                    .unwrap_or(0);
                assert!(
                    top >= id,
                    "read-your-writes: sent {id} to {} but the dialog's top message is {top}",
                    devices[to].user_id
                );
                // Now and then a deletion (of this writer's previous message, both copies) and a
                // read receipt, so the catch-up replays the dialogs' recomputations too.
                let mut extra = Vec::new();
                if k.is_multiple_of(6) {
                    if let Some((sender, prev)) = previous.take() {
                        let t = Instant::now();
                        devices[sender]
                            .rpc(
                                "messages.deleteMessages",
                                json!({"id": [prev], "revoke": true}),
                            )
                            .await;
                        extra.push((t, t.elapsed()));
                        writes
                            .lock()
                            .unwrap()
                            .deleted
                            .push((devices[sender].user_id, prev));
                    }
                }
                if k.is_multiple_of(4) {
                    let t = Instant::now();
                    devices[to]
                        .rpc(
                            "messages.readHistory",
                            json!({"peer": peers[to][from], "max_id": 0}),
                        )
                        .await;
                    extra.push((t, t.elapsed()));
                }
                let mut w = writes.lock().unwrap();
                w.latencies.push((t, send_took));
                w.latencies.push((t2, read_took));
                w.latencies.extend(extra);
                if let Some((sender, prev)) = previous.replace((from, id)) {
                    w.sent.push((devices[sender].user_id, prev));
                }
                w.reads += 1;
            }
            if let Some((sender, prev)) = previous {
                writes
                    .lock()
                    .unwrap()
                    .sent
                    .push((devices[sender].user_id, prev));
            }
        }));
    }
    // Progress reaches /metrics of the serving process while the rebuild runs.
    let watching = Arc::new(AtomicBool::new(true));
    let seen_in_metrics = {
        let (watching, base, http) = (watching.clone(), s.base.clone(), s.http.clone());
        let pool = s.pool.clone();
        tokio::spawn(async move {
            let (mut seen, mut shadow_lag_seen) = (false, false);
            while watching.load(Ordering::Relaxed) {
                // The status (CLI and admin endpoint) shows the shadow's progress and lag.
                let status = projections::status::load(&pool, true)
                    .await
                    .expect("status");
                shadow_lag_seen |= status.iter().any(|x| {
                    x.name == "dialogs"
                        && x.state == RebuildState::Rebuilding
                        && x.rebuild
                            .as_ref()
                            .is_some_and(|r| r.shadow_lag_pts.is_some() && r.events_total > 0)
                });
                let body = http
                    .get(format!("{base}/metrics"))
                    .send()
                    .await
                    .expect("metrics")
                    .text()
                    .await
                    .unwrap_or_default();
                seen |= body.contains("ptslog_projection_rebuilding{projection=\"dialogs\"} 1")
                    && body
                        .contains("ptslog_projection_rebuild_events_total{projection=\"dialogs\"}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            seen && shadow_lag_seen
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;

    let control = RebuildControl {
        batch_events: 100,
        progress_every: Duration::from_millis(20),
        ..RebuildControl::default()
    };
    let mut progress_reports = 0;
    let started = Instant::now();
    let report =
        projections::rebuild_online(&s.pool, &[Projection::Dialogs], &control, &mut |_p| {
            progress_reports += 1
        })
        .await
        .expect("online rebuild");
    let rebuild_window = (started, Instant::now());
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    watching.store(false, Ordering::Relaxed);
    let seen_in_metrics = seen_in_metrics.await.unwrap();

    let writes = writes.lock().unwrap();
    let during: Vec<Duration> = writes
        .latencies
        .iter()
        .filter(|(at, _)| *at >= rebuild_window.0 && *at <= rebuild_window.1)
        .map(|(_, d)| *d)
        .collect();
    let max_during = during.iter().max().copied().unwrap_or_default();
    let max_all = writes
        .latencies
        .iter()
        .map(|(_, d)| *d)
        .max()
        .unwrap_or_default();
    eprintln!(
        "online rebuild: {} events ({} logged before) in {:?}, {} catch-up round(s), swap applied {} and held writers {:?} ({} attempt(s)); \
         writer: {} sends, {} requests during the rebuild, longest {:?} (overall {:?})",
        report.events_applied,
        logged,
        report.elapsed,
        report.catch_up_rounds,
        report.swap_delta_events,
        report.writers_held,
        report.swap_attempts,
        writes.sent.len(),
        during.len(),
        max_during,
        max_all
    );
    assert_eq!(
        report.projections,
        [Projection::MessageBoxes, Projection::Dialogs]
    );
    assert!(
        report.events_applied > logged as u64,
        "the writer's events committed during the copy were caught up ({} applied, {logged} before)",
        report.events_applied
    );
    assert!(
        during.len() >= 4,
        "the writer kept going during the rebuild"
    );
    assert!(
        max_during < WRITER_STALL_BOUND,
        "a request waited {max_during:?}"
    );
    assert!(report.writers_held < WRITER_STALL_BOUND);
    assert!(progress_reports > 0);
    assert!(
        seen_in_metrics,
        "the rebuild's progress showed in /metrics and the status"
    );

    // The tables were replaced, and nothing of the rebuild is left behind.
    assert_ne!(oid(&s.pool, "message_boxes").await, boxes_before);
    assert_ne!(oid(&s.pool, "dialogs").await, dialogs_before);
    assert!(leftover_schemas(&s.pool).await.is_empty());

    // No write lost: every acknowledged send is in the new boxes; the read models equal the log.
    let mut by_sender: BTreeMap<i64, Vec<i32>> = BTreeMap::new();
    for (sender, id) in &writes.sent {
        by_sender.entry(*sender).or_default().push(*id as i32);
    }
    for (sender, ids) in &by_sender {
        let found: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM message_boxes WHERE owner_user_id = $1 AND box_id = ANY($2) AND NOT deleted",
        )
        .bind(sender)
        .bind(ids)
        .fetch_one(&s.pool)
        .await
        .unwrap();
        assert_eq!(
            found as usize,
            ids.len(),
            "every send of {sender} survived the swap"
        );
    }
    for (sender, id) in &writes.deleted {
        let deleted: bool = sqlx::query_scalar(
            "SELECT deleted FROM message_boxes WHERE owner_user_id = $1 AND box_id = $2",
        )
        .bind(sender)
        .bind(*id as i32)
        .fetch_one(&s.pool)
        .await
        .unwrap();
        assert!(
            deleted,
            "the deletion of {id} by {sender} survived the swap"
        );
    }
    assert!(!writes.deleted.is_empty());
    assert_clean(&s.pool).await;

    // The status records the swap.
    let status = projections::status::load(&s.pool, true).await.unwrap();
    for name in ["message_boxes", "dialogs"] {
        let st = status.iter().find(|x| x.name == name).unwrap();
        assert_eq!(st.state, RebuildState::Live, "{st:?}");
        assert!(!st.is_stale(), "{st:?}");
        assert!(
            st.last_rebuilt_at.is_some() && st.last_lock_ms.is_some(),
            "{st:?}"
        );
        assert_eq!(st.events_applied as u64, report.events_applied);
    }
    // The indexes keep the names the migrations gave them.
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public' AND tablename = 'message_boxes' ORDER BY 1",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(
        names,
        [
            "message_boxes_history",
            "message_boxes_history_date",
            "message_boxes_media",
            "message_boxes_media_class",
            "message_boxes_message",
            "message_boxes_pkey",
            "message_boxes_random_id",
            "message_boxes_search"
        ]
    );
    drop(writes);
    s.stop().await;
}

/// `--user` repairs one account's rows in place: its planted damage is gone, other accounts' rows
/// are not even rewritten. verify (library and CLI) reports the damage first, with exit status 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_one_account_and_verify_reports_differences() {
    let cli = tokio::task::spawn_blocking(ptslog_binary);
    let s = TestServer::start().await;
    let p = people(&s, 3, "062").await;
    history(&p, 60, 2).await;
    let (a, b) = (p.devices[0].user_id, p.devices[1].user_id);

    // Damage a's rows: a wrong unread count, a lost box, a dialog that should not exist.
    let peer: i64 = sqlx::query_scalar(
        "SELECT peer_user_id FROM dialogs WHERE user_id = $1 ORDER BY peer_user_id LIMIT 1",
    )
    .bind(a)
    .fetch_one(&s.pool)
    .await
    .unwrap();
    sqlx::query("UPDATE dialogs SET unread_count = unread_count + 5 WHERE user_id = $1 AND peer_user_id = $2")
        .bind(a)
        .bind(peer)
        .execute(&s.pool)
        .await
        .unwrap();
    let lost_box: i32 = sqlx::query_scalar(
        "DELETE FROM message_boxes WHERE owner_user_id = $1 AND box_id = (SELECT max(box_id) FROM message_boxes WHERE owner_user_id = $1) RETURNING box_id",
    )
    .bind(a)
    .fetch_one(&s.pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO dialogs (user_id, peer_user_id, top_message) VALUES ($1, 999999, 1)")
        .bind(a)
        .execute(&s.pool)
        .await
        .unwrap();

    let report = projections::verify(&s.pool).await.unwrap();
    assert_eq!(report.total_differences, 4, "{:?}", report.differences);
    let all = report.differences.join("\n");
    assert!(
        all.contains(&format!(
            "message_boxes (owner_user_id={a}, box_id={lost_box}): missing from the live table"
        )) && all.contains(&format!(
            "message_boxes (owner_user_id={a}, box_id={lost_box}): allocated but missing"
        )) && all.contains(&format!(
            "dialogs (user_id={a}, peer_user_id={peer}): unread_count: live"
        )) && all.contains(&format!(
            "dialogs (user_id={a}, peer_user_id=999999): only in the live table"
        )),
        "{all}"
    );
    // Narrowed to another account or to an undamaged projection, verify is clean.
    let other =
        projections::verify_selected(&s.pool, &Projection::ALL, Some(&[UserId::new(b).unwrap()]))
            .await
            .unwrap();
    assert!(other.is_clean(), "{:?}", other.differences);
    let blocks = projections::verify_selected(&s.pool, &[Projection::ContactBlocks], None)
        .await
        .unwrap();
    assert!(
        blocks.is_clean()
            && blocks
                .tables_checked
                .ends_with(&["contact_blocks".to_string()])
    );

    let untouched_before = (
        rows_of(&s.pool, "message_boxes", "owner_user_id", b).await,
        rows_of(&s.pool, "dialogs", "user_id", b).await,
    );
    let bin = cli.await.unwrap().expect("the ptslog binary");
    let (code, out) = run_cli(
        &bin,
        &s.db,
        &["projections", "verify", "--user", &a.to_string()],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("4 difference(s)")
            && out.contains(&format!("dialogs (user_id={a}, peer_user_id={peer})")),
        "{out}"
    );
    let (code, out) = run_cli(
        &bin,
        &s.db,
        &["projections", "verify", "dialogs", "--user", &b.to_string()],
    );
    assert_eq!(code, 0, "{out}");

    let (code, out) = run_cli(
        &bin,
        &s.db,
        &[
            "projections",
            "rebuild",
            "dialogs",
            "--user",
            &a.to_string(),
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("repaired message_boxes, dialogs for 1 account(s)"),
        "{out}"
    );
    assert_clean(&s.pool).await;
    assert_eq!(
        (
            rows_of(&s.pool, "message_boxes", "owner_user_id", b).await,
            rows_of(&s.pool, "dialogs", "user_id", b).await,
        ),
        untouched_before,
        "another account's rows were not rewritten"
    );
    let (code, out) = run_cli(&bin, &s.db, &["projections", "verify"]);
    assert_eq!(code, 0, "{out}");
    // Unknown names are refused with the list of projections.
    let (code, _) = run_cli(&bin, &s.db, &["projections", "rebuild", "dialogz"]);
    assert_ne!(code, 0);
    s.stop().await;
}

/// A deploy with a changed projector shows the projection as stale (status, JSON, /metrics) until
/// it is rebuilt; the CLI rebuild clears it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_shows_a_stale_projector_version_until_rebuilt() {
    let cli = tokio::task::spawn_blocking(ptslog_binary);
    let s = TestServer::start_with(|c| with_admin(c, false)).await;
    let p = people(&s, 2, "063").await;
    history(&p, 10, 1).await;
    let status = projections::status::load(&s.pool, true).await.unwrap();
    assert_eq!(status.len(), Projection::ALL.len());
    assert!(
        status
            .iter()
            .all(|x| !x.is_stale() && x.state == RebuildState::Live && x.lag() == 0),
        "{status:?}"
    );

    // The live dialogs were built by an older projector than this code's.
    sqlx::query("UPDATE projection_status SET version = $1 WHERE name = 'dialogs'")
        .bind(Projection::Dialogs.version() - 1)
        .execute(&s.pool)
        .await
        .unwrap();
    let status = projections::status::load(&s.pool, true).await.unwrap();
    let stale: Vec<&str> = status
        .iter()
        .filter(|x| x.is_stale())
        .map(|x| x.name.as_str())
        .collect();
    assert_eq!(stale, ["dialogs"]);
    let m = s.metrics().await;
    assert!(
        m.contains("ptslog_projection_stale{projection=\"dialogs\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("ptslog_projection_stale{projection=\"message_boxes\"} 0"),
        "{m}"
    );
    let admin: Value = s
        .http
        .get(format!("{}/admin/projections", s.admin_base))
        .bearer_auth(TEST_ADMIN_TOKEN)
        .send()
        .await
        .expect("GET /admin/projections")
        .json()
        .await
        .expect("JSON");
    let stale: Vec<&str> = admin["projections"]
        .as_array()
        .expect("projections")
        .iter()
        .filter(|x| x["stale"] == true)
        .map(|x| x["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(stale, ["dialogs"], "{admin}");

    let bin = cli.await.unwrap().expect("the ptslog binary");
    let (code, out) = run_cli(&bin, &s.db, &["projections", "status"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("dialogs: stale: built by projector version"),
        "{out}"
    );
    let (code, out) = run_cli(&bin, &s.db, &["projections", "status", "--json"]);
    assert_eq!(code, 0, "{out}");
    let json: Value = serde_json::from_str(&out).expect("status JSON");
    let dialogs = json["projections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "dialogs")
        .cloned()
        .unwrap();
    assert_eq!(dialogs["stale"], true);
    assert_eq!(dialogs["lag_events"], 0);

    let (code, out) = run_cli(&bin, &s.db, &["projections", "rebuild", "dialogs"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("rebuilt message_boxes, dialogs from"), "{out}");
    let status = projections::status::load(&s.pool, true).await.unwrap();
    assert!(status.iter().all(|x| !x.is_stale()), "{status:?}");
    let (code, out) = run_cli(&bin, &s.db, &["projections", "status"]);
    assert_eq!(code, 0);
    assert!(!out.contains("STALE") && !out.contains("stale:"), "{out}");
    assert_clean(&s.pool).await;
    s.stop().await;
}

/// An abort during the copy drops the shadow and leaves the live tables as they were (the same
/// tables, the same rows); a second rebuild while one runs is refused; the next rebuild works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_rebuild_leaves_the_live_tables_intact() {
    let s = TestServer::start().await;
    let p = people(&s, 3, "064").await;
    history(&p, 200, 3).await;
    let before = fingerprint(&s.pool).await;

    let control = RebuildControl {
        batch_events: 20,
        progress_every: Duration::ZERO,
        ..RebuildControl::default()
    };
    let cancel = control.cancel.clone();
    let mut calls = 0;
    let outcome =
        projections::rebuild_online(&s.pool, &[Projection::Dialogs], &control, &mut |p| {
            calls += 1;
            if p.events_done > 0 {
                cancel.store(true, Ordering::Relaxed);
            }
        })
        .await;
    assert!(calls > 0);
    match outcome {
        Err(ProjectionError::Aborted(_)) => {}
        other => panic!("expected an abort, got {other:?}"),
    }
    assert!(
        leftover_schemas(&s.pool).await.is_empty(),
        "the shadow schema was dropped"
    );
    assert_eq!(fingerprint(&s.pool).await, before, "live tables untouched");
    let status = projections::status::load(&s.pool, true).await.unwrap();
    let dialogs = status.iter().find(|x| x.name == "dialogs").unwrap();
    assert_eq!(dialogs.state, RebuildState::Live);
    assert!(
        dialogs.error.as_deref().unwrap_or("").contains("aborted"),
        "{dialogs:?}"
    );

    // One rebuild at a time: while the rebuild lock is held, another is refused.
    let mut holder = s.pool.acquire().await.unwrap();
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(0x7074_736c_6f67_0001_i64)
        .execute(&mut *holder)
        .await
        .unwrap();
    let busy = projections::rebuild_online(
        &s.pool,
        &[Projection::ContactBlocks],
        &RebuildControl::default(),
        &mut |_| {},
    )
    .await;
    assert!(matches!(busy, Err(ProjectionError::Busy(_))), "{busy:?}");
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(0x7074_736c_6f67_0001_i64)
        .execute(&mut *holder)
        .await
        .unwrap();
    drop(holder);

    let report = projections::rebuild_online(
        &s.pool,
        &Projection::ALL,
        &RebuildControl::default(),
        &mut |_| {},
    )
    .await
    .expect("rebuild after the abort");
    assert_eq!(report.projections, Projection::ALL);
    let after = fingerprint(&s.pool).await;
    assert_eq!(
        (&after.0, &after.1),
        (&before.0, &before.1),
        "the same rows"
    );
    assert_clean(&s.pool).await;
    s.stop().await;
}

/// A rebuild that fails (here: an event its projector cannot apply) records `failed` with the
/// error, drops its shadow and leaves the live tables in place. (A row that cannot be decoded does
/// not fail a rebuild: it is skipped, docs/events.md "Rows that cannot be read"; hostile_payloads
/// tests that.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_rebuild_is_recorded_and_leaves_the_live_tables() {
    let s = TestServer::start().await;
    let p = people(&s, 2, "065").await;
    history(&p, 20, 1).await;
    let a = p.devices[0].user_id;
    let boxes_before = oid(&s.pool, "message_boxes").await;
    // A second new_message for a box id that already exists, appended as a writer would (pts
    // dense, counter moved): the projector's insert collides.
    let mut tx = s.pool.begin().await.unwrap();
    let pts: i32 = sqlx::query_scalar(
        "UPDATE user_sequences SET pts = pts + 1 WHERE user_id = $1 RETURNING pts",
    )
    .bind(a)
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO user_update_events (user_id, pts, pts_count, kind, payload_version, payload) \
         SELECT user_id, $2, 1, kind, payload_version, payload FROM user_update_events \
         WHERE user_id = $1 AND kind = 'new_message' ORDER BY pts LIMIT 1",
    )
    .bind(a)
    .bind(pts)
    .execute(&mut *tx)
    .await
    .unwrap();
    tx.commit().await.unwrap();

    let outcome = projections::rebuild_online(
        &s.pool,
        &[Projection::MessageBoxes],
        &RebuildControl::default(),
        &mut |_| {},
    )
    .await;
    let error = match &outcome {
        Err(e @ ProjectionError::Database(_)) => e.to_string(),
        other => panic!("expected a projector failure, got {other:?}"),
    };
    assert!(error.contains("duplicate key"), "{error}");
    assert_eq!(oid(&s.pool, "message_boxes").await, boxes_before);
    assert!(leftover_schemas(&s.pool).await.is_empty());
    let status = projections::status::load(&s.pool, true).await.unwrap();
    let boxes = status.iter().find(|x| x.name == "message_boxes").unwrap();
    assert_eq!(boxes.state, RebuildState::Failed, "{boxes:?}");
    assert!(
        boxes
            .error
            .as_deref()
            .unwrap_or("")
            .contains("duplicate key"),
        "{boxes:?}"
    );
    let m = s.metrics().await;
    assert!(
        m.contains("ptslog_projection_failed{projection=\"message_boxes\"} 1"),
        "{m}"
    );
    s.stop().await;
}

/// The live read models as a fingerprint: the rows of message_boxes and dialogs, and which tables
/// they are.
async fn fingerprint(pool: &PgPool) -> (String, String, i64, i64) {
    let boxes: String = sqlx::query_scalar(
        "SELECT md5(string_agg(to_jsonb(m)::text, ',' ORDER BY owner_user_id, box_id)) FROM message_boxes m",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    let dialogs: String = sqlx::query_scalar(
        "SELECT md5(string_agg(to_jsonb(d)::text, ',' ORDER BY user_id, peer_user_id)) FROM dialogs d",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    (
        boxes,
        dialogs,
        oid(pool, "message_boxes").await,
        oid(pool, "dialogs").await,
    )
}

/// Ctrl-C on `ptslog projections rebuild`: the process says it aborted, exits 1, and the live
/// tables are the same tables with the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_aborts_the_cli_rebuild() {
    let cli = tokio::task::spawn_blocking(ptslog_binary);
    let s = TestServer::start().await;
    let p = people(&s, 4, "066").await;
    history(&p, 800, 4).await;
    let before = fingerprint(&s.pool).await;
    let bin = cli.await.unwrap().expect("the ptslog binary");
    // One event per transaction: slow enough to be interrupted mid-copy.
    let child = std::process::Command::new(&bin)
        .args(["projections", "rebuild", "--all", "--batch-events", "1"])
        .env_remove("PTSLOG_CONFIG")
        .env("DATABASE_URL", ptslog_tests::database_url(&s.db))
        .env("REDIS_URL", ptslog_tests::redis_url())
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ptslog projections rebuild");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let copying: Option<i64> = sqlx::query_scalar(
            "SELECT rebuild_events_done FROM projection_status WHERE name = 'dialogs' AND state = 'rebuilding' AND rebuild_phase = 'copy'",
        )
        .fetch_optional(&s.pool)
        .await
        .unwrap();
        if copying.is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the rebuild never started copying"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The shell's own kill: no procps needed.
    let killed = std::process::Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .expect("kill -INT");
    assert!(killed.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .unwrap()
        .expect("the rebuild's output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("rebuild aborted"), "{stdout}\n{stderr}");
    assert!(stderr.contains("aborting"), "{stderr}");
    assert_eq!(fingerprint(&s.pool).await, before, "live tables untouched");
    assert!(leftover_schemas(&s.pool).await.is_empty());
    let status = projections::status::load(&s.pool, true).await.unwrap();
    assert!(
        status.iter().all(|x| x.state == RebuildState::Live
            && x.error.as_deref().unwrap_or("").contains("aborted")),
        "{status:?}"
    );
    assert_clean(&s.pool).await;
    s.stop().await;
}

/// A long read of a live table holds off the swap's ACCESS EXCLUSIVE lock: each attempt gives up
/// after `lock_timeout` (letting writers go), catches up and tries again, and the swap happens once
/// the read ends. Writers never wait much longer than one `lock_timeout`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn swap_waits_out_a_long_reader_without_holding_writers() {
    let s = TestServer::start().await;
    let p = people(&s, 3, "067").await;
    history(&p, 100, 2).await;

    // A reader that keeps dialogs open (ACCESS SHARE) until the swap has been tried twice.
    let swap_tries = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut reader = s.pool.begin().await.unwrap();
    sqlx::query("SELECT count(*) FROM dialogs")
        .execute(&mut *reader)
        .await
        .unwrap();
    let release = {
        let swap_tries = swap_tries.clone();
        tokio::spawn(async move {
            while swap_tries.load(Ordering::Relaxed) < 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            reader.commit().await.unwrap();
        })
    };
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let (d, peer) = (p.devices[0].clone(), p.peers[0][1].clone());
        tokio::spawn(async move {
            let mut longest = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                d.send(&peer, "during the swap").await;
                longest = longest.max(t.elapsed());
            }
            longest
        })
    };
    let lock_timeout = Duration::from_millis(300);
    let control = RebuildControl {
        lock_timeout,
        swap_attempts: 20,
        ..RebuildControl::default()
    };
    let tries = swap_tries.clone();
    let report = projections::rebuild_online(&s.pool, &[Projection::Dialogs], &control, &mut |p| {
        if p.phase == projections::online::Phase::Swap {
            tries.fetch_add(1, Ordering::Relaxed);
        }
    })
    .await
    .expect("the rebuild swaps once the reader is gone");
    stop.store(true, Ordering::Relaxed);
    let longest = writer.await.unwrap();
    release.await.unwrap();
    eprintln!(
        "swap after a long reader: {} attempt(s), writers held {:?} by the last one; longest send {longest:?}",
        report.swap_attempts, report.writers_held
    );
    assert!(report.swap_attempts >= 2, "{report:?}");
    assert!(
        longest < lock_timeout + Duration::from_millis(1500),
        "a send waited {longest:?} (lock_timeout {lock_timeout:?})"
    );
    assert!(leftover_schemas(&s.pool).await.is_empty());
    assert_clean(&s.pool).await;
    s.stop().await;
}

/// With more accounts than one chunk, verify shares the chunks among its connections and still
/// reports the differences in account order, including rows of owners no account has.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_spans_chunks_in_account_order() {
    let s = TestServer::start().await;
    let p = people(&s, 2, "068").await;
    history(&p, 20, 1).await;
    // 700 more (silent) accounts: three chunks of 256 and a bit.
    let ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO users (phone, first_name) SELECT '+1999068' || lpad(g::text, 4, '0'), 'U' \
         FROM generate_series(1, 700) g RETURNING id",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    sqlx::query("INSERT INTO user_sequences (user_id) SELECT unnest($1::bigint[])")
        .bind(&ids)
        .execute(&s.pool)
        .await
        .unwrap();
    let (early, late, nobody) = (ids[100], ids[600], 9_000_000_000_i64);
    // Rows no event made: in a late chunk, an early one, and of an owner no account has.
    for owner in [late, early, nobody] {
        sqlx::query(
            "INSERT INTO peer_settings (owner_user_id, peer_user_id, bar_hidden) VALUES ($1, 1, true)",
        )
        .bind(owner)
        .execute(&s.pool)
        .await
        .unwrap();
    }
    let report = projections::verify(&s.pool).await.unwrap();
    assert_eq!(report.total_differences, 3, "{:?}", report.differences);
    let owners: Vec<String> = report
        .differences
        .iter()
        .map(|d| d.split(',').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        owners,
        [early, late, nobody].map(|o| format!("peer_settings (owner_user_id={o}")),
        "{:?}",
        report.differences
    );
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert_eq!(report.events_replayed, events as u64);
    s.stop().await;
}
