//! `new_message` and `edit_message` as payload version 1 stored them: the message without media
//! or album (`OwnerMessage` before version 2). Kept as they were, so version-1 rows read the way
//! they were written; the upcast gives them no media and no album, which is what they had.

use serde::{Deserialize, Serialize};

use super::{EditMessage, NewMessage};
use crate::entities::stored_entities;
use crate::ids::{BoxId, MessageId, UserId};
use crate::message::{ForwardHeader, OwnerMessage, ReplyHeader};
use crate::message_entity::MessageEntity;

// The doc comments are those the types had at version 1: they are the schema's descriptions, and
// the version-1 schema file must not change.
/// One owner's copy of a message. This is the payload of `new_message` and `edit_message` events,
/// so every field needed to rebuild the owner's box lives here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "OwnerMessage")]
pub struct OwnerMessageV1 {
    /// The owner's box id.
    pub id: BoxId,
    /// The identity shared by every owner's box of this message.
    pub message_id: MessageId,
    /// The other side of the private chat (the owner itself for Saved Messages).
    pub peer_id: UserId,
    /// Who sent it.
    pub from_id: UserId,
    /// Whether the owner sent it.
    pub out: bool,
    /// Unix seconds.
    pub date: i32,
    pub text: String,
    #[serde(default, deserialize_with = "stored_entities")]
    pub entities: Vec<MessageEntity>,
    #[serde(default)]
    pub silent: bool,
    #[serde(default)]
    pub noforwards: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<ReplyHeader>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fwd_from: Option<ForwardHeader>,
    #[serde(default)]
    pub media_unread: bool,
    /// The sender's random_id, on the sender's box only (idempotency of retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_date: Option<i32>,
}

/// A message appeared in the owner's box (sent, received or forwarded). TL: `updateNewMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "NewMessage")]
pub struct NewMessageV1 {
    pub message: OwnerMessageV1,
}

/// The owner's copy of a message was edited; the payload is the whole message after the edit.
/// TL: `updateEditMessage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "EditMessage")]
pub struct EditMessageV1 {
    pub message: OwnerMessageV1,
}

/// The upcast: a version-1 message had no media and no album.
impl From<OwnerMessageV1> for OwnerMessage {
    fn from(v1: OwnerMessageV1) -> Self {
        Self {
            id: v1.id,
            message_id: v1.message_id,
            peer_id: v1.peer_id,
            from_id: v1.from_id,
            out: v1.out,
            date: v1.date,
            text: v1.text,
            entities: v1.entities,
            silent: v1.silent,
            noforwards: v1.noforwards,
            reply_to: v1.reply_to,
            fwd_from: v1.fwd_from,
            media_unread: v1.media_unread,
            random_id: v1.random_id,
            edit_date: v1.edit_date,
            media: None,
            grouped_id: None,
        }
    }
}

impl From<NewMessageV1> for NewMessage {
    fn from(v1: NewMessageV1) -> Self {
        Self {
            message: v1.message.into(),
        }
    }
}

impl From<EditMessageV1> for EditMessage {
    fn from(v1: EditMessageV1) -> Self {
        Self {
            message: v1.message.into(),
        }
    }
}
