//! The catalogue of per-user events: everything that can happen to one account's view. Each event
//! is appended to that account's pts log with a kind, a payload version and `pts_count` pts.
//! `docs/events.md` documents each kind; its tests keep the names here and there in step.

mod delete_messages;
mod edit_message;
mod new_message;
mod peer_blocked;
mod read_history_inbox;
mod read_history_outbox;
mod read_message_contents;

pub use delete_messages::{ClearHistory, DeleteMessages};
pub use edit_message::EditMessage;
pub use new_message::NewMessage;
pub use peer_blocked::PeerBlocked;
pub use read_history_inbox::ReadHistoryInbox;
pub use read_history_outbox::ReadHistoryOutbox;
pub use read_message_contents::ReadMessageContents;

use serde::{de::DeserializeOwned, Serialize};
use thiserror::Error;

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
}

/// What each event kind declares about itself.
pub trait EventKind: Serialize + DeserializeOwned {
    /// The `kind` column value.
    const KIND: &'static str;
    /// The payload version written today. Older versions are upcast when read.
    const VERSION: i16;
}

#[derive(Debug, Error)]
pub enum EventDecodeError {
    #[error("unknown event kind {0:?}")]
    UnknownKind(String),
    #[error("event kind {kind} has no payload version {version}")]
    UnknownVersion { kind: String, version: i16 },
    #[error("bad {kind} payload: {source}")]
    Payload { kind: String, source: serde_json::Error },
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
    ];

    pub fn kind(&self) -> &'static str {
        match self {
            UserEvent::NewMessage(_) => NewMessage::KIND,
            UserEvent::EditMessage(_) => EditMessage::KIND,
            UserEvent::DeleteMessages(_) => DeleteMessages::KIND,
            UserEvent::ReadHistoryInbox(_) => ReadHistoryInbox::KIND,
            UserEvent::ReadHistoryOutbox(_) => ReadHistoryOutbox::KIND,
            UserEvent::ReadMessageContents(_) => ReadMessageContents::KIND,
            UserEvent::PeerBlocked(_) => PeerBlocked::KIND,
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
        let v = match self {
            UserEvent::NewMessage(e) => serde_json::to_value(e),
            UserEvent::EditMessage(e) => serde_json::to_value(e),
            UserEvent::DeleteMessages(e) => serde_json::to_value(e),
            UserEvent::ReadHistoryInbox(e) => serde_json::to_value(e),
            UserEvent::ReadHistoryOutbox(e) => serde_json::to_value(e),
            UserEvent::ReadMessageContents(e) => serde_json::to_value(e),
            UserEvent::PeerBlocked(e) => serde_json::to_value(e),
        };
        // Serializing plain structs of strings and numbers into a Value cannot fail.
        v.unwrap_or(serde_json::Value::Null)
    }

    /// Reads a stored event, upcasting older payload versions to today's shape.
    pub fn decode(kind: &str, version: i16, payload: serde_json::Value) -> Result<Self, EventDecodeError> {
        fn read<E: EventKind>(version: i16, payload: serde_json::Value) -> Result<E, EventDecodeError> {
            if version < 1 || version > E::VERSION {
                return Err(EventDecodeError::UnknownVersion { kind: E::KIND.into(), version });
            }
            serde_json::from_value(payload).map_err(|source| EventDecodeError::Payload { kind: E::KIND.into(), source })
        }
        Ok(match kind {
            NewMessage::KIND => UserEvent::NewMessage(read(version, payload)?),
            EditMessage::KIND => UserEvent::EditMessage(read(version, payload)?),
            DeleteMessages::KIND => UserEvent::DeleteMessages(read(version, payload)?),
            ReadHistoryInbox::KIND => UserEvent::ReadHistoryInbox(read(version, payload)?),
            ReadHistoryOutbox::KIND => UserEvent::ReadHistoryOutbox(read(version, payload)?),
            ReadMessageContents::KIND => UserEvent::ReadMessageContents(read(version, payload)?),
            PeerBlocked::KIND => UserEvent::PeerBlocked(read(version, payload)?),
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
        let ev = UserEvent::ReadHistoryOutbox(ReadHistoryOutbox { peer_id: peer, max_id: BoxId::new(9).unwrap(), date: 5 });
        assert_eq!(UserEvent::decode(ev.kind(), ev.version(), ev.payload()).unwrap(), ev);
    }

    #[test]
    fn unknown_kinds_and_future_versions_are_refused() {
        assert!(matches!(
            UserEvent::decode("nope", 1, serde_json::json!({})),
            Err(EventDecodeError::UnknownKind(_))
        ));
        assert!(matches!(
            UserEvent::decode(PeerBlocked::KIND, 99, serde_json::json!({"peer_id":1,"blocked":true})),
            Err(EventDecodeError::UnknownVersion { .. })
        ));
    }
}
