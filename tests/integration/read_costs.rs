//! Issue 16's read costs: getHistory's count comes from the dialogs read model (kept right through
//! sends, deletions, clears and rebuilds), `mutual_contact` from the reverse_contacts read model
//! (one partition per look-up, kept right through saves, deletions and rebuilds), and the token →
//! caller cache of each instance stops a logged-out device at once on every instance, and the read
//! connections warmed at start leave the reads answering right
//! (docs/performance.md, "Reads" and "Reverse contacts").

use std::time::{Duration, Instant};

use projections::{Projection, RebuildControl};
use ptslog_tests::{self_peer, test_config, Device, TestServer};
use serde_json::{json, Value};
use sqlx::PgPool;

/// The count getHistory answers for the chat with `peer` (the page is kept small so that any chat
/// of more than one message answers `messages.messagesSlice` with its count).
async fn history_count(d: &Device, peer: &Value) -> i64 {
    let r = d
        .rpc("messages.getHistory", json!({"peer": peer, "limit": 1}))
        .await;
    match r["_"].as_str() {
        Some("messages.messagesSlice") => r["count"].as_i64().expect("count"),
        Some("messages.messages") => r["messages"].as_array().expect("messages").len() as i64,
        other => panic!("unexpected answer {other:?}: {r}"),
    }
}

/// Every dialog's message_count equals the count of its visible boxes.
async fn counts_match_boxes(pool: &PgPool) {
    let wrong: Vec<(i64, i64, i32, i64)> = sqlx::query_as(
        "SELECT d.user_id, d.peer_user_id, d.message_count, \
                (SELECT count(*) FROM message_boxes m WHERE m.owner_user_id = d.user_id \
                   AND m.peer_user_id = d.peer_user_id AND NOT m.deleted) AS boxes \
         FROM dialogs d",
    )
    .fetch_all(pool)
    .await
    .expect("counts");
    let wrong: Vec<_> = wrong
        .into_iter()
        .filter(|(_, _, kept, boxes)| i64::from(*kept) != *boxes)
        .collect();
    assert!(
        wrong.is_empty(),
        "message_count differs from the boxes: {wrong:?}"
    );
}

fn box_ids(updates: &Value) -> i64 {
    updates["id"].as_i64().expect("id")
}

