//! Mapping adapter failures onto the ports' [`StoreError`]. (A `From` impl is impossible: both types
//! are foreign here.)

use application::ports::StoreError;
use projections::ProjectionError;

/// Postgres cancelled the statement (`statement_timeout`, SQLSTATE 57014) or ended an idle
/// transaction (`idle_in_transaction_session_timeout`, 25P03); no connection came free in time.
pub fn db_error(e: sqlx::Error) -> StoreError {
    let timed_out = match &e {
        sqlx::Error::Database(d) => matches!(d.code().as_deref(), Some("57014" | "25P03")),
        sqlx::Error::PoolTimedOut => true,
        _ => false,
    };
    if timed_out {
        StoreError::Timeout(e.to_string())
    } else {
        StoreError::Database(e.to_string())
    }
}

pub fn projection_error(e: ProjectionError) -> StoreError {
    match e {
        ProjectionError::Database(e) => db_error(e),
        ProjectionError::Decode { .. } | ProjectionError::Corrupt(_) => {
            StoreError::Corrupt(e.to_string())
        }
        // Raised only by rebuilds, never by the inline projectors.
        ProjectionError::Encode { .. } | ProjectionError::Aborted(_) | ProjectionError::Busy(_) => {
            StoreError::Bug(e.to_string())
        }
    }
}
