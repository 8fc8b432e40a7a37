//! `peer_settings`: per-chat settings the owner changed; today whether the action bar is hidden.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "peer_settings";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    let UserEvent::PeerSettings(e) = event else {
        return Ok(());
    };
    sqlx::query(
        "INSERT INTO peer_settings (owner_user_id, peer_user_id, bar_hidden) VALUES ($1, $2, $3) \
         ON CONFLICT (owner_user_id, peer_user_id) DO UPDATE SET bar_hidden = EXCLUDED.bar_hidden",
    )
    .bind(owner.get())
    .bind(e.peer_id.get())
    .bind(e.bar_hidden)
    .execute(conn)
    .await?;
    Ok(())
}
