//! Live pushes of dialog organization (issue 5): the users a frame carries are shown as the
//! receiving owner sees them everywhere else (its access hashes and its contact names, as in RPC
//! answers and getDifference), and contact changes show in the very next frames; every organization
//! update is pushed as getDifference gives it.

// Shared with `push`; not every helper is used here.
#[allow(dead_code)]
#[path = "push/client.rs"]
mod client;

use std::time::Duration;

use ptslog_tests::Device;
use serde_json::{json, Value};

use client::{Pushed, Socket};

const WAIT: Duration = Duration::from_secs(20);

/// The `user` object of `id` in a pushed frame.
fn user_in(p: &Pushed, id: i64) -> Value {
    p.frame["users"]
        .as_array()
        .expect("users")
        .iter()
        .find(|u| u["id"] == id)
        .unwrap_or_else(|| panic!("user {id} missing from the frame {}", p.frame))
        .clone()
}

/// Waits until `n` frames arrived and answers the n-th (1-based).
async fn nth_push(socket: &Socket, n: usize) -> Pushed {
    let arrived = socket.wait_until(WAIT, |p| p.len() >= n).await;
    assert!(arrived, "fewer than {n} pushes: {:?}", socket.raw());
    socket.pushed()[n - 1].clone()
}

/// The next push after the `seen` ones (updates without pts are found by order, not by pts).
async fn next_push(socket: &Socket, seen: &mut usize) -> Pushed {
    *seen += 1;
    nth_push(socket, *seen).await
}

async fn pts(d: &Device) -> i64 {
    d.state().await["pts"].as_i64().expect("pts")
}

