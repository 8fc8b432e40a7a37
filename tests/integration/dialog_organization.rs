//! Dialog organization as durable events (issue 5): pins, manual unread marks, the archive, dialog
//! filters, contacts and peer settings — every RPC, its errors and limits at their boundaries, and a
//! second device that was offline catching up through `updates.getDifference`.

use std::collections::BTreeMap;

use ptslog_tests::{self_peer, Device, TestServer};
use serde_json::{json, Value};

async fn pts(d: &Device) -> i64 {
    d.state().await["pts"].as_i64().expect("state.pts")
}

async fn assert_projections_clean(s: &TestServer) {
    let report = projections::verify::verify(&s.pool).await.expect("verify");
    assert!(
        report.is_clean(),
        "projections verify: {:?}",
        report.differences
    );
}

fn dp(peer: &Value) -> Value {
    json!({"_": "inputDialogPeer", "peer": peer})
}

/// (peer id, pinned) of a getDialogs answer, in order.
fn listed(r: &Value) -> Vec<(i64, bool)> {
    r["dialogs"]
        .as_array()
        .unwrap_or_else(|| panic!("dialogs in {r}"))
        .iter()
        .map(|d| {
            (
                d["peer"]["user_id"].as_i64().unwrap(),
                d["pinned"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn ids(r: &Value) -> Vec<i64> {
    listed(r).into_iter().map(|(p, _)| p).collect()
}

async fn dialogs(d: &Device, params: Value) -> Value {
    d.rpc("messages.getDialogs", params).await
}

/// Telegram's list hash, as the server computes it.
fn fold_hash(acc: u64, value: u64) -> u64 {
    let mut h = acc;
    h ^= h >> 21;
    h ^= h << 35;
    h ^= h >> 4;
    h.wrapping_add(value)
}

fn dialogs_hash(r: &Value) -> i64 {
    let tops: BTreeMap<i64, i64> = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["id"].as_i64().unwrap(), m["date"].as_i64().unwrap()))
        .collect();
    r["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .fold(0u64, |acc, d| {
            let top = d["top_message"].as_i64().unwrap();
            let date = tops[&top];
            fold_hash(
                fold_hash(
                    fold_hash(acc, d["peer"]["user_id"].as_i64().unwrap() as u64),
                    top as u64,
                ),
                date as u64,
            )
        }) as i64
}

/// Alice and `n` others, each of whom has a dialog with Alice (one message from Alice each, oldest first).
async fn setup(s: &TestServer, base: u64, n: usize) -> (Device, Vec<Device>, Vec<Value>) {
    let alice = s.login(&format!("+1555{base:03}0000"), "Alice").await;
    let mut others = Vec::new();
    let mut peers = Vec::new();
    for i in 0..n {
        let phone = format!("+1555{base:03}{:04}", i + 1);
        let d = s.login(&phone, &format!("U{i}")).await;
        let peer = alice.peer_of(&phone).await;
        alice.send(&peer, &format!("hi {i}")).await;
        others.push(d);
        peers.push(peer);
    }
    (alice, others, peers)
}

#[tokio::test]
async fn pinned_dialogs_per_folder_with_the_limit() {
    let s = TestServer::start().await;
    let (alice, others, peers) = setup(&s, 601, 6).await;
    let id = |i: usize| others[i].user_id;
    let p0 = pts(&alice).await;

    // Pinning needs a dialog; Saved Messages has none yet.
    let (_, e) = alice
        .rpc_err(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp(&self_peer())}),
        )
        .await;
    assert_eq!(e, "PEER_HISTORY_EMPTY");
    let (_, e) = alice
        .rpc_err(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": {"_": "inputDialogPeerFolder", "folder_id": 1}}),
        )
        .await;
    assert_eq!(e, "PEER_ID_INVALID");

    // Five pins fit the main list; a new pin goes on top; the sixth is refused.
    for i in 0..5 {
        assert_eq!(
            alice
                .rpc(
                    "messages.toggleDialogPin",
                    json!({"pinned": true, "peer": dp(&peers[i])})
                )
                .await,
            json!({"_": "boolTrue"})
        );
    }
    let (_, e) = alice
        .rpc_err(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp(&peers[5])}),
        )
        .await;
    assert_eq!(e, "PINNED_DIALOGS_TOO_MUCH");
    // A repeat changes nothing and appends nothing.
    alice
        .rpc(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp(&peers[0])}),
        )
        .await;
    assert_eq!(pts(&alice).await, p0 + 5);

    let r = dialogs(&alice, json!({})).await;
    assert_eq!(r["_"], "messages.dialogs");
    assert_eq!(
        listed(&r),
        vec![
            (id(4), true),
            (id(3), true),
            (id(2), true),
            (id(1), true),
            (id(0), true),
            (id(5), false)
        ]
    );
    let pinned = alice
        .rpc("messages.getPinnedDialogs", json!({"folder_id": 0}))
        .await;
    assert_eq!(pinned["_"], "messages.peerDialogs");
    assert_eq!(ids(&pinned), vec![id(4), id(3), id(2), id(1), id(0)]);
    let (_, e) = alice
        .rpc_err("messages.getPinnedDialogs", json!({"folder_id": 2}))
        .await;
    assert_eq!(e, "FOLDER_ID_INVALID");

    // exclude_pinned leaves them out of the list and the count.
    let r = dialogs(&alice, json!({"exclude_pinned": true})).await;
    assert_eq!(ids(&r), vec![id(5)]);
    // The hash covers the list in its order (pins first); a matching hash is notModified.
    let r = dialogs(&alice, json!({})).await;
    let h = dialogs_hash(&r);
    assert_eq!(
        dialogs(&alice, json!({"hash": h})).await,
        json!({"_": "messages.dialogsNotModified", "count": 6})
    );
    // A limit of 2 still gives every pin on the first page; the next page starts after the last
    // unpinned dialog and leaves the pins out.
    let r = dialogs(&alice, json!({"limit": 2})).await;
    assert_eq!(r["_"], "messages.dialogsSlice");
    assert_eq!(ids(&r), vec![id(4), id(3), id(2), id(1), id(0)]);
    let r = dialogs(&alice, json!({"limit": 6})).await;
    assert_eq!(ids(&r).len(), 6);
    let last = &r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == r["dialogs"][5]["top_message"])
        .unwrap()
        .clone();
    let next = dialogs(&alice, json!({"offset_date": last["date"], "offset_id": last["id"], "offset_peer": peers[5], "limit": 10})).await;
    assert_eq!(ids(&next), Vec::<i64>::new());

    // Reorder without force: listed first, the other pins keep their order after them.
    alice
        .rpc(
            "messages.reorderPinnedDialogs",
            json!({"folder_id": 0, "order": [dp(&peers[0]), dp(&peers[1])]}),
        )
        .await;
    let pinned = alice.rpc("messages.getPinnedDialogs", json!({})).await;
    assert_eq!(ids(&pinned), vec![id(0), id(1), id(4), id(3), id(2)]);
    // The same order again appends nothing.
    let before = pts(&alice).await;
    alice
        .rpc(
            "messages.reorderPinnedDialogs",
            json!({"folder_id": 0, "order": [dp(&peers[0]), dp(&peers[1])]}),
        )
        .await;
    assert_eq!(pts(&alice).await, before);
    // With force, the unlisted are unpinned.
    alice
        .rpc(
            "messages.reorderPinnedDialogs",
            json!({"force": true, "folder_id": 0, "order": [dp(&peers[1]), dp(&peers[0])]}),
        )
        .await;
    assert_eq!(
        ids(&alice.rpc("messages.getPinnedDialogs", json!({})).await),
        vec![id(1), id(0)]
    );
    // Six in the order is past the limit; a folder other than 0/1 is invalid; a dialog not in the
    // folder cannot be listed.
    let six: Vec<Value> = peers.iter().map(dp).collect();
    let (_, e) = alice
        .rpc_err(
            "messages.reorderPinnedDialogs",
            json!({"force": true, "folder_id": 0, "order": six}),
        )
        .await;
    assert_eq!(e, "PINNED_DIALOGS_TOO_MUCH");
    let (_, e) = alice
        .rpc_err(
            "messages.reorderPinnedDialogs",
            json!({"folder_id": 5, "order": []}),
        )
        .await;
    assert_eq!(e, "FOLDER_ID_INVALID");
    let (_, e) = alice
        .rpc_err(
            "messages.reorderPinnedDialogs",
            json!({"folder_id": 1, "order": [dp(&peers[0])]}),
        )
        .await;
    assert_eq!(e, "PEER_HISTORY_EMPTY");

    // Unpin.
    alice
        .rpc(
            "messages.toggleDialogPin",
            json!({"pinned": false, "peer": dp(&peers[0])}),
        )
        .await;
    assert_eq!(
        ids(&alice.rpc("messages.getPinnedDialogs", json!({})).await),
        vec![id(1)]
    );

    // The log carries every change.
    let d = alice
        .rpc(
            "updates.getDifference",
            json!({"pts": p0, "date": 0, "qts": 0}),
        )
        .await;
    let kinds: Vec<&str> = d["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["_"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "updateDialogPinned",
            "updateDialogPinned",
            "updateDialogPinned",
            "updateDialogPinned",
            "updateDialogPinned",
            "updatePinnedDialogs",
            "updatePinnedDialogs",
            "updateDialogPinned"
        ]
    );
    let forced = &d["other_updates"][6];
    assert_eq!(
        forced["order"],
        json!([{"_": "dialogPeer", "peer": {"_": "peerUser", "user_id": id(1)}}, {"_": "dialogPeer", "peer": {"_": "peerUser", "user_id": id(0)}}])
    );
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn archive_and_manual_unread_marks() {
    let s = TestServer::start().await;
    let (alice, others, peers) = setup(&s, 602, 3).await;
    let id = |i: usize| others[i].user_id;
    alice
        .rpc(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp(&peers[0])}),
        )
        .await;

    // Archive dialog 0 (pinned: it loses the pin) and dialog 1.
    let p0 = pts(&alice).await;
    let r = alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": [
                {"_": "inputFolderPeer", "peer": peers[0], "folder_id": 1},
                {"_": "inputFolderPeer", "peer": peers[1], "folder_id": 1}
            ]}),
        )
        .await;
    assert_eq!(r["_"], "updates");
    assert_eq!(r["updates"][0]["_"], "updateFolderPeers");
    assert_eq!(r["updates"][0]["pts"], p0 + 1);
    assert_eq!(r["updates"][0]["pts_count"], 1);
    assert_eq!(r["updates"][0]["folder_peers"].as_array().unwrap().len(), 2);
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 0})).await),
        vec![id(2)]
    );
    let archive = dialogs(&alice, json!({"folder_id": 1})).await;
    assert_eq!(listed(&archive), vec![(id(1), false), (id(0), false)]);
    assert_eq!(archive["dialogs"][0]["folder_id"], 1);
    // Moving again to where they are changes nothing.
    let r = alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": [{"_": "inputFolderPeer", "peer": peers[0], "folder_id": 1}]}),
        )
        .await;
    assert_eq!(r["updates"], json!([]));
    assert_eq!(pts(&alice).await, p0 + 1);
    let (_, e) = alice
        .rpc_err(
            "folders.editPeerFolders",
            json!({"folder_peers": [{"_": "inputFolderPeer", "peer": peers[0], "folder_id": 2}]}),
        )
        .await;
    assert_eq!(e, "FOLDER_ID_INVALID");
    let (_, e) = alice.rpc_err("folders.editPeerFolders", json!({"folder_peers": [{"_": "inputFolderPeer", "peer": self_peer(), "folder_id": 1}]})).await;
    assert_eq!(e, "PEER_HISTORY_EMPTY");

    // A new message keeps a muted archived chat archived; an unmuted one comes back to the main
    // list, as an event of the recipient's log right after the message.
    alice
        .rpc(
            "account.updateNotifySettings",
            json!({"peer": {"_": "inputNotifyPeer", "peer": peers[0]},
                   "settings": {"_": "inputPeerNotifySettings", "mute_until": i32::MAX}}),
        )
        .await;
    let to_alice = others[0].peer_of("+15556020000").await;
    others[0].send(&to_alice, "still archived?").await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 1})).await),
        vec![id(0), id(1)]
    );
    let p1 = pts(&alice).await;
    let to_alice_1 = others[1].peer_of("+15556020000").await;
    others[1].send(&to_alice_1, "back to the main list").await;
    assert_eq!(pts(&alice).await, p1 + 2, "the message and the move");
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 1})).await),
        vec![id(0)]
    );
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 0})).await),
        vec![id(1), id(2)]
    );
    let d = alice
        .rpc(
            "updates.getDifference",
            json!({"pts": p1, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(d["new_messages"][0]["message"], "back to the main list");
    assert_eq!(
        d["other_updates"],
        json!([{"_": "updateFolderPeers", "folder_peers": [{"_": "folderPeer", "peer": {"_": "peerUser", "user_id": id(1)}, "folder_id": 0}], "pts": p1 + 2, "pts_count": 1}])
    );
    // The owner's own sends never move a chat: archive it again and write from there.
    alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": [{"_": "inputFolderPeer", "peer": peers[1], "folder_id": 1}]}),
        )
        .await;
    alice.send(&peers[1], "from the archive").await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 1})).await),
        vec![id(1), id(0)]
    );

    // Pins in the archive are separate from the main list.
    alice
        .rpc(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp(&peers[1])}),
        )
        .await;
    assert_eq!(
        ids(&alice
            .rpc("messages.getPinnedDialogs", json!({"folder_id": 1}))
            .await),
        vec![id(1)]
    );
    assert_eq!(
        ids(&alice
            .rpc("messages.getPinnedDialogs", json!({"folder_id": 0}))
            .await),
        Vec::<i64>::new()
    );
    assert_eq!(
        listed(&dialogs(&alice, json!({"folder_id": 1})).await),
        vec![(id(1), true), (id(0), false)]
    );

    // Manual unread marks.
    assert_eq!(
        alice.rpc("messages.getDialogUnreadMarks", json!({})).await,
        json!([])
    );
    let before = pts(&alice).await;
    alice
        .rpc(
            "messages.markDialogUnread",
            json!({"unread": true, "peer": dp(&peers[2])}),
        )
        .await;
    alice
        .rpc(
            "messages.markDialogUnread",
            json!({"unread": true, "peer": dp(&peers[2])}),
        )
        .await;
    assert_eq!(pts(&alice).await, before + 1, "a repeat appends nothing");
    assert_eq!(
        alice.rpc("messages.getDialogUnreadMarks", json!({})).await,
        json!([{"_": "dialogPeer", "peer": {"_": "peerUser", "user_id": id(2)}}])
    );
    let main = dialogs(&alice, json!({})).await;
    assert_eq!(main["dialogs"][0]["unread_mark"], true);
    let (_, e) = alice
        .rpc_err(
            "messages.markDialogUnread",
            json!({"unread": true, "peer": dp(&self_peer())}),
        )
        .await;
    assert_eq!(e, "PEER_HISTORY_EMPTY");
    // Unmark, mark again, then reading the history clears it.
    alice
        .rpc(
            "messages.markDialogUnread",
            json!({"unread": false, "peer": dp(&peers[2])}),
        )
        .await;
    assert_eq!(
        alice.rpc("messages.getDialogUnreadMarks", json!({})).await,
        json!([])
    );
    alice
        .rpc(
            "messages.markDialogUnread",
            json!({"unread": true, "peer": dp(&peers[0])}),
        )
        .await;
    alice
        .rpc(
            "messages.readHistory",
            json!({"peer": peers[0], "max_id": 0}),
        )
        .await;
    assert_eq!(
        alice.rpc("messages.getDialogUnreadMarks", json!({})).await,
        json!([])
    );

    let d = alice
        .rpc(
            "updates.getDifference",
            json!({"pts": before, "date": 0, "qts": 0}),
        )
        .await;
    let u = &d["other_updates"];
    assert_eq!(
        u[0],
        json!({"_": "updateDialogUnreadMark", "unread": true, "peer": {"_": "dialogPeer", "peer": {"_": "peerUser", "user_id": id(2)}}})
    );
    assert_eq!(u[1]["unread"], false);
    assert_projections_clean(&s).await;
    s.stop().await;
}

