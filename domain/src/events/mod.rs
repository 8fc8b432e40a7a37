//! The catalogue of per-user events: everything that can happen to one account's view. Each event
//! is appended to that account's pts log with a kind, a payload version and `pts_count` pts.
//! `docs/events.md` documents each kind; its tests keep the names here and there in step.

mod contacts;
mod delete_messages;
mod dialog_filter;
mod dialog_pinned;
mod dialog_unread_mark;
mod edit_message;
mod folder_peers;
mod message_v1;
mod new_message;
mod notify_settings;
mod peer_blocked;
mod pinned_dialogs;
mod profile_photo_changed;
mod read_history_inbox;
mod read_history_outbox;
mod read_message_contents;
pub mod schema;

pub use contacts::{ContactDeleted, ContactSaved, ContactsReset, PeerSettings, PeerSettingsFlags};
pub use delete_messages::{ClearHistory, DeleteMessages};
pub use dialog_filter::{
    DialogFilter, DialogFilterOrder, DialogFilterRules, DialogFilterTags, FilterSubject,
};
pub use dialog_pinned::DialogPinned;
pub use dialog_unread_mark::DialogUnreadMark;
pub use edit_message::EditMessage;
pub use folder_peers::{FolderPeer, FolderPeers};
pub use message_v1::{EditMessageV1, NewMessageV1, OwnerMessageV1};
pub use new_message::NewMessage;
pub use notify_settings::{NotifySettings, PeerNotify};
pub use peer_blocked::{PeerBlocked, PeerBlockedV1};
pub use pinned_dialogs::PinnedDialogs;
pub use profile_photo_changed::ProfilePhotoChanged;
pub use read_history_inbox::ReadHistoryInbox;
pub use read_history_outbox::ReadHistoryOutbox;
pub use read_message_contents::ReadMessageContents;

use serde::{de::DeserializeOwned, Serialize};
use thiserror::Error;

use crate::limits::MAX_EVENT_PAYLOAD_BYTES;

/// Bytes of a payload as compact JSON, counted without building the text.
pub fn payload_size(payload: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a Value into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, payload);
    count.0
}

/// An event's payload alone, serialized by its own type (one match for the Value and the text).
struct PayloadOf<'a>(&'a UserEvent);

impl Serialize for PayloadOf<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            UserEvent::NewMessage(e) => e.serialize(s),
            UserEvent::EditMessage(e) => e.serialize(s),
            UserEvent::DeleteMessages(e) => e.serialize(s),
            UserEvent::ReadHistoryInbox(e) => e.serialize(s),
            UserEvent::ReadHistoryOutbox(e) => e.serialize(s),
            UserEvent::ReadMessageContents(e) => e.serialize(s),
            UserEvent::PeerBlocked(e) => e.serialize(s),
            UserEvent::DialogPinned(e) => e.serialize(s),
            UserEvent::PinnedDialogs(e) => e.serialize(s),
            UserEvent::DialogUnreadMark(e) => e.serialize(s),
            UserEvent::FolderPeers(e) => e.serialize(s),
            UserEvent::DialogFilter(e) => e.serialize(s),
            UserEvent::DialogFilterOrder(e) => e.serialize(s),
            UserEvent::DialogFilterTags(e) => e.serialize(s),
            UserEvent::ContactSaved(e) => e.serialize(s),
            UserEvent::ContactDeleted(e) => e.serialize(s),
            UserEvent::ContactsReset(e) => e.serialize(s),
            UserEvent::PeerSettings(e) => e.serialize(s),
            UserEvent::NotifySettings(e) => e.serialize(s),
            UserEvent::ProfilePhotoChanged(e) => e.serialize(s),
        }
    }
}