/// getDifference's `users` entry for `id` from `after`.
async fn difference_user(d: &Device, after: i64, id: i64) -> Value {
    let diff = d
        .rpc(
            "updates.getDifference",
            json!({"pts": after, "date": 0, "qts": 0}),
        )
        .await;
    diff["users"]
        .as_array()
        .expect("users")
        .iter()
        .find(|u| u["id"] == id)
        .unwrap_or_else(|| panic!("user {id} missing from {diff}"))
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_users_carry_the_owners_contact_names() {
    let db = ptslog_tests::fresh_database().await.expect("db");
    let running = ptslog_tests::start_with_pushes(&db).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let login =
        |phone: &'static str, name: &'static str| ptslog_tests::login(&http, &base, phone, name);
    // Alice has two devices: A1 organizes, A2 listens. Bob writes to her.
    let a1 = login("+15556090001", "Alice").await;
    let a2 = login("+15556090001", "Alice").await;
    let bob = login("+15556090002", "Bob").await;
    let to_bob = a1.peer_of("+15556090002").await;
    let to_alice = bob.peer_of("+15556090001").await;
    let bob_user =
        json!({"_": "inputUser", "user_id": bob.user_id, "access_hash": to_bob["access_hash"]});
    let alice_user =
        json!({"_": "inputUser", "user_id": a1.user_id, "access_hash": to_alice["access_hash"]});
    let listener = Socket::connect(&base, &a2.token, true).await;
    ptslog_tests::wait_relay_streaming(&running.relay_status, Duration::from_secs(240)).await;

    // Every push to A2 below is one event of Alice's log that A2 did not cause.
    let mut seen = 0;
    // Before any contact: Bob under his own name.
    bob.send(&to_alice, "one").await;
    let p = next_push(&listener, &mut seen).await;
    assert_eq!(p.pts, pts(&a1).await);
    assert_eq!(p.update["_"], "updateNewMessage");
    let u = user_in(&p, bob.user_id);
    assert_eq!(
        (&u["first_name"], &u["contact"]),
        (&json!("Bob"), &json!(false))
    );
    assert_eq!(u["access_hash"], to_bob["access_hash"], "Alice's hash");

    // A1 saves Bob as "Bobby B": the push of that change and the next message show the names.
    a1.rpc(
        "contacts.addContact",
        json!({"id": bob_user, "first_name": "Bobby", "last_name": "B"}),
    )
    .await;
    let saved_at = pts(&a1).await;
    let p = next_push(&listener, &mut seen).await;
    assert_eq!(p.update["_"], "updatePeerSettings");
    let u = user_in(&p, bob.user_id);
    assert_eq!(
        (
            &u["first_name"],
            &u["last_name"],
            &u["contact"],
            &u["mutual_contact"]
        ),
        (&json!("Bobby"), &json!("B"), &json!(true), &json!(false))
    );
    bob.send(&to_alice, "two").await;
    let p = next_push(&listener, &mut seen).await;
    assert_eq!(p.pts, pts(&a1).await);
    let u = user_in(&p, bob.user_id);
    assert_eq!(
        (&u["first_name"], &u["contact"]),
        (&json!("Bobby"), &json!(true))
    );
    // The same user object getDifference gives for the same events.
    assert_eq!(u, difference_user(&a2, saved_at - 1, bob.user_id).await);

    // Bob adds Alice: Alice's next frame shows the contact as mutual (Bob's change is in his log).
    bob.rpc(
        "contacts.addContact",
        json!({"id": alice_user, "first_name": "Al"}),
    )
    .await;
    bob.send(&to_alice, "three").await;
    let p = next_push(&listener, &mut seen).await;
    assert_eq!(user_in(&p, bob.user_id)["mutual_contact"], true);

    // A rename and a deletion show at once too.
    a1.rpc(
        "contacts.addContact",
        json!({"id": bob_user, "first_name": "Robert", "last_name": ""}),
    )
    .await;
    next_push(&listener, &mut seen).await;
    bob.send(&to_alice, "four").await;
    let p = next_push(&listener, &mut seen).await;
    assert_eq!(user_in(&p, bob.user_id)["first_name"], "Robert");
    a1.rpc("contacts.deleteContacts", json!({"id": [bob_user]}))
        .await;
    let p = next_push(&listener, &mut seen).await;
    assert_eq!(p.update["_"], "updatePeerSettings");
    let u = user_in(&p, bob.user_id);
    assert_eq!(
        (&u["first_name"], &u["contact"], &u["mutual_contact"]),
        (&json!("Bob"), &json!(false), &json!(false))
    );
    bob.send(&to_alice, "five").await;
    let p = next_push(&listener, &mut seen).await;
    assert_eq!(user_in(&p, bob.user_id)["first_name"], "Bob");

    // Every organization change A1 makes reaches A2 live, as getDifference has it.
    let from = pts(&a1).await;
    let dp = json!({"_": "inputDialogPeer", "peer": to_bob});
    a1.rpc(
        "messages.toggleDialogPin",
        json!({"pinned": true, "peer": dp}),
    )
    .await;
    a1.rpc(
        "messages.reorderPinnedDialogs",
        json!({"force": true, "folder_id": 0, "order": []}),
    )
    .await;
    a1.rpc(
        "messages.markDialogUnread",
        json!({"unread": true, "peer": dp}),
    )
    .await;
    a1.rpc(
        "folders.editPeerFolders",
        json!({"folder_peers": [{"_": "inputFolderPeer", "peer": to_bob, "folder_id": 1}]}),
    )
    .await;
    a1.rpc(
        "messages.updateDialogFilter",
        json!({"id": 2, "filter": {"_": "dialogFilter", "id": 2, "title": {"_": "textWithEntities", "text": "Bob", "entities": []}, "include_peers": [to_bob]}}),
    )
    .await;
    a1.rpc(
        "messages.updateDialogFiltersOrder",
        json!({"order": [0, 2]}),
    )
    .await;
    a1.rpc("messages.toggleDialogFilterTags", json!({"enabled": true}))
        .await;
    a1.rpc(
        "account.updateNotifySettings",
        json!({"peer": {"_": "inputNotifyPeer", "peer": to_bob}, "settings": {"_": "inputPeerNotifySettings", "mute_until": i32::MAX}}),
    )
    .await;
    a1.rpc(
        "contacts.importContacts",
        json!({"contacts": [{"_": "inputPhoneContact", "client_id": 1, "phone": "+15556090002", "first_name": "Bob", "last_name": "Again"}]}),
    )
    .await;
    a1.rpc("messages.hidePeerSettingsBar", json!({"peer": to_bob}))
        .await;
    a1.rpc("contacts.resetSaved", json!({})).await;
    let diff = a2
        .rpc(
            "updates.getDifference",
            json!({"pts": from, "date": 0, "qts": 0}),
        )
        .await;
    let kinds: Vec<&str> = diff["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["_"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "updateDialogPinned",
            "updatePinnedDialogs",
            "updateDialogUnreadMark",
            "updateFolderPeers",
            "updateDialogFilter",
            "updateDialogFilterOrder",
            "updateDialogFilters",
            "updateNotifySettings",
            "updatePeerSettings",
            "updatePeerSettings",
            "updateContactsReset"
        ]
    );
    let to = pts(&a1).await;
    let n = kinds.len();
    assert_eq!(to - from, n as i64, "one event each");
    nth_push(&listener, seen + n).await;
    let live: Vec<Value> = listener.pushed()[seen..]
        .iter()
        .map(|p| p.update.clone())
        .collect();

    assert_eq!(
        Value::Array(live),
        diff["other_updates"],
        "pushed as getDifference gives them"
    );
    listener.close();
    running.shutdown().await;
    ptslog_tests::drop_database(&db).await;
}

