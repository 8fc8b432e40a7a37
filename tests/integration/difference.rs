//! `updates.getDifference` as a second device of the same account uses it: everything the first
//! device did (its own sends included, the log is per account), with pts/pts_count that add up, the
//! viewer's access hashes, and slices of 100 events. A small client-side fold ([`Replica`]) applies
//! the differences and must reproduce what `messages.getDialogs` / `messages.getHistory` answer.
//!
//! [`Replica`] and the helpers around it are shared with `random_mix` and `two_processes`.

use std::collections::{BTreeMap, BTreeSet};

use ptslog_tests::{self_peer, Device, TestServer};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// The client-side fold.
// ---------------------------------------------------------------------------------------------

/// What the server's `dialogs` row of one chat may be, as far as the difference can tell.
///
/// `updateDeleteMessages` does not say whether it came from `messages.deleteHistory` without
/// `just_clear` (the server then drops the dialog once it is empty, and a later message creates it
/// anew with both read watermarks at 0) or from `deleteMessages` / `just_clear` (the empty dialog stays,
/// watermarks kept). So once a deletion empties a chat, the fold keeps both possibilities: the row may
/// be gone, and when it comes back, its watermarks are either the old ones or restarted from 0. Read
/// events (which only happen on an existing dialog) and `still_unread_count` prune the possibilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DialogGuess {
    /// Possible (read_inbox_max_id, read_outbox_max_id).
    pub candidates: BTreeSet<(i32, i32)>,
    /// Emptied by a deletion and not touched since: the server may have removed the row.
    pub may_be_gone: bool,
    /// Possible (folder_id, pinned, unread_mark): a row re-created after a removal starts in the
    /// main list, unpinned and unmarked, so the same ambiguity applies.
    pub org: BTreeSet<(i64, bool, bool)>,
}

/// TL updates that take one pts in the log but carry no `pts` field (the client applies them at
/// once; the pts is covered by the state of its next difference).
pub(crate) const PTSLESS_UPDATES: &[&str] = &[
    "updatePeerBlocked",
    "updateDialogPinned",
    "updatePinnedDialogs",
    "updateDialogUnreadMark",
    "updateDialogFilter",
    "updateDialogFilterOrder",
    "updateDialogFilters",
    "updatePeerSettings",
    "updateContactsReset",
    "updateNotifySettings",
];

/// One device's view of its account, built only from `updates.getDifference` answers.
#[derive(Debug, Clone, Default)]
pub(crate) struct Replica {
    pub me: i64,
    pub pts: i32,
    /// Every message ever received, by box id (deleted ones too, see `deleted`).
    pub messages: BTreeMap<i32, Value>,
    pub deleted: BTreeSet<i32>,
    pub dialogs: BTreeMap<i64, DialogGuess>,
    /// `user` objects by id, as last received.
    pub users: BTreeMap<i64, Value>,
    pub blocked: BTreeSet<i64>,
    /// Events applied, by kind (for reports).
    pub applied: BTreeMap<&'static str, usize>,
    /// How often a deletion emptied a chat (each such case is ambiguous in the difference).
    pub emptied_chats: usize,
    /// Pinned peers per folder, in pinned order (a peer whose row may have been re-created may
    /// linger here; the comparison allows for it).
    pub pinned: BTreeMap<i64, Vec<i64>>,
    /// Dialog filters by id, as the last `updateDialogFilter` gave them, and their stored order.
    pub filters: BTreeMap<i64, Value>,
    pub filter_order: Vec<i64>,
    /// Notification settings of chats that have any.
    pub notify: BTreeMap<i64, Value>,
    /// The last `peerSettings` each chat got.
    pub peer_settings: BTreeMap<i64, Value>,
    /// Chats whose guess depends on where this fold's answers began and ended: a gap held a new
    /// message of a chat that a deletion had emptied and an update without pts naming that chat
    /// (a pin, an unread mark), in an order the answer does not give (see `apply_gap`).
    pub order_guessed: BTreeSet<i64>,
}

pub(crate) fn peer_user(v: &Value) -> i64 {
    assert_eq!(v["_"], "peerUser", "peer {v}");
    v["user_id"]
        .as_i64()
        .unwrap_or_else(|| panic!("peer user_id in {v}"))
}

fn int(v: &Value, field: &str) -> i32 {
    v[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} missing in {v}")) as i32
}

fn id_list(v: &Value) -> Vec<i32> {
    v.as_array()
        .unwrap_or_else(|| panic!("id list {v}"))
        .iter()
        .map(|x| x.as_i64().expect("id") as i32)
        .collect()
}

/// The chats an update without pts proves to have a dialog (see `Replica::existing_dialog`).
fn dialogs_named(u: &Value) -> Vec<i64> {
    match u["_"].as_str().unwrap_or_default() {
        "updateDialogPinned" | "updateDialogUnreadMark" => vec![peer_user(&u["peer"]["peer"])],
        "updatePinnedDialogs" => u["order"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| peer_user(&p["peer"]))
            .collect(),
        _ => Vec::new(),
    }
}

/// Two folds of the same log (one followed incrementally, one from 0) know the same: exactly, except
/// where one of them had to guess the order of a gap (`order_guessed`): there both guesses must
/// still share a possible state (each is checked against the server by `assert_matches`).
pub(crate) fn assert_folds_agree(followed: &Replica, from0: &Replica) {
    assert_eq!(
        (followed.pts, &followed.messages, &followed.deleted),
        (from0.pts, &from0.messages, &from0.deleted)
    );
    assert_eq!(
        followed.dialogs.keys().collect::<Vec<_>>(),
        from0.dialogs.keys().collect::<Vec<_>>(),
        "both folds know the same chats"
    );
    for (peer, f) in &followed.dialogs {
        let z = &from0.dialogs[peer];
        if followed.order_guessed.contains(peer) || from0.order_guessed.contains(peer) {
            assert!(
                !f.candidates.is_disjoint(&z.candidates) && !f.org.is_disjoint(&z.org),
                "the guesses of the chat with {peer} share a possible state: followed {f:?}, from 0 {z:?}"
            );
        } else {
            assert_eq!(
                f, z,
                "incremental and from-0 folds agree on the chat with {peer}"
            );
        }
    }
    assert_eq!(followed.blocked, from0.blocked);
    assert_eq!(
        (&followed.pinned, &followed.filters, &followed.filter_order),
        (&from0.pinned, &from0.filters, &from0.filter_order)
    );
    assert_eq!(
        (&followed.notify, &followed.peer_settings),
        (&from0.notify, &from0.peer_settings)
    );
}

impl Replica {
    pub fn new(me: i64) -> Self {
        Self {
            me,
            ..Self::default()
        }
    }

    pub fn visible_in(&self, peer: i64) -> impl DoubleEndedIterator<Item = (&i32, &Value)> {
        self.messages
            .iter()
            .filter(move |(id, m)| !self.deleted.contains(id) && peer_user(&m["peer_id"]) == peer)
    }

    fn unread_in(&self, peer: i64, read_inbox_max_id: i32) -> i32 {
        self.visible_in(peer)
            .filter(|(id, m)| **id > read_inbox_max_id && m["out"] == false)
            .count() as i32
    }

    fn top_of(&self, peer: i64) -> Option<(i32, i32)> {
        self.visible_in(peer)
            .last()
            .map(|(id, m)| (*id, int(m, "date")))
    }

