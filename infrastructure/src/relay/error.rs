//! How a relay attempt failed, which decides what happens next.

use thiserror::Error;

#[derive(Debug, Error, Clone)]
pub enum RelayError {
    /// The setup cannot work until someone changes it (e.g. `wal_level`); retrying soon is noise.
    #[error("{0}")]
    Fatal(String),
    /// Anything a retry may cure: a dropped connection, a broker outage, a slot still held by a
    /// relay that is going away.
    #[error("{0}")]
    Transient(String),
}

impl RelayError {
    pub fn is_fatal(&self) -> bool {
        matches!(self, RelayError::Fatal(_))
    }
}

impl From<sqlx::Error> for RelayError {
    fn from(e: sqlx::Error) -> Self {
        // Settings and privileges do not fix themselves.
        let fatal = e
            .as_database_error()
            .and_then(|d| d.code())
            .is_some_and(|code| matches!(code.as_ref(), "53400" | "42501" | "55000"));
        let text = format!("Postgres: {e}");
        if fatal {
            RelayError::Fatal(text)
        } else {
            RelayError::Transient(text)
        }
    }
}
