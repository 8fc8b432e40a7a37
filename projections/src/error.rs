//! Why a projector or a rebuild failed.

use domain::events::EventDecodeError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ProjectionError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("event pts {pts} of user {user_id} cannot be decoded: {source}")]
    Decode {
        user_id: i64,
        pts: i32,
        #[source]
        source: EventDecodeError,
    },
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    #[error("aborted: {0}")]
    Aborted(String),
    #[error("{0}")]
    Busy(String),
    #[error("cannot encode {what}: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
}