#[tokio::test]
async fn history_counts_follow_sends_deletions_clears_and_rebuilds() {
    let s = TestServer::start().await;
    let alice = s.login("+15557160001", "Alice").await;
    let bob = s.login("+15557160002", "Bob").await;
    let to_bob = alice.peer_of("+15557160002").await;
    let to_alice = bob.peer_of("+15557160001").await;

    let mut mine = Vec::new();
    for i in 0..5 {
        mine.push(box_ids(&alice.send(&to_bob, &format!("a{i}")).await));
    }
    for i in 0..3 {
        bob.send(&to_alice, &format!("b{i}")).await;
    }
    assert_eq!(history_count(&alice, &to_bob).await, 8);
    assert_eq!(history_count(&bob, &to_alice).await, 8);
    alice.send(&self_peer(), "note 1").await;
    alice.send(&self_peer(), "note 2").await;
    assert_eq!(history_count(&alice, &self_peer()).await, 2);
    counts_match_boxes(&s.pool).await;

    // For herself only: her count drops, his stays.
    alice
        .rpc(
            "messages.deleteMessages",
            json!({"id": [mine[0], mine[1]], "revoke": false}),
        )
        .await;
    assert_eq!(history_count(&alice, &to_bob).await, 6);
    assert_eq!(history_count(&bob, &to_alice).await, 8);
    // For both; then once more (nothing left to delete): no double count.
    alice
        .rpc(
            "messages.deleteMessages",
            json!({"id": [mine[2]], "revoke": true}),
        )
        .await;
    alice
        .rpc(
            "messages.deleteMessages",
            json!({"id": [mine[0], mine[2]], "revoke": true}),
        )
        .await;
    assert_eq!(history_count(&alice, &to_bob).await, 5);
    assert_eq!(history_count(&bob, &to_alice).await, 7);
    counts_match_boxes(&s.pool).await;

    // Cleared for herself (the dialog stays): nothing left; a new message counts from there.
    alice
        .rpc(
            "messages.deleteHistory",
            json!({"peer": to_bob, "just_clear": true, "max_id": 0}),
        )
        .await;
    assert_eq!(history_count(&alice, &to_bob).await, 0);
    assert_eq!(history_count(&bob, &to_alice).await, 7);
    bob.send(&to_alice, "after the clear").await;
    bob.send(&to_alice, "and another").await;
    assert_eq!(history_count(&alice, &to_bob).await, 2);
    // Removed altogether for both: the dialog goes, and comes back with the next message.
    bob.rpc(
        "messages.deleteHistory",
        json!({"peer": to_alice, "revoke": true, "max_id": 0}),
    )
    .await;
    assert_eq!(history_count(&bob, &to_alice).await, 0);
    assert_eq!(history_count(&alice, &to_bob).await, 0);
    alice.send(&to_bob, "again").await;
    assert_eq!(history_count(&alice, &to_bob).await, 1);
    assert_eq!(history_count(&bob, &to_alice).await, 1);
    counts_match_boxes(&s.pool).await;

    // A rebuild from the log writes the same counts, and verify finds nothing to say.
    let before: Vec<(i64, i64, i32)> =
        sqlx::query_as("SELECT user_id, peer_user_id, message_count FROM dialogs ORDER BY 1, 2")
            .fetch_all(&s.pool)
            .await
            .unwrap();
    sqlx::query("UPDATE dialogs SET message_count = message_count + 40")
        .execute(&s.pool)
        .await
        .unwrap();
    projections::rebuild_online(
        &s.pool,
        &[Projection::Dialogs],
        &RebuildControl::default(),
        &mut |_| {},
    )
    .await
    .expect("rebuild");
    let after: Vec<(i64, i64, i32)> =
        sqlx::query_as("SELECT user_id, peer_user_id, message_count FROM dialogs ORDER BY 1, 2")
            .fetch_all(&s.pool)
            .await
            .unwrap();
    assert_eq!(before, after);
    let report = projections::verify(&s.pool).await.expect("verify");
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(history_count(&alice, &self_peer()).await, 2);
    s.stop().await;
}

/// Alice's `mutual_contact` for Bob as users.getUsers answers it.
async fn mutual(alice: &Device, to_bob: &Value) -> bool {
    let input = json!({"_": "inputUser", "user_id": to_bob["user_id"], "access_hash": to_bob["access_hash"]});
    let u = alice.rpc("users.getUsers", json!({"id": [input]})).await;
    u[0]["mutual_contact"].as_bool().expect("mutual_contact")
}

async fn add_contact(d: &Device, peer: &Value, name: &str) {
    let input =
        json!({"_": "inputUser", "user_id": peer["user_id"], "access_hash": peer["access_hash"]});
    d.rpc(
        "contacts.addContact",
        json!({"id": input, "first_name": name, "last_name": ""}),
    )
    .await;
}

/// Every row of reverse_contacts as (contact, owner), in order.
async fn reverse_rows(pool: &PgPool) -> Vec<(i64, i64)> {
    sqlx::query_as("SELECT contact_user_id, owner_user_id FROM reverse_contacts ORDER BY 1, 2")
        .fetch_all(pool)
        .await
        .unwrap()
}

/// Index scans on partitions of `table` anywhere in an EXPLAIN (FORMAT JSON) plan.
fn scans_of(plan: &Value, table: &str, out: &mut Vec<String>) {
    if let Some(relation) = plan.get("Relation Name").and_then(Value::as_str) {
        if relation.starts_with(&format!("{table}_p")) {
            out.push(relation.to_string());
        }
    }
    for child in plan
        .get("Plans")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        scans_of(child, table, out);
    }
}

