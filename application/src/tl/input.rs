//! TL input objects a request can carry.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// `InputPeer`. Group and channel peers parse, so that they can be refused with a clear error.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputPeer {
    #[serde(rename = "inputPeerEmpty")]
    Empty,
    #[serde(rename = "inputPeerSelf")]
    SelfPeer,
    #[serde(rename = "inputPeerUser")]
    User {
        #[serde(deserialize_with = "long")]
        user_id: i64,
        #[serde(deserialize_with = "long")]
        access_hash: i64,
    },
    #[serde(rename = "inputPeerChat")]
    Chat {},
    #[serde(rename = "inputPeerChannel")]
    Channel {},
    #[serde(rename = "inputPeerUserFromMessage")]
    UserFromMessage {},
    #[serde(rename = "inputPeerChannelFromMessage")]
    ChannelFromMessage {},
}

/// `InputUser`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputUser {
    #[serde(rename = "inputUserEmpty")]
    Empty,
    #[serde(rename = "inputUserSelf")]
    SelfUser,
    #[serde(rename = "inputUser")]
    User {
        #[serde(deserialize_with = "long")]
        user_id: i64,
        #[serde(deserialize_with = "long")]
        access_hash: i64,
    },
    #[serde(rename = "inputUserFromMessage")]
    FromMessage {},
}

/// `inputMessageEntityMentionName`: a mention naming its user with the sender's access hash.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_", deny_unknown_fields)]
pub enum InputMentionName {
    #[serde(rename = "inputMessageEntityMentionName")]
    Mention {
        offset: i32,
        length: i32,
        user_id: InputUser,
    },
}

/// `InputReplyTo`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "_")]
pub enum InputReplyTo {
    #[serde(rename = "inputReplyToMessage")]
    Message {
        reply_to_msg_id: i32,
        #[serde(default)]
        top_msg_id: Option<i32>,
        #[serde(default)]
        reply_to_peer_id: Option<InputPeer>,
        #[serde(default)]
        quote_text: Option<String>,
        #[serde(default)]
        quote_entities: Option<Vec<Value>>,
        #[serde(default)]
        quote_offset: Option<i32>,
        #[serde(default)]
        monoforum_peer_id: Option<Value>,
        #[serde(default)]
        todo_item_id: Option<i32>,
    },
    #[serde(rename = "inputReplyToStory")]
    Story {},
    #[serde(rename = "inputReplyToMonoForum")]
    MonoForum {},
}

/// A TL `long`: a JSON number, or a decimal string (JavaScript clients cannot hold every int64).
pub fn long<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Long {
        Number(i64),
        Text(String),
    }
    match Long::deserialize(d)? {
        Long::Number(n) => Ok(n),
        Long::Text(s) => s
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("invalid long {s:?}"))),
    }
}

/// An optional TL `long`.
pub fn opt_long<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    #[derive(Deserialize)]
    struct Wrap(#[serde(deserialize_with = "long")] i64);
    Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
}

/// A vector of TL `long`s.
pub fn longs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    #[derive(Deserialize)]
    struct Wrap(#[serde(deserialize_with = "long")] i64);
    Ok(Vec::<Wrap>::deserialize(d)?
        .into_iter()
        .map(|w| w.0)
        .collect())
}
