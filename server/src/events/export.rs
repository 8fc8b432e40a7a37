//! Turning log records into export lines: NDJSON (one log record per line, the relay's format) or
//! CSV (a header, then one row per event, the payload as a JSON string), upcast unless raw.

use std::future::Future;

use application::fanout::{LogRecord, RecordError};
use futures::StreamExt;
use infrastructure::postgres::log_export::LogExport;
use sqlx::PgPool;
use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    Ndjson,
    Csv,
}

impl ExportFormat {
    pub fn content_type(self) -> &'static str {
        match self {
            ExportFormat::Ndjson => "application/x-ndjson",
            ExportFormat::Csv => "text/csv; charset=utf-8",
        }
    }
}

/// The CSV columns, in order.
pub const CSV_HEADER: [&str; 10] = [
    "v",
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

#[derive(Debug, Error)]
pub enum ExportError {
    #[error("reading the log: {0}")]
    Read(#[from] sqlx::Error),
    #[error(
        "event of user {user_id} at pts {pts}: {source} (export with --raw to get it as stored)"
    )]
    Upcast {
        user_id: i64,
        pts: i32,
        source: RecordError,
    },
    #[error("writing: {0}")]
    Write(#[from] std::io::Error),
    #[error("writing CSV: {0}")]
    Csv(#[from] csv::Error),
}

/// Encodes records one at a time into lines.
#[derive(Debug, Clone, Copy)]
pub struct LineEncoder {
    pub format: ExportFormat,
    /// Payloads as stored (no upcast).
    pub raw: bool,
}

impl LineEncoder {
    /// What comes before the first line (the CSV header).
    pub fn header(&self, out: &mut Vec<u8>) -> Result<(), ExportError> {
        if self.format == ExportFormat::Csv {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(CSV_HEADER)?;
            w.flush()?;
        }
        Ok(())
    }

    pub fn line(&self, record: LogRecord, out: &mut Vec<u8>) -> Result<(), ExportError> {
        let record = if self.raw {
            record
        } else {
            let (user_id, pts) = (record.user_id, record.pts);
            record.upcast().map_err(|source| ExportError::Upcast {
                user_id,
                pts,
                source,
            })?
        };
        match self.format {
            ExportFormat::Ndjson => {
                out.extend_from_slice(&record.to_json());
                out.push(b'\n');
            }
            ExportFormat::Csv => {
                let mut w = csv::Writer::from_writer(out);
                w.write_record([
                    record.v.to_string(),
                    record.user_id.to_string(),
                    record.pts.to_string(),
                    record.pts_count.to_string(),
                    record.kind,
                    record.payload_version.to_string(),
                    record.payload.to_string(),
                    record.auth_key_id.to_string(),
                    record.session_id.to_string(),
                    record.committed_at,
                ])?;
                w.flush()?;
            }
        }
        Ok(())
    }
}

/// Streams an export into `write`, a chunk of about 64 KiB at a time (the next chunk is read only
/// once `write` has taken the last); answers the events written.
pub async fn export<F, Fut>(
    pool: &PgPool,
    export: &LogExport,
    encoder: LineEncoder,
    mut write: F,
) -> Result<u64, ExportError>
where
    F: FnMut(Vec<u8>) -> Fut,
    Fut: Future<Output = Result<(), ExportError>>,
{
    const CHUNK: usize = 64 * 1024;
    let mut buf = Vec::with_capacity(CHUNK + 4096);
    encoder.header(&mut buf)?;
    let mut rows = std::pin::pin!(export.rows(pool));
    let mut n = 0u64;
    while let Some(record) = rows.next().await {
        encoder.line(record?, &mut buf)?;
        n += 1;
        if buf.len() >= CHUNK {
            write(std::mem::replace(
                &mut buf,
                Vec::with_capacity(CHUNK + 4096),
            ))
            .await?;
        }
    }
    if !buf.is_empty() {
        write(buf).await?;
    }
    Ok(n)
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
            kind: "peer_blocked".into(),
            payload_version: 1,
            payload: json!({"peer_id": 1, "blocked": true, "date": 5}),
            auth_key_id: 99,
            session_id: 3,
            committed_at: "2025-11-30T09:10:00.123456Z".into(),
            undecodable: None,
        }
    }

    #[test]
    fn lines_are_upcast_unless_raw() {
        let mut out = Vec::new();
        let up = LineEncoder {
            format: ExportFormat::Ndjson,
            raw: false,
        };
        up.line(record(), &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["payload_version"], 2);
        assert_eq!(v["payload"]["my_stories_from"], false);
        assert_eq!(out.last(), Some(&b'\n'));
        let mut out = Vec::new();
        LineEncoder { raw: true, ..up }
            .line(record(), &mut out)
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["payload_version"], 1);
        assert_eq!(v["payload"], record().payload);
    }

    #[test]
    fn csv_quotes_the_payload() {
        let enc = LineEncoder {
            format: ExportFormat::Csv,
            raw: true,
        };
        let mut out = Vec::new();
        enc.header(&mut out).unwrap();
        enc.line(record(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(CSV_HEADER.join(",").as_str()));
        assert_eq!(
            lines.next(),
            Some(
                r#"1,2,7,1,peer_blocked,1,"{""blocked"":true,""date"":5,""peer_id"":1}",99,3,2025-11-30T09:10:00.123456Z"#
            )
        );
    }
}
