//! `reverse_contacts`: who has each account in their contacts. The keys of `contacts`, partitioned
//! by the contact, so that `mutual_contact` and "who has me" read one partition
//! (migrations/0023_reverse_contacts.sql). A row belongs to the owner whose log saved the contact.

use domain::events::UserEvent;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::ProjectionError;

pub const NAME: &str = "reverse_contacts";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    match event {
        // A rename saves the contact again: the row is already there.
        UserEvent::ContactSaved(e) => {
            sqlx::query(
                "INSERT INTO reverse_contacts (contact_user_id, owner_user_id) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(e.user_id.get())
            .bind(owner.get())
            .execute(conn)
            .await?;
        }
        UserEvent::ContactDeleted(e) => {
            sqlx::query(
                "DELETE FROM reverse_contacts WHERE contact_user_id = $1 AND owner_user_id = $2",
            )
            .bind(e.user_id.get())
            .bind(owner.get())
            .execute(conn)
            .await?;
        }
        // contacts_reset forgets imports, not contacts.
        _ => {}
    }
    Ok(())
}
