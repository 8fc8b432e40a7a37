//! An inserted `user_update_events` row, as pgoutput sends it in text form, turned into the
//! published [`LogRecord`].

use application::fanout::{LogRecord, RECORD_VERSION};
use chrono::{DateTime, Utc};

use super::pgoutput::{DecodeError, Row};

/// The table the publication carries (with `publish_via_partition_root`, inserts into any
/// partition arrive under the parent's name).
pub const LOG_TABLE: &str = "user_update_events";

/// Reads one log row. The replication session pins `DateStyle=ISO` and `TimeZone=UTC`, so
/// `committed_at` arrives as `2025-11-30 09:10:00.123456+00`.
pub fn log_record(row: &Row<'_>) -> Result<LogRecord, DecodeError> {
    if row.relation().name != LOG_TABLE {
        return Err(DecodeError::Invalid(format!(
            "unexpected table {} in the publication",
            row.relation().name
        )));
    }
    let payload_text = row.text("payload")?;
    let payload: serde_json::Value = serde_json::from_str(payload_text)
        .map_err(|e| DecodeError::Invalid(format!("payload is not JSON: {e}")))?;
    Ok(LogRecord {
        v: RECORD_VERSION,
        user_id: row.parse("user_id")?,
        pts: row.parse("pts")?,
        pts_count: row.parse("pts_count")?,
        kind: row.text("kind")?.to_string(),
        payload_version: row.parse("payload_version")?,
        payload,
        auth_key_id: row.parse("auth_key_id")?,
        session_id: row.parse("session_id")?,
        committed_at: LogRecord::format_time(timestamptz(row.text("committed_at")?)?),
    })
}

/// Parses timestamptz output in ISO style (any offset; fractional seconds optional).
fn timestamptz(text: &str) -> Result<DateTime<Utc>, DecodeError> {
    DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%#z")
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| DecodeError::Invalid(format!("committed_at {text:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::super::pgoutput::{
        decode, tests::insert_message, tests::relation_message, Message, Relations,
    };
    use super::*;

    const COLUMNS: &[&str] = &[
        "user_id",
        "pts",
        "pts_count",
        "kind",
        "payload_version",
        "payload",
        "auth_key_id",
        "session_id",
        "committed_at",
    ];

    #[test]
    fn a_row_becomes_the_documented_record() {
        let mut rels = Relations::default();
        let Ok(Message::Relation(rel)) = decode(&relation_message(5, LOG_TABLE, COLUMNS)) else {
            panic!()
        };
        rels.learn(rel);
        let insert = insert_message(
            5,
            &[
                Some("2"),
                Some("9"),
                Some("2"),
                Some("delete_messages"),
                Some("1"),
                Some(r#"{"ids": [4, 5]}"#),
                Some("-77"),
                Some("3"),
                Some("2025-11-30 09:10:00.123456+00"),
            ],
        );
        let Ok(Message::Insert {
            relation_id,
            values,
        }) = decode(&insert)
        else {
            panic!()
        };
        let row = Row::new(rels.get(relation_id).unwrap(), values).unwrap();
        let record = log_record(&row).unwrap();
        assert_eq!((record.user_id, record.pts, record.pts_count), (2, 9, 2));
        assert_eq!(record.kind, "delete_messages");
        assert_eq!(record.payload, serde_json::json!({"ids": [4, 5]}));
        assert_eq!((record.auth_key_id, record.session_id), (-77, 3));
        assert_eq!(record.committed_at, "2025-11-30T09:10:00.123456Z");
        assert!(record.stored_event().is_ok());
    }

    #[test]
    fn times_in_any_offset_and_precision_parse() {
        assert_eq!(
            LogRecord::format_time(timestamptz("2025-11-30 10:10:00+01").unwrap()),
            "2025-11-30T09:10:00.000000Z"
        );
        assert_eq!(
            LogRecord::format_time(timestamptz("2025-11-30 09:10:00.5+05:30").unwrap()),
            "2025-11-30T03:40:00.500000Z"
        );
        assert!(timestamptz("Sun Nov 30 09:10:00 2025 UTC").is_err());
    }
}
