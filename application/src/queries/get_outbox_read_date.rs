//! `messages.getOutboxReadDate`: when the peer read one of the caller's outgoing messages, from the
//! caller's durable `read_history_outbox` events.

use domain::{BoxId, DomainError};
use serde::Deserialize;

use crate::error::AppError;
use crate::tl::{InputPeer, OutboxReadDate};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetOutboxReadDate {
    pub peer: InputPeer,
    pub msg_id: i64,
}

impl App {
    pub async fn get_outbox_read_date(
        &self,
        caller: &Caller,
        req: GetOutboxReadDate,
    ) -> Result<OutboxReadDate, AppError> {
        let owner = caller.user_id;
        let peer = self.chat_peer(owner, &req.peer)?.user_id(owner);
        let id = BoxId::from_client(req.msg_id).ok_or(DomainError::MessageIdInvalid)?;
        let visible_outgoing = self
            .store
            .messages(owner, &[id])
            .await?
            .into_iter()
            .any(|m| m.peer_id == peer && m.out);
        if !visible_outgoing || peer == owner {
            return Err(DomainError::MessageIdInvalid.into());
        }
        let date = self
            .store
            .outbox_read_date(owner, peer, id)
            .await?
            .ok_or(DomainError::MessageNotReadYet)?;
        Ok(OutboxReadDate { date })
    }
}
