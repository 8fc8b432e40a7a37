//! `profile_photos`: each owner's profile photos not deleted, with the snapshot its event carried;
//! the current one is the row set last (highest `set_pts`).

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "profile_photos";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    let UserEvent::ProfilePhotoChanged(e) = event else {
        return Ok(());
    };
    if !e.removed.is_empty() {
        let ids: Vec<i64> = e.removed.iter().map(|id| id.get()).collect();
        sqlx::query("DELETE FROM profile_photos WHERE owner_user_id = $1 AND photo_id = ANY($2)")
            .bind(owner.get())
            .bind(&ids)
            .execute(&mut *conn)
            .await?;
    }
    if let Some(photo) = &e.photo {
        // A snapshot of plain fields always serializes.
        let snapshot = serde_json::to_value(photo).unwrap_or_default();
        sqlx::query(
            "INSERT INTO profile_photos (owner_user_id, photo_id, set_pts, photo) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (owner_user_id, photo_id) DO UPDATE SET set_pts = EXCLUDED.set_pts",
        )
        .bind(owner.get())
        .bind(photo.id.get())
        .bind(pts.get())
        .bind(snapshot)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