/// One event of one account's log, before or after it got its pts.
#[derive(Debug, Clone, PartialEq)]
pub enum UserEvent {
    NewMessage(NewMessage),
    EditMessage(EditMessage),
    DeleteMessages(DeleteMessages),
    ReadHistoryInbox(ReadHistoryInbox),
    ReadHistoryOutbox(ReadHistoryOutbox),
    ReadMessageContents(ReadMessageContents),
    PeerBlocked(PeerBlocked),
    DialogPinned(DialogPinned),
    PinnedDialogs(PinnedDialogs),
    DialogUnreadMark(DialogUnreadMark),
    FolderPeers(FolderPeers),
    DialogFilter(DialogFilter),
    DialogFilterOrder(DialogFilterOrder),
    DialogFilterTags(DialogFilterTags),
    ContactSaved(ContactSaved),
    ContactDeleted(ContactDeleted),
    ContactsReset(ContactsReset),
    PeerSettings(PeerSettings),
    NotifySettings(NotifySettings),
    ProfilePhotoChanged(ProfilePhotoChanged),
}

/// What each event kind declares about itself.
pub trait EventKind: Serialize + DeserializeOwned {
    /// The `kind` column value.
    const KIND: &'static str;
    /// The payload version written today. Older versions are upcast when read.
    const VERSION: i16;

    /// Reads a payload stored at `version` (already known to be within `1..=VERSION`) into today's
    /// shape: the upcast. A kind whose shape never changed reads every version as is; a kind that
    /// changed overrides this and reads each older version through that version's own type
    /// (docs/events.md, Versioning). The payload is a JSON tree or the stored text, read
    /// straight into the type (a log page is decoded from its text without a tree per event).
    fn read_version<'de, D: Payload<'de>>(
        version: i16,
        payload: D,
    ) -> Result<Self, serde_json::Error> {
        let _ = version;
        Self::deserialize(payload)
    }
}

/// What a stored payload is read from: a `serde_json::Value`, or its text through
/// `serde_json::Deserializer` (both with `serde_json`'s own nesting limit of 128).
pub trait Payload<'de>: serde::Deserializer<'de, Error = serde_json::Error> {}

impl<'de, D: serde::Deserializer<'de, Error = serde_json::Error>> Payload<'de> for D {}

#[derive(Debug, Error)]
pub enum EventDecodeError {
    #[error("unknown event kind {0:?}")]
    UnknownKind(String),
    #[error("event kind {kind} has no payload version {version}")]
    UnknownVersion { kind: String, version: i16 },
    #[error("bad {kind} payload: {source}")]
    Payload {
        kind: String,
        source: serde_json::Error,
    },
}

