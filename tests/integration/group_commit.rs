//! Group commit of sends (application/src/commands/send_batch.rs): concurrent sends between
//! overlapping pairs share transactions and keep every account's pts dense; each send is answered
//! once, with what committed; a failing send in a batch fails alone (a refused one in the same
//! transaction, one failing after writing by a rerun of the batch without it, two by giving the
//! batch up); a random_id repeated within a
//! batch or across batches answers the first send; the log and the projections agree.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use application::commands::send_batch::SendBatchConfig;
use futures::future::join_all;
use ptslog_tests::{self_peer, Device, TestServer};
use rand::Rng;
use serde_json::{json, Value};

use crate::send::{rid, three, ALICE, CAROL};

const DAVE: &str = "+15550004";
const ERIN: &str = "+15550005";

fn batching(
    max: usize,
    wait: Duration,
    committers: usize,
) -> impl FnOnce(&mut ptslog_server::config::Config) {
    move |c| {
        c.send_batch = Some(
            SendBatchConfig {
                max,
                wait,
                committers,
            }
            .checked()
            .expect("valid batching"),
        )
    }
}

/// Every account's log is dense: each event's pts is the previous one's plus its pts_count, from
/// 0, and `user_sequences` ends where the log does.
async fn assert_logs_dense(s: &TestServer) {
    let gaps: Vec<(i64, i32, i32)> = sqlx::query_as(
        "SELECT user_id, pts, prev FROM ( \
           SELECT user_id, pts, pts_count, \
                  coalesce(lag(pts) OVER (PARTITION BY user_id ORDER BY pts), 0) AS prev \
           FROM user_update_events) e \
         WHERE pts - pts_count <> prev",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert!(gaps.is_empty(), "gaps in the logs: {gaps:?}");
    let behind: Vec<(i64, i32, Option<i32>)> = sqlx::query_as(
        "SELECT s.user_id, s.pts, (SELECT max(pts) FROM user_update_events e WHERE e.user_id = s.user_id) \
         FROM user_sequences s \
         WHERE s.pts <> coalesce((SELECT max(pts) FROM user_update_events e WHERE e.user_id = s.user_id), 0)",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert!(behind.is_empty(), "counters and logs differ: {behind:?}");
}

async fn assert_projections_match_the_log(s: &TestServer) {
    let report = projections::verify::verify(&s.pool).await.expect("verify");
    assert!(report.is_clean(), "verify: {:?}", report.differences);
}

/// Waits until the server's send queue holds `n` sends (nothing takes them while the one
/// committer is busy).
async fn wait_queued(s: &TestServer, n: usize) {
    for _ in 0..2000 {
        if s.app.sends_queued() == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!(
        "the send queue never held {n} (it holds {})",
        s.app.sends_queued()
    );
}

/// Waits until some backend waits for a row lock.
async fn wait_lock_waiter(s: &TestServer) {
    for _ in 0..2000 {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(&s.pool)
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no send ever waited for the held lock");
}

/// The answer of call `n`, which must have succeeded.
fn answered(answers: &[(u16, Value)], n: usize) -> Value {
    assert_eq!(answers[n].0, 200, "send {n}: {}", answers[n].1);
    answers[n].1.clone()
}

/// (status, error_message) of call `n`.
fn refused(answers: &[(u16, Value)], n: usize) -> (u16, String) {
    let message = answers[n].1["error_message"].as_str().unwrap_or_default();
    (answers[n].0, message.to_string())
}

fn send_params(peer: &Value, text: &str, random_id: i64) -> Value {
    json!({"peer": peer, "message": text, "random_id": random_id})
}

#[tokio::test]
async fn concurrent_sends_between_overlapping_pairs_share_commits_and_keep_pts_dense() {
    let s = TestServer::start_with(batching(32, Duration::from_micros(1000), 2)).await;
    const ACCOUNTS: usize = 8;
    const LOOPS_PER_ACCOUNT: usize = 4;
    const SENDS_PER_LOOP: usize = 8;
    let mut devices = Vec::new();
    for i in 0..ACCOUNTS {
        devices.push(s.login(&format!("+1555010{i}"), &format!("User{i}")).await);
    }
    // Every account's peer of every account (itself: Saved Messages).
    let mut peers: Vec<Vec<Value>> = Vec::new();
    for d in &devices {
        let mut row = Vec::new();
        for (j, _) in devices.iter().enumerate() {
            row.push(if devices[j].user_id == d.user_id {
                self_peer()
            } else {
                d.peer_of(&format!("+1555010{j}")).await
            });
        }
        peers.push(row);
    }

    // (sender index, params, answer)
    let mut loops = Vec::new();
    for (i, d) in devices.iter().enumerate() {
        for l in 0..LOOPS_PER_ACCOUNT {
            let d: Device = d.clone();
            let peers = peers[i].clone();
            loops.push(tokio::spawn(async move {
                let mut done = Vec::new();
                for n in 0..SENDS_PER_LOOP {
                    let to = rand::thread_rng().gen_range(0..ACCOUNTS);
                    let params = send_params(&peers[to], &format!("{i}:{l}:{n}"), rid());
                    let answer = d.rpc("messages.sendMessage", params.clone()).await;
                    done.push((i, to, params, answer));
                }
                done
            }));
        }
    }
    let mut sent = Vec::new();
    for l in join_all(loops).await {
        sent.extend(l.expect("sender loop"));
    }
    let total = ACCOUNTS * LOOPS_PER_ACCOUNT * SENDS_PER_LOOP;
    assert_eq!(sent.len(), total);

    // Each answer is the sender's box of that random_id, at that pts; no id or pts answered twice.
    let mut seen: HashMap<usize, (HashSet<i64>, HashSet<i64>)> = HashMap::new();
    for (i, _, params, answer) in &sent {
        assert_eq!(answer["_"], "updateShortSentMessage", "{answer}");
        let (id, pts) = (
            answer["id"].as_i64().unwrap(),
            answer["pts"].as_i64().unwrap(),
        );
        let (ids, ptss) = seen.entry(*i).or_default();
        assert!(ids.insert(id), "box id {id} answered twice to account {i}");
        assert!(ptss.insert(pts), "pts {pts} answered twice to account {i}");
        let row: (i32, i32, String) = sqlx::query_as(
            "SELECT box_id, pts, text FROM message_boxes WHERE owner_user_id = $1 AND random_id = $2",
        )
        .bind(devices[*i].user_id)
        .bind(params["random_id"].as_i64().unwrap())
        .fetch_one(&s.pool)
        .await
        .unwrap();
        assert_eq!(
            (i64::from(row.0), i64::from(row.1), row.2.as_str()),
            (id, pts, params["message"].as_str().unwrap())
        );
    }
    let self_sends = sent.iter().filter(|(i, to, _, _)| i == to).count();
    let boxes: i64 = sqlx::query_scalar("SELECT count(*) FROM message_boxes")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert_eq!(boxes as usize, 2 * total - self_sends);
    assert_logs_dense(&s).await;

    // The sends shared transactions: fewer commits than sends.
    let commits: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT xmin::text) FROM user_update_events WHERE kind = 'new_message'",
    )
    .fetch_one(&s.pool)
    .await
    .unwrap();
    assert!(
        (commits as usize) < total,
        "{commits} transactions for {total} sends: nothing was batched"
    );
    // /metrics counts them alike: every send answered from a batch or alone, the batches no more
    // than the transactions.
    let batches = s.metric("ptslog_send_batches_total").await;
    let batched = s.metric("ptslog_send_batch_sends_total").await;
    let alone = s
        .metric("ptslog_sends_alone_total{reason=\"account_held\"}")
        .await;
    assert_eq!(batched + alone, total as f64);
    assert!(
        batches >= 1.0 && batches <= commits as f64,
        "{batches} batches"
    );

    // Retries of some of them, all at once (batched among themselves): the first answers, nothing
    // appended.
    let events_before: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    let retries = sent.iter().step_by(7).map(|(i, _, params, first)| {
        let d = devices[*i].clone();
        let params = params.clone();
        let first = first.clone();
        async move {
            let again = d.rpc("messages.sendMessage", params).await;
            assert_eq!(again, first);
        }
    });
    join_all(retries).await;
    let events_after: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert_eq!(events_after, events_before);
    assert_logs_dense(&s).await;
    assert_projections_match_the_log(&s).await;
    s.stop().await;
}

/// A send that fails inside the transaction after writing: the recipient's copy of "poison"
/// raises, once the sender's copy (a row, a dialog, the sender's counters) is in.
async fn poison_trigger(s: &TestServer) {
    sqlx::raw_sql(
        "CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.text = 'poison' AND NOT NEW.outgoing THEN RAISE EXCEPTION 'poisoned'; END IF; \
         RETURN NEW; END $$; \
         CREATE TRIGGER poison AFTER INSERT ON message_boxes FOR EACH ROW EXECUTE FUNCTION poison();",
    )
    .execute(&s.pool)
    .await
    .unwrap();
}

/// Holds the only committer: Dave's Saved Messages dialog row is locked in the returned
/// transaction, so his send (alone in its batch, his account locked) waits in the middle of its
/// own. The sends queued meanwhile make the next batch; committing the hold lets it run.
async fn hold_the_committer(
    s: &TestServer,
    dave: &Device,
) -> (
    sqlx::Transaction<'static, sqlx::Postgres>,
    tokio::task::JoinHandle<Value>,
) {
    dave.send(&self_peer(), "saved").await;
    let mut hold = s.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM dialogs WHERE user_id = $1 FOR UPDATE")
        .bind(dave.user_id)
        .execute(&mut *hold)
        .await
        .unwrap();
    let blocker = {
        let dave = dave.clone();
        tokio::spawn(async move { dave.send(&self_peer(), "blocker").await })
    };
    wait_queued(s, 0).await;
    wait_lock_waiter(s).await;
    (hold, blocker)
}

/// Queues the sends one by one behind the held committer (so the next batch runs them in this
/// order), lets the committer go and answers the sends' answers, in order.
async fn run_queued(
    s: &TestServer,
    queue: Vec<(&Device, Value)>,
    hold: sqlx::Transaction<'static, sqlx::Postgres>,
    blocker: tokio::task::JoinHandle<Value>,
) -> Vec<(u16, Value)> {
    let calls = queue
        .into_iter()
        .map(|(d, params)| (d, "messages.sendMessage", params))
        .collect();
    run_queued_calls(s, calls, hold, blocker).await
}

/// [`run_queued`] for any writes group commit takes (method, params).
async fn run_queued_calls(
    s: &TestServer,
    queue: Vec<(&Device, &'static str, Value)>,
    hold: sqlx::Transaction<'static, sqlx::Postgres>,
    blocker: tokio::task::JoinHandle<Value>,
) -> Vec<(u16, Value)> {
    let mut calls = Vec::new();
    for (n, (d, method, params)) in queue.into_iter().enumerate() {
        let d = d.clone();
        calls.push(tokio::spawn(async move { d.call(method, params).await }));
        wait_queued(s, n + 1).await;
    }
    hold.commit().await.unwrap();
    blocker.await.unwrap();
    let mut answers = Vec::new();
    for c in calls {
        answers.push(c.await.unwrap());
    }
    answers
}

#[tokio::test]
async fn a_failing_send_fails_alone_and_a_repeated_random_id_answers_the_first() {
    // One committer and no waiting: the sends queued while it is busy make the next batch.
    let s = TestServer::start_with(batching(32, Duration::ZERO, 1)).await;
    let (alice, bob, carol, to_bob, to_carol) = three(&s).await;
    let dave = s.login(DAVE, "Dave").await;
    let bob_to_alice = bob.peer_of(ALICE).await;
    let bob_to_carol = bob.peer_of(CAROL).await;
    let carol_to_alice = carol.peer_of(ALICE).await;
    carol
        .rpc("contacts.block", json!({"id": carol_to_alice}))
        .await;
    poison_trigger(&s).await;
    let alice_pts = crate::send::pts(&alice).await;

    let (hold, blocker) = hold_the_committer(&s, &dave).await;

    // Queued one by one, so the batch runs them in this order.
    let (r1, r2, r3) = (rid(), rid(), rid());
    let queue: Vec<(&Device, Value)> = vec![
        (&alice, send_params(&to_bob, "a1", r1)),
        (&alice, send_params(&to_bob, "poison", r2)),
        (&alice, send_params(&to_bob, "a1", r1)),
        (&carol, send_params(&carol_to_alice, "blocked", rid())),
        (&bob, send_params(&bob_to_alice, "b1", rid())),
        (&alice, send_params(&to_bob, "a2", r3)),
        (&alice, send_params(&to_carol, "a1", r1)),
        (&bob, send_params(&bob_to_carol, "b2", rid())),
    ];
    let answers = run_queued(&s, queue, hold, blocker).await;

    let ok = |n: usize| answered(&answers, n);
    let error = |n: usize| refused(&answers, n);
    // Alice's pts run on across the failed send: a1, then Bob's b1, then a2.
    assert_eq!(ok(0)["pts"].as_i64(), Some(alice_pts + 1));
    assert_eq!(ok(5)["pts"].as_i64(), Some(alice_pts + 3));
    assert_ne!(answers[1].0, 200, "the poisoned send: {}", answers[1].1);
    assert_eq!(answers[1].1["_"], "rpc_error");
    // The repeat within the batch is the first send's answer.
    assert_eq!(ok(2), ok(0));
    assert_eq!(error(3), (400, "YOU_BLOCKED_USER".to_string()));
    ok(4);
    // The same random_id to another chat is another message: refused.
    assert_eq!(error(6), (400, "RANDOM_ID_DUPLICATE".to_string()));
    ok(7);

    // All that committed, committed together; nothing of the poisoned or refused sends remains.
    let txs: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT xmin::text FROM user_update_events \
         WHERE kind = 'new_message' AND payload->'message'->>'text' IN ('a1', 'b1', 'a2', 'b2')",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(txs.len(), 1, "one transaction for the batch: {txs:?}");
    let texts: Vec<(i64, String)> = sqlx::query_as(
        "SELECT owner_user_id, text FROM message_boxes WHERE owner_user_id <> $1 ORDER BY owner_user_id, box_id",
    )
    .bind(dave.user_id)
    .fetch_all(&s.pool)
    .await
    .unwrap();
    let (a, b, c) = (alice.user_id, bob.user_id, carol.user_id);
    let want: Vec<(i64, String)> = [
        (a, "a1"),
        (a, "b1"),
        (a, "a2"),
        (b, "a1"),
        (b, "b1"),
        (b, "a2"),
        (b, "b2"),
        (c, "b2"),
    ]
    .into_iter()
    .map(|(o, t)| (o, t.to_string()))
    .collect();
    assert_eq!(texts, want);
    assert_logs_dense(&s).await;
    assert_projections_match_the_log(&s).await;

    // /metrics tells: the batch ran three times (its messages projected together, a failure
    // pinned on no send; then send by send, which found the poisoned one; then without it), and
    // no send left it for another transaction.
    assert_eq!(s.metric("ptslog_send_batch_reruns_total").await, 2.0);
    assert_eq!(
        s.metric("ptslog_sends_alone_total{reason=\"batch_failed\"}")
            .await,
        0.0
    );
    // A retry in a later batch answers the first send too.
    let again = alice
        .rpc("messages.sendMessage", send_params(&to_bob, "a1", r1))
        .await;
    assert_eq!(again, ok(0));
    s.stop().await;
}

#[tokio::test]
async fn two_sends_failing_after_writing_give_up_the_batch_and_the_rest_commit_once() {
    let s = TestServer::start_with(batching(32, Duration::ZERO, 1)).await;
    let (alice, bob, carol, to_bob, to_carol) = three(&s).await;
    let dave = s.login(DAVE, "Dave").await;
    let bob_to_carol = bob.peer_of(CAROL).await;
    poison_trigger(&s).await;
    let (hold, blocker) = hold_the_committer(&s, &dave).await;

    // The first poisoned send makes the batch run again without it; the second gives the batch
    // up, and every send of it runs alone.
    let queue: Vec<(&Device, Value)> = vec![
        (&alice, send_params(&to_bob, "a1", rid())),
        (&alice, send_params(&to_bob, "poison", rid())),
        (&bob, send_params(&bob_to_carol, "b1", rid())),
        (&alice, send_params(&to_carol, "poison", rid())),
        (&alice, send_params(&to_bob, "a2", rid())),
    ];
    let answers = run_queued(&s, queue, hold, blocker).await;
    for n in [0, 2, 4] {
        answered(&answers, n);
    }
    for n in [1, 3] {
        assert_ne!(answers[n].0, 200, "poisoned send {n}: {}", answers[n].1);
        assert_eq!(answers[n].1["_"], "rpc_error");
    }

    // Each good send once in each of its two boxes (alone, a1 and a2 may commit in either
    // order); nothing of the poisoned ones.
    let mut texts: Vec<(i64, String)> =
        sqlx::query_as("SELECT owner_user_id, text FROM message_boxes WHERE owner_user_id <> $1")
            .bind(dave.user_id)
            .fetch_all(&s.pool)
            .await
            .unwrap();
    texts.sort();
    let mut want: Vec<(i64, String)> = [
        (alice.user_id, "a1"),
        (alice.user_id, "a2"),
        (bob.user_id, "a1"),
        (bob.user_id, "a2"),
        (bob.user_id, "b1"),
        (carol.user_id, "b1"),
    ]
    .into_iter()
    .map(|(o, t)| (o, t.to_string()))
    .collect();
    want.sort();
    assert_eq!(texts, want);
    // The batch was given up: each good send committed alone.
    let txs: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT xmin::text FROM user_update_events \
         WHERE kind = 'new_message' AND payload->'message'->>'text' IN ('a1', 'b1', 'a2')",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(txs.len(), 3, "one transaction per good send: {txs:?}");
    // Run again send by send (a failure pinned on no send), then without the first poisoned
    // send; the second gave the batch up: its five sends ran alone.
    assert_eq!(s.metric("ptslog_send_batch_reruns_total").await, 2.0);
    assert_eq!(
        s.metric("ptslog_sends_alone_total{reason=\"batch_failed\"}")
            .await,
        5.0
    );
    assert_logs_dense(&s).await;
    assert_projections_match_the_log(&s).await;
    s.stop().await;
}

/// A send whose account another transaction holds runs alone, waiting for it; while it waits, a
/// later send of that account stays queued instead of being taken into a batch, finding the
/// account locked by the first and running alone behind it too.
#[tokio::test]
async fn a_send_run_alone_keeps_its_accounts_from_later_batches_until_it_ends() {
    let s = TestServer::start_with(batching(32, Duration::ZERO, 2)).await;
    let (alice, _bob, carol, to_bob, to_carol) = three(&s).await;
    let carol_to_alice = carol.peer_of(ALICE).await;
    let alone = "ptslog_sends_alone_total{reason=\"account_held\"}";

    // Another transaction holds Alice's account.
    let mut hold = s.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM user_sequences WHERE user_id = $1 FOR UPDATE")
        .bind(alice.user_id)
        .execute(&mut *hold)
        .await
        .unwrap();
    let first = {
        let alice = alice.clone();
        tokio::spawn(async move {
            alice
                .call("messages.sendMessage", send_params(&to_bob, "first", rid()))
                .await
        })
    };
    wait_lock_waiter(&s).await;
    assert_eq!(s.metric(alone).await, 1.0);

    // Carol's send to Alice stays queued while the first waits: no batch takes it.
    let second = {
        let carol = carol.clone();
        tokio::spawn(async move {
            carol
                .call(
                    "messages.sendMessage",
                    send_params(&carol_to_alice, "second", rid()),
                )
                .await
        })
    };
    wait_queued(&s, 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        s.app.sends_queued(),
        1,
        "the second send was taken while Alice was held"
    );

    hold.commit().await.unwrap();
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    assert_eq!(first.0, 200, "{}", first.1);
    assert_eq!(second.0, 200, "{}", second.1);
    // The second went through a batch, not alone.
    assert_eq!(s.metric(alone).await, 1.0);
    alice
        .rpc(
            "messages.sendMessage",
            send_params(&to_carol, "after", rid()),
        )
        .await;
    assert_logs_dense(&s).await;
    assert_projections_match_the_log(&s).await;
    s.stop().await;
}

/// A batch reads every send's preflight (random_id lookup, blocks, archive) in one statement
/// before its sends run; an answer an earlier send of the batch changed is asked again: the
/// second of two sends to a recipient who archived the chat does not move it out of the archive
/// a second time, and a retry of a send edited since still answers the first send.
#[tokio::test]
async fn prefetched_preflights_are_asked_again_once_an_earlier_send_changed_them() {
    let s = TestServer::start_with(batching(32, Duration::ZERO, 1)).await;
    let (alice, bob, _carol, to_bob, _to_carol) = three(&s).await;
    let dave = s.login(DAVE, "Dave").await;
    let bob_to_alice = bob.peer_of(ALICE).await;
    alice.send(&to_bob, "hello").await;
    // A send edited since: its retry answers the send as it was first committed.
    let edited_rid = rid();
    let first = alice
        .rpc(
            "messages.sendMessage",
            send_params(&to_bob, "before", edited_rid),
        )
        .await;
    alice
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": first["id"], "message": "after"}),
        )
        .await;
    // Bob archives the chat (a message from Alice would bring it back).
    bob.rpc(
        "folders.editPeerFolders",
        json!({"folder_peers": [{"_": "inputFolderPeer", "peer": bob_to_alice, "folder_id": 1}]}),
    )
    .await;
    let folder_events = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT count(*) FROM user_update_events WHERE user_id = $1 AND kind = 'folder_peers'",
        )
        .bind(bob.user_id)
        .fetch_one(&s.pool)
        .await
        .unwrap()
    };
    assert_eq!(folder_events().await, 1);

    let (hold, blocker) = hold_the_committer(&s, &dave).await;
    let queue: Vec<(&Device, Value)> = vec![
        (&alice, send_params(&to_bob, "before", edited_rid)),
        (&alice, send_params(&to_bob, "x1", rid())),
        (&alice, send_params(&to_bob, "x2", rid())),
    ];
    let answers = run_queued(&s, queue, hold, blocker).await;
    let ok = |n: usize| answered(&answers, n);
    assert_eq!(ok(0)["id"], first["id"]);
    assert_eq!(ok(0)["pts"], first["pts"]);
    assert_eq!(ok(2)["pts"].as_i64(), ok(1)["pts"].as_i64().map(|p| p + 1));
    // Out of the archive once, by x1; x2 found it out already.
    assert_eq!(folder_events().await, 2);
    let folder: i16 = sqlx::query_scalar(
        "SELECT folder_id FROM dialogs WHERE user_id = $1 AND peer_user_id = $2",
    )
    .bind(bob.user_id)
    .bind(alice.user_id)
    .fetch_one(&s.pool)
    .await
    .unwrap();
    assert_eq!(folder, 0);
    // x1 and x2 committed together (the hold's send before them, alone).
    let txs: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT xmin::text FROM user_update_events \
         WHERE kind = 'new_message' AND payload->'message'->>'text' IN ('x1', 'x2')",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(txs.len(), 1, "one transaction for the batch: {txs:?}");
    assert_logs_dense(&s).await;
    assert_projections_match_the_log(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn mark_read_edit_and_delete_share_a_batch_with_sends_and_see_the_sends_before_them() {
    let s = TestServer::start_with(batching(32, Duration::ZERO, 1)).await;
    let (alice, bob, _carol, to_bob, _to_carol) = three(&s).await;
    let dave = s.login(DAVE, "Dave").await;
    let bob_to_alice = bob.peer_of(ALICE).await;
    let hello = alice.send(&to_bob, "hello").await;
    let gone = alice.send(&to_bob, "gone").await;
    let max_pts = |user: i64| {
        let pool = s.pool.clone();
        async move {
            sqlx::query_scalar::<_, i32>("SELECT pts FROM user_sequences WHERE user_id = $1")
                .bind(user)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let (alice_before, bob_before) = (max_pts(alice.user_id).await, max_pts(bob.user_id).await);

    let (hold, blocker) = hold_the_committer(&s, &dave).await;
    let queue: Vec<(&Device, &'static str, Value)> = vec![
        (
            &alice,
            "messages.sendMessage",
            send_params(&to_bob, "m1", rid()),
        ),
        // Reads up to m1, sent earlier in the same transaction.
        (
            &bob,
            "messages.readHistory",
            json!({"peer": bob_to_alice, "max_id": 0}),
        ),
        (
            &alice,
            "messages.editMessage",
            json!({"peer": to_bob, "id": hello["id"], "message": "hello again"}),
        ),
        (
            &alice,
            "messages.deleteMessages",
            json!({"id": [gone["id"]], "revoke": true}),
        ),
        (
            &alice,
            "messages.sendMessage",
            send_params(&to_bob, "m2", rid()),
        ),
    ];
    let answers = run_queued_calls(&s, queue, hold, blocker).await;
    let ok = |n: usize| answered(&answers, n);
    let m1_pts = ok(0)["pts"].as_i64().unwrap();
    assert_eq!(ok(1)["pts_count"], 1, "{}", ok(1));
    assert_eq!(ok(2)["updates"][0]["message"]["message"], "hello again");
    // Alice's pts: m1, Bob's read of it (her outbox), the edit, the deletion, m2.
    assert_eq!(ok(2)["updates"][0]["pts"].as_i64(), Some(m1_pts + 2));
    assert_eq!(ok(3)["pts_count"], 1, "{}", ok(3));
    assert_eq!(ok(3)["pts"].as_i64(), Some(m1_pts + 3));
    assert_eq!(ok(4)["pts"].as_i64(), Some(m1_pts + 4));

    // Bob read m1 but not m2, and Alice learnt it (read_outbox in her log).
    let (read_inbox, unread): (i32, i32) = sqlx::query_as(
        "SELECT read_inbox_max_id, unread_count FROM dialogs WHERE user_id = $1 AND peer_user_id = $2",
    )
    .bind(bob.user_id)
    .bind(alice.user_id)
    .fetch_one(&s.pool)
    .await
    .unwrap();
    let bobs_m1: i32 = sqlx::query_scalar(
        "SELECT box_id FROM message_boxes WHERE owner_user_id = $1 AND text = 'm1'",
    )
    .bind(bob.user_id)
    .fetch_one(&s.pool)
    .await
    .unwrap();
    assert_eq!(read_inbox, bobs_m1);
    assert_eq!(unread, 1);
    let edited: Vec<String> = sqlx::query_scalar(
        "SELECT text FROM message_boxes WHERE owner_user_id = ANY($1) AND text LIKE 'hello%' ORDER BY owner_user_id",
    )
    .bind(vec![alice.user_id, bob.user_id])
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(edited, vec!["hello again", "hello again"]);

    // All of it in one transaction: every event the batch appended for Alice and Bob.
    let txs: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT xmin::text FROM user_update_events \
         WHERE (user_id = $1 AND pts > $2) OR (user_id = $3 AND pts > $4)",
    )
    .bind(alice.user_id)
    .bind(alice_before)
    .bind(bob.user_id)
    .bind(bob_before)
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(txs.len(), 1, "one transaction for the batch: {txs:?}");
    let kinds: Vec<String> = sqlx::query_scalar(
        "SELECT kind FROM user_update_events WHERE user_id = $1 AND pts > $2 ORDER BY pts",
    )
    .bind(alice.user_id)
    .bind(alice_before)
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert_eq!(
        kinds,
        vec![
            "new_message",
            "read_history_outbox",
            "edit_message",
            "delete_messages",
            "new_message"
        ]
    );
    assert_logs_dense(&s).await;
    assert_projections_match_the_log(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn a_mark_read_between_other_chats_sends_reads_its_own_chat_and_the_sends_stay_right() {
    // The batch's new messages wait to be projected together; a mark-read writes them first only
    // if one of them is its reader's or its peer's (PgWriteTx::reader). Both cases in one batch.
    let s = TestServer::start_with(batching(32, Duration::ZERO, 1)).await;
    let (alice, bob, carol, to_bob, _to_carol) = three(&s).await;
    let dave = s.login(DAVE, "Dave").await;
    let erin = s.login(ERIN, "Erin").await;
    let carol_to_erin = carol.peer_of(ERIN).await;
    let erin_to_carol = erin.peer_of(CAROL).await;
    let bob_to_alice = bob.peer_of(ALICE).await;
    carol.send(&carol_to_erin, "c1").await;
    carol.send(&carol_to_erin, "c2").await;

    let (hold, blocker) = hold_the_committer(&s, &dave).await;
    let queue: Vec<(&Device, &'static str, Value)> = vec![
        (
            &alice,
            "messages.sendMessage",
            send_params(&to_bob, "m1", rid()),
        ),
        // Another chat: Alice's and Bob's new messages may stay unwritten over it.
        (
            &erin,
            "messages.readHistory",
            json!({"peer": erin_to_carol, "max_id": 0}),
        ),
        (
            &alice,
            "messages.sendMessage",
            send_params(&to_bob, "m2", rid()),
        ),
        // Bob's chat with m1 and m2 waiting: they are written first and read up to m2.
        (
            &bob,
            "messages.readHistory",
            json!({"peer": bob_to_alice, "max_id": 0}),
        ),
        (
            &alice,
            "messages.sendMessage",
            send_params(&to_bob, "m3", rid()),
        ),
    ];
    let answers = run_queued_calls(&s, queue, hold, blocker).await;
    for n in 0..answers.len() {
        answered(&answers, n);
    }
    assert_eq!(answered(&answers, 1)["pts_count"], 1);
    assert_eq!(answered(&answers, 3)["pts_count"], 1);

    let dialog = |owner: i64, peer: i64| {
        let pool = s.pool.clone();
        async move {
            sqlx::query_as::<_, (i32, i32, i32, i32)>(
                "SELECT top_message, read_inbox_max_id, read_outbox_max_id, unread_count \
                 FROM dialogs WHERE user_id = $1 AND peer_user_id = $2",
            )
            .bind(owner)
            .bind(peer)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let box_of = |owner: i64, text: &'static str| {
        let pool = s.pool.clone();
        async move {
            sqlx::query_scalar::<_, i32>(
                "SELECT box_id FROM message_boxes WHERE owner_user_id = $1 AND text = $2",
            )
            .bind(owner)
            .bind(text)
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    // Erin read both of Carol's messages, and Carol learnt it.
    let (top, read_inbox, _, unread) = dialog(erin.user_id, carol.user_id).await;
    assert_eq!((read_inbox, unread), (top, 0));
    assert_eq!(top, box_of(erin.user_id, "c2").await);
    let (_, _, read_outbox, _) = dialog(carol.user_id, erin.user_id).await;
    assert_eq!(read_outbox, box_of(carol.user_id, "c2").await);
    // Bob read m1 and m2, queued before his mark-read, not m3; Alice learnt it.
    let (top, read_inbox, _, unread) = dialog(bob.user_id, alice.user_id).await;
    assert_eq!(read_inbox, box_of(bob.user_id, "m2").await);
    assert_eq!(top, box_of(bob.user_id, "m3").await);
    assert_eq!(unread, 1);
    let (_, _, read_outbox, _) = dialog(alice.user_id, bob.user_id).await;
    assert_eq!(read_outbox, box_of(alice.user_id, "m2").await);
    assert_logs_dense(&s).await;
    assert_projections_match_the_log(&s).await;
    s.stop().await;
}
