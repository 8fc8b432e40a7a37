//! The push frame: one TL `Updates` per record, built with the same [`update_for_event`] that
//! `updates.getDifference` uses, so a device sees the same update whichever way it learns of it.

use std::sync::Arc;

use domain::access_hash::AccessHashKey;
use domain::UserId;

use super::hub::Frame;
use crate::ports::{ContactRecord, StoredEvent, UserRecord};
use crate::tl::{update_for_event, users_of_event, Update, Updates, User};

/// Users the frame of this event must carry (the owner sees them with its own access hashes).
pub fn frame_users(stored: &StoredEvent) -> Vec<UserId> {
    let mut ids = users_of_event(stored.user_id, &stored.event);
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// What the owner's contact list says about one user of a frame: the owner's entry for the user
/// (its names for them) and whether the user has the owner as a contact too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContactLink {
    pub contact: Option<ContactRecord>,
    pub they_have_owner: bool,
}

/// One user a frame carries: the account and the owner's contact link to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameUser {
    pub record: UserRecord,
    pub link: ContactLink,
}

/// `{"_":"updates","updates":[…],"users":[…],"chats":[],"date":…,"seq":0}` for the event's owner.
/// `users` are the users of [`frame_users`] (missing ones are left out, as getDifference does),
/// shown as every answer shows them to the owner: its access hashes and its contact names.
///
/// Every event takes pts, but some TL updates have none (`updatePeerBlocked`, the dialog
/// organization updates, …): such a frame also carries [`pts_carrier`], so a client's gap check
/// (Telethon's, TDesktop's PtsWaiter) moves to the event's pts instead of waiting for a pts it
/// would never be pushed (docs/events.md, "Updates without pts").
pub fn push_updates(stored: &StoredEvent, users: &[FrameUser], keys: &AccessHashKey) -> Updates {
    let viewer = stored.user_id;
    let update = update_for_event(stored, keys);
    let mut updates = vec![pts_carrier(stored)];
    if update.carries_pts() {
        updates.clear();
    }
    updates.insert(0, update);
    Updates::Updates {
        updates,
        users: users
            .iter()
            .map(|u| {
                User::for_viewer(viewer, &u.record, keys)
                    .with_contact(u.link.contact.as_ref(), u.link.they_have_owner)
            })
            .collect(),
        chats: Vec::new(),
        date: stored.date,
        seq: 0,
    }
}

/// The pts-bearing update that changes nothing: `updateReadMessagesContents` with no messages, at
/// the event's pts and pts_count. Clients apply it as a no-op after their gap check accepts it.
pub fn pts_carrier(stored: &StoredEvent) -> Update {
    Update::ReadMessagesContents {
        messages: Vec::new(),
        pts: stored.pts.get(),
        pts_count: stored.pts_count,
        date: stored.date,
    }
}

/// The serialized frame, ready to be shared by every device of the owner.
pub fn push_frame(
    stored: &StoredEvent,
    users: &[FrameUser],
    keys: &AccessHashKey,
    committed_at_micros: i64,
) -> Frame {
    let updates = push_updates(stored, users, keys);
    // Only a frame with the pts carrier has two updates.
    let to_origin = matches!(&updates, Updates::Updates { updates, .. } if updates.len() > 1);
    // TL objects are plain data; serializing them cannot fail.
    let json = serde_json::to_string(&updates).unwrap_or_default();
    Frame::new(
        stored.pts.get(),
        Arc::from(json),
        committed_at_micros,
        to_origin,
    )
}

#[cfg(test)]
mod tests {
    use domain::events::{ReadHistoryOutbox, UserEvent};
    use domain::{BoxId, Pts};
    use serde_json::Value;

    use super::*;
    use crate::ports::Origin;

    #[test]
    fn the_frame_is_an_updates_object_with_the_viewers_users() {
        let owner = UserId::new(1).unwrap();
        let peer = UserId::new(2).unwrap();
        let stored = StoredEvent {
            user_id: owner,
            pts: Pts::new(4).unwrap(),
            pts_count: 1,
            event: UserEvent::ReadHistoryOutbox(ReadHistoryOutbox {
                peer_id: peer,
                max_id: BoxId::new(3).unwrap(),
                date: 10,
            }),
            origin: Origin::default(),
            date: 1764489600,
        };
        assert_eq!(frame_users(&stored), vec![peer]);
        let keys = AccessHashKey::new(b"k".to_vec());
        let bob = UserRecord {
            id: peer,
            phone: "+1555".into(),
            first_name: "Bob".into(),
            last_name: String::new(),
            photo: None,
        };
        let plain = FrameUser {
            record: bob.clone(),
            link: ContactLink::default(),
        };
        let frame = push_frame(&stored, &[plain], &keys, 5);
        assert_eq!(frame.pts, 4);
        let v: Value = serde_json::from_str(&frame.json).unwrap();
        assert_eq!(v["_"], "updates");
        assert_eq!(v["updates"][0]["_"], "updateReadHistoryOutbox");
        assert_eq!(v["updates"][0]["pts"], 4);
        assert_eq!(v["users"][0]["id"], 2);
        assert_eq!(v["users"][0]["access_hash"], keys.for_pair(owner, peer));
        assert!(v["users"][0].get("phone").is_none());
        assert_eq!(v["chats"], Value::Array(vec![]));
        assert_eq!(
            (v["date"].as_i64(), v["seq"].as_i64()),
            (Some(1764489600), Some(0))
        );
        assert_eq!(v["users"][0]["first_name"], "Bob");
        assert_eq!(v["users"][0]["contact"], false);

        // The owner's contact entry: its names for the user, contact and mutual flags.
        let saved = FrameUser {
            record: bob,
            link: ContactLink {
                contact: Some(ContactRecord {
                    user_id: peer,
                    first_name: "Bobby".into(),
                    last_name: "B".into(),
                    phone: String::new(),
                    imported: false,
                    date: 1,
                }),
                they_have_owner: true,
            },
        };
        let v: Value = serde_json::from_str(&push_frame(&stored, &[saved], &keys, 5).json).unwrap();
        let u = &v["users"][0];
        assert_eq!(
            (
                &u["first_name"],
                &u["last_name"],
                &u["contact"],
                &u["mutual_contact"]
            ),
            (
                &Value::from("Bobby"),
                &Value::from("B"),
                &Value::from(true),
                &Value::from(true)
            )
        );
    }

    #[test]
    fn an_update_without_pts_comes_with_the_pts_carrier_and_goes_to_the_origin() {
        use domain::events::PeerBlocked;
        let owner = UserId::new(1).unwrap();
        let stored = StoredEvent {
            user_id: owner,
            pts: Pts::new(7).unwrap(),
            pts_count: 1,
            event: UserEvent::PeerBlocked(PeerBlocked {
                peer_id: UserId::new(2).unwrap(),
                blocked: true,
                my_stories_from: false,
                date: 10,
            }),
            origin: Origin::default(),
            date: 1764489600,
        };
        let keys = AccessHashKey::new(b"k".to_vec());
        let frame = push_frame(&stored, &[], &keys, 5);
        assert!(frame.to_origin);
        let v: Value = serde_json::from_str(&frame.json).unwrap();
        assert_eq!(v["updates"][0]["_"], "updatePeerBlocked");
        assert_eq!(
            v["updates"][1],
            serde_json::json!({"_": "updateReadMessagesContents", "messages": [], "pts": 7,
                "pts_count": 1, "date": 1764489600})
        );
        assert_eq!(v["updates"].as_array().unwrap().len(), 2);
    }
}