impl UserEvent {
    /// Every kind, for documentation and schema checks.
    pub const KINDS: &'static [&'static str] = &[
        NewMessage::KIND,
        EditMessage::KIND,
        DeleteMessages::KIND,
        ReadHistoryInbox::KIND,
        ReadHistoryOutbox::KIND,
        ReadMessageContents::KIND,
        PeerBlocked::KIND,
        DialogPinned::KIND,
        PinnedDialogs::KIND,
        DialogUnreadMark::KIND,
        FolderPeers::KIND,
        DialogFilter::KIND,
        DialogFilterOrder::KIND,
        DialogFilterTags::KIND,
        ContactSaved::KIND,
        ContactDeleted::KIND,
        ContactsReset::KIND,
        PeerSettings::KIND,
        NotifySettings::KIND,
        ProfilePhotoChanged::KIND,
    ];

    /// The payload version written today of a kind, `None` for a kind this code does not know.
    pub fn current_version(kind: &str) -> Option<i16> {
        Some(match kind {
            NewMessage::KIND => NewMessage::VERSION,
            EditMessage::KIND => EditMessage::VERSION,
            DeleteMessages::KIND => DeleteMessages::VERSION,
            ReadHistoryInbox::KIND => ReadHistoryInbox::VERSION,
            ReadHistoryOutbox::KIND => ReadHistoryOutbox::VERSION,
            ReadMessageContents::KIND => ReadMessageContents::VERSION,
            PeerBlocked::KIND => PeerBlocked::VERSION,
            DialogPinned::KIND => DialogPinned::VERSION,
            PinnedDialogs::KIND => PinnedDialogs::VERSION,
            DialogUnreadMark::KIND => DialogUnreadMark::VERSION,
            FolderPeers::KIND => FolderPeers::VERSION,
            DialogFilter::KIND => DialogFilter::VERSION,
            DialogFilterOrder::KIND => DialogFilterOrder::VERSION,
            DialogFilterTags::KIND => DialogFilterTags::VERSION,
            ContactSaved::KIND => ContactSaved::VERSION,
            ContactDeleted::KIND => ContactDeleted::VERSION,
            ContactsReset::KIND => ContactsReset::VERSION,
            PeerSettings::KIND => PeerSettings::VERSION,
            NotifySettings::KIND => NotifySettings::VERSION,
            ProfilePhotoChanged::KIND => ProfilePhotoChanged::VERSION,
            _ => return None,
        })
    }

    pub fn kind(&self) -> &'static str {
        match self {
            UserEvent::NewMessage(_) => NewMessage::KIND,
            UserEvent::EditMessage(_) => EditMessage::KIND,
            UserEvent::DeleteMessages(_) => DeleteMessages::KIND,
            UserEvent::ReadHistoryInbox(_) => ReadHistoryInbox::KIND,
            UserEvent::ReadHistoryOutbox(_) => ReadHistoryOutbox::KIND,
            UserEvent::ReadMessageContents(_) => ReadMessageContents::KIND,
            UserEvent::PeerBlocked(_) => PeerBlocked::KIND,
            UserEvent::DialogPinned(_) => DialogPinned::KIND,
            UserEvent::PinnedDialogs(_) => PinnedDialogs::KIND,
            UserEvent::DialogUnreadMark(_) => DialogUnreadMark::KIND,
            UserEvent::FolderPeers(_) => FolderPeers::KIND,
            UserEvent::DialogFilter(_) => DialogFilter::KIND,
            UserEvent::DialogFilterOrder(_) => DialogFilterOrder::KIND,
            UserEvent::DialogFilterTags(_) => DialogFilterTags::KIND,
            UserEvent::ContactSaved(_) => ContactSaved::KIND,
            UserEvent::ContactDeleted(_) => ContactDeleted::KIND,
            UserEvent::ContactsReset(_) => ContactsReset::KIND,
            UserEvent::PeerSettings(_) => PeerSettings::KIND,
            UserEvent::NotifySettings(_) => NotifySettings::KIND,
            UserEvent::ProfilePhotoChanged(_) => ProfilePhotoChanged::KIND,
        }
    }

    pub fn version(&self) -> i16 {
        match self {
            UserEvent::NewMessage(_) => NewMessage::VERSION,
            UserEvent::EditMessage(_) => EditMessage::VERSION,
            UserEvent::DeleteMessages(_) => DeleteMessages::VERSION,
            UserEvent::ReadHistoryInbox(_) => ReadHistoryInbox::VERSION,
            UserEvent::ReadHistoryOutbox(_) => ReadHistoryOutbox::VERSION,
            UserEvent::ReadMessageContents(_) => ReadMessageContents::VERSION,
            UserEvent::PeerBlocked(_) => PeerBlocked::VERSION,
            UserEvent::DialogPinned(_) => DialogPinned::VERSION,
            UserEvent::PinnedDialogs(_) => PinnedDialogs::VERSION,
            UserEvent::DialogUnreadMark(_) => DialogUnreadMark::VERSION,
            UserEvent::FolderPeers(_) => FolderPeers::VERSION,
            UserEvent::DialogFilter(_) => DialogFilter::VERSION,
            UserEvent::DialogFilterOrder(_) => DialogFilterOrder::VERSION,
            UserEvent::DialogFilterTags(_) => DialogFilterTags::VERSION,
            UserEvent::ContactSaved(_) => ContactSaved::VERSION,
            UserEvent::ContactDeleted(_) => ContactDeleted::VERSION,
            UserEvent::ContactsReset(_) => ContactsReset::VERSION,
            UserEvent::PeerSettings(_) => PeerSettings::VERSION,
            UserEvent::NotifySettings(_) => NotifySettings::VERSION,
            UserEvent::ProfilePhotoChanged(_) => ProfilePhotoChanged::VERSION,
        }
    }

    /// How many pts this event takes in the owner's log. Clients' gap detection adds these up, so it
    /// must equal the TL update's `pts_count` exactly.
    pub fn pts_count(&self) -> i32 {
        match self {
            UserEvent::DeleteMessages(e) => e.ids.len().max(1) as i32,
            UserEvent::ReadMessageContents(e) => e.ids.len().max(1) as i32,
            _ => 1,
        }
    }

    pub fn payload(&self) -> serde_json::Value {
        // Serializing plain structs of strings and numbers into a Value cannot fail.
        serde_json::to_value(PayloadOf(self)).unwrap_or(serde_json::Value::Null)
    }

    /// The payload to append as the log stores it (compact JSON text, serialized once from the
    /// typed event), refused with [`DomainError::EventTooLarge`] when it is over
    /// [`MAX_EVENT_PAYLOAD_BYTES`] (every reader, the relay and Kafka can then hold it).
    pub fn checked_payload(&self) -> Result<String, crate::DomainError> {
        // Plain structs of strings and numbers always serialize; an error would be a bug in a
        // payload type, and appending nothing is the safe answer to it.
        let text = serde_json::to_string(&PayloadOf(self))
            .map_err(|_| crate::DomainError::EventTooLarge)?;
        if text.len() > MAX_EVENT_PAYLOAD_BYTES {
            return Err(crate::DomainError::EventTooLarge);
        }
        Ok(text)
    }

    /// Reads a stored event, upcasting older payload versions to today's shape.
    pub fn decode(
        kind: &str,
        version: i16,
        payload: serde_json::Value,
    ) -> Result<Self, EventDecodeError> {
        Self::decode_from(kind, version, payload)
    }

    /// [`UserEvent::decode`] of the payload's stored text, read straight into its type.
    pub fn decode_text(kind: &str, version: i16, text: &str) -> Result<Self, EventDecodeError> {
        let mut de = serde_json::Deserializer::from_str(text);
        let event = Self::decode_from(kind, version, &mut de)?;
        de.end().map_err(|source| EventDecodeError::Payload {
            kind: kind.into(),
            source,
        })?;
        Ok(event)
    }

    fn decode_from<'de, D: Payload<'de>>(
        kind: &str,
        version: i16,
        payload: D,
    ) -> Result<Self, EventDecodeError> {
        fn read<'de, E: EventKind, D: Payload<'de>>(
            version: i16,
            payload: D,
        ) -> Result<E, EventDecodeError> {
            if version < 1 || version > E::VERSION {
                return Err(EventDecodeError::UnknownVersion {
                    kind: E::KIND.into(),
                    version,
                });
            }
            E::read_version(version, payload).map_err(|source| EventDecodeError::Payload {
                kind: E::KIND.into(),
                source,
            })
        }
        Ok(match kind {
            NewMessage::KIND => UserEvent::NewMessage(read(version, payload)?),
            EditMessage::KIND => UserEvent::EditMessage(read(version, payload)?),
            DeleteMessages::KIND => UserEvent::DeleteMessages(read(version, payload)?),
            ReadHistoryInbox::KIND => UserEvent::ReadHistoryInbox(read(version, payload)?),
            ReadHistoryOutbox::KIND => UserEvent::ReadHistoryOutbox(read(version, payload)?),
            ReadMessageContents::KIND => UserEvent::ReadMessageContents(read(version, payload)?),
            PeerBlocked::KIND => UserEvent::PeerBlocked(read(version, payload)?),
            DialogPinned::KIND => UserEvent::DialogPinned(read(version, payload)?),
            PinnedDialogs::KIND => UserEvent::PinnedDialogs(read(version, payload)?),
            DialogUnreadMark::KIND => UserEvent::DialogUnreadMark(read(version, payload)?),
            FolderPeers::KIND => UserEvent::FolderPeers(read(version, payload)?),
            DialogFilter::KIND => UserEvent::DialogFilter(read(version, payload)?),
            DialogFilterOrder::KIND => UserEvent::DialogFilterOrder(read(version, payload)?),
            DialogFilterTags::KIND => UserEvent::DialogFilterTags(read(version, payload)?),
            ContactSaved::KIND => UserEvent::ContactSaved(read(version, payload)?),
            ContactDeleted::KIND => UserEvent::ContactDeleted(read(version, payload)?),
            ContactsReset::KIND => UserEvent::ContactsReset(read(version, payload)?),
            PeerSettings::KIND => UserEvent::PeerSettings(read(version, payload)?),
            NotifySettings::KIND => UserEvent::NotifySettings(read(version, payload)?),
            ProfilePhotoChanged::KIND => UserEvent::ProfilePhotoChanged(read(version, payload)?),
            other => return Err(EventDecodeError::UnknownKind(other.into())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{BoxId, UserId};

    #[test]
    fn every_event_roundtrips_through_its_stored_form() {
        let peer = UserId::new(7).unwrap();
        let ev = UserEvent::DeleteMessages(DeleteMessages {
            ids: vec![BoxId::new(3).unwrap(), BoxId::new(4).unwrap()],
            clear_history: None,
        });
        let back = UserEvent::decode(ev.kind(), ev.version(), ev.payload()).unwrap();
        assert_eq!(back, ev);
        assert_eq!(back.pts_count(), 2);
        let ev = UserEvent::ReadHistoryOutbox(ReadHistoryOutbox {
            peer_id: peer,
            max_id: BoxId::new(9).unwrap(),
            date: 5,
        });
        assert_eq!(
            UserEvent::decode(ev.kind(), ev.version(), ev.payload()).unwrap(),
            ev
        );
        let rules: DialogFilterRules = serde_json::from_value(serde_json::json!({
            "id": 2, "title": "Work", "emoticon": "x", "contacts": true, "include_peers": [7]
        }))
        .unwrap();
        for ev in [
            UserEvent::DialogFilter(DialogFilter {
                id: 2,
                filter: Some(rules),
            }),
            UserEvent::DialogFilter(DialogFilter {
                id: 2,
                filter: None,
            }),
            UserEvent::PinnedDialogs(PinnedDialogs {
                folder_id: 1,
                order: vec![peer],
            }),
            UserEvent::FolderPeers(FolderPeers {
                folder_peers: vec![FolderPeer {
                    peer_id: peer,
                    folder_id: 1,
                }],
            }),
            UserEvent::ContactsReset(ContactsReset {}),
            UserEvent::ProfilePhotoChanged(ProfilePhotoChanged {
                photo: None,
                removed: vec![crate::media::MediaId::new(9).unwrap()],
                date: 4,
            }),
            UserEvent::NotifySettings(NotifySettings {
                peer_id: peer,
                settings: PeerNotify {
                    mute_until: Some(2_000_000_000),
                    silent: Some(true),
                    show_previews: None,
                },
            }),
            UserEvent::ContactSaved(ContactSaved {
                user_id: peer,
                first_name: "A".into(),
                last_name: String::new(),
                phone: "1555".into(),
                imported: true,
                date: 3,
                settings: PeerSettingsFlags::default(),
            }),
        ] {
            assert_eq!(
                UserEvent::decode(ev.kind(), ev.version(), ev.payload()).unwrap(),
                ev
            );
            let text = ev.payload().to_string();
            assert_eq!(
                UserEvent::decode_text(ev.kind(), ev.version(), &text).unwrap(),
                ev
            );
            // Trailing bytes after the payload are refused, as JSON is one value.
            assert!(UserEvent::decode_text(ev.kind(), ev.version(), &format!("{text} 1")).is_err());
            assert_eq!(ev.pts_count(), 1);
        }
        assert_eq!(UserEvent::KINDS.len(), 20);
    }

    #[test]
    fn version_1_peer_blocked_is_upcast_to_today() {
        let v1 = serde_json::json!({"peer_id": 7, "blocked": true, "date": 5});
        let ev = UserEvent::decode(PeerBlocked::KIND, 1, v1).unwrap();
        assert_eq!(
            ev,
            UserEvent::PeerBlocked(PeerBlocked {
                peer_id: UserId::new(7).unwrap(),
                blocked: true,
                my_stories_from: false,
                date: 5,
            })
        );
        assert_eq!(ev.version(), 2);
        assert_eq!(ev.payload()["my_stories_from"], false);
        // A version-1 row that somehow has the new field is not a version-1 payload.
        let odd =
            serde_json::json!({"peer_id": 7, "blocked": true, "date": 5, "my_stories_from": true});
        assert!(UserEvent::decode(PeerBlocked::KIND, 1, odd).is_err());
        // Today's payload needs the field.
        let short = serde_json::json!({"peer_id": 7, "blocked": true, "date": 5});
        assert!(UserEvent::decode(PeerBlocked::KIND, 2, short).is_err());
    }

    #[test]
    fn payloads_over_the_cap_are_refused() {
        let peer = UserId::new(7).unwrap();
        let event = |text: String| {
            UserEvent::NewMessage(NewMessage {
                message: crate::message::OwnerMessage {
                    id: BoxId::new(1).unwrap(),
                    message_id: crate::ids::MessageId(1),
                    peer_id: peer,
                    from_id: peer,
                    out: true,
                    date: 1,
                    text,
                    entities: Vec::new(),
                    silent: false,
                    noforwards: false,
                    reply_to: None,
                    fwd_from: None,
                    media_unread: false,
                    random_id: None,
                    edit_date: None,
                    media: None,
                    grouped_id: None,
                },
            })
        };
        let empty = payload_size(&event(String::new()).payload());
        let at_cap = event("a".repeat(MAX_EVENT_PAYLOAD_BYTES - empty));
        assert_eq!(payload_size(&at_cap.payload()), MAX_EVENT_PAYLOAD_BYTES);
        let stored = at_cap.checked_payload().unwrap();
        assert_eq!(stored.len(), MAX_EVENT_PAYLOAD_BYTES);
        // The stored text is the payload, read back as the same value.
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&stored).unwrap(),
            at_cap.payload()
        );
        let over = event("a".repeat(MAX_EVENT_PAYLOAD_BYTES - empty + 1));
        assert_eq!(
            over.checked_payload(),
            Err(crate::DomainError::EventTooLarge)
        );
        // The count is of the compact JSON text.
        let v = serde_json::json!({"a": [1, "b\"c"]});
        assert_eq!(payload_size(&v), serde_json::to_vec(&v).unwrap().len());
        // Kafka's default record limit is 1 MB; the cap and the envelope stay well under it.
        const { assert!(MAX_EVENT_PAYLOAD_BYTES + crate::limits::LOG_RECORD_ENVELOPE_BYTES < 1_000_000) };
    }

    #[test]
    fn unknown_kinds_and_future_versions_are_refused() {
        assert!(matches!(
            UserEvent::decode("nope", 1, serde_json::json!({})),
            Err(EventDecodeError::UnknownKind(_))
        ));
        assert!(matches!(
            UserEvent::decode(
                PeerBlocked::KIND,
                99,
                serde_json::json!({"peer_id":1,"blocked":true})
            ),
            Err(EventDecodeError::UnknownVersion { .. })
        ));
    }
}