    /// Applies one `updates.getDifference` answer that starts at `self.pts`; answers how many events
    /// it carried. Events are put back in pts order: every update that carries pts must start where
    /// the previous event ended, and the gaps between them are filled by `new_messages` (one pts each)
    /// and `updatePeerBlocked` (one pts each, carried without pts) — so this also checks the client's
    /// `pts - pts_count == previous pts` rule over the whole answer.
    pub fn apply_difference(&mut self, diff: &Value) -> usize {
        let kind = diff["_"].as_str().unwrap_or_default();
        let state = match kind {
            "updates.differenceEmpty" => return 0,
            "updates.difference" => &diff["state"],
            "updates.differenceSlice" => &diff["intermediate_state"],
            other => panic!("not a difference: {other} in {diff}"),
        };
        assert_eq!(diff["chats"], json!([]), "private chats only");
        assert_eq!(diff["new_encrypted_messages"], json!([]));
        for u in diff["users"].as_array().expect("users") {
            self.users
                .insert(u["id"].as_i64().expect("user id"), u.clone());
        }
        let new_messages = diff["new_messages"].as_array().expect("new_messages");
        let other_updates = diff["other_updates"].as_array().expect("other_updates");
        let end = int(state, "pts");
        let mut news = new_messages.iter();
        let mut cursor = self.pts;
        let mut blocked_since = 0;
        // Updates without pts sit somewhere among the new messages of their gap; which messages
        // came first is not in the answer. Like a client, the fold applies a gap's messages first:
        // an organization update names a dialog that exists, so the message that created it is
        // never after it.
        let mut ptsless: Vec<&Value> = Vec::new();
        for u in other_updates {
            let kind = u["_"].as_str().unwrap_or_default();
            if PTSLESS_UPDATES.contains(&kind) {
                assert!(u.get("pts").is_none(), "{kind} carries no pts: {u}");
                blocked_since += 1;
                ptsless.push(u);
                continue;
            }
            let (pts, count) = (int(u, "pts"), int(u, "pts_count"));
            assert!(count >= 1, "an update in a difference takes pts: {u}");
            let gap = pts - count - cursor - blocked_since;
            assert!(
                gap >= 0,
                "{} at pts {pts} (pts_count {count}) starts before the previous event ends at {cursor} (+{blocked_since} blocks)",
                u["_"]
            );
            self.apply_gap(&mut news, gap, &mut ptsless, || {
                format!("pts gap before {u}: {gap} pts not covered by new_messages (previous pts {cursor})")
            });
            self.apply_update(u);
            cursor = pts;
            blocked_since = 0;
        }
        let gap = end - cursor - blocked_since;
        assert!(
            gap >= 0,
            "state pts {end} is before the last update's pts {cursor}"
        );
        self.apply_gap(&mut news, gap, &mut ptsless, || {
            format!("state pts {end}: {gap} pts not covered by new_messages")
        });
        assert!(
            news.next().is_none(),
            "more new_messages than pts between {} and {end}",
            self.pts
        );
        let events = new_messages.len() + other_updates.len();
        assert_eq!(
            events == 0,
            end == self.pts,
            "an answer that moves pts carries events"
        );
        self.pts = end;
        events
    }