/// A client's pts check over the frames it was pushed, in arrival order, as Telethon and
/// TDesktop's PtsWaiter do it: an update with pts applies when `local + pts_count == pts`, is a
/// duplicate at or below `local`, and is a gap otherwise (the client would wait, then call
/// getDifference). Answers the pts reached and the gaps seen (`(local, update)`).
fn track(start: i64, frames: &[Value]) -> (i64, Vec<(i64, Value)>) {
    let mut local = start;
    let mut gaps = Vec::new();
    for frame in frames.iter().filter(|f| f["_"] == "updates") {
        for u in frame["updates"].as_array().expect("updates") {
            let (Some(pts), Some(count)) = (u["pts"].as_i64(), u["pts_count"].as_i64()) else {
                continue; // no pts: applied at once
            };
            if local + count == pts {
                local = pts;
            } else if pts > local {
                gaps.push((local, u.clone()));
                local = pts;
            }
        }
    }
    (local, gaps)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_without_pts_leave_no_gap_for_live_devices() {
    let db = ptslog_tests::fresh_database().await.expect("db");
    let running = ptslog_tests::start_with_pushes(&db).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let login =
        |phone: &'static str, name: &'static str| ptslog_tests::login(&http, &base, phone, name);
    // Alice's two devices both track pts: A1 makes the changes (it is their origin), A2 listens.
    let a1 = login("+15556190001", "Alice").await;
    let a2 = login("+15556190001", "Alice").await;
    let bob = login("+15556190002", "Bob").await;
    let to_bob = a1.peer_of("+15556190002").await;
    let to_alice = bob.peer_of("+15556190001").await;
    let s1 = Socket::connect(&base, &a1.token, true).await;
    let s2 = Socket::connect(&base, &a2.token, true).await;
    ptslog_tests::wait_relay_streaming(&running.relay_status, Duration::from_secs(240)).await;
    // Both devices are in step: a first message, pushed to both.
    bob.send(&to_alice, "hello").await;
    let start = pts(&a1).await;
    for s in [&s1, &s2] {
        assert!(
            s.wait_until(WAIT, |p| p.iter().any(|p| p.pts == start))
                .await
        );
    }
    let (n1, n2) = (s1.raw().len(), s2.raw().len());

    let dp = json!({"_": "inputDialogPeer", "peer": to_bob});
    let changes: Vec<(&str, Value)> = vec![
        ("contacts.block", json!({"id": to_bob})),
        ("contacts.unblock", json!({"id": to_bob})),
        (
            "account.updateNotifySettings",
            json!({"peer": {"_": "inputNotifyPeer", "peer": to_bob}, "settings": {"_": "inputPeerNotifySettings", "mute_until": i32::MAX}}),
        ),
        (
            "messages.updateDialogFilter",
            json!({"id": 2, "filter": {"_": "dialogFilter", "id": 2, "title": {"_": "textWithEntities", "text": "Bob", "entities": []}, "include_peers": [to_bob]}}),
        ),
        (
            "messages.updateDialogFiltersOrder",
            json!({"order": [2, 0]}),
        ),
        ("messages.toggleDialogFilterTags", json!({"enabled": true})),
        ("messages.updateDialogFilter", json!({"id": 2})),
        (
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp}),
        ),
        (
            "messages.markDialogUnread",
            json!({"unread": true, "peer": dp}),
        ),
    ];
    let n = changes.len();
    for (method, params) in changes {
        a1.rpc(method, params).await;
    }
    assert_eq!(pts(&a1).await, start + n as i64, "each change took one pts");
    // Then a real message: the next pts-bearing update.
    bob.send(&to_alice, "after the changes").await;
    let end = pts(&a1).await;
    assert_eq!(end, start + n as i64 + 1);

    for (name, s, seen) in [("A1 (origin)", &s1, n1), ("A2", &s2, n2)] {
        assert!(
            s.wait_until(WAIT, |p| p.iter().any(|p| p.pts == end)).await,
            "{name}: {:?}",
            s.raw()
        );
        let frames = s.raw()[seen..].to_vec();
        let (reached, gaps) = track(start, &frames);
        assert_eq!(gaps, vec![], "{name} saw a gap in {frames:?}");
        assert_eq!(reached, end, "{name}");
        // Each change came live, as its own update followed by the no-op pts carrier.
        let live: Vec<&Value> = frames.iter().filter(|f| f["_"] == "updates").collect();
        assert_eq!(live.len(), n + 1, "{name}: one frame per event");
        for f in &live[..n] {
            let updates = f["updates"].as_array().unwrap();
            assert_eq!(updates.len(), 2, "{f}");
            assert!(updates[0].get("pts").is_none());
            assert_eq!(updates[1]["_"], "updateReadMessagesContents");
            assert_eq!(updates[1]["messages"], json!([]));
            assert_eq!(updates[1]["pts_count"], 1);
        }
        assert_eq!(live[n]["updates"][0]["_"], "updateNewMessage");
        assert_eq!(live[n]["updates"].as_array().unwrap().len(), 1);
    }
    // getDifference still gives the changes as they are (without the carrier), and its state
    // covers their pts.
    let diff = a2
        .rpc(
            "updates.getDifference",
            json!({"pts": start, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(diff["other_updates"].as_array().unwrap().len(), n, "{diff}");
    assert_eq!(diff["new_messages"].as_array().unwrap().len(), 1);
    assert_eq!(diff["state"]["pts"], end);
    s1.close();
    s2.close();
    running.shutdown().await;
    ptslog_tests::drop_database(&db).await;
}
