//! `contacts`: each owner's contacts under the owner's names for them.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "contacts";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    match event {
        UserEvent::ContactSaved(e) => {
            // Renaming keeps the date the contact was first saved; an import marks it imported.
            sqlx::query(
                "INSERT INTO contacts (owner_user_id, contact_user_id, first_name, last_name, phone, imported, date) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (owner_user_id, contact_user_id) DO UPDATE SET \
                   first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name, phone = EXCLUDED.phone, \
                   imported = contacts.imported OR EXCLUDED.imported",
            )
            .bind(owner.get())
            .bind(e.user_id.get())
            .bind(&e.first_name)
            .bind(&e.last_name)
            .bind(&e.phone)
            .bind(e.imported)
            .bind(e.date)
            .execute(conn)
            .await?;
        }
        UserEvent::ContactDeleted(e) => {
            sqlx::query("DELETE FROM contacts WHERE owner_user_id = $1 AND contact_user_id = $2")
                .bind(owner.get())
                .bind(e.user_id.get())
                .execute(conn)
                .await?;
        }
        UserEvent::ContactsReset(_) => {
            sqlx::query(
                "UPDATE contacts SET imported = false WHERE owner_user_id = $1 AND imported",
            )
            .bind(owner.get())
            .execute(conn)
            .await?;
        }
        _ => {}
    }
    Ok(())
}
