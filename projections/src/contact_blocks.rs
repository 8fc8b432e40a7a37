//! `contact_blocks`: each owner's block list.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "contact_blocks";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    let UserEvent::PeerBlocked(e) = event else {
        return Ok(());
    };
    if e.blocked {
        // Blocking twice keeps the first date, as the block list shows when the block began.
        sqlx::query(
            "INSERT INTO contact_blocks (owner_user_id, blocked_user_id, date) VALUES ($1, $2, $3) \
             ON CONFLICT (owner_user_id, blocked_user_id) DO NOTHING",
        )
        .bind(owner.get())
        .bind(e.peer_id.get())
        .bind(e.date)
        .execute(conn)
        .await?;
    } else {
        sqlx::query("DELETE FROM contact_blocks WHERE owner_user_id = $1 AND blocked_user_id = $2")
            .bind(owner.get())
            .bind(e.peer_id.get())
            .execute(conn)
            .await?;
    }
    Ok(())
}
