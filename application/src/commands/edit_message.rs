//! `messages.editMessage`: the author edits the text of a private message; every owner's box gets
//! the new text and its own `updateEditMessage`.

use domain::events::{EditMessage as EditEvent, UserEvent};
use domain::message::OwnerMessage;
use domain::message_text::MessageText;
use domain::{BoxId, DomainError};
use serde::Deserialize;
use serde_json::Value;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::Origin;
use crate::tl::{InputPeer, Message, Update, Updates};
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

impl App {
    pub async fn edit_message(
        &self,
        caller: &Caller,
        req: EditMessage,
    ) -> Result<Updates, AppError> {
        if let Some(media) = &req.media {
            // A web page preview or "no media" edit is a text edit; real media is not supported yet.
            let kind = media.get("_").and_then(Value::as_str).unwrap_or_default();
            if kind != "inputMediaEmpty" && kind != "inputMediaWebPage" {
                return Err(DomainError::MediaInvalid.into());
            }
        }
        if req.reply_markup.is_some() {
            return Err(DomainError::ReplyMarkupInvalid.into());
        }
        if req.schedule_date.is_some() {
            return Err(DomainError::ScheduleDateInvalid.into());
        }
        if req.quick_reply_shortcut_id.is_some() {
            return Err(DomainError::ShortcutInvalid.into());
        }
        let text = MessageText::parse(req.message.unwrap_or_default())?;
        let entities = self.entities(
            caller.user_id,
            req.entities.unwrap_or_default(),
            text.utf16_len(),
        )?;
        let id = BoxId::from_client(req.id).ok_or(DomainError::MessageIdInvalid)?;
        let author = caller.user_id;
        let peer = self.chat_peer(author, &req.peer)?.user_id(author);

        let mut tx = self.store.begin().await?;
        tx.lock_users(&[author, peer]).await?;
        let mine = tx
            .messages(author, &[id])
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
        if mine.text == text.as_str() && mine.entities.as_slice() == entities.as_slice() {
            return Err(DomainError::MessageNotModified.into());
        }

        let edit_date = unix_now();
        let edited = |m: OwnerMessage| OwnerMessage {
            text: text.as_str().to_string(),
            entities: entities.as_slice().to_vec(),
            edit_date: Some(edit_date),
            ..m
        };
        let origin = Origin::from(caller);
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
                origin,
            )
            .await?;
        if let Some(theirs) = others_copy {
            tx.append(
                peer,
                UserEvent::EditMessage(EditEvent {
                    message: edited(theirs),
                }),
                origin,
            )
            .await?;
        }
        tx.commit().await?;

        let users = self.users_for(author, [author, peer]).await?;
        Ok(Updates::Updates {
            updates: vec![Update::EditMessage {
                message: Message::from(&my_copy),
                pts: pts.get(),
                pts_count: 1,
            }],
            users,
            chats: Vec::new(),
            date: edit_date,
            seq: 0,
        })
    }
}