    /// Applies one gap between updates that carry pts: its `gap` new messages, then the updates
    /// without pts that sat among them.
    ///
    /// Where in the gap each update without pts was is not in the answer, so a chat that a deletion
    /// emptied (`may_be_gone`) and that both gets a message and is named by such an update (a pin,
    /// an unread mark) is ambiguous: pin-then-message means the dialog was kept (its old watermarks),
    /// message-then-pin that the message may have re-created a removed dialog (watermarks from 0).
    /// Applying the messages first keeps both possibilities (the guess stays sound), but a fold
    /// whose answers split that gap elsewhere (a device following the log incrementally) knows the
    /// order and keeps only one; such chats are listed in `order_guessed`.
    fn apply_gap<'a>(
        &mut self,
        news: &mut impl Iterator<Item = &'a Value>,
        gap: i32,
        ptsless: &mut Vec<&Value>,
        why: impl Fn() -> String,
    ) {
        let named: BTreeSet<i64> = ptsless.iter().flat_map(|u| dialogs_named(u)).collect();
        for _ in 0..gap {
            let m = news.next().unwrap_or_else(|| panic!("{}", why()));
            let peer = peer_user(&m["peer_id"]);
            if named.contains(&peer) && self.dialogs.get(&peer).is_some_and(|d| d.may_be_gone) {
                self.order_guessed.insert(peer);
            }
            self.apply_new_message(m);
        }
        for p in ptsless.drain(..) {
            self.apply_update(p);
        }
    }

    fn apply_new_message(&mut self, m: &Value) {
        assert_eq!(m["_"], "message", "{m}");
        let id = int(m, "id");
        assert!(id >= 1);
        if let Some((last, _)) = self.messages.last_key_value() {
            assert!(id > *last, "box ids grow with pts: {id} after {last}");
        }
        let peer = peer_user(&m["peer_id"]);
        let from = peer_user(&m["from_id"]);
        if peer == self.me {
            assert!(
                m["out"] == true && from == self.me,
                "Saved Messages are outgoing: {m}"
            );
        } else {
            assert_eq!(
                m["out"] == true,
                from == self.me,
                "out iff sent by the owner: {m}"
            );
        }
        self.messages.insert(id, m.clone());
        let fresh = DialogGuess {
            candidates: BTreeSet::from([(0, 0)]),
            may_be_gone: false,
            org: BTreeSet::from([(0, false, false)]),
        };
        self.dialogs
            .entry(peer)
            .and_modify(|d| {
                if d.may_be_gone {
                    d.candidates.insert((0, 0));
                    d.org.insert((0, false, false));
                    d.may_be_gone = false;
                }
            })
            .or_insert(fresh);
        *self.applied.entry("new_message").or_default() += 1;
    }

    fn apply_update(&mut self, u: &Value) {
        match u["_"].as_str().unwrap_or_default() {
            "updateNewMessage" => {
                panic!("updateNewMessage belongs in new_messages of a difference: {u}")
            }
            "updateEditMessage" => {
                assert_eq!(u["pts_count"], 1);
                let m = &u["message"];
                let id = int(m, "id");
                let old = self
                    .messages
                    .get(&id)
                    .unwrap_or_else(|| panic!("edit of unknown box {id}: {u}"));
                assert!(!self.deleted.contains(&id), "edit of deleted box {id}");
                for same in [
                    "out",
                    "from_id",
                    "peer_id",
                    "date",
                    "fwd_from",
                    "silent",
                    "noforwards",
                ] {
                    assert_eq!(old[same], m[same], "an edit keeps {same}: {old} -> {m}");
                }
                assert!(m["edit_date"].as_i64().is_some(), "edit_date set: {m}");
                self.messages.insert(id, m.clone());
                *self.applied.entry("edit_message").or_default() += 1;
            }
            "updateDeleteMessages" => {
                let ids = id_list(&u["messages"]);
                if ids.is_empty() {
                    // deleteHistory on a chat with no message left: one pts, and an empty dialog
                    // (which one, the update does not say) was removed.
                    assert_eq!(int(u, "pts_count"), 1, "an empty batch takes one pts: {u}");
                    let empty: Vec<i64> = self
                        .dialogs
                        .keys()
                        .copied()
                        .filter(|&peer| self.visible_in(peer).next().is_none())
                        .collect();
                    assert!(
                        !empty.is_empty(),
                        "an empty batch without an empty dialog: {u}"
                    );
                    for peer in empty {
                        if let Some(d) = self.dialogs.get_mut(&peer) {
                            d.may_be_gone = true;
                        }
                    }
                    *self.applied.entry("delete_messages").or_default() += 1;
                    return;
                }
                assert_eq!(
                    ids.len() as i32,
                    int(u, "pts_count"),
                    "pts_count is the number of ids: {u}"
                );
                assert_eq!(
                    ids.iter().collect::<BTreeSet<_>>().len(),
                    ids.len(),
                    "distinct ids: {u}"
                );
                let mut peers = BTreeSet::new();
                for id in &ids {
                    let m = self
                        .messages
                        .get(id)
                        .unwrap_or_else(|| panic!("delete of unknown box {id}: {u}"));
                    peers.insert(peer_user(&m["peer_id"]));
                    assert!(self.deleted.insert(*id), "box {id} deleted twice: {u}");
                }
                for peer in peers {
                    if self.visible_in(peer).next().is_none() {
                        if let Some(d) = self.dialogs.get_mut(&peer) {
                            d.may_be_gone = true;
                            self.emptied_chats += 1;
                        }
                    }
                }
                *self.applied.entry("delete_messages").or_default() += 1;
            }
            "updateReadHistoryInbox" => {
                assert_eq!(u["pts_count"], 1);
                assert_eq!(u["folder_id"], 0);
                let peer = peer_user(&u["peer"]);
                let (max_id, still) = (int(u, "max_id"), int(u, "still_unread_count"));
                let mut d = self
                    .dialogs
                    .get(&peer)
                    .cloned()
                    .unwrap_or_else(|| panic!("read of a chat without a dialog: {u}"));
                // Reads happen only on an existing dialog: it was kept.
                d.may_be_gone = false;
                d.org = d.org.iter().map(|&(f, p, _)| (f, p, false)).collect();
                d.candidates = d
                    .candidates
                    .iter()
                    .map(|&(inbox, outbox)| (inbox.max(max_id), outbox))
                    .filter(|&(inbox, _)| self.unread_in(peer, inbox) == still)
                    .collect();
                assert!(
                    !d.candidates.is_empty(),
                    "still_unread_count {still} matches no possible state: {u}"
                );
                self.dialogs.insert(peer, d);
                *self.applied.entry("read_history_inbox").or_default() += 1;
            }
            "updateReadHistoryOutbox" => {
                assert_eq!(u["pts_count"], 1);
                let peer = peer_user(&u["peer"]);
                let max_id = int(u, "max_id");
                let m = self
                    .messages
                    .get(&max_id)
                    .unwrap_or_else(|| panic!("outbox read of unknown box: {u}"));
                assert!(
                    m["out"] == true && peer_user(&m["peer_id"]) == peer,
                    "outbox read names an outgoing message of the chat: {u}"
                );
                let d = self
                    .dialogs
                    .get_mut(&peer)
                    .unwrap_or_else(|| panic!("outbox read without a dialog: {u}"));
                d.may_be_gone = false;
                d.candidates = d
                    .candidates
                    .iter()
                    .map(|&(inbox, outbox)| (inbox, outbox.max(max_id)))
                    .collect();
                *self.applied.entry("read_history_outbox").or_default() += 1;
            }
            "updateReadMessagesContents" => {
                let ids = id_list(&u["messages"]);
                assert_eq!(ids.len() as i32, int(u, "pts_count"), "{u}");
                for id in ids {
                    let m = self
                        .messages
                        .get_mut(&id)
                        .unwrap_or_else(|| panic!("contents read of unknown box {id}"));
                    m["media_unread"] = json!(false);
                }
                *self.applied.entry("read_message_contents").or_default() += 1;
            }
            "updatePeerBlocked" => {
                let peer = peer_user(&u["peer_id"]);
                if u["blocked"] == true {
                    assert!(
                        self.blocked.insert(peer),
                        "blocked twice without unblock: {u}"
                    );
                } else {
                    assert!(self.blocked.remove(&peer), "unblocked without a block: {u}");
                }
                *self.applied.entry("peer_blocked").or_default() += 1;
            }
            "updateDialogPinned" => {
                let peer = peer_user(&u["peer"]["peer"]);
                let folder = u["folder_id"].as_i64().unwrap_or(0);
                let pinned = u["pinned"] == true;
                let d = self.existing_dialog(peer, u);
                assert!(
                    d.org.iter().any(|c| c.0 == folder),
                    "pinned in folder {folder}, where the dialog cannot be: {u} {:?}",
                    d.org
                );
                d.org = d.org.iter().map(|&(_, _, m)| (folder, pinned, m)).collect();
                for list in self.pinned.values_mut() {
                    list.retain(|p| *p != peer);
                }
                if pinned {
                    self.pinned.entry(folder).or_default().insert(0, peer);
                }
                *self.applied.entry("dialog_pinned").or_default() += 1;
            }
            "updatePinnedDialogs" => {
                let folder = u["folder_id"].as_i64().unwrap_or(0);
                let order: Vec<i64> = u["order"]
                    .as_array()
                    .unwrap_or_else(|| panic!("order in {u}"))
                    .iter()
                    .map(|p| peer_user(&p["peer"]))
                    .collect();
                for (peer, d) in self.dialogs.iter_mut() {
                    if order.contains(peer) {
                        assert!(
                            d.org.iter().any(|c| c.0 == folder),
                            "{peer} pinned in folder {folder}, where it cannot be: {u}"
                        );
                        d.may_be_gone = false;
                        d.org = d.org.iter().map(|&(_, _, m)| (folder, true, m)).collect();
                    } else {
                        d.org = d
                            .org
                            .iter()
                            .map(|&(f, p, m)| (f, p && f != folder, m))
                            .collect();
                    }
                }
                for peer in &order {
                    assert!(
                        self.dialogs.contains_key(peer),
                        "pinned unknown {peer}: {u}"
                    );
                }
                for list in self.pinned.values_mut() {
                    list.retain(|p| !order.contains(p));
                }
                self.pinned.insert(folder, order);
                *self.applied.entry("pinned_dialogs").or_default() += 1;
            }
            "updateDialogUnreadMark" => {
                let peer = peer_user(&u["peer"]["peer"]);
                let unread = u["unread"] == true;
                let d = self.existing_dialog(peer, u);
                d.org = d.org.iter().map(|&(f, p, _)| (f, p, unread)).collect();
                *self.applied.entry("dialog_unread_mark").or_default() += 1;
            }
            "updateFolderPeers" => {
                assert_eq!(u["pts_count"], 1, "{u}");
                let moves = u["folder_peers"]
                    .as_array()
                    .unwrap_or_else(|| panic!("folder_peers in {u}"));
                assert!(!moves.is_empty(), "an empty move is not logged: {u}");
                for fp in moves {
                    assert_eq!(fp["_"], "folderPeer");
                    let peer = peer_user(&fp["peer"]);
                    let folder = fp["folder_id"].as_i64().expect("folder_id");
                    assert!(folder == 0 || folder == 1, "{u}");
                    let d = self.existing_dialog(peer, u);
                    // The projector moves (and unpins) only a dialog that is elsewhere.
                    d.org = d
                        .org
                        .iter()
                        .map(|&(f, p, m)| {
                            if f == folder {
                                (f, p, m)
                            } else {
                                (folder, false, m)
                            }
                        })
                        .collect();
                    for (f, list) in self.pinned.iter_mut() {
                        if *f != folder {
                            list.retain(|p| *p != peer);
                        }
                    }
                }
                *self.applied.entry("folder_peers").or_default() += 1;
            }
            "updateDialogFilter" => {
                let id = u["id"].as_i64().expect("filter id");
                assert!(id >= 2, "{u}");
                match u.get("filter") {
                    None => {
                        self.filters.remove(&id);
                        self.filter_order.retain(|f| *f != id);
                    }
                    Some(f) => {
                        assert_eq!((&f["_"], &f["id"]), (&json!("dialogFilter"), &json!(id)));
                        self.filters.insert(id, f.clone());
                        if !self.filter_order.contains(&id) {
                            self.filter_order.push(id);
                        }
                    }
                }
                *self.applied.entry("dialog_filter").or_default() += 1;
            }
            "updateDialogFilterOrder" => {
                self.filter_order = u["order"]
                    .as_array()
                    .unwrap_or_else(|| panic!("order in {u}"))
                    .iter()
                    .map(|v| v.as_i64().expect("filter id"))
                    .collect();
                *self.applied.entry("dialog_filter_order").or_default() += 1;
            }
            "updateDialogFilters" => {
                // No fields: a client reloads getDialogFilters (folder tags were switched).
                *self.applied.entry("dialog_filter_tags").or_default() += 1;
            }
            "updatePeerSettings" => {
                let peer = peer_user(&u["peer"]);
                assert_eq!(u["settings"]["_"], "peerSettings", "{u}");
                self.peer_settings.insert(peer, u["settings"].clone());
                *self.applied.entry("peer_settings").or_default() += 1;
            }
            "updateContactsReset" => {
                *self.applied.entry("contacts_reset").or_default() += 1;
            }
            "updateNotifySettings" => {
                assert_eq!(u["peer"]["_"], "notifyPeer", "{u}");
                let peer = peer_user(&u["peer"]["peer"]);
                let settings = &u["notify_settings"];
                assert_eq!(settings["_"], "peerNotifySettings", "{u}");
                if settings.as_object().map_or(0, |o| o.len()) > 1 {
                    self.notify.insert(peer, settings.clone());
                } else {
                    self.notify.remove(&peer);
                }
                *self.applied.entry("notify_settings").or_default() += 1;
            }
            other => panic!("unexpected update {other}: {u}"),
        }
    }

    /// The dialog an organization update names: it must exist (the server refuses to organize a
    /// chat without a dialog), so it was not removed.
    fn existing_dialog(&mut self, peer: i64, u: &Value) -> &mut DialogGuess {
        let d = self
            .dialogs
            .get_mut(&peer)
            .unwrap_or_else(|| panic!("{} of a chat without a dialog: {u}", u["_"]));
        d.may_be_gone = false;
        d
    }

    /// The filter ids in the order getDialogFilters lists them: the stored order (0 is "All
    /// chats"), then filters missing from it by id.
    pub fn filter_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .filter_order
            .iter()
            .copied()
            .filter(|id| self.filters.contains_key(id))
            .collect();
        for id in self.filters.keys() {
            if !ids.contains(id) {
                ids.push(*id);
            }
        }
        ids
    }

    /// The contacts as the users' objects last received say (the owner's names for them).
    pub fn contacts(&self) -> BTreeMap<i64, (Value, Value)> {
        self.users
            .iter()
            .filter(|(_, u)| u["contact"] == true)
            .map(|(id, u)| (*id, (u["first_name"].clone(), u["last_name"].clone())))
            .collect()
    }

    /// Compares the organization the fold knows with the server's queries: filters and their order,
    /// contacts and their names, notification and peer settings, unread marks.
    pub async fn assert_organization_matches(&self, dev: &Device) {
        let f = dev.rpc("messages.getDialogFilters", json!({})).await;
        let listed = f["filters"].as_array().expect("filters");
        assert_eq!(listed[0]["_"], "dialogFilterDefault");
        let ids: Vec<i64> = listed[1..]
            .iter()
            .map(|x| x["id"].as_i64().expect("id"))
            .collect();
        assert_eq!(ids, self.filter_ids(), "filters and their order");
        for x in &listed[1..] {
            assert_eq!(
                x,
                &self.filters[&x["id"].as_i64().unwrap()],
                "filter as updated"
            );
        }
        let c = dev.rpc("contacts.getContacts", json!({})).await;
        let server: BTreeMap<i64, (Value, Value)> = c["users"]
            .as_array()
            .expect("users")
            .iter()
            .map(|u| {
                (
                    u["id"].as_i64().unwrap(),
                    (u["first_name"].clone(), u["last_name"].clone()),
                )
            })
            .collect();
        assert_eq!(server, self.contacts(), "contacts under the owner's names");
        let mut peers: BTreeSet<i64> = self.dialogs.keys().copied().collect();
        peers.extend(self.notify.keys());
        for peer in peers {
            let input = self.input_peer(peer);
            let n = dev
                .rpc(
                    "account.getNotifySettings",
                    json!({"peer": {"_": "inputNotifyPeer", "peer": input}}),
                )
                .await;
            let want = self
                .notify
                .get(&peer)
                .cloned()
                .unwrap_or_else(|| json!({"_": "peerNotifySettings"}));
            assert_eq!(n, want, "notify settings of the chat with {peer}");
        }
        for (peer, settings) in &self.peer_settings {
            let r = dev
                .rpc(
                    "messages.getPeerSettings",
                    json!({"peer": self.input_peer(*peer)}),
                )
                .await;
            assert_eq!(&r["settings"], settings, "peer settings of {peer}");
        }
    }

    /// The input peer of a chat, made from the `user` objects the differences carried (so their
    /// access hashes are the viewer's, or the server refuses them).
    pub fn input_peer(&self, peer: i64) -> Value {
        if peer == self.me {
            return self_peer();
        }
        let u = self
            .users
            .get(&peer)
            .unwrap_or_else(|| panic!("no user object for {peer} in any difference"));
        json!({"_": "inputPeerUser", "user_id": peer, "access_hash": u["access_hash"]})
    }

    /// Compares the fold with what the server answers this device: the dialog list (order, peers,
    /// top messages, read watermarks, unread counts) and, with `histories`, every chat's history.
    pub async fn assert_matches(&self, dev: &Device, histories: bool) -> ReplicaMatch {
        assert_eq!(dev.user_id, self.me);
        let state = dev.state().await;
        assert_eq!(
            int(&state, "pts"),
            self.pts,
            "the fold is at getState's pts"
        );
        let server_folders: BTreeMap<i64, Vec<(Value, Option<Value>)>> = BTreeMap::from([
            (0, folder_dialogs(dev, 0).await),
            (1, folder_dialogs(dev, 1).await),
        ]);
        let server: Vec<(Value, Option<Value>)> =
            server_folders.values().flatten().cloned().collect();
        let mut report = ReplicaMatch::default();
        // Per folder, the unpinned dialogs in list order (the pinned ones lead, checked below).
        let mut expected_order: BTreeMap<i64, Vec<(i32, i32, i64)>> = BTreeMap::new();
        let mut unread_total = 0;
        let mut seen = BTreeSet::new();
        for (d, top) in &server {
            let peer = peer_user(&d["peer"]);
            seen.insert(peer);
            let guess = self
                .dialogs
                .get(&peer)
                .unwrap_or_else(|| panic!("getDialogs has {peer} that the fold never saw: {d}"));
            let (top_id, top_date) = self.top_of(peer).unwrap_or((0, 0));
            assert_eq!(int(d, "top_message"), top_id, "top_message of {peer}: {d}");
            let row = (int(d, "read_inbox_max_id"), int(d, "read_outbox_max_id"));
            let unread = int(d, "unread_count");
            assert!(
                guess.candidates.contains(&row),
                "read watermarks of the dialog with {peer}: server {row:?}, fold {:?}: {d}",
                guess.candidates
            );
            assert_eq!(
                unread,
                self.unread_in(peer, row.0),
                "unread_count of the dialog with {peer}: {d}"
            );
            let org = (
                d["folder_id"].as_i64().unwrap_or(0),
                d["pinned"] == true,
                d["unread_mark"] == true,
            );
            assert!(
                guess.org.contains(&org),
                "(folder, pinned, unread_mark) of the dialog with {peer}: server {org:?}, fold {:?}: {d}",
                guess.org
            );
            if guess.org.len() > 1 {
                report.ambiguous_organization += 1;
            }
            if guess.candidates.len() > 1 {
                report.ambiguous_watermarks += 1;
            }
            if top_id == 0 {
                assert!(top.is_none());
                report.empty_dialogs_kept += 1;
            } else {
                let m = top.as_ref().unwrap_or_else(|| {
                    panic!("top message {top_id} of {peer} missing from the answer")
                });
                assert_eq!(
                    m, &self.messages[&top_id],
                    "top message of the dialog with {peer}"
                );
            }
            unread_total += unread;
            if !org.1 {
                expected_order
                    .entry(org.0)
                    .or_default()
                    .push((top_date, top_id, peer));
            }
        }
        for (peer, guess) in &self.dialogs {
            if !seen.contains(peer) {
                assert!(
                    guess.may_be_gone && self.top_of(*peer).is_none(),
                    "the fold has a dialog with {peer} that getDialogs lacks: {guess:?}"
                );
                report.empty_dialogs_gone += 1;
            }
        }
        for list in expected_order.values() {
            let mut sorted = list.clone();
            sorted.sort_by(|a, b| b.cmp(a));
            assert_eq!(
                list, &sorted,
                "getDialogs is ordered by (top date, top id, peer) descending after the pins"
            );
        }
        // Each folder's list starts with its pinned dialogs, in the pinned order the fold knows.
        for (folder, list) in &server_folders {
            let pinned: Vec<i64> = list
                .iter()
                .take_while(|(d, _)| d["pinned"] == true)
                .map(|(d, _)| peer_user(&d["peer"]))
                .collect();
            assert!(
                list.iter()
                    .skip(pinned.len())
                    .all(|(d, _)| d["pinned"] == false),
                "pinned dialogs lead folder {folder}"
            );
            let fold: Vec<i64> = self
                .pinned
                .get(folder)
                .map(|l| l.iter().copied().filter(|p| pinned.contains(p)).collect())
                .unwrap_or_default();
            assert_eq!(pinned, fold, "pinned order of folder {folder}");
        }
        let marks = dev.rpc("messages.getDialogUnreadMarks", json!({})).await;
        let marked: BTreeSet<i64> = marks
            .as_array()
            .unwrap()
            .iter()
            .map(|m| peer_user(&m["peer"]))
            .collect();
        let listed: BTreeSet<i64> = server
            .iter()
            .filter(|(d, _)| d["unread_mark"] == true)
            .map(|(d, _)| peer_user(&d["peer"]))
            .collect();
        assert_eq!(
            marked, listed,
            "getDialogUnreadMarks agrees with getDialogs"
        );
        self.assert_organization_matches(dev).await;
        assert_eq!(
            int(&state, "unread_count"),
            unread_total,
            "getState unread_count is the dialogs' sum"
        );
        report.dialogs = server.len();
        if histories {
            for peer in seen {
                let history = full_history(dev, &self.input_peer(peer)).await;
                let expected: Vec<&Value> = self.visible_in(peer).map(|(_, m)| m).rev().collect();
                assert_eq!(
                    history.len(),
                    expected.len(),
                    "history length of the chat with {peer}"
                );
                for (got, want) in history.iter().zip(expected) {
                    assert_eq!(got, want, "history of the chat with {peer}");
                }
                report.messages += history.len();
            }
        }
        report
    }
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ReplicaMatch {
    pub dialogs: usize,
    pub messages: usize,
    pub empty_dialogs_kept: usize,
    pub empty_dialogs_gone: usize,
    pub ambiguous_watermarks: usize,
    pub ambiguous_organization: usize,
}

