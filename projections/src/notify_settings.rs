//! `notify_settings`: each owner's notification settings per chat (mute, silent, previews). Settings
//! with nothing set are no row at all.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "notify_settings";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    let UserEvent::NotifySettings(e) = event else {
        return Ok(());
    };
    if e.settings.is_default() {
        sqlx::query("DELETE FROM notify_settings WHERE owner_user_id = $1 AND peer_user_id = $2")
            .bind(owner.get())
            .bind(e.peer_id.get())
            .execute(conn)
            .await?;
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO notify_settings (owner_user_id, peer_user_id, show_previews, silent, mute_until) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (owner_user_id, peer_user_id) DO UPDATE SET \
           show_previews = EXCLUDED.show_previews, silent = EXCLUDED.silent, mute_until = EXCLUDED.mute_until",
    )
    .bind(owner.get())
    .bind(e.peer_id.get())
    .bind(e.settings.show_previews)
    .bind(e.settings.silent)
    .bind(e.settings.mute_until)
    .execute(conn)
    .await?;
    Ok(())
}