fn filter(id: i64, title: &str, extra: Value) -> Value {
    let mut f = json!({"_": "dialogFilter", "id": id, "title": {"_": "textWithEntities", "text": title, "entities": []}});
    for (k, v) in extra.as_object().unwrap() {
        f[k] = v.clone();
    }
    json!({"id": id, "filter": f})
}

#[tokio::test]
async fn dialog_filters_with_their_limits_and_server_side_listing() {
    let s = TestServer::start().await;
    let (alice, others, peers) = setup(&s, 603, 4).await;
    let id = |i: usize| others[i].user_id;

    let r = alice.rpc("messages.getDialogFilters", json!({})).await;
    assert_eq!(
        r,
        json!({"_": "messages.dialogFilters", "tags_enabled": false, "filters": [{"_": "dialogFilterDefault"}]})
    );

    // Errors: ids below 2, titles, nothing included.
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFilter",
            filter(1, "x", json!({"contacts": true})),
        )
        .await;
    assert_eq!(e, "FILTER_ID_INVALID");
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFilter",
            filter(2, " ", json!({"contacts": true})),
        )
        .await;
    assert_eq!(e, "FILTER_TITLE_EMPTY");
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFilter",
            filter(2, "abcdefghijklm", json!({"contacts": true})),
        )
        .await;
    assert_eq!(e, "FILTER_TITLE_EMPTY");
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFilter",
            filter(2, "Empty", json!({"exclude_read": true})),
        )
        .await;
    assert_eq!(e, "FILTER_INCLUDE_EMPTY");
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFilter",
            json!({"id": 2, "filter": {"_": "dialogFilterDefault"}}),
        )
        .await;
    assert_eq!(e, "FILTER_ID_INVALID");

    // Filter 2: non-contacts without the archive, peer 3 excluded, peer 1 pinned. 12 characters fit.
    let f2 = filter(
        2,
        "abcdefghijkl",
        json!({"non_contacts": true, "exclude_archived": true, "emoticon": "💼",
        "pinned_peers": [peers[1]], "exclude_peers": [peers[3]]}),
    );
    assert_eq!(
        alice.rpc("messages.updateDialogFilter", f2.clone()).await,
        json!({"_": "boolTrue"})
    );
    let p = pts(&alice).await;
    alice.rpc("messages.updateDialogFilter", f2.clone()).await;
    assert_eq!(
        pts(&alice).await,
        p,
        "the same filter again appends nothing"
    );
    alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": [{"_": "inputFolderPeer", "peer": peers[2], "folder_id": 1}]}),
        )
        .await;
    let r = dialogs(&alice, json!({"folder_id": 2})).await;
    assert_eq!(listed(&r), vec![(id(1), true), (id(0), false)]);
    let h = dialogs_hash(&r);
    assert_eq!(
        dialogs(&alice, json!({"folder_id": 2, "hash": h})).await,
        json!({"_": "messages.dialogsNotModified", "count": 2})
    );
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 2, "exclude_pinned": true})).await),
        vec![id(0)]
    );
    let r = dialogs(&alice, json!({"folder_id": 2, "limit": 1})).await;
    assert_eq!(r["_"], "messages.dialogsSlice");
    assert_eq!(r["count"], 2);
    let (_, e) = alice
        .rpc_err("messages.getDialogs", json!({"folder_id": 9}))
        .await;
    assert_eq!(e, "FOLDER_ID_INVALID");

    // A contact leaves a non_contacts filter; a contacts filter shows it.
    alice.rpc("contacts.addContact", json!({"id": {"_": "inputUser", "user_id": id(0), "access_hash": peers[0]["access_hash"]}, "first_name": "Zero"})).await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 2})).await),
        vec![id(1)]
    );
    alice
        .rpc(
            "messages.updateDialogFilter",
            filter(3, "Contacts", json!({"contacts": true})),
        )
        .await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 3})).await),
        vec![id(0)]
    );

    // exclude_read: only unread or marked dialogs (Alice sent everything: all read) and included ones.
    alice
        .rpc(
            "messages.updateDialogFilter",
            filter(
                4,
                "Unread",
                json!({"non_contacts": true, "exclude_read": true, "include_peers": [peers[3]]}),
            ),
        )
        .await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 4})).await),
        vec![id(3)]
    );
    alice
        .rpc(
            "messages.markDialogUnread",
            json!({"unread": true, "peer": dp(&peers[1])}),
        )
        .await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 4})).await),
        vec![id(3), id(1)]
    );

    // Order and tags.
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFiltersOrder",
            json!({"order": [4, 9]}),
        )
        .await;
    assert_eq!(e, "FILTER_ID_INVALID");
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFiltersOrder",
            json!({"order": [4, 4]}),
        )
        .await;
    assert_eq!(e, "FILTER_ID_INVALID");
    alice
        .rpc(
            "messages.updateDialogFiltersOrder",
            json!({"order": [4, 0, 2, 3]}),
        )
        .await;
    alice
        .rpc("messages.toggleDialogFilterTags", json!({"enabled": true}))
        .await;
    let r = alice.rpc("messages.getDialogFilters", json!({})).await;
    assert_eq!(r["tags_enabled"], true);
    let order: Vec<Value> = r["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].clone())
        .collect();
    assert_eq!(order, vec![Value::Null, json!(4), json!(2), json!(3)]);
    let f = &r["filters"][2];
    assert_eq!(f["title"]["text"], "abcdefghijkl");
    assert_eq!(f["emoticon"], "💼");
    assert_eq!(f["pinned_peers"], json!([peers[1]]));
    assert_eq!(f["exclude_peers"], json!([peers[3]]));

    // Up to 10 filters; the 11th is refused, replacing one is not; deleting frees a place.
    for fid in 5..=11 {
        alice
            .rpc(
                "messages.updateDialogFilter",
                filter(fid, &format!("F{fid}"), json!({"contacts": true})),
            )
            .await;
    }
    let (_, e) = alice
        .rpc_err(
            "messages.updateDialogFilter",
            filter(12, "F12", json!({"contacts": true})),
        )
        .await;
    assert_eq!(e, "DIALOG_FILTERS_TOO_MUCH");
    alice
        .rpc(
            "messages.updateDialogFilter",
            filter(11, "F11b", json!({"contacts": true})),
        )
        .await;
    alice
        .rpc("messages.updateDialogFilter", json!({"id": 11}))
        .await;
    let p = pts(&alice).await;
    alice
        .rpc("messages.updateDialogFilter", json!({"id": 11}))
        .await;
    assert_eq!(
        pts(&alice).await,
        p,
        "deleting a missing filter appends nothing"
    );
    alice
        .rpc(
            "messages.updateDialogFilter",
            filter(12, "F12", json!({"contacts": true})),
        )
        .await;
    assert_eq!(
        alice.rpc("messages.getDialogFilters", json!({})).await["filters"]
            .as_array()
            .unwrap()
            .len(),
        11
    );

    // 100 pinned + included peers fit, 101 do not (excluded peers have their own 100).
    let mut many = Vec::new();
    for i in 0..101 {
        let phone = format!("+1555604{i:04}");
        s.login(&phone, "P").await;
        many.push(alice.peer_of(&phone).await);
    }
    let ok = filter(
        13,
        "Many",
        json!({"pinned_peers": many[..50], "include_peers": many[50..100]}),
    );
    alice
        .rpc(
            "messages.updateDialogFilter",
            json!({"id": 2, "filter": ok["filter"].clone()}),
        )
        .await;
    let too = filter(
        2,
        "Many",
        json!({"pinned_peers": many[..50], "include_peers": many[50..101]}),
    );
    let (_, e) = alice.rpc_err("messages.updateDialogFilter", too).await;
    assert_eq!(e, "FILTER_INCLUDE_TOO_MUCH");
    let too = filter(
        2,
        "Many",
        json!({"contacts": true, "exclude_peers": many[..101]}),
    );
    let (_, e) = alice.rpc_err("messages.updateDialogFilter", too).await;
    assert_eq!(e, "FILTER_INCLUDE_TOO_MUCH");

    let d = alice
        .rpc(
            "updates.getDifference",
            json!({"pts": 0, "date": 0, "qts": 0}),
        )
        .await;
    let kinds: Vec<&str> = d["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["_"].as_str().unwrap())
        .collect();
    for k in [
        "updateDialogFilter",
        "updateDialogFilterOrder",
        "updateDialogFilters",
        "updateFolderPeers",
    ] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn contacts_and_peer_settings() {
    let s = TestServer::start().await;
    let (alice, others, peers) = setup(&s, 605, 3).await;
    let id = |i: usize| others[i].user_id;
    let input_user = |i: usize| json!({"_": "inputUser", "user_id": id(i), "access_hash": peers[i]["access_hash"]});

    // A stranger's chat offers the action bar.
    let r = alice
        .rpc("messages.getPeerSettings", json!({"peer": peers[0]}))
        .await;
    assert_eq!(r["_"], "messages.peerSettings");
    assert_eq!(
        r["settings"],
        json!({"_": "peerSettings", "report_spam": true, "add_contact": true, "block_contact": true})
    );
    let r = alice
        .rpc("messages.getPeerSettings", json!({"peer": self_peer()}))
        .await;
    assert_eq!(r["settings"]["add_contact"], false);

    let r = alice.rpc("contacts.getContacts", json!({"hash": 0})).await;
    assert_eq!(
        r,
        json!({"_": "contacts.contacts", "contacts": [], "saved_count": 0, "users": []})
    );

    // addContact: errors, then the owner's names show in users it receives.
    let (_, e) = alice
        .rpc_err(
            "contacts.addContact",
            json!({"id": input_user(0), "first_name": " "}),
        )
        .await;
    assert_eq!(e, "CONTACT_NAME_EMPTY");
    let (_, e) = alice
        .rpc_err(
            "contacts.addContact",
            json!({"id": {"_": "inputUserSelf"}, "first_name": "Me"}),
        )
        .await;
    assert_eq!(e, "CONTACT_ID_INVALID");
    let (_, e) = alice
        .rpc_err(
            "contacts.addContact",
            json!({"id": input_user(0), "first_name": "x".repeat(65)}),
        )
        .await;
    assert_eq!(e, "FIRSTNAME_INVALID");
    let (_, e) = alice
        .rpc_err(
            "contacts.addContact",
            json!({"id": input_user(0), "first_name": "Zed", "last_name": "y".repeat(65)}),
        )
        .await;
    assert_eq!(e, "LASTNAME_INVALID");
    let (_, e) = alice
        .rpc_err(
            "contacts.importContacts",
            json!({"contacts": [{"_": "inputPhoneContact", "client_id": 1, "phone": "+15556050001", "first_name": "x".repeat(65), "last_name": ""}]}),
        )
        .await;
    assert_eq!(e, "FIRSTNAME_INVALID");
    assert_eq!(pts(&alice).await, 3, "refused calls append nothing");
    let r = alice
        .rpc(
            "contacts.addContact",
            json!({"id": input_user(0), "first_name": "Zed", "last_name": "Zero", "phone": ""}),
        )
        .await;
    assert_eq!(r["_"], "updates");
    assert_eq!(r["updates"][0]["_"], "updatePeerSettings");
    assert_eq!(r["updates"][0]["settings"]["add_contact"], false);
    assert_eq!(r["users"][0]["first_name"], "Zed");
    assert_eq!(r["users"][0]["contact"], true);
    assert_eq!(r["users"][0]["mutual_contact"], false);
    let p = pts(&alice).await;
    alice
        .rpc(
            "contacts.addContact",
            json!({"id": input_user(0), "first_name": "Zed", "last_name": "Zero"}),
        )
        .await;
    assert_eq!(
        pts(&alice).await,
        p,
        "the same contact again appends nothing"
    );
    let u = alice
        .rpc("users.getUsers", json!({"id": [input_user(0)]}))
        .await;
    assert_eq!(
        (u[0]["first_name"].clone(), u[0]["last_name"].clone()),
        (json!("Zed"), json!("Zero"))
    );
    // resolvePhone answers the contact under the owner's names too (with the phone just given).
    let r = alice
        .rpc("contacts.resolvePhone", json!({"phone": "+15556050001"}))
        .await;
    assert_eq!(r["users"].as_array().unwrap().len(), 1, "{r}");
    let zed = &r["users"][0];
    assert_eq!(
        (
            &zed["first_name"],
            &zed["last_name"],
            &zed["contact"],
            &zed["phone"]
        ),
        (
            &json!("Zed"),
            &json!("Zero"),
            &json!(true),
            &json!("15556050001")
        ),
        "{zed}"
    );
    assert_eq!(zed["access_hash"], peers[0]["access_hash"]);
    // Another account resolving the same phone sees the account's own names.
    let r = others[1]
        .rpc("contacts.resolvePhone", json!({"phone": "+15556050001"}))
        .await;
    assert_eq!(
        (&r["users"][0]["first_name"], &r["users"][0]["contact"]),
        (&json!("U0"), &json!(false))
    );
    let d = dialogs(&alice, json!({})).await;
    let zed = d["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == id(0))
        .unwrap();
    assert_eq!(zed["first_name"], "Zed");
    // The other side's view is its own: U0 still sees Alice by her name; mutual once U0 adds her.
    let to_alice = others[0].peer_of("+15556050000").await;
    let alice_user =
        json!({"_": "inputUser", "user_id": alice.user_id, "access_hash": to_alice["access_hash"]});
    others[0]
        .rpc(
            "contacts.addContact",
            json!({"id": alice_user, "first_name": "Al"}),
        )
        .await;
    let c = alice.rpc("contacts.getContacts", json!({})).await;
    assert_eq!(
        c["contacts"],
        json!([{"_": "contact", "user_id": id(0), "mutual": true}])
    );
    assert_eq!(c["users"][0]["mutual_contact"], true);
    let r = alice
        .rpc("messages.getPeerSettings", json!({"peer": peers[0]}))
        .await;
    assert_eq!(r["settings"]["add_contact"], false);

    // importContacts: registered phones only; imported ones count in saved_count.
    let r = alice
        .rpc(
            "contacts.importContacts",
            json!({"contacts": [
                {"_": "inputPhoneContact", "client_id": 7, "phone": "+1 555 605 0002", "first_name": "Two", "last_name": ""},
                {"_": "inputPhoneContact", "client_id": 8, "phone": "+15559999999", "first_name": "Nobody", "last_name": ""},
                {"_": "inputPhoneContact", "client_id": "9", "phone": "+15556050003", "first_name": "", "last_name": ""}
            ]}),
        )
        .await;
    assert_eq!(r["_"], "contacts.importedContacts");
    assert_eq!(
        r["imported"],
        json!([{"_": "importedContact", "user_id": id(1), "client_id": 7}, {"_": "importedContact", "user_id": id(2), "client_id": 9}])
    );
    let names: Vec<&str> = r["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["first_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Two", "U2"]);
    let c = alice.rpc("contacts.getContacts", json!({})).await;
    assert_eq!(c["saved_count"], 2);
    assert_eq!(c["contacts"].as_array().unwrap().len(), 3);
    // The hash: the contact ids ascending, folded.
    let mut cids: Vec<i64> = vec![id(0), id(1), id(2)];
    cids.sort();
    let h = cids.iter().fold(0u64, |acc, i| fold_hash(acc, *i as u64)) as i64;
    assert_eq!(
        alice.rpc("contacts.getContacts", json!({"hash": h})).await,
        json!({"_": "contacts.contactsNotModified"})
    );

    // resetSaved forgets the imports but keeps the contacts; again, nothing to do.
    let p = pts(&alice).await;
    alice.rpc("contacts.resetSaved", json!({})).await;
    alice.rpc("contacts.resetSaved", json!({})).await;
    assert_eq!(pts(&alice).await, p + 1);
    let c = alice.rpc("contacts.getContacts", json!({})).await;
    assert_eq!(
        (
            c["saved_count"].clone(),
            c["contacts"].as_array().unwrap().len()
        ),
        (json!(0), 3)
    );

    // deleteContacts: one updatePeerSettings per deleted contact; unknown ones are skipped.
    let r = alice
        .rpc(
            "contacts.deleteContacts",
            json!({"id": [input_user(1), input_user(1)]}),
        )
        .await;
    assert_eq!(r["updates"].as_array().unwrap().len(), 1);
    assert_eq!(r["updates"][0]["settings"]["add_contact"], true);
    assert_eq!(r["users"][0]["first_name"], "U1");
    assert_eq!(r["users"][0]["contact"], false);
    let r = alice
        .rpc("contacts.deleteContacts", json!({"id": [input_user(1)]}))
        .await;
    assert_eq!(r["updates"], json!([]));

    // hidePeerSettingsBar: the bar is gone, once.
    let p = pts(&alice).await;
    alice
        .rpc("messages.hidePeerSettingsBar", json!({"peer": peers[1]}))
        .await;
    alice
        .rpc("messages.hidePeerSettingsBar", json!({"peer": peers[1]}))
        .await;
    assert_eq!(pts(&alice).await, p + 1);
    let r = alice
        .rpc("messages.getPeerSettings", json!({"peer": peers[1]}))
        .await;
    assert_eq!(
        r["settings"],
        json!({"_": "peerSettings", "report_spam": false, "add_contact": false, "block_contact": false})
    );
    let forged = json!({"_": "inputPeerUser", "user_id": id(1), "access_hash": peers[1]["access_hash"].as_i64().unwrap() ^ 1});
    let (_, e) = alice
        .rpc_err("messages.hidePeerSettingsBar", json!({"peer": forged}))
        .await;
    assert_eq!(e, "PEER_ID_INVALID");
    let (_, e) = alice
        .rpc_err("messages.getPeerSettings", json!({"peer": forged}))
        .await;
    assert_eq!(e, "PEER_ID_INVALID");

    let d = alice
        .rpc(
            "updates.getDifference",
            json!({"pts": 0, "date": 0, "qts": 0}),
        )
        .await;
    let kinds: Vec<&str> = d["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["_"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"updateContactsReset") && kinds.contains(&"updatePeerSettings"),
        "{kinds:?}"
    );
    assert_projections_clean(&s).await;
    s.stop().await;
}

/// Device B's picture of the account's organization, folded from getDifference alone.
#[derive(Default, Debug, PartialEq)]
struct Organization {
    /// Pinned peers per folder, in order.
    pinned: BTreeMap<i64, Vec<i64>>,
    /// Folder of each peer that ever moved.
    folders: BTreeMap<i64, i64>,
    unread_marks: BTreeMap<i64, bool>,
    filters: BTreeMap<i64, Value>,
    filter_order: Vec<i64>,
    contacts: BTreeMap<i64, (String, String)>,
    /// Notification settings of the chats that have any.
    notify: BTreeMap<i64, Value>,
}

fn dialog_peer_id(v: &Value) -> i64 {
    v["peer"]["user_id"].as_i64().unwrap()
}

impl Organization {
    fn apply(&mut self, u: &Value, users: &[Value]) {
        match u["_"].as_str().unwrap() {
            "updateDialogPinned" => {
                let folder = u["folder_id"].as_i64().unwrap_or(0);
                let peer = dialog_peer_id(&u["peer"]);
                let list = self.pinned.entry(folder).or_default();
                list.retain(|p| *p != peer);
                if u["pinned"] == true {
                    list.insert(0, peer);
                }
            }
            "updatePinnedDialogs" => {
                let folder = u["folder_id"].as_i64().unwrap_or(0);
                self.pinned.insert(
                    folder,
                    u["order"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(dialog_peer_id)
                        .collect(),
                );
            }
            "updateDialogUnreadMark" => {
                self.unread_marks
                    .insert(dialog_peer_id(&u["peer"]), u["unread"] == true);
            }
            "updateReadHistoryInbox" => {
                self.unread_marks
                    .insert(u["peer"]["user_id"].as_i64().unwrap(), false);
            }
            "updateFolderPeers" => {
                for fp in u["folder_peers"].as_array().unwrap() {
                    let peer = fp["peer"]["user_id"].as_i64().unwrap();
                    let folder = fp["folder_id"].as_i64().unwrap();
                    for list in self.pinned.values_mut() {
                        list.retain(|p| *p != peer);
                    }
                    self.folders.insert(peer, folder);
                }
            }
            "updateDialogFilter" => {
                let id = u["id"].as_i64().unwrap();
                if u["filter"].is_null() {
                    self.filters.remove(&id);
                    self.filter_order.retain(|f| *f != id);
                } else {
                    self.filters.insert(id, u["filter"].clone());
                    if !self.filter_order.contains(&id) {
                        self.filter_order.push(id);
                    }
                }
            }
            "updateDialogFilterOrder" => {
                self.filter_order = u["order"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_i64().unwrap())
                    .collect();
            }
            "updateNotifySettings" => {
                let peer = u["peer"]["peer"]["user_id"].as_i64().unwrap();
                let settings = &u["notify_settings"];
                if settings.as_object().unwrap().len() > 1 {
                    self.notify.insert(peer, settings.clone());
                } else {
                    self.notify.remove(&peer);
                }
            }
            "updatePeerSettings" => {
                let peer = u["peer"]["user_id"].as_i64().unwrap();
                let user = users
                    .iter()
                    .find(|x| x["id"] == peer)
                    .expect("the user of updatePeerSettings");
                if user["contact"] == true {
                    let names = (
                        user["first_name"].as_str().unwrap().to_string(),
                        user["last_name"].as_str().unwrap().to_string(),
                    );
                    self.contacts.insert(peer, names);
                } else {
                    self.contacts.remove(&peer);
                }
            }
            _ => {}
        }
    }

    /// The same picture, read from the server's queries.
    /// `inputs` are the input peers of `peers`, in the same order.
    async fn of_server(d: &Device, peers: &[i64], inputs: &[Value]) -> Self {
        let mut o = Organization::default();
        for folder in [0, 1] {
            let p = d
                .rpc("messages.getPinnedDialogs", json!({"folder_id": folder}))
                .await;
            let list = ids(&p);
            if !list.is_empty() {
                o.pinned.insert(folder, list);
            }
            for (peer, _) in listed(&dialogs(d, json!({"folder_id": folder})).await) {
                if peers.contains(&peer) {
                    o.folders.insert(peer, folder);
                }
            }
        }
        for m in d
            .rpc("messages.getDialogUnreadMarks", json!({}))
            .await
            .as_array()
            .unwrap()
        {
            o.unread_marks.insert(dialog_peer_id(m), true);
        }
        let f = d.rpc("messages.getDialogFilters", json!({})).await;
        for filter in f["filters"].as_array().unwrap().iter().skip(1) {
            o.filters
                .insert(filter["id"].as_i64().unwrap(), filter.clone());
            o.filter_order.push(filter["id"].as_i64().unwrap());
        }
        for (peer, input) in peers.iter().zip(inputs) {
            let n = d
                .rpc(
                    "account.getNotifySettings",
                    json!({"peer": {"_": "inputNotifyPeer", "peer": input}}),
                )
                .await;
            if n.as_object().unwrap().len() > 1 {
                o.notify.insert(*peer, n);
            }
        }
        let c = d.rpc("contacts.getContacts", json!({})).await;
        for u in c["users"].as_array().unwrap() {
            o.contacts.insert(
                u["id"].as_i64().unwrap(),
                (
                    u["first_name"].as_str().unwrap().into(),
                    u["last_name"].as_str().unwrap().into(),
                ),
            );
        }
        o
    }
}

#[tokio::test]
async fn an_offline_device_catches_up_to_exactly_the_same_organization() {
    let s = TestServer::start().await;
    let (a, others, peers) = setup(&s, 606, 5).await;
    let id = |i: usize| others[i].user_id;
    let b = s.login("+15556060000", "Alice").await; // B: Alice's second device
    let from = pts(&b).await;

    // A organizes everything while B is offline.
    for i in [0, 1, 2] {
        a.rpc(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp(&peers[i])}),
        )
        .await;
    }
    a.rpc(
        "messages.reorderPinnedDialogs",
        json!({"force": true, "folder_id": 0, "order": [dp(&peers[2]), dp(&peers[0])]}),
    )
    .await;
    a.rpc("folders.editPeerFolders", json!({"folder_peers": [{"_": "inputFolderPeer", "peer": peers[0], "folder_id": 1}, {"_": "inputFolderPeer", "peer": peers[3], "folder_id": 1}]})).await;
    a.rpc(
        "messages.toggleDialogPin",
        json!({"pinned": true, "peer": dp(&peers[3])}),
    )
    .await;
    a.rpc(
        "messages.markDialogUnread",
        json!({"unread": true, "peer": dp(&peers[4])}),
    )
    .await;
    a.rpc(
        "messages.markDialogUnread",
        json!({"unread": true, "peer": dp(&peers[1])}),
    )
    .await;
    a.rpc(
        "messages.readHistory",
        json!({"peer": peers[1], "max_id": 0}),
    )
    .await;
    a.rpc(
        "messages.updateDialogFilter",
        filter(
            2,
            "Work",
            json!({"non_contacts": true, "exclude_archived": true, "pinned_peers": [peers[4]]}),
        ),
    )
    .await;
    a.rpc(
        "messages.updateDialogFilter",
        filter(3, "Friends", json!({"contacts": true})),
    )
    .await;
    a.rpc(
        "messages.updateDialogFilter",
        filter(4, "Gone", json!({"contacts": true})),
    )
    .await;
    a.rpc("messages.updateDialogFilter", json!({"id": 4})).await;
    a.rpc(
        "messages.updateDialogFiltersOrder",
        json!({"order": [3, 2]}),
    )
    .await;
    a.rpc("messages.toggleDialogFilterTags", json!({"enabled": true}))
        .await;
    let iu = |i: usize| json!({"_": "inputUser", "user_id": id(i), "access_hash": peers[i]["access_hash"]});
    a.rpc(
        "contacts.addContact",
        json!({"id": iu(1), "first_name": "Best", "last_name": "Friend"}),
    )
    .await;
    a.rpc(
        "contacts.addContact",
        json!({"id": iu(2), "first_name": "Tmp"}),
    )
    .await;
    a.rpc("contacts.importContacts", json!({"contacts": [{"client_id": 1, "phone": "+15556060004", "first_name": "Four", "last_name": "Imported"}]})).await;
    a.rpc("contacts.deleteContacts", json!({"id": [iu(2)]}))
        .await;
    a.rpc(
        "contacts.addContact",
        json!({"id": iu(1), "first_name": "Bestest", "last_name": "Friend"}),
    )
    .await;
    a.rpc("messages.hidePeerSettingsBar", json!({"peer": peers[2]}))
        .await;
    let n = |i: usize, settings: Value| json!({"peer": {"_": "inputNotifyPeer", "peer": peers[i]}, "settings": settings});
    a.rpc(
        "account.updateNotifySettings",
        n(3, json!({"mute_until": i32::MAX, "silent": true})),
    )
    .await;
    a.rpc(
        "account.updateNotifySettings",
        n(4, json!({"show_previews": false})),
    )
    .await;
    a.rpc("account.updateNotifySettings", n(4, json!({}))).await;
    a.rpc(
        "account.updateNotifySettings",
        n(1, json!({"mute_until": i32::MAX})),
    )
    .await;
    // A message in the unmuted archived chat 0 moves it back to the main list; the muted archived
    // chat 3 stays.
    for i in [0, 3] {
        let to_alice = others[i].peer_of("+15556060000").await;
        others[i].send(&to_alice, "hello again").await;
    }

    // B comes back: the difference, paged, folded.
    let mut replica = Organization::default();
    let mut at = from;
    loop {
        let d = b
            .rpc(
                "updates.getDifference",
                json!({"pts": at, "date": 0, "qts": 0}),
            )
            .await;
        if d["_"] == "updates.differenceEmpty" {
            break;
        }
        let users = d["users"].as_array().unwrap().clone();
        for u in d["other_updates"].as_array().unwrap() {
            replica.apply(u, &users);
        }
        let state = if d["_"] == "updates.differenceSlice" {
            &d["intermediate_state"]
        } else {
            &d["state"]
        };
        at = state["pts"].as_i64().unwrap();
        if d["_"] == "updates.difference" {
            break;
        }
    }
    assert_eq!(at, pts(&a).await);
    let all: Vec<i64> = (0..5).map(id).collect();
    let server = Organization::of_server(&a, &all, &peers).await;
    // Peers that never moved are in the main list.
    for p in &all {
        replica.folders.entry(*p).or_insert(0);
    }
    replica.unread_marks.retain(|_, v| *v);
    replica.pinned.retain(|_, v| !v.is_empty());
    assert_eq!(replica, server);
    assert_eq!(
        server.pinned,
        BTreeMap::from([(0, vec![id(2)]), (1, vec![id(3)])])
    );
    assert_eq!(server.filter_order, vec![3, 2]);
    assert_eq!(server.notify.keys().copied().collect::<Vec<_>>(), {
        let mut muted = vec![id(1), id(3)];
        muted.sort();
        muted
    });
    assert_eq!(server.folders[&id(0)], 0, "unarchived by a message");
    assert_eq!(server.folders[&id(3)], 1, "muted: stays archived");

    // And B's own queries answer exactly what A's do, for every folder and filter.
    for params in [
        json!({}),
        json!({"folder_id": 1}),
        json!({"folder_id": 2}),
        json!({"folder_id": 3}),
        json!({"exclude_pinned": true}),
    ] {
        assert_eq!(dialogs(&b, params.clone()).await, dialogs(&a, params).await);
    }
    assert_eq!(
        b.rpc("messages.getDialogFilters", json!({})).await,
        a.rpc("messages.getDialogFilters", json!({})).await
    );
    assert_eq!(
        b.rpc("contacts.getContacts", json!({})).await,
        a.rpc("contacts.getContacts", json!({})).await
    );
    assert_projections_clean(&s).await;
    // A rebuild from the log gives the same answers.
    let before = dialogs(&a, json!({"folder_id": 2})).await;
    projections::rebuild::rebuild_all(&s.pool)
        .await
        .expect("rebuild");
    assert_eq!(dialogs(&a, json!({"folder_id": 2})).await, before);
    assert_projections_clean(&s).await;
    s.stop().await;
}

#[tokio::test]
async fn limits_at_their_boundaries() {
    let s = TestServer::start().await;
    let (alice, _others, peers) = setup(&s, 607, 101).await;

    // The archive holds 100 pins, not 101.
    let folder_peers: Vec<Value> = peers
        .iter()
        .map(|p| json!({"_": "inputFolderPeer", "peer": p, "folder_id": 1}))
        .collect();
    let (_, e) = alice
        .rpc_err(
            "folders.editPeerFolders",
            json!({"folder_peers": folder_peers}),
        )
        .await;
    assert_eq!(e, "LIMIT_INVALID", "101 peers in one call");
    alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": folder_peers[..100]}),
        )
        .await;
    alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": folder_peers[100..]}),
        )
        .await;
    for p in &peers[..100] {
        alice
            .rpc(
                "messages.toggleDialogPin",
                json!({"pinned": true, "peer": dp(p)}),
            )
            .await;
    }
    let (_, e) = alice
        .rpc_err(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": dp(&peers[100])}),
        )
        .await;
    assert_eq!(e, "PINNED_DIALOGS_TOO_MUCH");
    let all: Vec<Value> = peers.iter().map(dp).collect();
    let (_, e) = alice
        .rpc_err(
            "messages.reorderPinnedDialogs",
            json!({"force": true, "folder_id": 1, "order": all}),
        )
        .await;
    assert_eq!(e, "PINNED_DIALOGS_TOO_MUCH");
    alice
        .rpc(
            "messages.reorderPinnedDialogs",
            json!({"force": true, "folder_id": 1, "order": all[1..101]}),
        )
        .await;
    let pinned = alice
        .rpc("messages.getPinnedDialogs", json!({"folder_id": 1}))
        .await;
    assert_eq!(ids(&pinned).len(), 100);
    // The first page of the archive carries every pin, even past the limit of 100.
    let r = dialogs(&alice, json!({"folder_id": 1, "limit": 100})).await;
    assert_eq!(r["_"], "messages.dialogsSlice");
    assert_eq!(r["count"], 101);
    assert_eq!(listed(&r).iter().filter(|(_, pinned)| *pinned).count(), 100);

    // A filter title of 12 characters fits (13 is FILTER_TITLE_EMPTY, see above).
    alice
        .rpc(
            "messages.updateDialogFilter",
            filter(2, "abcdefghijkl", json!({"contacts": true})),
        )
        .await;

    // importContacts takes 1000 contacts, not 1001 (phones of no account are skipped).
    let book: Vec<Value> = (0..1001)
        .map(|i| json!({"client_id": i, "phone": format!("+1999{i:07}"), "first_name": "N", "last_name": ""}))
        .collect();
    let (_, e) = alice
        .rpc_err("contacts.importContacts", json!({"contacts": book}))
        .await;
    assert_eq!(e, "LIMIT_INVALID");
    let r = alice
        .rpc("contacts.importContacts", json!({"contacts": book[..1000]}))
        .await;
    assert_eq!(r["imported"], json!([]));
    assert_projections_clean(&s).await;
    s.stop().await;
}

fn notify_peer(peer: &Value) -> Value {
    json!({"_": "inputNotifyPeer", "peer": peer})
}

fn mute(peer: &Value, settings: Value) -> Value {
    let mut s = json!({"_": "inputPeerNotifySettings"});
    for (k, v) in settings.as_object().unwrap() {
        s[k] = v.clone();
    }
    json!({"peer": notify_peer(peer), "settings": s})
}

/// The dialog of `peer_id` in a getDialogs answer.
fn dialog_of(r: &Value, peer_id: i64) -> Value {
    r["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["peer"]["user_id"] == peer_id)
        .unwrap_or_else(|| panic!("no dialog with {peer_id} in {r}"))
        .clone()
}

#[tokio::test]
async fn notify_settings_mute_filters_and_the_archive() {
    let s = TestServer::start().await;
    let (alice, others, peers) = setup(&s, 608, 3).await;
    let id = |i: usize| others[i].user_id;
    let alice_2 = s.login("+15556080000", "Alice").await;
    let empty = json!({"_": "peerNotifySettings"});

    // Nothing set: empty settings everywhere.
    assert_eq!(
        alice
            .rpc(
                "account.getNotifySettings",
                json!({"peer": notify_peer(&peers[0])})
            )
            .await,
        empty
    );
    assert_eq!(
        dialog_of(&dialogs(&alice, json!({})).await, id(0))["notify_settings"],
        empty
    );
    for class in [
        "inputNotifyUsers",
        "inputNotifyChats",
        "inputNotifyBroadcasts",
    ] {
        assert_eq!(
            alice
                .rpc("account.getNotifySettings", json!({"peer": {"_": class}}))
                .await,
            empty,
            "{class} keeps nothing"
        );
    }

    // Mute peer 0 forever (silent, previews off); the same again appends nothing.
    let from = pts(&alice).await;
    let forever = i64::from(i32::MAX);
    let muted = mute(
        &peers[0],
        json!({"mute_until": forever, "silent": true, "show_previews": false, "sound": {"_": "notificationSoundDefault"}}),
    );
    assert_eq!(
        alice
            .rpc("account.updateNotifySettings", muted.clone())
            .await,
        json!({"_": "boolTrue"})
    );
    alice.rpc("account.updateNotifySettings", muted).await;
    assert_eq!(pts(&alice).await, from + 1, "a repeat appends nothing");
    let want = json!({"_": "peerNotifySettings", "show_previews": false, "silent": true, "mute_until": forever});
    assert_eq!(
        alice
            .rpc(
                "account.getNotifySettings",
                json!({"peer": notify_peer(&peers[0])})
            )
            .await,
        want
    );
    assert_eq!(
        dialog_of(&dialogs(&alice, json!({})).await, id(0))["notify_settings"],
        want
    );
    let pd = alice
        .rpc("messages.getPeerDialogs", json!({"peers": [dp(&peers[0])]}))
        .await;
    assert_eq!(pd["dialogs"][0]["notify_settings"], want);
    // Saved Messages can be muted too; a mute that already ended is kept as set.
    alice
        .rpc(
            "account.updateNotifySettings",
            mute(&self_peer(), json!({"mute_until": 1})),
        )
        .await;
    assert_eq!(
        alice
            .rpc(
                "account.getNotifySettings",
                json!({"peer": notify_peer(&self_peer())})
            )
            .await,
        json!({"_": "peerNotifySettings", "mute_until": 1})
    );

    // Errors.
    let forged = json!({"_": "inputPeerUser", "user_id": id(1), "access_hash": peers[1]["access_hash"].as_i64().unwrap() ^ 1});
    for (method, params) in [
        ("account.updateNotifySettings", mute(&forged, json!({}))),
        (
            "account.getNotifySettings",
            json!({"peer": notify_peer(&forged)}),
        ),
        (
            "account.updateNotifySettings",
            json!({"peer": {"_": "inputNotifyUsers"}, "settings": {"_": "inputPeerNotifySettings", "mute_until": 5}}),
        ),
        (
            "account.updateNotifySettings",
            mute(
                &json!({"_": "inputPeerUser", "user_id": 999_999_999, "access_hash": 0}),
                json!({}),
            ),
        ),
    ] {
        let (status, e) = alice.rpc_err(method, params.clone()).await;
        assert_eq!((status, e.as_str()), (400, "PEER_ID_INVALID"), "{params}");
    }
    for bad in [
        json!({"peer": notify_peer(&peers[1])}),
        json!({"peer": {"_": "inputNotifyForumTopic"}, "settings": {}}),
        json!({"peer": notify_peer(&peers[1]), "settings": {"mute_until": "soon"}}),
    ] {
        let (status, e) = alice
            .rpc_err("account.updateNotifySettings", bad.clone())
            .await;
        assert_eq!(
            (status, e.as_str()),
            (400, "INPUT_REQUEST_INVALID"),
            "{bad}"
        );
    }
    assert_eq!(pts(&alice).await, from + 2, "errors append nothing");

    // exclude_muted leaves muted chats out of a filter (unless pinned or included).
    alice
        .rpc(
            "messages.updateDialogFilter",
            filter(
                2,
                "Loud",
                json!({"non_contacts": true, "exclude_muted": true}),
            ),
        )
        .await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 2})).await),
        vec![id(2), id(1)]
    );
    alice
        .rpc(
            "messages.updateDialogFilter",
            filter(3, "All", json!({"non_contacts": true})),
        )
        .await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 3})).await),
        vec![id(2), id(1), id(0)]
    );
    // Muted until a time already past is not muted.
    alice
        .rpc(
            "account.updateNotifySettings",
            mute(&peers[1], json!({"mute_until": 1000})),
        )
        .await;
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 2})).await),
        vec![id(2), id(1)]
    );
    alice
        .rpc(
            "account.updateNotifySettings",
            mute(&peers[2], json!({"mute_until": forever})),
        )
        .await;
    let r = dialogs(&alice, json!({"folder_id": 2})).await;
    assert_eq!(ids(&r), vec![id(1)]);
    assert_eq!(r["_"], "messages.dialogs");
    // Unmuting (the settings reset to nothing) brings it back.
    alice
        .rpc("account.updateNotifySettings", mute(&peers[2], json!({})))
        .await;
    assert_eq!(
        alice
            .rpc(
                "account.getNotifySettings",
                json!({"peer": notify_peer(&peers[2])})
            )
            .await,
        empty
    );
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 2})).await),
        vec![id(2), id(1)]
    );

    // The archive: a forwarded message unarchives an unmuted chat too; a muted one stays.
    alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": [
                {"_": "inputFolderPeer", "peer": peers[0], "folder_id": 1},
                {"_": "inputFolderPeer", "peer": peers[2], "folder_id": 1}
            ]}),
        )
        .await;
    let p = pts(&alice).await;
    let a2 = others[2].peer_of("+15556080000").await;
    let sent = others[2].send(&self_peer(), "note").await;
    others[2]
        .rpc(
            "messages.forwardMessages",
            json!({"from_peer": self_peer(), "id": [sent["id"]], "random_id": [77], "to_peer": a2}),
        )
        .await;
    let a0 = others[0].peer_of("+15556080000").await;
    others[0].send(&a0, "muted, stays").await;
    assert_eq!(pts(&alice).await, p + 3, "two messages and one move");
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 1})).await),
        vec![id(0)]
    );
    // The retry of the forward appends nothing, even though the chat is archived again.
    alice
        .rpc(
            "folders.editPeerFolders",
            json!({"folder_peers": [{"_": "inputFolderPeer", "peer": peers[2], "folder_id": 1}]}),
        )
        .await;
    let p = pts(&alice).await;
    others[2]
        .rpc(
            "messages.forwardMessages",
            json!({"from_peer": self_peer(), "id": [sent["id"]], "random_id": [77], "to_peer": a2}),
        )
        .await;
    assert_eq!(pts(&alice).await, p);
    assert_eq!(
        ids(&dialogs(&alice, json!({"folder_id": 1})).await),
        vec![id(0), id(2)]
    );

    // The other device learns all of it from the log.
    let d = alice_2
        .rpc(
            "updates.getDifference",
            json!({"pts": from, "date": 0, "qts": 0}),
        )
        .await;
    let notify: Vec<&Value> = d["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["_"] == "updateNotifySettings")
        .collect();
    assert_eq!(notify.len(), 5, "{d}");
    assert_eq!(
        notify[0],
        &json!({"_": "updateNotifySettings", "peer": {"_": "notifyPeer", "peer": {"_": "peerUser", "user_id": id(0)}}, "notify_settings": want})
    );
    assert!(notify[0].get("pts").is_none(), "no pts in TL");
    assert_eq!(notify[4]["notify_settings"], empty);
    let users: Vec<i64> = d["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["id"].as_i64().unwrap())
        .collect();
    assert!(users.contains(&id(0)) && users.contains(&id(2)));
    assert_eq!(
        dialogs(&alice_2, json!({"folder_id": 2})).await,
        dialogs(&alice, json!({"folder_id": 2})).await
    );

    assert_projections_clean(&s).await;
    let before = dialogs(&alice, json!({"folder_id": 1})).await;
    projections::rebuild::rebuild_all(&s.pool)
        .await
        .expect("rebuild");
    assert_eq!(dialogs(&alice, json!({"folder_id": 1})).await, before);
    assert_eq!(
        alice
            .rpc(
                "account.getNotifySettings",
                json!({"peer": notify_peer(&peers[0])})
            )
            .await,
        want
    );
    s.stop().await;
}

/// `users.getFullUser` over the JSON API: the user, and the chat's peer and notification settings
/// exactly as `messages.getPeerSettings` and `account.getNotifySettings` answer them, before and
/// after the owner mutes the chat, adds the user as a contact and hides the bar.
#[tokio::test]
async fn full_user_agrees_with_the_peer_and_notify_settings() {
    let s = TestServer::start().await;
    let (alice, others, peers) = setup(&s, 619, 2).await;
    let input_user = |i: usize| json!({"_": "inputUser", "user_id": others[i].user_id, "access_hash": peers[i]["access_hash"]});
    async fn agrees(alice: &Device, user: Value, peer: Value) -> Value {
        let full = alice.rpc("users.getFullUser", json!({"id": user})).await;
        assert_eq!(full["_"], "users.userFull", "{full}");
        let settings = alice
            .rpc("messages.getPeerSettings", json!({"peer": peer}))
            .await;
        let notify = alice
            .rpc(
                "account.getNotifySettings",
                json!({"peer": notify_peer(&peer)}),
            )
            .await;
        let users = alice.rpc("users.getUsers", json!({"id": [user]})).await;
        assert_eq!(
            full,
            json!({"_": "users.userFull", "full_user": {"_": "userFull", "id": users[0]["id"],
                "settings": settings["settings"], "notify_settings": notify,
                "common_chats_count": 0}, "chats": [], "users": users})
        );
        full
    }
    let from = pts(&alice).await;
    let stranger = agrees(&alice, input_user(0), peers[0].clone()).await;
    assert_eq!(stranger["full_user"]["settings"]["add_contact"], true);
    let me = agrees(&alice, json!({"_": "inputUserSelf"}), self_peer()).await;
    assert_eq!(me["users"][0]["self"], true);
    assert_eq!(me["full_user"]["settings"]["add_contact"], false);
    assert_eq!(pts(&alice).await, from, "a read appends nothing");

    let forever = i64::from(i32::MAX);
    alice
        .rpc(
            "account.updateNotifySettings",
            mute(&peers[0], json!({"mute_until": forever})),
        )
        .await;
    alice
        .rpc(
            "contacts.addContact",
            json!({"id": input_user(0), "first_name": "Zed", "last_name": ""}),
        )
        .await;
    alice
        .rpc("messages.hidePeerSettingsBar", json!({"peer": peers[1]}))
        .await;
    let contact = agrees(&alice, input_user(0), peers[0].clone()).await;
    assert_eq!(
        contact["full_user"]["notify_settings"]["mute_until"],
        forever
    );
    assert_eq!(contact["users"][0]["first_name"], "Zed");
    assert_eq!(contact["full_user"]["settings"]["add_contact"], false);
    let hidden = agrees(&alice, input_user(1), peers[1].clone()).await;
    assert_eq!(hidden["full_user"]["settings"]["report_spam"], false);

    // Refusals: a forged access hash, no user, parameters that do not parse.
    let forged = json!({"_": "inputUser", "user_id": others[0].user_id, "access_hash": 1});
    let (status, e) = alice
        .rpc_err("users.getFullUser", json!({"id": forged}))
        .await;
    assert_eq!((status, e.as_str()), (400, "PEER_ID_INVALID"));
    for id in [
        json!({"_": "inputUserEmpty"}),
        json!({"_": "inputUserFromMessage",
        "peer": {"_": "inputPeerSelf"}, "msg_id": 1, "user_id": 2}),
    ] {
        let (status, e) = alice.rpc_err("users.getFullUser", json!({"id": id})).await;
        assert_eq!((status, e.as_str()), (400, "USER_ID_INVALID"), "{id}");
    }
    let (status, e) = alice.rpc_err("users.getFullUser", json!({})).await;
    assert_eq!((status, e.as_str()), (400, "INPUT_REQUEST_INVALID"));
    s.stop().await;
}
