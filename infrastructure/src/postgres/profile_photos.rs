//! Reading an owner's profile photos from the `profile_photos` read model (its projector writes
//! it), for the photos.* commands inside their transaction and for reads outside one.

use application::ports::StoreError;
use domain::media::Photo;
use domain::UserId;
use sqlx::PgExecutor;

use crate::error::db_error;

/// The owner's photos, current first, then newest set first (index `profile_photos_current`).
pub(crate) async fn of_owner<'e>(
    exec: impl PgExecutor<'e>,
    owner: UserId,
) -> Result<Vec<Photo>, StoreError> {
    let snapshots: Vec<serde_json::Value> = sqlx::query_scalar(
        "SELECT photo FROM profile_photos WHERE owner_user_id = $1 ORDER BY set_pts DESC",
    )
    .bind(owner.get())
    .fetch_all(exec)
    .await
    .map_err(db_error)?;
    snapshots
        .into_iter()
        .map(|v| {
            serde_json::from_value(v)
                .map_err(|e| StoreError::Corrupt(format!("profile photo snapshot: {e}")))
        })
        .collect()
}
