//! `dialog_filter_settings`: the order of each owner's filters and whether folder tags are on. A new
//! filter is appended to the order, a deleted one leaves it; `dialog_filter_order` replaces it.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "dialog_filter_settings";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    match event {
        UserEvent::DialogFilter(e) if e.filter.is_some() => {
            sqlx::query(
                "INSERT INTO dialog_filter_settings (user_id, filter_order) VALUES ($1, ARRAY[$2::int]) \
                 ON CONFLICT (user_id) DO UPDATE SET filter_order = CASE \
                   WHEN $2 = ANY(dialog_filter_settings.filter_order) THEN dialog_filter_settings.filter_order \
                   ELSE array_append(dialog_filter_settings.filter_order, $2) END",
            )
            .bind(owner.get())
            .bind(e.id)
            .execute(conn)
            .await?;
        }
        UserEvent::DialogFilter(e) => {
            sqlx::query("UPDATE dialog_filter_settings SET filter_order = array_remove(filter_order, $2) WHERE user_id = $1")
                .bind(owner.get())
                .bind(e.id)
                .execute(conn)
                .await?;
        }
        UserEvent::DialogFilterOrder(e) => {
            sqlx::query(
                "INSERT INTO dialog_filter_settings (user_id, filter_order) VALUES ($1, $2) \
                 ON CONFLICT (user_id) DO UPDATE SET filter_order = EXCLUDED.filter_order",
            )
            .bind(owner.get())
            .bind(&e.order)
            .execute(conn)
            .await?;
        }
        UserEvent::DialogFilterTags(e) => {
            sqlx::query(
                "INSERT INTO dialog_filter_settings (user_id, tags_enabled) VALUES ($1, $2) \
                 ON CONFLICT (user_id) DO UPDATE SET tags_enabled = EXCLUDED.tags_enabled",
            )
            .bind(owner.get())
            .bind(e.enabled)
            .execute(conn)
            .await?;
        }
        _ => {}
    }
    Ok(())
}
