//! `dialog_filters`: each owner's custom dialog filters (folders), one row per filter holding its
//! rules as the last `dialog_filter` event defined them.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "dialog_filters";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    let UserEvent::DialogFilter(e) = event else {
        return Ok(());
    };
    match &e.filter {
        Some(rules) => {
            let json = serde_json::to_value(rules).map_err(|source| ProjectionError::Encode {
                what: "dialog filter",
                source,
            })?;
            sqlx::query(
                "INSERT INTO dialog_filters (user_id, filter_id, filter) VALUES ($1, $2, $3) \
                 ON CONFLICT (user_id, filter_id) DO UPDATE SET filter = EXCLUDED.filter",
            )
            .bind(owner.get())
            .bind(e.id)
            .bind(json)
            .execute(conn)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM dialog_filters WHERE user_id = $1 AND filter_id = $2")
                .bind(owner.get())
                .bind(e.id)
                .execute(conn)
                .await?;
        }
    }
    Ok(())
}
