//! `message_boxes`: each owner's own copy of each message, keyed by the owner's box id.

use domain::events::UserEvent;
use domain::message::OwnerMessage;
use domain::{Pts, UserId};
use sqlx::PgConnection;

use crate::{box_ids, ProjectionError};

pub const NAME: &str = "message_boxes";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    match event {
        UserEvent::NewMessage(e) => insert(conn, owner, pts, &e.message).await,
        UserEvent::EditMessage(e) => edit(conn, owner, &e.message).await,
        UserEvent::DeleteMessages(e) => {
            sqlx::query("UPDATE message_boxes SET deleted = true WHERE owner_user_id = $1 AND box_id = ANY($2)")
                .bind(owner.get())
                .bind(box_ids(&e.ids))
                .execute(conn)
                .await?;
            Ok(())
        }
        UserEvent::ReadMessageContents(e) => {
            sqlx::query("UPDATE message_boxes SET media_unread = false WHERE owner_user_id = $1 AND box_id = ANY($2)")
                .bind(owner.get())
                .bind(box_ids(&e.ids))
                .execute(conn)
                .await?;
            Ok(())
        }
        UserEvent::ReadHistoryInbox(_)
        | UserEvent::ReadHistoryOutbox(_)
        | UserEvent::PeerBlocked(_) => Ok(()),
        // Dialog organization does not touch the boxes.
        UserEvent::DialogPinned(_)
        | UserEvent::PinnedDialogs(_)
        | UserEvent::DialogUnreadMark(_)
        | UserEvent::FolderPeers(_)
        | UserEvent::DialogFilter(_)
        | UserEvent::DialogFilterOrder(_)
        | UserEvent::DialogFilterTags(_)
        | UserEvent::ContactSaved(_)
        | UserEvent::ContactDeleted(_)
        | UserEvent::ContactsReset(_)
        | UserEvent::PeerSettings(_)
        | UserEvent::NotifySettings(_)
        | UserEvent::ProfilePhotoChanged(_) => Ok(()),
    }
}

async fn insert(
    conn: &mut PgConnection,
    owner: UserId,
    pts: Pts,
    m: &OwnerMessage,
) -> Result<(), ProjectionError> {
    let (reply_to, fwd_from) = headers(m)?;
    let (media, media_id, media_class) = media_columns(m)?;
    sqlx::query(
        "INSERT INTO message_boxes (owner_user_id, box_id, peer_user_id, message_id, sender_user_id, outgoing, \
         random_id, date, text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date, pts, \
         media, media_id, media_class, grouped_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)",
    )
    .bind(owner.get())
    .bind(m.id.get())
    .bind(m.peer_id.get())
    .bind(m.message_id.0)
    .bind(m.from_id.get())
    .bind(m.out)
    .bind(m.random_id)
    .bind(m.date)
    .bind(&m.text)
    .bind(sqlx::types::Json(&m.entities))
    .bind(m.silent)
    .bind(m.noforwards)
    .bind(reply_to)
    .bind(fwd_from)
    .bind(m.media_unread)
    .bind(m.edit_date)
    .bind(pts.get())
    .bind(media)
    .bind(media_id)
    .bind(media_class)
    .bind(m.grouped_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// The payload of an edit is the whole message after it, so the editable columns are simply taken
/// from it. The box keeps the pts of the event that created it (retries of a send answer with it).
async fn edit(
    conn: &mut PgConnection,
    owner: UserId,
    m: &OwnerMessage,
) -> Result<(), ProjectionError> {
    let (reply_to, fwd_from) = headers(m)?;
    let (media, media_id, media_class) = media_columns(m)?;
    sqlx::query(
        "UPDATE message_boxes SET text = $3, entities = $4, edit_date = $5, reply_to = $6, fwd_from = $7, \
         media = $8, media_id = $9, media_class = $10 \
         WHERE owner_user_id = $1 AND box_id = $2",
    )
    .bind(owner.get())
    .bind(m.id.get())
    .bind(&m.text)
    .bind(sqlx::types::Json(&m.entities))
    .bind(m.edit_date)
    .bind(reply_to)
    .bind(fwd_from)
    .bind(media)
    .bind(media_id)
    .bind(media_class)
    .execute(conn)
    .await?;
    Ok(())
}

type MediaColumns = (Option<serde_json::Value>, Option<i64>, Option<&'static str>);

/// The media snapshot and what is looked up by: its id (downloads) and class (search filters).
fn media_columns(m: &OwnerMessage) -> Result<MediaColumns, ProjectionError> {
    let Some(media) = &m.media else {
        return Ok((None, None, None));
    };
    let json = serde_json::to_value(media).map_err(|source| ProjectionError::Encode {
        what: "media",
        source,
    })?;
    Ok((
        Some(json),
        Some(media.id().get()),
        Some(media.class().as_str()),
    ))
}

type Headers = (Option<serde_json::Value>, Option<serde_json::Value>);

fn headers(m: &OwnerMessage) -> Result<Headers, ProjectionError> {
    let reply_to = m
        .reply_to
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|source| ProjectionError::Encode {
            what: "reply_to",
            source,
        })?;
    let fwd_from = m
        .fwd_from
        .as_ref()
        .map(serde_json::to_value)
        .transpose()
        .map_err(|source| ProjectionError::Encode {
            what: "fwd_from",
            source,
        })?;
    Ok((reply_to, fwd_from))
}