/// Every dialog of folder 0 with its top message (if any), in list order.
pub(crate) async fn all_dialogs(dev: &Device) -> Vec<(Value, Option<Value>)> {
    folder_dialogs(dev, 0).await
}

/// Every dialog of a folder (0 main list, 1 archive) with its top message, in list order.
pub(crate) async fn folder_dialogs(dev: &Device, folder: i64) -> Vec<(Value, Option<Value>)> {
    let r = dev
        .rpc(
            "messages.getDialogs",
            json!({"limit": 100, "folder_id": folder}),
        )
        .await;
    assert_eq!(
        r["_"], "messages.dialogs",
        "fewer than 100 dialogs: one page"
    );
    let tops: BTreeMap<i32, Value> = r["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (int(m, "id"), m.clone()))
        .collect();
    r["dialogs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let top = int(d, "top_message");
            (d.clone(), tops.get(&top).cloned())
        })
        .collect()
}

/// A chat's whole visible history, newest first, page by page.
pub(crate) async fn full_history(dev: &Device, peer: &Value) -> Vec<Value> {
    let mut all: Vec<Value> = Vec::new();
    let mut offset_id = 0;
    loop {
        let r = dev
            .rpc(
                "messages.getHistory",
                json!({"peer": peer, "offset_id": offset_id, "limit": 100}),
            )
            .await;
        let page = r["messages"].as_array().unwrap().clone();
        let n = page.len();
        if let Some(last) = page.last() {
            offset_id = int(last, "id");
        }
        all.extend(page);
        if n < 100 {
            break;
        }
    }
    let ids: Vec<i32> = all.iter().map(|m| int(m, "id")).collect();
    assert!(
        ids.windows(2).all(|w| w[0] > w[1]),
        "history pages are newest first without repeats: {ids:?}"
    );
    all
}