/// `mutual_contact` is whether the other account has the viewer in its contacts: read from
/// reverse_contacts, whose generic plan opens the viewer's one partition (where contacts, keyed by
/// owner, opened all 16). Right after each save and deletion, and after an online rebuild.
#[tokio::test]
async fn mutual_contacts_read_one_partition_and_follow_saves_deletions_and_rebuilds() {
    let s = TestServer::start().await;
    let alice = s.login("+15557160101", "Alice").await;
    let bob = s.login("+15557160102", "Bob").await;
    let to_bob = alice.peer_of("+15557160102").await;
    let to_alice = bob.peer_of("+15557160101").await;

    add_contact(&alice, &to_bob, "B").await;
    assert!(!mutual(&alice, &to_bob).await, "Bob has not added Alice");
    add_contact(&bob, &to_alice, "A").await;
    assert!(mutual(&alice, &to_bob).await);
    add_contact(&bob, &to_alice, "A renamed").await;
    assert!(mutual(&alice, &to_bob).await, "a rename keeps the contact");
    let input_alice = json!({"_": "inputUser", "user_id": to_alice["user_id"], "access_hash": to_alice["access_hash"]});
    bob.rpc("contacts.deleteContacts", json!({"id": [input_alice]}))
        .await;
    assert!(!mutual(&alice, &to_bob).await);
    add_contact(&bob, &to_alice, "A").await;
    assert!(mutual(&alice, &to_bob).await);

    // The server's own statement, planned generically as the pool plans it: addressed to the
    // viewer's partition, and over the parents (a database partitioned otherwise), where the
    // generic plan still opens the viewer's one partition of reverse_contacts.
    use infrastructure::postgres::partitions::Partition;
    use infrastructure::postgres::store::statements::users_seen_by;
    let mut conn = s.pool.acquire().await.unwrap();
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    let viewer = domain::UserId::new(alice.user_id).unwrap();
    for statement in [
        users_seen_by(Some(Partition::of(viewer))),
        users_seen_by(None),
    ] {
        sqlx::query(&format!(
            "PREPARE users_seen_by(bigint, bigint[]) AS {statement}"
        ))
        .execute(&mut *conn)
        .await
        .unwrap();
        let plan: Value = sqlx::query_scalar(&format!(
            "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE users_seen_by({}, ARRAY[{}]::bigint[])",
            alice.user_id, to_bob["user_id"]
        ))
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        let mut scans = Vec::new();
        scans_of(&plan[0]["Plan"], "reverse_contacts", &mut scans);
        assert_eq!(
            scans,
            vec![format!("reverse_contacts_p{}", Partition::of(viewer).get())],
            "one partition of reverse_contacts, the viewer's: {statement}"
        );
        sqlx::query("DEALLOCATE users_seen_by")
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    sqlx::query("RESET plan_cache_mode")
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);

    // Rebuilt online from the log: the same rows, and verify has nothing to say.
    let before = reverse_rows(&s.pool).await;
    assert_eq!(before.len(), 2, "{before:?}");
    sqlx::query("DELETE FROM reverse_contacts")
        .execute(&s.pool)
        .await
        .unwrap();
    let report = projections::verify(&s.pool).await.expect("verify");
    assert!(!report.is_clean(), "verify sees the missing rows");
    projections::rebuild_online(
        &s.pool,
        &[Projection::ReverseContacts],
        &RebuildControl::default(),
        &mut |_| {},
    )
    .await
    .expect("rebuild");
    assert_eq!(reverse_rows(&s.pool).await, before);
    let report = projections::verify(&s.pool).await.expect("verify");
    assert!(report.is_clean(), "{report:?}");
    assert!(mutual(&alice, &to_bob).await);
    s.stop().await;
}

/// The account's other instance: the same database, its own process state (App, token cache,
/// revocation listener).
async fn second_instance(s: &TestServer) -> ptslog_server::Running {
    ptslog_server::start(&test_config(&s.db))
        .await
        .expect("second instance")
}

fn on(d: &Device, base: &str) -> Device {
    Device {
        base: base.to_string(),
        ..d.clone()
    }
}

/// `POST <path>` of the JSON API's session endpoints with the device's token; the status.
async fn post(d: &Device, path: &str) -> u16 {
    d.http
        .post(format!("{}{path}", d.base))
        .bearer_auth(&d.token)
        .send()
        .await
        .expect("request")
        .status()
        .as_u16()
}

