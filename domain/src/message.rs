//! A private message as one owner sees it: its id is that owner's box id, reply ids are translated
//! into that owner's box ids, and `out` says whether the owner sent it.

use crate::entities::stored_entities;
use crate::ids::{BoxId, MessageId, UserId};
use crate::media::MessageMedia;
use crate::message_entity::MessageEntity;
use serde::{Deserialize, Serialize};

/// One owner's copy of a message. This is the payload of `new_message` and `edit_message` events,
/// so every field needed to rebuild the owner's box lives here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OwnerMessage {
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
    /// The photo or document the message carries (its text is then the caption). Payload
    /// version 2 of `new_message` / `edit_message`.
    // Boxed: most messages have none, and held inline it made every message 584 bytes instead of
    // 224, copied at each move of a decoded event. (Not in the doc comment: that is the schema's.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media: Option<Box<MessageMedia>>,
    /// The album the message belongs to: every message of one `messages.sendMultiMedia` shares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped_id: Option<i64>,
}

/// A reply, with the replied-to id in the owner's own box ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplyHeader {
    pub reply_to_msg_id: BoxId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_text: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "stored_entities"
    )]
    pub quote_entities: Vec<MessageEntity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote_offset: Option<i32>,
}

/// Where a forwarded message first came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ForwardHeader {
    pub from_id: UserId,
    /// When the original was sent (unix seconds).
    pub date: i32,
}
