//! An inserted `user_update_events` row, as pgoutput sends it in text form, turned into the
//! published [`LogRecord`].

use application::fanout::{LogRecord, RECORD_VERSION};
use chrono::{DateTime, Utc};
use domain::events::payload_size;
use domain::limits::MAX_EVENT_PAYLOAD_BYTES;

use super::pgoutput::{DecodeError, Row};

/// The table the publication carries (with `publish_via_partition_root`, inserts into any
/// partition arrive under the parent's name).
pub const LOG_TABLE: &str = "user_update_events";

/// Reads one log row. A row whose payload cannot be read (not JSON serde_json can parse, e.g.
/// nested past its recursion limit) or is over [`MAX_EVENT_PAYLOAD_BYTES`] becomes an
/// [`undecodable`](LogRecord::undecodable) record: its position and kind, the reason, and no
/// payload. Only a row whose position itself cannot be read is an error.
pub fn log_record(row: &Row<'_>) -> Result<LogRecord, DecodeError> {
    if row.relation().name != LOG_TABLE {
        return Err(DecodeError::Invalid(format!(
            "unexpected table {} in the publication",
            row.relation().name
        )));
    }
    let mut record = LogRecord {
        v: RECORD_VERSION,
        user_id: row.parse("user_id")?,
        pts: row.parse("pts")?,
        pts_count: row.parse("pts_count")?,
        kind: row.text("kind")?.to_string(),
        payload_version: row.parse("payload_version")?,
        payload: serde_json::Value::Null,
        auth_key_id: row.parse("auth_key_id")?,
        session_id: row.parse("session_id")?,
        committed_at: LogRecord::format_time(timestamptz(row.text("committed_at")?)?),
        undecodable: None,
    };
    match payload(row.text("payload")?) {
        Ok(payload) => record.payload = payload,
        Err(reason) => record.undecodable = Some(reason),
    }
    Ok(record)
}

/// The payload as JSON, or why it cannot be published.
fn payload(text: &str) -> Result<serde_json::Value, String> {
    // The application writes compact text, but events written before migration 0022 (or behind its
    // back) may be spelled like jsonb's text form, with a space after each `:` and `,`: up to about
    // twice the compact size. Anything longer is over the cap without parsing it.
    if text.len() > 2 * MAX_EVENT_PAYLOAD_BYTES + 2 {
        return Err(format!(
            "payload of {} bytes is over the {MAX_EVENT_PAYLOAD_BYTES}-byte cap",
            text.len()
        ));
    }
    let payload: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("payload is not readable JSON: {e}"))?;
    // Both escape alike, so the compact form is never longer than the text: count only when the
    // text alone is over the cap.
    if text.len() <= MAX_EVENT_PAYLOAD_BYTES {
        return Ok(payload);
    }
    let size = payload_size(&payload);
    if size > MAX_EVENT_PAYLOAD_BYTES {
        return Err(format!(
            "payload of {size} bytes is over the {MAX_EVENT_PAYLOAD_BYTES}-byte cap"
        ));
    }
    Ok(payload)
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

    fn row_with_payload(payload: &str) -> LogRecord {
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
                Some("1"),
                Some("new_message"),
                Some("1"),
                Some(payload),
                Some("0"),
                Some("0"),
                Some("2025-11-30 09:10:00+00"),
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
        log_record(&row).unwrap()
    }

    #[test]
    fn a_payload_too_deep_to_read_is_an_undecodable_record() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let record = row_with_payload(&deep);
        assert_eq!((record.user_id, record.pts, record.pts_count), (2, 9, 1));
        assert_eq!(record.kind, "new_message");
        assert_eq!(record.payload, serde_json::Value::Null);
        assert!(record
            .undecodable
            .as_deref()
            .unwrap()
            .contains("recursion limit"));
        assert!(record.stored_event().is_err());
        // The published form says so and carries no payload.
        let back = LogRecord::from_json(&record.to_json()).unwrap();
        assert_eq!(back, record);
    }

    #[test]
    fn a_payload_over_the_cap_is_an_undecodable_record() {
        let at_cap = format!("\"{}\"", "a".repeat(MAX_EVENT_PAYLOAD_BYTES - 2));
        assert_eq!(row_with_payload(&at_cap).undecodable, None);
        let over = format!("\"{}\"", "a".repeat(MAX_EVENT_PAYLOAD_BYTES - 1));
        let record = row_with_payload(&over);
        assert!(
            record.undecodable.as_deref().unwrap().contains("cap"),
            "{record:?}"
        );
        let huge = format!("\"{}\"", "a".repeat(3 * MAX_EVENT_PAYLOAD_BYTES));
        assert!(row_with_payload(&huge).undecodable.is_some());
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
