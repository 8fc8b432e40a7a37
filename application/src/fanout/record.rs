//! The log record relays publish: one committed row of `user_update_events`, as JSON. This is a
//! public contract (docs/events.md, "Log records"): the Kafka topic carries it for every consumer,
//! not only ptslog's gateways, so fields are only ever added, and a change of meaning is a new `v`.

use chrono::{DateTime, SecondsFormat, Utc};
use domain::events::UserEvent;
use domain::{AuthKeyId, Pts, SessionId, UserId};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::ports::{Origin, StoredEvent};

/// The record format written today.
pub const RECORD_VERSION: u32 = 1;

/// One committed log row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    /// The record format's version ([`RECORD_VERSION`]).
    pub v: u32,
    pub user_id: i64,
    pub pts: i32,
    pub pts_count: i32,
    pub kind: String,
    /// The payload's own version; carried as stored, readers upcast (docs/events.md, Versioning).
    pub payload_version: i16,
    pub payload: serde_json::Value,
    /// The device that caused the event (0: none, e.g. a server-side change).
    pub auth_key_id: i64,
    pub session_id: i64,
    /// RFC 3339 in UTC with microseconds, e.g. `2025-11-30T09:10:00.123456Z`.
    pub committed_at: String,
    /// Set when the relay could not read this row's payload (or it was over the payload cap):
    /// why. The payload is then `null`; everything else is the row's (docs/events.md, "Rows that
    /// cannot be read").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undecodable: Option<String>,
}

#[derive(Debug, Error)]
pub enum RecordError {
    #[error("record version {0} is newer than this reader knows ({RECORD_VERSION})")]
    UnknownVersion(u32),
    #[error("record is not JSON of the documented shape: {0}")]
    Shape(#[from] serde_json::Error),
    #[error("record field {field} is invalid: {detail}")]
    Field { field: &'static str, detail: String },
    #[error("record payload: {0}")]
    Event(#[from] domain::events::EventDecodeError),
    #[error("the relay could not read this row: {0}")]
    Undecodable(String),
}

impl LogRecord {
    /// Parses a record as published, refusing versions this reader does not know rather than
    /// misreading them.
    pub fn from_json(bytes: &[u8]) -> Result<Self, RecordError> {
        let record: LogRecord = serde_json::from_slice(bytes)?;
        if record.v != RECORD_VERSION {
            return Err(RecordError::UnknownVersion(record.v));
        }
        Ok(record)
    }

    pub fn to_json(&self) -> Vec<u8> {
        // A struct of strings, numbers and an already-valid JSON value always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Formats a commit time the way records carry it.
    pub fn format_time(at: DateTime<Utc>) -> String {
        at.to_rfc3339_opts(SecondsFormat::Micros, true)
    }

    pub fn user(&self) -> Result<UserId, RecordError> {
        UserId::new(self.user_id).map_err(|_| RecordError::Field {
            field: "user_id",
            detail: self.user_id.to_string(),
        })
    }

    pub fn committed_at(&self) -> Result<DateTime<Utc>, RecordError> {
        DateTime::parse_from_rfc3339(&self.committed_at)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| RecordError::Field {
                field: "committed_at",
                detail: format!("{:?}: {e}", self.committed_at),
            })
    }

    /// The same record with its payload in today's shape: an older payload version is upcast
    /// (docs/events.md, Versioning), today's is read and written again unchanged.
    pub fn upcast(self) -> Result<LogRecord, RecordError> {
        if let Some(reason) = &self.undecodable {
            return Err(RecordError::Undecodable(reason.clone()));
        }
        let event = UserEvent::decode(&self.kind, self.payload_version, self.payload)?;
        Ok(LogRecord {
            payload_version: event.version(),
            payload: event.payload(),
            ..self
        })
    }

    /// The event as the rest of the application knows it (the same shape getDifference reads).
    pub fn stored_event(&self) -> Result<StoredEvent, RecordError> {
        if let Some(reason) = &self.undecodable {
            return Err(RecordError::Undecodable(reason.clone()));
        }
        let user_id = self.user()?;
        let pts = Pts::new(self.pts)
            .filter(|p| p.get() > 0)
            .ok_or_else(|| RecordError::Field {
                field: "pts",
                detail: self.pts.to_string(),
            })?;
        if self.pts_count <= 0 || self.pts_count > self.pts {
            return Err(RecordError::Field {
                field: "pts_count",
                detail: self.pts_count.to_string(),
            });
        }
        let event = UserEvent::decode(&self.kind, self.payload_version, self.payload.clone())?;
        let date = i32::try_from(self.committed_at()?.timestamp()).unwrap_or(i32::MAX);
        Ok(StoredEvent {
            user_id,
            pts,
            pts_count: self.pts_count,
            event,
            origin: Origin {
                auth_key_id: AuthKeyId(self.auth_key_id),
                session_id: SessionId(self.session_id),
            },
            date,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record() -> LogRecord {
        LogRecord {
            v: 1,
            user_id: 2,
            pts: 7,
            pts_count: 1,
            kind: "read_history_outbox".into(),
            payload_version: 1,
            payload: json!({"peer_id": 1, "max_id": 5, "date": 1764489600}),
            auth_key_id: 99,
            session_id: 3,
            committed_at: "2025-11-30T09:10:00.123456Z".into(),
            undecodable: None,
        }
    }

    #[test]
    fn the_json_shape_is_the_documented_one() {
        let text = String::from_utf8(record().to_json()).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "auth_key_id",
                "committed_at",
                "kind",
                "payload",
                "payload_version",
                "pts",
                "pts_count",
                "session_id",
                "user_id",
                "v"
            ]
        );
        assert_eq!(LogRecord::from_json(text.as_bytes()).unwrap(), record());
    }

    #[test]
    fn a_record_reads_as_the_stored_event() {
        let stored = record().stored_event().unwrap();
        assert_eq!(stored.user_id.get(), 2);
        assert_eq!(stored.pts.get(), 7);
        assert_eq!(stored.origin.auth_key_id, AuthKeyId(99));
        assert_eq!(stored.date, 1764493800);
        assert_eq!(stored.event.kind(), "read_history_outbox");
    }

    #[test]
    fn unknown_versions_and_bad_fields_are_refused() {
        let mut r = record();
        r.v = 2;
        assert!(matches!(
            LogRecord::from_json(&r.to_json()),
            Err(RecordError::UnknownVersion(2))
        ));
        let mut r = record();
        r.pts_count = 8;
        assert!(r.stored_event().is_err());
        let mut r = record();
        r.committed_at = "yesterday".into();
        assert!(r.stored_event().is_err());
        let mut r = record();
        r.payload_version = 9;
        assert!(r.stored_event().is_err());
    }

    #[test]
    fn old_payload_versions_are_upcast() {
        let mut r = record();
        r.kind = "peer_blocked".into();
        r.payload = json!({"peer_id": 1, "blocked": true, "date": 5});
        let up = r.clone().upcast().unwrap();
        assert_eq!(up.payload_version, 2);
        assert_eq!(
            up.payload,
            json!({"peer_id": 1, "blocked": true, "my_stories_from": false, "date": 5})
        );
        assert_eq!(
            (up.user_id, up.pts, up.kind.as_str()),
            (2, 7, "peer_blocked")
        );
        // Today's records come back as they were.
        assert_eq!(record().upcast().unwrap(), record());
    }

    #[test]
    fn times_are_formatted_with_microseconds_in_utc() {
        let t = DateTime::parse_from_rfc3339("2025-11-30T10:10:00.5+01:00")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(LogRecord::format_time(t), "2025-11-30T09:10:00.500000Z");
    }
}
