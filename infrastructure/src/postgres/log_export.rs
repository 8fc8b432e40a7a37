//! Reading the log for analysts: the committed rows a filter selects, in (user, pts) order, as log
//! records with their payload as stored. Rows are decoded one at a time as they come off the
//! connection (sqlx's `fetch` stream), so an export of any size runs in constant memory; it holds
//! one connection for as long as the reader keeps reading.

use application::fanout::{LogRecord, RECORD_VERSION};
use chrono::{DateTime, Utc};
use domain::events::UserEvent;
use domain::UserId;
use futures::{Stream, StreamExt};
use sqlx::postgres::PgRow;
use sqlx::{PgPool, Row};
use thiserror::Error;

/// Which rows of the log to read. Every bound is optional; an empty list means "any".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogFilter {
    /// Owners; empty: every account.
    pub users: Vec<UserId>,
    /// The smallest event pts, inclusive (an event's pts is the owner's pts after it).
    pub from_pts: Option<i32>,
    /// The largest event pts, inclusive.
    pub to_pts: Option<i32>,
    /// Committed at or after (inclusive).
    pub since: Option<DateTime<Utc>>,
    /// Committed before (exclusive).
    pub until: Option<DateTime<Utc>>,
    /// Kinds, each one of [`UserEvent::KINDS`]; empty: every kind.
    pub kinds: Vec<&'static str>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum LogFilterError {
    #[error("unknown event kind {0:?} (known: {known})", known = UserEvent::KINDS.join(", "))]
    UnknownKind(String),
    #[error("user id {0} is not a positive integer")]
    BadUser(String),
    #[error("the pts range is empty: from {from} is above to {to}")]
    EmptyPtsRange { from: i32, to: i32 },
    #[error("the time range is empty: since {since} is not before until {until}")]
    EmptyTimeRange { since: String, until: String },
    #[error("pts {0} is negative")]
    NegativePts(i32),
}

impl LogFilter {
    /// The known kind of that name.
    pub fn kind(name: &str) -> Result<&'static str, LogFilterError> {
        UserEvent::KINDS
            .iter()
            .copied()
            .find(|k| *k == name)
            .ok_or_else(|| LogFilterError::UnknownKind(name.to_string()))
    }

    pub fn user(raw: &str) -> Result<UserId, LogFilterError> {
        raw.trim()
            .parse::<i64>()
            .ok()
            .and_then(|n| UserId::new(n).ok())
            .ok_or_else(|| LogFilterError::BadUser(raw.to_string()))
    }

    /// Refuses filters that cannot select anything by construction (a sign of swapped bounds).
    pub fn check(&self) -> Result<(), LogFilterError> {
        for p in [self.from_pts, self.to_pts].into_iter().flatten() {
            if p < 0 {
                return Err(LogFilterError::NegativePts(p));
            }
        }
        if let (Some(from), Some(to)) = (self.from_pts, self.to_pts) {
            if from > to {
                return Err(LogFilterError::EmptyPtsRange { from, to });
            }
        }
        if let (Some(since), Some(until)) = (self.since, self.until) {
            if since >= until {
                return Err(LogFilterError::EmptyTimeRange {
                    since: LogRecord::format_time(since),
                    until: LogRecord::format_time(until),
                });
            }
        }
        Ok(())
    }
}

/// A prepared read of the log: the SQL for one filter.
pub struct LogExport {
    sql: String,
    filter: LogFilter,
}

const COLUMNS: &str =
    "user_id, pts, pts_count, kind, payload_version, payload, auth_key_id, session_id, committed_at";