/// Refused within the delivery of a notification (a change made behind the application's back).
async fn refused_soon(d: &Device) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let (status, body) = d.call("updates.getState", json!({})).await;
        if status == 401 {
            assert_eq!(body["error_message"], "AUTH_KEY_UNREGISTERED");
            return;
        }
        assert!(Instant::now() < deadline, "still accepted: {body}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

async fn refused(d: &Device) {
    let (status, e) = d.rpc_err("updates.getState", json!({})).await;
    assert_eq!((status, e.as_str()), (401, "AUTH_KEY_UNREGISTERED"));
}

#[tokio::test]
async fn a_logged_out_device_stops_at_once_on_every_instance() {
    let s = TestServer::start().await;
    let b = second_instance(&s).await;
    let base_b = format!("http://{}", b.addr);
    let cache_b = b.app.caller_cache();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cache_b.is_live() {
        assert!(
            Instant::now() < deadline,
            "the revocation listener never listened"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    for round in 0..5 {
        let phone = format!("+1555716100{round}");
        let one_a = s.login(&phone, "Multi").await;
        let two_a = s.login(&phone, "Multi").await;
        let three_a = s.login(&phone, "Multi").await;
        let (one_b, two_b, three_b) = (
            on(&one_a, &base_b),
            on(&two_a, &base_b),
            on(&three_a, &base_b),
        );
        // Every token is cached on both instances.
        for d in [&one_a, &two_a, &three_a, &one_b, &two_b, &three_b] {
            d.state().await;
            d.state().await;
        }
        assert!(!cache_b.is_empty());

        // Logged out through A: refused by A and, at once, by B.
        assert_eq!(post(&one_a, "/v1/auth/logout").await, 200);
        refused(&one_b).await;
        refused(&one_a).await;
        two_b.state().await;

        // Every other device ended through B: refused at once by A.
        assert_eq!(post(&two_b, "/v1/auth/resetAuthorizations").await, 200);
        refused(&three_a).await;
        refused(&three_b).await;
        two_a.state().await;

        // Ended by hand (an operator's SQL, no ending waiting for the caches): refused by both
        // as the trigger's notification arrives.
        sqlx::query("DELETE FROM authorizations WHERE user_id = $1")
            .bind(two_a.user_id)
            .execute(&s.pool)
            .await
            .unwrap();
        refused_soon(&two_b).await;
        refused_soon(&two_a).await;
    }

    // The listener's connection lost: the cache empties and stops serving (calls still work,
    // from the database), then serves again once it listens again.
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND application_name = 'ptslog_revocations'",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert!(killed.len() >= 2, "both instances listen: {killed:?}");
    let device = on(&s.login("+15557161099", "Late").await, &base_b);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut saw_off = false;
    loop {
        device.state().await;
        saw_off |= !cache_b.is_live();
        if saw_off && cache_b.is_live() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cache never came back (off seen: {saw_off})"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    device.state().await;
    b.shutdown().await;
    s.stop().await;
}

/// With the read connections warmed at start (the production default, off elsewhere in these
/// tests), calls made while the warm-up runs and after it answer what they should, and every
/// read connection ends up opened.
#[tokio::test]
async fn reads_answer_while_and_after_the_read_connections_warm() {
    let s = TestServer::start_with(|c| {
        c.db_warm_read_connections = true;
        c.db_read_max_connections = 3;
    })
    .await;
    let alice = s.login("+15557170101", "Alice").await;
    let bob = s.login("+15557170102", "Bob").await;
    let to_bob = alice.peer_of("+15557170102").await;
    let to_alice = bob.peer_of("+15557170101").await;
    let check = |round: usize| {
        let (alice, bob, to_bob, to_alice) = (&alice, &bob, &to_bob, &to_alice);
        async move {
            alice.send(to_bob, &format!("warm {round}")).await;
            assert_eq!(history_count(alice, to_bob).await, round as i64 + 1);
            assert_eq!(history_count(bob, to_alice).await, round as i64 + 1);
            let diff = bob
                .rpc(
                    "updates.getDifference",
                    json!({"pts": 0, "date": 0, "qts": 0}),
                )
                .await;
            assert_eq!(
                diff["new_messages"].as_array().map(Vec::len),
                Some(round + 1),
                "{diff}"
            );
        }
    };
    check(0).await;
    // The warm-up's last statement on each connection is getMessages' for the last partition,
    // which no call above runs: the connections that show it as their last were warmed (the
    // reads above may have used one of them since).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let warmed: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND query LIKE '%FROM message_boxes_p15 message_boxes WHERE owner_user_id = $1 AND box_id = ANY($2)%'",
        )
        .fetch_one(&s.pool)
        .await
        .unwrap();
        if warmed >= 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the read connections were not warmed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check(1).await;
    s.stop().await;
}
