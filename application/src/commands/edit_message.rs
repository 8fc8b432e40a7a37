//! `messages.editMessage`: the author edits the text (or caption, or media) of a private message;
//! every owner's box gets the new message and its own `updateEditMessage`.

use domain::entities::Entities;
use domain::events::{EditMessage as EditEvent, UserEvent};
use domain::media::{Caption, MessageMedia};
use domain::message::OwnerMessage;
use domain::message_entity::MessageEntity;
use domain::message_text::MessageText;
use domain::{BoxId, DomainError, Pts, UserId};
use serde::Deserialize;
use serde_json::Value;

use super::batched_write::Write;
use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::{Origin, WriteTx};
use crate::tl::{InputPeer, MediaRequest, Message, Update, Updates};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct EditMessage {
    #[serde(default)]
    pub no_webpage: bool,
    #[serde(default)]
    pub invert_media: bool,
    pub peer: InputPeer,
    pub id: i64,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub media: Option<Value>,
    #[serde(default)]
    pub reply_markup: Option<Value>,
    #[serde(default)]
    pub entities: Option<Vec<Value>>,
    #[serde(default)]
    pub schedule_date: Option<i32>,
    #[serde(default)]
    pub quick_reply_shortcut_id: Option<i32>,
}

/// An edit checked as far as it can be before its transaction: the rest depends on the message,
/// read under the lock.
#[derive(Debug, Clone)]
pub(crate) struct PreparedEdit {
    pub author: UserId,
    pub peer: UserId,
    pub id: BoxId,
    /// The new text as sent: a text or a caption, as the message turns out to be.
    pub message: Option<String>,
    /// The new entities, typed; checked against the text under the lock.
    pub entities: Option<Vec<MessageEntity>>,
    pub new_media: Option<MessageMedia>,
    pub origin: Origin,
}

/// What an edit wrote: the author's copy as it now is.
#[derive(Debug)]
pub(crate) struct Edited {
    pub message: OwnerMessage,
    pub pts: Pts,
    pub date: i32,
}

impl App {
    pub async fn edit_message(
        &self,
        caller: &Caller,
        req: EditMessage,
    ) -> Result<Updates, AppError> {
        // A web page preview or "no media" edit is a text edit; real media replaces the message's.
        let new_media = match req.media.clone().map(MediaRequest::parse).transpose()? {
            None | Some(MediaRequest::None) => None,
            Some(MediaRequest::Media(m)) => Some(m),
        };
        if req.reply_markup.is_some() {
            return Err(DomainError::ReplyMarkupInvalid.into());
        }
        if req.schedule_date.is_some() {
            return Err(DomainError::ScheduleDateInvalid.into());
        }
        if req.quick_reply_shortcut_id.is_some() {
            return Err(DomainError::ShortcutInvalid.into());
        }
        let id = BoxId::from_client(req.id).ok_or(DomainError::MessageIdInvalid)?;
        let author = caller.user_id;
        let peer = self.chat_peer(author, &req.peer)?.user_id(author);
        let entities = req
            .entities
            .map(|raw| self.typed_entities(author, raw))
            .transpose()?;

        // Made before the transaction (no lock is held while a photo is processed); unused if the
        // edit is then refused. A text message cannot gain media (checked again under the lock):
        // nothing is made for it.
        let new_media = match new_media {
            Some(m) => {
                let current = self.store.messages(author, &[id]).await?;
                if current.first().is_some_and(|c| c.media.is_none()) {
                    return Err(AppError::BadRequest("MEDIA_PREV_INVALID"));
                }
                Some(self.resolve_media(caller, m).await?)
            }
            None => None,
        };

        let edit = PreparedEdit {
            author,
            peer,
            id,
            message: req.message,
            entities,
            new_media,
            origin: Origin::from(caller),
        };
        let edited = self.write(Write::Edit(Box::new(edit))).await?.edited()?;
        let users = self.users_for(author, [author, peer]).await?;
        Ok(Updates::Updates {
            updates: vec![Update::EditMessage {
                message: Message::render(&edited.message, self.file_refs()),
                pts: edited.pts.get(),
                pts_count: 1,
            }],
            users,
            chats: Vec::new(),
            date: edited.date,
            seq: 0,
        })
    }
}

/// The edit's work inside a transaction that has locked both accounts; the caller commits.
pub(crate) async fn edit_locked(
    tx: &mut dyn WriteTx,
    edit: &PreparedEdit,
) -> Result<Edited, AppError> {
    let (author, peer) = (edit.author, edit.peer);
    let mine = tx
        .messages(author, &[edit.id])
        .await?
        .into_iter()
        .find(|m| m.peer_id == peer)
        .ok_or(DomainError::MessageIdInvalid)?;
    let forwarded_from_other = mine.fwd_from.as_ref().is_some_and(|f| f.from_id != author);
    if !mine.out || mine.from_id != author || forwarded_from_other {
        return Err(DomainError::MessageAuthorRequired.into());
    }
    if peer != author && tx.is_blocked(peer, author).await? {
        return Err(DomainError::EditMessagesForbidden.into());
    }
    // A media message's text is its caption (may be empty, at most 1024 code points); a text
    // message cannot gain media by an edit (Telegram's rule).
    let new_media = edit.new_media.clone();
    if new_media.is_some() && mine.media.is_none() {
        return Err(AppError::BadRequest("MEDIA_PREV_INVALID"));
    }
    let text = match (edit.message.clone(), mine.media.is_some()) {
        (Some(raw), true) => Caption::parse(raw)?.into_string(),
        (Some(raw), false) => MessageText::parse(raw)?.into_string(),
        // No new text: a media edit keeps the caption.
        (None, true) => mine.text.clone(),
        (None, false) => return Err(DomainError::MessageEmpty.into()),
    };
    let entities = match edit.entities.clone() {
        Some(typed) => Entities::parse(typed, text.encode_utf16().count())?.into_vec(),
        None if new_media.is_some() => mine.entities.clone(),
        None => Vec::new(),
    };
    if new_media.is_none() && mine.text == text && mine.entities == entities {
        return Err(DomainError::MessageNotModified.into());
    }

    let edit_date = unix_now();
    // A caption edit keeps the media; new media replaces it in every owner's copy.
    let edited = |m: OwnerMessage| OwnerMessage {
        text: text.clone(),
        entities: entities.clone(),
        edit_date: Some(edit_date),
        media: new_media.clone().map(Box::new).or(m.media),
        ..m
    };
    let others_copy = if peer != author {
        tx.message_by_shared_id(peer, mine.message_id).await?
    } else {
        None
    };
    let my_copy = edited(mine);
    let pts = tx
        .append(
            author,
            UserEvent::EditMessage(EditEvent {
                message: my_copy.clone(),
            }),
            edit.origin,
        )
        .await?;
    if let Some(theirs) = others_copy {
        tx.append(
            peer,
            UserEvent::EditMessage(EditEvent {
                message: edited(theirs),
            }),
            edit.origin,
        )
        .await?;
    }
    Ok(Edited {
        message: my_copy,
        pts,
        date: edit_date,
    })
}
