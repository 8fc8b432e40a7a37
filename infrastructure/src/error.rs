//! Mapping adapter failures onto the ports' [`StoreError`]. (A `From` impl is impossible: both types
//! are foreign here.)

use application::ports::StoreError;
use projections::ProjectionError;

pub fn db_error(e: sqlx::Error) -> StoreError {
    StoreError::Database(e.to_string())
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
