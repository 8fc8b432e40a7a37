//! `message_boxes`: each owner's own copy of each message, keyed by the owner's box id.

use domain::events::UserEvent;
use domain::message::OwnerMessage;
use domain::{Pts, UserId};
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::{PgConnection, Postgres};

use crate::{box_ids, NewMessageAt, ProjectionError};

pub const NAME: &str = "message_boxes";
pub const VERSION: i32 = 1;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    match event {
        UserEvent::NewMessage(e) => {
            insert(
                conn,
                &[NewMessageAt {
                    owner,
                    pts,
                    message: &e.message,
                }],
            )
            .await
        }
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

/// The boxes of new messages, one row each, in one statement however many (a send batch's, a
/// rebuild page's run): the same rows one insert per message would write.
pub(crate) async fn insert(
    conn: &mut PgConnection,
    messages: &[NewMessageAt<'_>],
) -> Result<(), ProjectionError> {
    if messages.is_empty() {
        return Ok(());
    }
    bind_insert(sqlx::query(INSERT), messages)?
        .execute(conn)
        .await?;
    Ok(())
}

/// The insert of [`insert`], its parameters `$1`..`$21` ([`INSERT_PARAMS`]) bound by
/// [`bind_insert`]; also a `WITH` entry of the write path's commit (`crate::inline`).
pub(crate) const INSERT: &str =
    "INSERT INTO message_boxes (owner_user_id, box_id, peer_user_id, message_id, sender_user_id, outgoing, \
     random_id, date, text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date, pts, \
     media, media_id, media_class, grouped_id) \
     SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[], $4::bigint[], $5::bigint[], $6::bool[], \
       $7::bigint[], $8::int[], $9::text[], $10::jsonb[], $11::bool[], $12::bool[], $13::jsonb[], \
       $14::jsonb[], $15::bool[], $16::int[], $17::int[], $18::jsonb[], $19::bigint[], $20::text[], \
       $21::bigint[])";

/// How many parameters [`INSERT`] takes.
pub(crate) const INSERT_PARAMS: usize = 21;

/// The parameters of [`INSERT`] (in the order `$1`..`$21`) for `messages`, bound after those `q`
/// already has (none: the insert's parameters come first in every statement that holds it). The
/// columns `dialogs` needs are among them: owner `$1`, box id `$2`, peer `$3`, outgoing `$6`,
/// date `$8`.
pub(crate) fn bind_insert<'q>(
    q: Query<'q, Postgres, PgArguments>,
    messages: &[NewMessageAt<'q>],
) -> Result<Query<'q, Postgres, PgArguments>, ProjectionError> {
    let mut c = BoxColumns::with_capacity(messages.len());
    for m in messages {
        c.push(m)?;
    }
    Ok(q.bind(c.owner)
        .bind(c.box_id)
        .bind(c.peer)
        .bind(c.message_id)
        .bind(c.sender)
        .bind(c.out)
        .bind(c.random_id)
        .bind(c.date)
        .bind(c.text)
        .bind(c.entities)
        .bind(c.silent)
        .bind(c.noforwards)
        .bind(c.reply_to)
        .bind(c.fwd_from)
        .bind(c.media_unread)
        .bind(c.edit_date)
        .bind(c.pts)
        .bind(c.media)
        .bind(c.media_id)
        .bind(c.media_class)
        .bind(c.grouped_id))
}

/// New boxes column by column, as `unnest` takes them.
struct BoxColumns<'a> {
    owner: Vec<i64>,
    box_id: Vec<i32>,
    peer: Vec<i64>,
    message_id: Vec<i64>,
    sender: Vec<i64>,
    out: Vec<bool>,
    random_id: Vec<Option<i64>>,
    date: Vec<i32>,
    text: Vec<&'a str>,
    entities: Vec<sqlx::types::Json<&'a Vec<domain::message_entity::MessageEntity>>>,
    silent: Vec<bool>,
    noforwards: Vec<bool>,
    reply_to: Vec<Option<serde_json::Value>>,
    fwd_from: Vec<Option<serde_json::Value>>,
    media_unread: Vec<bool>,
    edit_date: Vec<Option<i32>>,
    pts: Vec<i32>,
    media: Vec<Option<serde_json::Value>>,
    media_id: Vec<Option<i64>>,
    media_class: Vec<Option<&'static str>>,
    grouped_id: Vec<Option<i64>>,
}

impl<'a> BoxColumns<'a> {
    fn with_capacity(n: usize) -> Self {
        Self {
            owner: Vec::with_capacity(n),
            box_id: Vec::with_capacity(n),
            peer: Vec::with_capacity(n),
            message_id: Vec::with_capacity(n),
            sender: Vec::with_capacity(n),
            out: Vec::with_capacity(n),
            random_id: Vec::with_capacity(n),
            date: Vec::with_capacity(n),
            text: Vec::with_capacity(n),
            entities: Vec::with_capacity(n),
            silent: Vec::with_capacity(n),
            noforwards: Vec::with_capacity(n),
            reply_to: Vec::with_capacity(n),
            fwd_from: Vec::with_capacity(n),
            media_unread: Vec::with_capacity(n),
            edit_date: Vec::with_capacity(n),
            pts: Vec::with_capacity(n),
            media: Vec::with_capacity(n),
            media_id: Vec::with_capacity(n),
            media_class: Vec::with_capacity(n),
            grouped_id: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, at: &NewMessageAt<'a>) -> Result<(), ProjectionError> {
        let m = at.message;
        let (reply_to, fwd_from) = headers(m)?;
        let (media, media_id, media_class) = media_columns(m)?;
        self.owner.push(at.owner.get());
        self.box_id.push(m.id.get());
        self.peer.push(m.peer_id.get());
        self.message_id.push(m.message_id.0);
        self.sender.push(m.from_id.get());
        self.out.push(m.out);
        self.random_id.push(m.random_id);
        self.date.push(m.date);
        self.text.push(&m.text);
        self.entities.push(sqlx::types::Json(&m.entities));
        self.silent.push(m.silent);
        self.noforwards.push(m.noforwards);
        self.reply_to.push(reply_to);
        self.fwd_from.push(fwd_from);
        self.media_unread.push(m.media_unread);
        self.edit_date.push(m.edit_date);
        self.pts.push(at.pts.get());
        self.media.push(media);
        self.media_id.push(media_id);
        self.media_class.push(media_class);
        self.grouped_id.push(m.grouped_id);
        Ok(())
    }
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