impl LogExport {
    pub fn new(filter: LogFilter) -> Self {
        // Only the bounds that are set become conditions, so each shape gets its own plan (a
        // generic plan with "$1 IS NULL OR …" would not use the (user_id, pts) key).
        let mut conditions = Vec::new();
        let mut n = 0;
        let mut next = || {
            n += 1;
            n
        };
        if !filter.users.is_empty() {
            conditions.push(format!("user_id = ANY(${}::bigint[])", next()));
        }
        if filter.from_pts.is_some() {
            conditions.push(format!("pts >= ${}", next()));
        }
        if filter.to_pts.is_some() {
            conditions.push(format!("pts <= ${}", next()));
        }
        if filter.since.is_some() {
            conditions.push(format!("committed_at >= ${}", next()));
        }
        if filter.until.is_some() {
            conditions.push(format!("committed_at < ${}", next()));
        }
        if !filter.kinds.is_empty() {
            conditions.push(format!("kind = ANY(${}::text[])", next()));
        }
        let mut sql = format!("SELECT {COLUMNS} FROM user_update_events");
        if !conditions.is_empty() {
            sql.push_str(" WHERE ");
            sql.push_str(&conditions.join(" AND "));
        }
        sql.push_str(" ORDER BY user_id, pts");
        Self { sql, filter }
    }

    pub fn filter(&self) -> &LogFilter {
        &self.filter
    }

    /// The selected rows, in (user, pts) order, read as they arrive.
    pub fn rows<'a>(
        &'a self,
        pool: &'a PgPool,
    ) -> impl Stream<Item = Result<LogRecord, sqlx::Error>> + Send + 'a {
        let f = &self.filter;
        let mut q = sqlx::query(&self.sql).persistent(false);
        if !f.users.is_empty() {
            q = q.bind(f.users.iter().map(|u| u.get()).collect::<Vec<i64>>());
        }
        if let Some(p) = f.from_pts {
            q = q.bind(p);
        }
        if let Some(p) = f.to_pts {
            q = q.bind(p);
        }
        if let Some(t) = f.since {
            q = q.bind(t);
        }
        if let Some(t) = f.until {
            q = q.bind(t);
        }
        if !f.kinds.is_empty() {
            q = q.bind(
                f.kinds
                    .iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<String>>(),
            );
        }
        q.fetch(pool).map(|row| row.and_then(|r| record(&r)))
    }
}

fn record(row: &PgRow) -> Result<LogRecord, sqlx::Error> {
    let committed_at: DateTime<Utc> = row.try_get("committed_at")?;
    // A payload that cannot be read (valid JSON nested past serde_json's recursion limit,
    // written behind the application's back) is exported as the relay publishes it: an
    // undecodable record without its payload (docs/events.md), so the export goes on.
    let (payload, undecodable) = match row.try_get("payload") {
        Ok(payload) => (payload, None),
        Err(sqlx::Error::ColumnDecode { source, .. }) => {
            (serde_json::Value::Null, Some(format!("payload: {source}")))
        }
        Err(e) => return Err(e),
    };
    Ok(LogRecord {
        v: RECORD_VERSION,
        user_id: row.try_get("user_id")?,
        pts: row.try_get("pts")?,
        pts_count: row.try_get("pts_count")?,
        kind: row.try_get("kind")?,
        payload_version: row.try_get("payload_version")?,
        payload,
        auth_key_id: row.try_get("auth_key_id")?,
        session_id: row.try_get("session_id")?,
        committed_at: LogRecord::format_time(committed_at),
        undecodable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_set_bounds_become_conditions() {
        assert_eq!(
            LogExport::new(LogFilter::default()).sql,
            format!("SELECT {COLUMNS} FROM user_update_events ORDER BY user_id, pts")
        );
        let f = LogFilter {
            users: vec![UserId::new(3).unwrap()],
            to_pts: Some(9),
            kinds: vec!["new_message"],
            ..LogFilter::default()
        };
        assert!(LogExport::new(f).sql.ends_with(
            "WHERE user_id = ANY($1::bigint[]) AND pts <= $2 AND kind = ANY($3::text[]) ORDER BY user_id, pts"
        ));
    }

    #[test]
    fn filters_are_checked() {
        assert_eq!(LogFilter::kind("new_message"), Ok("new_message"));
        assert!(LogFilter::kind("nope").is_err());
        assert!(LogFilter::user("0").is_err());
        assert!(LogFilter::user("x").is_err());
        let f = LogFilter {
            from_pts: Some(5),
            to_pts: Some(4),
            ..LogFilter::default()
        };
        assert!(f.check().is_err());
        let t = Utc::now();
        let f = LogFilter {
            since: Some(t),
            until: Some(t),
            ..LogFilter::default()
        };
        assert!(f.check().is_err());
    }
}
