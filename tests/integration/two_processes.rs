//! Two `ptslog serve` processes on the same database serve the same accounts at once, both taking
//! writes, with every property intact: pts and box ids dense, every message exactly once, one
//! device's difference through one process equal to the other device's state through the other.
//!
//! The processes are the real binary. `cargo test -p ptslog-tests` does not build another package's
//! binaries, so [`ptslog_binary`] builds `ptslog` (once per test run) when it is missing or older than
//! this test binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use ptslog_tests::{database_url, drop_database, fresh_database, redis_url, Device};
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use crate::difference::{catch_up, full_history, Replica};

// ---------------------------------------------------------------------------------------------
// The binary.
// ---------------------------------------------------------------------------------------------

fn modified(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The `ptslog` binary next to this test binary (`target/<profile>/ptslog`), built with cargo if it
/// is missing or older than this test binary (which is rebuilt whenever the server's code changes).
/// `Err` says why it could not be had.
pub(crate) fn ptslog_binary() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Mutex<Option<Result<PathBuf, String>>>> = OnceLock::new();
    let cell = BUILT.get_or_init(|| Mutex::new(None));
    let mut guard = cell.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(done) = guard.as_ref() {
        return done.clone();
    }
    let result = (|| {
        let me = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        // target/<profile>/deps/integration-<hash>
        let profile_dir = me
            .parent()
            .and_then(Path::parent)
            .ok_or("unexpected test binary location")?
            .to_path_buf();
        let bin = profile_dir.join(format!("ptslog{}", std::env::consts::EXE_SUFFIX));
        let stale = match (modified(&bin), modified(&me)) {
            (Some(b), Some(t)) => b < t,
            _ => true,
        };
        if stale {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
            let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            let mut cmd = Command::new(cargo);
            cmd.current_dir(&workspace)
                .args(["build", "-p", "ptslog", "--bin", "ptslog"]);
            // The variables cargo set for this test process would leak into build scripts that
            // watch them (ring's watches CARGO_PKG_NAME, CARGO_MANIFEST_DIR, ...): their crates
            // would be rebuilt here, and again by the next plain `cargo test`, every time.
            for (key, _) in std::env::vars_os() {
                let key = key.to_string_lossy().to_string();
                let set_by_cargo = key.starts_with("CARGO_PKG_")
                    || key.starts_with("CARGO_MANIFEST_")
                    || [
                        "CARGO_CRATE_NAME",
                        "CARGO_BIN_NAME",
                        "CARGO_PRIMARY_PACKAGE",
                        "CARGO_TARGET_TMPDIR",
                        "CARGO_RUSTC_CURRENT_DIR",
                        "OUT_DIR",
                    ]
                    .contains(&key.as_str());
                if set_by_cargo {
                    cmd.env_remove(&key);
                }
            }
            if profile_dir.file_name().is_some_and(|n| n == "release") {
                cmd.arg("--release");
            }
            eprintln!("building the ptslog binary for the process tests: {cmd:?}");
            let status = cmd.status().map_err(|e| format!("running cargo: {e}"))?;
            if !status.success() {
                return Err(format!("cargo build -p ptslog failed: {status}"));
            }
        }
        if !bin.exists() {
            return Err(format!("{} missing after the build", bin.display()));
        }
        Ok(bin)
    })();
    *guard = Some(result.clone());
    result
}