/// Pages `updates.getDifference` from `replica.pts` to the end, applying each page; answers the
/// kinds of the answers and their event counts. Checks each answer's `users` on the way.
pub(crate) async fn catch_up(dev: &Device, replica: &mut Replica) -> Vec<(String, usize)> {
    let mut pages = Vec::new();
    loop {
        let before = replica.pts;
        let diff = dev
            .rpc(
                "updates.getDifference",
                json!({"pts": before, "date": 0, "qts": 0}),
            )
            .await;
        check_users(replica.me, &diff);
        let events = replica.apply_difference(&diff);
        let kind = diff["_"].as_str().unwrap().to_string();
        assert!(events <= 100, "at most 100 events an answer, got {events}");
        if kind == "updates.differenceSlice" {
            assert_eq!(events, 100, "a slice is a full page");
        }
        pages.push((kind.clone(), events));
        if kind != "updates.differenceSlice" {
            break;
        }
        assert!(replica.pts > before, "a slice moves pts");
    }
    pages
}

/// Every user an answer mentions is in its `users`, once, as the viewer sees it.
pub(crate) fn check_users(viewer: i64, diff: &Value) {
    if diff["_"] == "updates.differenceEmpty" {
        return;
    }
    let users = diff["users"].as_array().unwrap();
    let ids: Vec<i64> = users.iter().map(|u| u["id"].as_i64().unwrap()).collect();
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        ids.len(),
        "users listed once: {ids:?}"
    );
    for u in users {
        assert_eq!(u["_"], "user");
        assert_eq!(u["self"] == true, u["id"] == viewer, "self flag: {u}");
        assert_eq!(
            u["phone"].is_string(),
            u["id"] == viewer,
            "phone only for oneself: {u}"
        );
        assert!(u["access_hash"].is_i64(), "access hash: {u}");
    }
    let mut mentioned = BTreeSet::new();
    for m in diff["new_messages"].as_array().unwrap() {
        mentioned.insert(peer_user(&m["from_id"]));
        mentioned.insert(peer_user(&m["peer_id"]));
        if m.get("fwd_from").is_some() {
            mentioned.insert(peer_user(&m["fwd_from"]["from_id"]));
        }
    }
    for u in diff["other_updates"].as_array().unwrap() {
        for key in ["peer", "peer_id"] {
            if let Some(p) = u.get(key) {
                // dialogPeer and notifyPeer wrap the peer.
                let p = if p["_"] == "peerUser" { p } else { &p["peer"] };
                mentioned.insert(peer_user(p));
            }
        }
        for fp in u["folder_peers"].as_array().into_iter().flatten() {
            mentioned.insert(peer_user(&fp["peer"]));
        }
        for dp in u["order"].as_array().into_iter().flatten() {
            if dp.is_object() {
                mentioned.insert(peer_user(&dp["peer"]));
            }
        }
        if let Some(f) = u.get("filter") {
            for key in ["pinned_peers", "include_peers", "exclude_peers"] {
                for p in f[key].as_array().into_iter().flatten() {
                    match p["_"].as_str() {
                        Some("inputPeerSelf") => mentioned.insert(viewer),
                        Some("inputPeerUser") => mentioned.insert(p["user_id"].as_i64().unwrap()),
                        other => panic!("filter peer {other:?} in {u}"),
                    };
                }
            }
        }
    }
    for id in mentioned {
        assert!(
            ids.contains(&id),
            "user {id} is mentioned but not in users: {diff}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------------

fn diff_kind(v: &Value) -> &str {
    v["_"].as_str().unwrap_or_default()
}

async fn get_difference(dev: &Device, pts: i64) -> Value {
    dev.rpc(
        "updates.getDifference",
        json!({"pts": pts, "date": 0, "qts": 0}),
    )
    .await
}

/// (kind, pts, pts_count) of every update that carries pts, in order.
fn pts_updates(diff: &Value) -> Vec<(String, i64, i64)> {
    diff["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u.get("pts").is_some())
        .map(|u| {
            (
                u["_"].as_str().unwrap().to_string(),
                u["pts"].as_i64().unwrap(),
                u["pts_count"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn texts(diff: &Value) -> Vec<String> {
    diff["new_messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["message"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn second_device_catches_up_from_the_log() {
    let s = TestServer::start().await;
    let a1 = s.login("+15550101", "Alice").await;
    let a2 = s.login("+15550101", "Alice").await;
    let bob = s.login("+15550102", "Bob").await;
    assert_eq!(a1.user_id, a2.user_id, "same phone, same account");
    assert_ne!(a1.token, a2.token, "every login is a new device");
    let (alice_id, bob_id) = (a1.user_id, bob.user_id);
    assert_eq!(
        get_difference(&a2, 0).await["_"],
        "updates.differenceEmpty",
        "nothing happened yet"
    );

    let to_bob = a1.peer_of("+15550102").await;
    let to_alice = bob.peer_of("+15550101").await;
    let bob_hash = to_bob["access_hash"].as_i64().unwrap();

    // Alice's log, event by event (pts after each):
    let m1 = a1.send(&to_bob, "m1").await; // 1 new (box 1)
    assert_eq!((m1["id"].as_i64(), m1["pts"].as_i64()), (Some(1), Some(1)));
    a1.send(&to_bob, "m2").await; // 2 new (box 2)
    bob.send(&to_alice, "r1").await; // 3 new (box 3, incoming)
    let reply = json!({"_": "inputReplyToMessage", "reply_to_msg_id": 1, "quote_text": "m", "quote_offset": 0});
    bob.rpc(
        "messages.sendMessage",
        json!({"peer": to_alice, "message": "r2", "random_id": 7001, "reply_to": reply}),
    )
    .await; // 4 new (box 4, a reply to Bob's box 1 = Alice's box 1)
    a1.send(&self_peer(), "note to self").await; // 5 new (box 5, Saved Messages)
    let edit = a1
        .rpc(
            "messages.editMessage",
            json!({"peer": to_bob, "id": 2, "message": "m2 (edited)"}),
        )
        .await; // 6 edit
    assert_eq!(edit["updates"][0]["pts"], 6);
    let read = a1
        .rpc("messages.readHistory", json!({"peer": to_bob, "max_id": 0}))
        .await; // 7 read inbox up to 4
    assert_eq!(
        (read["pts"].as_i64(), read["pts_count"].as_i64()),
        (Some(7), Some(1))
    );
    a1.send(&to_bob, "m3").await; // 8 new (box 6)
    a1.send(&to_bob, "m4").await; // 9 new (box 7)
    let del = a1
        .rpc(
            "messages.deleteMessages",
            json!({"id": [6, 7, 999], "revoke": true}),
        )
        .await; // 11 delete 2 ids
    assert_eq!(
        (del["pts"].as_i64(), del["pts_count"].as_i64()),
        (Some(11), Some(2)),
        "the bogus id is dropped"
    );
    let del = a1
        .rpc(
            "messages.deleteMessages",
            json!({"id": [3], "revoke": false}),
        )
        .await; // 12 delete r1 (Alice only)
    assert_eq!(
        (del["pts"].as_i64(), del["pts_count"].as_i64()),
        (Some(12), Some(1))
    );
    assert_eq!(
        a1.rpc("contacts.block", json!({"id": to_bob})).await,
        json!({"_": "boolTrue"})
    ); // 13 blocked
    assert_eq!(
        bob.send(&to_alice, "unseen").await["_"],
        "updateShortSentMessage"
    ); // nothing for Alice
    a1.rpc("contacts.unblock", json!({"id": to_bob})).await; // 14 unblocked
    bob.send(&to_alice, "r3").await; // 15 new (box 8, incoming, unread)
    let alice_pts = a1.state().await["pts"].as_i64().unwrap();
    assert_eq!(alice_pts, 15);

    // The offline device asks from 0.
    let diff = get_difference(&a2, 0).await;
    assert_eq!(diff_kind(&diff), "updates.difference", "{diff}");
    assert_eq!(
        diff["state"]["pts"].as_i64(),
        Some(alice_pts),
        "state.pts is getState's pts"
    );
    assert_eq!(diff["state"]["unread_count"], 1, "r3 is unread");
    assert_eq!(
        texts(&diff),
        ["m1", "m2", "r1", "r2", "note to self", "m3", "m4", "r3"],
        "own sends appear too"
    );
    let ids: Vec<i64> = diff["new_messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6, 7, 8], "Alice's box ids");
    let news = diff["new_messages"].as_array().unwrap();
    assert_eq!(
        news[0]["message"], "m1",
        "new_messages carry the text as sent, the edit comes later"
    );
    assert_eq!(news[1]["message"], "m2");
    assert_eq!(
        (news[0]["out"].as_bool(), news[2]["out"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(
        news[3]["reply_to"]["reply_to_msg_id"], 1,
        "Bob's reply to his box 1 is a reply to Alice's box 1"
    );
    assert_eq!(news[3]["reply_to"]["quote_text"], "m");
    assert_eq!(
        news[4]["peer_id"],
        json!({"_": "peerUser", "user_id": alice_id}),
        "Saved Messages"
    );
    assert_eq!(
        news[7]["from_id"],
        json!({"_": "peerUser", "user_id": bob_id})
    );
    assert_eq!(
        pts_updates(&diff),
        [
            ("updateEditMessage".to_string(), 6, 1),
            ("updateReadHistoryInbox".to_string(), 7, 1),
            ("updateDeleteMessages".to_string(), 11, 2),
            ("updateDeleteMessages".to_string(), 12, 1),
        ]
    );
    let others = diff["other_updates"].as_array().unwrap();
    assert_eq!(others.len(), 6);
    assert_eq!(others[0]["message"]["message"], "m2 (edited)");
    assert_eq!(others[0]["message"]["id"], 2);
    assert_eq!(others[1]["max_id"], 4);
    assert_eq!(others[1]["still_unread_count"], 0);
    assert_eq!(
        others[1]["peer"],
        json!({"_": "peerUser", "user_id": bob_id})
    );
    assert_eq!(others[2]["messages"], json!([6, 7]));
    assert_eq!(others[3]["messages"], json!([3]));
    assert_eq!(
        others[4],
        json!({"_": "updatePeerBlocked", "peer_id": {"_": "peerUser", "user_id": bob_id}, "blocked": true})
    );
    assert_eq!(others[5]["blocked"], false);
    // Users: Alice as herself, Bob with Alice's access hash for him (the one resolvePhone gave).
    let users: BTreeMap<i64, Value> = diff["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["id"].as_i64().unwrap(), u.clone()))
        .collect();
    assert_eq!(
        users.keys().copied().collect::<Vec<_>>(),
        [alice_id, bob_id]
    );
    assert_eq!(users[&bob_id]["access_hash"].as_i64(), Some(bob_hash));
    assert_eq!(
        a2.peer_of("+15550102").await["access_hash"].as_i64(),
        Some(bob_hash),
        "one account, one hash"
    );
    assert_eq!(users[&alice_id]["self"], true);
    assert_eq!(users[&bob_id]["first_name"], "Bob");
    check_users(alice_id, &diff);

    // Applying it reproduces what the first device sees.
    let mut replica = Replica::new(alice_id);
    assert_eq!(
        replica.apply_difference(&diff),
        14,
        "8 new messages, 6 other updates"
    );
    let seen = replica.assert_matches(&a1, true).await;
    assert_eq!(
        (seen.dialogs, seen.messages),
        (2, 5),
        "Bob (m1, m2, r2, r3) and Saved Messages"
    );
    replica.assert_matches(&a2, true).await;
    let dialogs = all_dialogs(&a1).await;
    let bob_dialog = &dialogs
        .iter()
        .find(|(d, _)| peer_user(&d["peer"]) == bob_id)
        .unwrap()
        .0;
    assert_eq!(
        (
            bob_dialog["top_message"].as_i64(),
            bob_dialog["unread_count"].as_i64()
        ),
        (Some(8), Some(1))
    );
    assert_eq!(bob_dialog["read_inbox_max_id"], 4);
    assert_eq!(replica.blocked, BTreeSet::new());

    // Up to date: nothing more.
    assert_eq!(
        get_difference(&a2, alice_pts).await["_"],
        "updates.differenceEmpty"
    );

    // More happens; the device asks from where it is.
    a1.send(&to_bob, "m5").await; // 16 new (box 9)
    bob.rpc(
        "messages.readHistory",
        json!({"peer": to_alice, "max_id": 0}),
    )
    .await; // 17 outbox read up to 9
    a1.rpc("messages.readHistory", json!({"peer": to_bob, "max_id": 0}))
        .await; // 18 inbox read up to 8
    a1.rpc(
        "messages.editMessage",
        json!({"peer": to_bob, "id": 9, "message": "m5!"}),
    )
    .await; // 19 edit
    let diff = get_difference(&a2, alice_pts).await;
    assert_eq!(diff_kind(&diff), "updates.difference");
    assert_eq!(texts(&diff), ["m5"]);
    assert_eq!(
        pts_updates(&diff),
        [
            ("updateReadHistoryOutbox".to_string(), 17, 1),
            ("updateReadHistoryInbox".to_string(), 18, 1),
            ("updateEditMessage".to_string(), 19, 1),
        ]
    );
    assert_eq!(diff["other_updates"][0]["max_id"], 9);
    assert_eq!(diff["state"]["pts"], 19);
    assert_eq!(diff["state"]["unread_count"], 0);
    assert_eq!(diff["users"].as_array().unwrap().len(), 2);
    check_users(alice_id, &diff);
    assert_eq!(replica.apply_difference(&diff), 4);
    replica.assert_matches(&a1, true).await;

    // Clearing and deleting whole chats: the fold keeps both possibilities (see DialogGuess).
    a1.rpc(
        "messages.deleteHistory",
        json!({"peer": self_peer(), "just_clear": false}),
    )
    .await; // 20
    a1.rpc(
        "messages.deleteHistory",
        json!({"peer": to_bob, "just_clear": true}),
    )
    .await; // 25 (5 ids: 1, 2, 4, 8, 9)
    catch_up(&a2, &mut replica).await;
    assert_eq!(replica.pts, 25);
    let seen = replica.assert_matches(&a1, true).await;
    assert_eq!(
        (
            seen.dialogs,
            seen.empty_dialogs_kept,
            seen.empty_dialogs_gone
        ),
        (1, 1, 1),
        "cleared chat kept, deleted chat gone"
    );
    bob.send(&to_alice, "after clear").await; // 26
    a1.send(&self_peer(), "saved again").await; // 27: the Saved Messages dialog comes back
    catch_up(&a2, &mut replica).await;
    let seen = replica.assert_matches(&a1, true).await;
    assert_eq!((seen.dialogs, seen.messages), (2, 2));

    // Errors.
    let (status, msg) = a2
        .rpc_err(
            "updates.getDifference",
            json!({"pts": 28, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(
        (status, msg.as_str()),
        (400, "PERSISTENT_TIMESTAMP_INVALID"),
        "pts ahead of the state"
    );
    let (status, msg) = a2
        .rpc_err(
            "updates.getDifference",
            json!({"pts": 1000000, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(
        (status, msg.as_str()),
        (400, "PERSISTENT_TIMESTAMP_INVALID")
    );
    let (status, msg) = a2
        .rpc_err(
            "updates.getDifference",
            json!({"pts": -1, "date": 0, "qts": 0}),
        )
        .await;
    assert_eq!(
        (status, msg.as_str()),
        (400, "PERSISTENT_TIMESTAMP_INVALID"),
        "negative pts"
    );
    let (status, _) = a2
        .rpc_err("updates.getDifference", json!({"date": 0}))
        .await;
    assert_eq!(status, 400, "pts is required");
    assert_eq!(
        get_difference(&a2, 27).await["_"],
        "updates.differenceEmpty"
    );

    // Bob's view through his own difference matches too (his log has the edits, the revoke, the
    // outbox read and no trace of the message Alice never got).
    let mut bob_replica = Replica::new(bob_id);
    catch_up(&bob, &mut bob_replica).await;
    assert_eq!(
        bob_replica.applied.get("read_history_outbox"),
        Some(&2),
        "Alice read up to r2, then up to r3"
    );
    bob_replica.assert_matches(&bob, true).await;
    s.stop().await;
}

#[tokio::test]
async fn long_difference_comes_in_slices_of_100() {
    let s = TestServer::start().await;
    let c1 = s.login("+15550111", "Carol").await;
    let c2 = s.login("+15550111", "Carol").await;
    let dave = s.login("+15550112", "Dave").await;
    let to_dave = c1.peer_of("+15550112").await;
    let to_carol = dave.peer_of("+15550111").await;
    // 250 events in Carol's log, each exactly one pts: her sends, Dave's sends, her edits and reads.
    let mut last_own = 0;
    for i in 0..250 {
        match i % 10 {
            3 | 7 => {
                dave.send(&to_carol, &format!("d{i}")).await;
            }
            5 => {
                let r = c1
                    .rpc(
                        "messages.editMessage",
                        json!({"peer": to_dave, "id": last_own, "message": format!("edit{i}")}),
                    )
                    .await;
                assert_eq!(r["updates"][0]["pts"], i + 1);
            }
            9 => {
                let r = c1
                    .rpc(
                        "messages.readHistory",
                        json!({"peer": to_dave, "max_id": 0}),
                    )
                    .await;
                assert_eq!(r["pts_count"], 1);
            }
            _ => {
                let r = c1.send(&to_dave, &format!("c{i}")).await;
                last_own = r["id"].as_i64().unwrap();
            }
        }
    }
    assert_eq!(c1.state().await["pts"], 250);

    let mut replica = Replica::new(c1.user_id);
    let first = get_difference(&c2, 0).await;
    assert_eq!(
        diff_kind(&first),
        "updates.differenceSlice",
        "250 pending events"
    );
    assert_eq!(first["intermediate_state"]["pts"], 100);
    assert!(first.get("state").is_none());
    assert_eq!(replica.apply_difference(&first), 100);
    assert_eq!(texts(&first)[..4], ["c0", "c1", "c2", "d3"]);
    let second = get_difference(&c2, 100).await;
    assert_eq!(diff_kind(&second), "updates.differenceSlice");
    assert_eq!(second["intermediate_state"]["pts"], 200);
    assert_eq!(replica.apply_difference(&second), 100);
    let third = get_difference(&c2, 200).await;
    assert_eq!(diff_kind(&third), "updates.difference");
    assert_eq!(third["state"]["pts"], 250);
    assert_eq!(replica.apply_difference(&third), 50);
    for page in [&first, &second, &third] {
        check_users(c1.user_id, page);
        // Pages carry 10 events per 10 pts: 6 own sends, 2 of Dave's, an edit and a read.
        let n = page["new_messages"].as_array().unwrap().len()
            + page["other_updates"].as_array().unwrap().len();
        let edits = pts_updates(page)
            .iter()
            .filter(|u| u.0 == "updateEditMessage")
            .count();
        assert_eq!(edits * 10, n);
    }
    // The same three pages again, as `catch_up` pages them.
    let mut again = Replica::new(c1.user_id);
    let pages = catch_up(&c2, &mut again).await;
    assert_eq!(
        pages,
        [
            ("updates.differenceSlice".to_string(), 100),
            ("updates.differenceSlice".to_string(), 100),
            ("updates.difference".to_string(), 50)
        ]
    );
    let seen = replica.assert_matches(&c2, true).await;
    assert_eq!(
        (seen.dialogs, seen.messages),
        (1, 200),
        "150 own sends and 50 of Dave's"
    );
    // Exactly 100 pending is one full answer; 101 is a slice of 100.
    let tail = get_difference(&c2, 150).await;
    assert_eq!(diff_kind(&tail), "updates.difference");
    assert_eq!(tail["state"]["pts"], 250);
    let over = get_difference(&c2, 149).await;
    assert_eq!(diff_kind(&over), "updates.differenceSlice");
    assert_eq!(over["intermediate_state"]["pts"], 249);
    s.stop().await;
}

/// Found by the mix (seed 7): a chat emptied by `deleteMessages` (the dialog stays), then pinned
/// (`updateDialogPinned`, no pts), then a new message. A device that followed the log saw the pin
/// before the message and knows the dialog was kept; a device reading it from 0 gets the pin and the
/// message in one gap, in no stated order, so for it the message may have re-created a removed
/// dialog (watermarks from 0). Both guesses hold the server's row; they differ only there.
#[tokio::test]
async fn a_pin_and_a_message_in_one_gap_after_an_emptying_delete() {
    let s = TestServer::start().await;
    let a1 = s.login("+15550121", "Alice").await;
    let a2 = s.login("+15550121", "Alice").await;
    let bob = s.login("+15550122", "Bob").await;
    let to_bob = a1.peer_of("+15550122").await;
    let to_alice = bob.peer_of("+15550121").await;
    let mut followed = Replica::new(a1.user_id);

    bob.send(&to_alice, "b1").await; // 1 new (box 1, incoming)
    a1.rpc("messages.readHistory", json!({"peer": to_bob, "max_id": 0}))
        .await; // 2 read inbox up to 1
    let del = a1
        .rpc(
            "messages.deleteMessages",
            json!({"id": [1], "revoke": false}),
        )
        .await; // 3 delete: the chat is empty, its dialog stays
    assert_eq!(
        (del["pts"].as_i64(), del["pts_count"].as_i64()),
        (Some(3), Some(1))
    );
    catch_up(&a2, &mut followed).await;
    let pin = a1
        .rpc(
            "messages.toggleDialogPin",
            json!({"pinned": true, "peer": {"_": "inputDialogPeer", "peer": to_bob}}),
        )
        .await; // 4 dialog_pinned (no pts in TL)
    assert_eq!(pin["_"], "boolTrue");
    catch_up(&a2, &mut followed).await;
    bob.send(&to_alice, "b2").await; // 5 new (box 2)
    catch_up(&a2, &mut followed).await;

    // The server kept the dialog: its read watermark survived the delete and the pin.
    let dialogs = all_dialogs(&a1).await;
    assert_eq!(dialogs.len(), 1);
    let d = &dialogs[0].0;
    assert_eq!(
        (
            d["read_inbox_max_id"].as_i64(),
            d["unread_count"].as_i64(),
            d["pinned"].as_bool(),
            d["top_message"].as_i64()
        ),
        (Some(1), Some(1), Some(true), Some(2))
    );

    let mut from0 = Replica::new(a1.user_id);
    let pages = catch_up(&a2, &mut from0).await;
    assert_eq!(pages, [("updates.difference".to_string(), 5)], "one answer");
    let bob_id = bob.user_id;
    assert_eq!(
        followed.dialogs[&bob_id].candidates,
        BTreeSet::from([(1, 0)]),
        "the follower saw the pin first: the dialog was kept"
    );
    assert_eq!(
        from0.dialogs[&bob_id].candidates,
        BTreeSet::from([(0, 0), (1, 0)]),
        "from 0, the message may have come first and re-created the dialog"
    );
    assert_eq!(
        (
            followed.order_guessed.len(),
            from0.order_guessed.iter().collect::<Vec<_>>()
        ),
        (0, vec![&bob_id])
    );
    followed.assert_matches(&a2, true).await;
    from0.assert_matches(&a2, true).await;
    assert_folds_agree(&followed, &from0);
    s.stop().await;
}
