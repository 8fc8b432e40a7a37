use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_")]
pub enum Peer {
    #[serde(rename = "peerUser")]
    User { user_id: i64 },
}

impl Peer {
    pub fn user(id: domain::UserId) -> Self {
        Peer::User { user_id: id.get() }
    }
}