/// `ptslog <args>` against a database, to completion: (exit code, stdout).
pub(crate) fn run_cli(bin: &Path, db: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(bin)
        .args(args)
        .env_remove("PTSLOG_CONFIG")
        .env("DATABASE_URL", database_url(db))
        .env("REDIS_URL", redis_url())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("running ptslog");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.stderr.is_empty() {
        eprintln!(
            "ptslog {args:?} stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (out.status.code().unwrap_or(-1), stdout)
}

// ---------------------------------------------------------------------------------------------
// Server processes.
// ---------------------------------------------------------------------------------------------

/// Child processes killed when dropped, on success and on panic alike; the database goes too.
struct Processes {
    children: Vec<Child>,
}

impl Drop for Processes {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .unwrap()
        .port()
}

fn spawn_serve(bin: &Path, db: &str, port: u16) -> Child {
    spawn_serve_with(bin, db, port, &[])
}

/// [`spawn_serve`] with these variables besides.
fn spawn_serve_with(bin: &Path, db: &str, port: u16, vars: &[(&str, &str)]) -> Child {
    Command::new(bin)
        .envs(vars.iter().copied())
        .arg("serve")
        .env_remove("PTSLOG_CONFIG")
        // These tests sign in with POST /v1/auth/login.
        .env("PTSLOG_DEV_LOGIN", "true")
        .env("DATABASE_URL", database_url(db))
        .env("REDIS_URL", redis_url())
        .env("PTSLOG_REDIS_PREFIX", format!("test:{db}:"))
        .env("PTSLOG_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("PTSLOG_SEND_RATE_PER_MINUTE", "0")
        // Pushes have their own tests (push.rs); a relay here would hold a replication slot on the
        // shared test server (slot names are per server) for nothing.
        .env("PTSLOG_RELAY", "off")
        // Two processes cannot both listen on the default MTProto port; this test is about HTTP.
        .env("PTSLOG_MTPROTO_ADDR", "off")
        .env("PTSLOG_DB_MAX_CONNECTIONS", "8")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawning ptslog serve")
}

async fn wait_healthy(http: &reqwest::Client, base: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().expect("child status") {
            panic!("ptslog serve at {base} exited early: {status}");
        }
        if let Ok(r) = http.get(format!("{base}/healthz")).send().await {
            if r.status() == 200 {
                return;
            }
        }
        assert!(Instant::now() < deadline, "{base} not healthy within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn login(http: &reqwest::Client, base: &str, phone: &str, name: &str) -> Device {
    let r = http
        .post(format!("{base}/v1/auth/login"))
        .json(&json!({"phone": phone, "first_name": name, "last_name": ""}))
        .send()
        .await
        .expect("login");
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    Device {
        base: base.to_string(),
        http: http.clone(),
        token: body["token"].as_str().unwrap().to_string(),
        user_id: body["user_id"].as_i64().unwrap(),
    }
}

/// Each event starts where the previous one of its user ended (from 0); user_sequences.pts is the
/// last pts; each owner's box ids are exactly 1..=user_sequences.box_id. Answers (user, pts, box_id).
pub(crate) async fn assert_dense(pool: &PgPool) -> Vec<(i64, i32, i32)> {
    let events: Vec<(i64, i32, i32)> = sqlx::query_as(
        "SELECT user_id, pts, pts_count FROM user_update_events ORDER BY user_id, pts",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut last: BTreeMap<i64, i32> = BTreeMap::new();
    for (user, pts, count) in &events {
        let prev = last.get(user).copied().unwrap_or(0);
        assert!(
            *count >= 1,
            "user {user} event at pts {pts} takes {count} pts"
        );
        assert_eq!(
            pts - count,
            prev,
            "user {user}: the event at pts {pts} (pts_count {count}) must start at {prev}"
        );
        last.insert(*user, *pts);
    }
    let sequences: Vec<(i64, i32, i32)> =
        sqlx::query_as("SELECT user_id, pts, box_id FROM user_sequences ORDER BY user_id")
            .fetch_all(pool)
            .await
            .unwrap();
    for (user, pts, _) in &sequences {
        assert_eq!(
            last.get(user).copied().unwrap_or(0),
            *pts,
            "user_sequences.pts of {user} is its last event's pts"
        );
    }
    let boxes: BTreeMap<i64, (i64, i32, i64)> = sqlx::query_as::<_, (i64, i64, i32, i64)>(
        "SELECT owner_user_id, count(*), max(box_id), count(DISTINCT box_id) FROM message_boxes GROUP BY owner_user_id",
    )
    .fetch_all(pool)
    .await
    .unwrap()
    .into_iter()
    .map(|(u, n, max, distinct)| (u, (n, max, distinct)))
    .collect();
    for (user, _, box_id) in &sequences {
        let (n, max, distinct) = boxes.get(user).copied().unwrap_or((0, 0, 0));
        assert_eq!(
            (n, max, distinct),
            (*box_id as i64, *box_id, *box_id as i64),
            "box ids of {user} are exactly 1..={box_id}"
        );
    }
    assert!(
        boxes.keys().all(|u| sequences.iter().any(|s| s.0 == *u)),
        "every box owner has a sequence row"
    );
    sequences
}

// ---------------------------------------------------------------------------------------------
// The test.
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn two_serve_processes_share_one_database() {
    let bin = ptslog_binary().expect("the ptslog binary");
    let db = fresh_database().await.expect("database");
    let http = reqwest::Client::new();
    let ports = [free_port(), free_port()];
    let mut procs = Processes {
        children: Vec::new(),
    };
    // Both start at once: both run the migrations (serialized by sqlx's advisory lock).
    for port in ports {
        procs.children.push(spawn_serve(&bin, &db, port));
    }
    let bases: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}"))
        .collect();
    for (i, base) in bases.iter().enumerate() {
        wait_healthy(&http, base, &mut procs.children[i]).await;
    }
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(&database_url(&db))
        .await
        .unwrap();

    // Alice on process 1 and Bob on process 2, and each on the other too.
    let alice1 = login(&http, &bases[0], "+15550201", "Alice").await;
    let bob2 = login(&http, &bases[1], "+15550202", "Bob").await;
    let alice2 = login(&http, &bases[1], "+15550201", "Alice").await;
    let bob1 = login(&http, &bases[0], "+15550202", "Bob").await;
    assert_eq!(
        (alice1.user_id, bob1.user_id),
        (alice2.user_id, bob2.user_id),
        "one account whichever process"
    );
    let (alice, bob) = (alice1.user_id, bob1.user_id);
    // The access-hash key is shared: a hash from one process works on the other.
    let to_bob = alice1.peer_of("+15550202").await;
    assert_eq!(alice2.peer_of("+15550202").await, to_bob);
    let to_alice = bob2.peer_of("+15550201").await;
    assert_eq!(bob1.peer_of("+15550201").await, to_alice);

    // 4 tasks × 50 sends, both directions through both processes at once.
    const PER_TASK: usize = 50;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (name, dev, peer) in [
        ("a1", alice1.clone(), to_bob.clone()),
        ("a2", alice2.clone(), to_bob.clone()),
        ("b1", bob1.clone(), to_alice.clone()),
        ("b2", bob2.clone(), to_alice.clone()),
    ] {
        tasks.spawn(async move {
            let mut answers = Vec::new();
            for i in 0..PER_TASK {
                let text = format!("{name}-{i}");
                let r = dev.send(&peer, &text).await;
                assert_eq!(
                    (r["_"].as_str(), r["pts_count"].as_i64()),
                    (Some("updateShortSentMessage"), Some(1))
                );
                answers.push((text, r["id"].as_i64().unwrap(), r["pts"].as_i64().unwrap()));
            }
            (dev.user_id, answers)
        });
    }
    let mut sent: BTreeMap<i64, Vec<(String, i64, i64)>> = BTreeMap::new();
    while let Some(r) = tasks.join_next().await {
        let (user, answers) = r.expect("send task");
        sent.entry(user).or_default().extend(answers);
    }
    eprintln!(
        "two_processes: {} sends in {:?}",
        4 * PER_TASK,
        started.elapsed()
    );

    // Every answer is a distinct box id and pts of the sender; the sequences are dense.
    let seqs = assert_dense(&pool).await;
    for (user, answers) in &sent {
        let ids: BTreeSet<i64> = answers.iter().map(|a| a.1).collect();
        let pts: BTreeSet<i64> = answers.iter().map(|a| a.2).collect();
        assert_eq!(
            (ids.len(), pts.len()),
            (2 * PER_TASK, 2 * PER_TASK),
            "distinct ids and pts for {user}"
        );
    }
    let expected_seq = [
        (alice, 4 * PER_TASK as i32, 4 * PER_TASK as i32),
        (bob, 4 * PER_TASK as i32, 4 * PER_TASK as i32),
    ];
    assert_eq!(
        seqs, expected_seq,
        "each account got 200 new_message events and 200 boxes"
    );

    // Each side's history has every message exactly once, with the answered ids for its own.
    for (me, dev, peer_phone) in [(alice, &alice1, "+15550202"), (bob, &bob2, "+15550201")] {
        let peer = dev.peer_of(peer_phone).await;
        let history = full_history(dev, &peer).await;
        assert_eq!(history.len(), 4 * PER_TASK, "history of {me}");
        let mut by_text: BTreeMap<String, (i64, bool)> = BTreeMap::new();
        for m in &history {
            let prev = by_text.insert(
                m["message"].as_str().unwrap().to_string(),
                (m["id"].as_i64().unwrap(), m["out"] == true),
            );
            assert!(
                prev.is_none(),
                "{} twice in the history of {me}",
                m["message"]
            );
        }
        for (user, answers) in &sent {
            for (text, id, _) in answers {
                let (got_id, out) = by_text[text];
                assert_eq!(out, *user == me, "direction of {text}");
                if *user == me {
                    assert_eq!(
                        got_id, *id,
                        "{text} is in the sender's box the answer named"
                    );
                }
            }
        }
    }

    // Retries of one send through both processes at once: one message, one answer.
    let mut retries = tokio::task::JoinSet::new();
    for k in 0..10i64 {
        for dev in [alice1.clone(), alice2.clone()] {
            let peer = to_bob.clone();
            retries.spawn(async move {
                let r = dev
                    .rpc("messages.sendMessage", json!({"peer": peer, "message": format!("retry {k}"), "random_id": 900_000 + k}))
                    .await;
                (k, r["id"].as_i64().unwrap(), r["pts"].as_i64().unwrap())
            });
        }
    }
    let mut first: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    while let Some(r) = retries.join_next().await {
        let (k, id, pts) = r.expect("retry task");
        if let Some(prev) = first.insert(k, (id, pts)) {
            assert_eq!(
                prev,
                (id, pts),
                "both processes answer the first result of random_id {k}"
            );
        }
    }

    // Mixed writes that lock both accounts from both sides, through both processes at once:
    // revoking deletes (which learn the chat from the ids), reads, edits and sends.
    let mut mixed = tokio::task::JoinSet::new();
    for (t, dev, peer, own) in [
        (0, alice1.clone(), to_bob.clone(), sent[&alice].clone()),
        (1, alice2.clone(), to_bob.clone(), sent[&alice].clone()),
        (2, bob1.clone(), to_alice.clone(), sent[&bob].clone()),
        (3, bob2.clone(), to_alice.clone(), sent[&bob].clone()),
    ] {
        mixed.spawn(async move {
            let mut statuses = Vec::new();
            for i in 0..25usize {
                let (_, id, _) = &own[(i * 7 + t * 13) % own.len()];
                let (status, body) = match i % 5 {
                    0 => dev.call("messages.deleteMessages", json!({"id": [id, id + 1], "revoke": true})).await,
                    1 => dev.call("messages.readHistory", json!({"peer": peer, "max_id": 0})).await,
                    2 => dev.call("messages.editMessage", json!({"peer": peer, "id": id, "message": format!("edited {t}-{i}")})).await,
                    3 => dev.call("messages.sendMessage", json!({"peer": peer, "message": format!("mixed {i}"), "random_id": rand_id()})).await,
                    _ => dev.call("messages.deleteHistory", json!({"peer": peer, "max_id": id, "just_clear": true, "revoke": i % 2 == 0})).await,
                };
                assert!(status < 500, "no 5xx under concurrent writes: {status} {body}");
                statuses.push((status, body["error_message"].as_str().unwrap_or("").to_string()));
            }
            statuses
        });
    }
    let mut outcomes: BTreeMap<(u16, String), usize> = BTreeMap::new();
    while let Some(r) = mixed.join_next().await {
        for s in r.expect("mixed task") {
            *outcomes.entry(s).or_default() += 1;
        }
    }
    eprintln!("two_processes: mixed outcomes {outcomes:?}");
    assert!(
        outcomes
            .keys()
            .all(|(s, m)| *s == 200 || m == "MESSAGE_ID_INVALID"),
        "only edits of deleted messages fail: {outcomes:?}"
    );
    assert_dense(&pool).await;

    // A difference through process 2 equals the state through process 1, and the other way round.
    for (me, via2, via1) in [(alice, &alice2, &alice1), (bob, &bob2, &bob1)] {
        let mut replica = Replica::new(me);
        catch_up(via2, &mut replica).await;
        replica.assert_matches(via1, true).await;
        let mut other = Replica::new(me);
        catch_up(via1, &mut other).await;
        assert_eq!(
            (other.pts, &other.messages, &other.deleted),
            (replica.pts, &replica.messages, &replica.deleted)
        );
        assert_eq!(other.dialogs, replica.dialogs);
        let chats = replica.dialogs.keys().copied().collect::<Vec<_>>();
        assert_eq!(
            chats,
            vec![if me == alice { bob } else { alice }],
            "one chat"
        );
    }

    let report = projections::verify::verify(&pool).await.expect("verify");
    assert!(
        report.is_clean(),
        "verify after two processes: {:?}",
        report.differences
    );

    pool.close().await;
    drop(procs);
    drop_database(&db).await;
}

fn rand_id() -> i64 {
    use rand::Rng;
    rand::thread_rng().gen_range(1..i64::MAX)
}

/// Group commit on, whatever the default.
const BATCHING: &[(&str, &str)] = &[("PTSLOG_SEND_BATCH_MAX", "32")];

/// `ptslog serve` killed (SIGKILL) while a batch of sends waits for a lock: nobody was answered,
/// nothing of it committed, and the same sends retried through a new process commit once each.
#[tokio::test]
async fn a_process_killed_mid_batch_commits_nothing_it_did_not_answer() {
    let bin = ptslog_binary().expect("the ptslog binary");
    let db = fresh_database().await.expect("database");
    let http = reqwest::Client::new();
    let port = free_port();
    let mut procs = Processes {
        children: vec![spawn_serve_with(&bin, &db, port, BATCHING)],
    };
    let base = format!("http://127.0.0.1:{port}");
    wait_healthy(&http, &base, &mut procs.children[0]).await;
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(&database_url(&db))
        .await
        .unwrap();
    let alice = login(&http, &base, "+15550301", "Alice").await;
    let bob = login(&http, &base, "+15550302", "Bob").await;
    let carol = login(&http, &base, "+15550303", "Carol").await;
    let mut sends: Vec<(Device, Value)> = Vec::new();
    for (d, n) in [
        (&alice, 0),
        (&carol, 1),
        (&alice, 2),
        (&carol, 3),
        (&alice, 4),
        (&carol, 5),
    ] {
        let to_bob = d.peer_of("+15550302").await;
        sends.push((
            d.clone(),
            json!({"peer": to_bob, "message": format!("crash {n}"), "random_id": rand_id()}),
        ));
    }
    let (_, first_params) = sends.remove(0);
    let before = alice
        .rpc("messages.sendMessage", first_params.clone())
        .await;
    let carol_to_bob = carol.peer_of("+15550302").await;
    carol.send(&carol_to_bob, "hello").await;

    // Bob's dialog rows held here: a batch of sends to Bob locks the accounts, then waits in the
    // middle of its transaction (the first send's dialogs upsert).
    let mut hold = pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM dialogs WHERE user_id = $1 FOR UPDATE")
        .bind(bob.user_id)
        .execute(&mut *hold)
        .await
        .unwrap();
    let calls: Vec<_> = sends
        .iter()
        .map(|(d, params)| {
            let (d, params) = (d.clone(), params.clone());
            tokio::spawn(async move {
                d.http
                    .post(format!("{}/v1/rpc/messages.sendMessage", d.base))
                    .bearer_auth(&d.token)
                    .json(&params)
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        if waiting > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "no send waited for Bob's lock");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    procs.children[0].kill().expect("SIGKILL");
    procs.children[0].wait().expect("reaped");
    for c in calls {
        let answer = c.await.unwrap();
        assert!(
            answer.is_err(),
            "a send was answered ({answer:?}) before its commit"
        );
    }
    hold.commit().await.unwrap();
    // The killed process's backends end once they find their client gone; none had committed.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let others: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() \
             AND backend_type = 'client backend' AND xact_start IS NOT NULL",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        if others == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the killed process's transactions never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let committed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM message_boxes WHERE text LIKE 'crash %'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(
        committed, 2,
        "only the answered send is in the boxes (sender and recipient)"
    );
    assert_dense(&pool).await;

    // The clients retry through a new process: each send commits once, a second retry changes
    // nothing.
    let port = free_port();
    procs
        .children
        .push(spawn_serve_with(&bin, &db, port, BATCHING));
    let base = format!("http://127.0.0.1:{port}");
    wait_healthy(&http, &base, &mut procs.children[1]).await;
    let mut firsts = Vec::new();
    for (d, params) in &sends {
        let d = Device {
            base: base.clone(),
            ..d.clone()
        };
        firsts.push(d.rpc("messages.sendMessage", params.clone()).await);
    }
    for ((d, params), first) in sends.iter().zip(&firsts) {
        let d = Device {
            base: base.clone(),
            ..d.clone()
        };
        assert_eq!(&d.rpc("messages.sendMessage", params.clone()).await, first);
    }
    let retried = Device {
        base: base.clone(),
        ..alice.clone()
    };
    assert_eq!(
        retried.rpc("messages.sendMessage", first_params).await,
        before
    );
    let boxes: i64 =
        sqlx::query_scalar("SELECT count(*) FROM message_boxes WHERE text LIKE 'crash %'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(boxes, 2 * 6);
    assert_dense(&pool).await;
    let report = projections::verify::verify(&pool).await.expect("verify");
    assert!(report.is_clean(), "verify: {:?}", report.differences);
    pool.close().await;
    drop(procs);
    drop_database(&db).await;
}
