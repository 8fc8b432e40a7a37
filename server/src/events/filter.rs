//! The selection of an export or replay, from command-line or query-string text.

use chrono::{DateTime, Utc};
use infrastructure::postgres::log_export::{LogFilter, LogFilterError};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum FilterError {
    #[error(transparent)]
    Filter(#[from] LogFilterError),
    #[error("{what} {value:?} is not an RFC 3339 time (e.g. 2025-11-30T09:00:00Z)")]
    Time { what: &'static str, value: String },
}

/// The raw text of a selection, as the CLI and the admin endpoint take it.
#[derive(Debug, Clone, Default)]
pub struct FilterText {
    /// User ids, `all`, or comma-separated lists of them; none: every account.
    pub users: Vec<String>,
    pub from_pts: Option<i32>,
    pub to_pts: Option<i32>,
    pub since: Option<String>,
    pub until: Option<String>,
    pub kinds: Vec<String>,
}

fn time(what: &'static str, value: Option<&str>) -> Result<Option<DateTime<Utc>>, FilterError> {
    value
        .map(|v| {
            DateTime::parse_from_rfc3339(v.trim())
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| FilterError::Time {
                    what,
                    value: v.to_string(),
                })
        })
        .transpose()
}

impl FilterText {
    pub fn parse(&self) -> Result<LogFilter, FilterError> {
        let mut users = Vec::new();
        let mut all = false;
        for u in self.users.iter().flat_map(|u| u.split(',')) {
            let u = u.trim();
            if u.eq_ignore_ascii_case("all") {
                all = true;
            } else if !u.is_empty() {
                users.push(LogFilter::user(u)?);
            }
        }
        if all {
            users.clear();
        }
        users.sort_unstable();
        users.dedup();
        let mut kinds = Vec::new();
        for k in self.kinds.iter().flat_map(|k| k.split(',')) {
            if !k.trim().is_empty() {
                kinds.push(LogFilter::kind(k.trim())?);
            }
        }
        kinds.sort_unstable();
        kinds.dedup();
        let filter = LogFilter {
            users,
            from_pts: self.from_pts,
            to_pts: self.to_pts,
            since: time("since", self.since.as_deref())?,
            until: time("until", self.until.as_deref())?,
            kinds,
        };
        filter.check()?;
        Ok(filter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_becomes_a_checked_filter() {
        let f = FilterText {
            users: vec!["3,1".into(), "3".into()],
            kinds: vec!["new_message".into()],
            since: Some("2025-11-30T10:00:00+01:00".into()),
            ..FilterText::default()
        }
        .parse()
        .unwrap();
        assert_eq!(
            f.users.iter().map(|u| u.get()).collect::<Vec<_>>(),
            vec![1, 3]
        );
        assert_eq!(f.kinds, vec!["new_message"]);
        assert_eq!(f.since.unwrap().to_rfc3339(), "2025-11-30T09:00:00+00:00");
        let all = FilterText {
            users: vec!["all".into(), "4".into()],
            ..FilterText::default()
        };
        assert!(all.parse().unwrap().users.is_empty());
        for bad in [
            FilterText {
                users: vec!["-1".into()],
                ..FilterText::default()
            },
            FilterText {
                kinds: vec!["nope".into()],
                ..FilterText::default()
            },
            FilterText {
                since: Some("yesterday".into()),
                ..FilterText::default()
            },
            FilterText {
                from_pts: Some(9),
                to_pts: Some(2),
                ..FilterText::default()
            },
        ] {
            assert!(bad.parse().is_err(), "{bad:?}");
        }
    }
}
