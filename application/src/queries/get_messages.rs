//! `messages.getMessages`: the caller's messages by id; ids it does not have come back as `messageEmpty`.

use domain::{limits, BoxId, DomainError};
use serde::Deserialize;

use crate::error::AppError;
use crate::tl::{users_of_message, Message, MessageEmpty, MessageItem, Messages};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "_")]
pub enum InputMessage {
    #[serde(rename = "inputMessageID")]
    Id { id: i64 },
    #[serde(rename = "inputMessageReplyTo")]
    ReplyTo { id: i64 },
    #[serde(rename = "inputMessagePinned")]
    Pinned {},
    #[serde(rename = "inputMessageCallbackQuery")]
    CallbackQuery {},
}

#[derive(Debug, Clone, Deserialize)]
pub struct GetMessages {
    pub id: Vec<InputMessage>,
}

impl App {
    pub async fn get_messages(
        &self,
        caller: &Caller,
        req: GetMessages,
    ) -> Result<Messages, AppError> {
        let owner = caller.user_id;
        if req.id.len() > limits::MAX_GET_MESSAGES_IDS {
            return Err(DomainError::LimitInvalid.into());
        }
        let wanted: Vec<Option<BoxId>> = req
            .id
            .iter()
            .map(|m| match m {
                InputMessage::Id { id } => BoxId::from_client(*id),
                _ => None,
            })
            .collect();
        // The asked ids and the sources of the asked replies in one read, then the replies'
        // targets in a second (only when replies are asked).
        let reply_sources: Vec<Option<BoxId>> = req
            .id
            .iter()
            .filter_map(|m| match m {
                InputMessage::ReplyTo { id } => Some(BoxId::from_client(*id)),
                _ => None,
            })
            .collect();
        let ids: Vec<BoxId> = wanted
            .iter()
            .chain(reply_sources.iter())
            .flatten()
            .copied()
            .collect();
        let found = if ids.is_empty() {
            Vec::new()
        } else {
            self.store.messages(owner, &ids).await?
        };

        // The replied-to message of a reply, in the caller's ids.
        let reply_targets: Vec<Option<BoxId>> = reply_sources
            .iter()
            .map(|source| {
                source
                    .and_then(|b| found.iter().find(|f| f.id == b))
                    .and_then(|s| s.reply_to.as_ref().map(|r| r.reply_to_msg_id))
            })
            .collect();
        let targets: Vec<BoxId> = reply_targets.iter().flatten().copied().collect();
        let found_targets = if targets.is_empty() {
            Vec::new()
        } else {
            self.store.messages(owner, &targets).await?
        };

        let mut replies = reply_targets.into_iter();
        let mut items = Vec::with_capacity(req.id.len());
        let mut shown = Vec::new();
        for (m, id) in req.id.iter().zip(wanted) {
            let wanted_id = match m {
                InputMessage::ReplyTo { .. } => replies.next().flatten(),
                _ => id,
            };
            let hit = wanted_id
                .and_then(|w| found.iter().chain(found_targets.iter()).find(|f| f.id == w));
            match hit {
                Some(msg) => {
                    items.push(MessageItem::Message(Message::render(msg, self.file_refs())));
                    shown.push(msg.clone());
                }
                None => items.push(MessageItem::Empty(MessageEmpty {
                    id: wanted_id.map(BoxId::get).unwrap_or(0),
                })),
            }
        }
        let users = self
            .users_for(owner, shown.iter().flat_map(users_of_message))
            .await?;
        Ok(Messages::All {
            messages: items,
            chats: Vec::new(),
            users,
        })
    }
}
