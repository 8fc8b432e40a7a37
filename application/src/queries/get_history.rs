//! `messages.getHistory`: one private chat's messages around an anchor, served by an index seek.

use domain::history_window::HistoryWindow;
use serde::Deserialize;

use crate::error::AppError;
use crate::tl::{long, users_of_message, InputPeer, Message, MessageItem, Messages};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetHistory {
    pub peer: InputPeer,
    #[serde(default)]
    pub offset_id: i32,
    #[serde(default)]
    pub offset_date: i32,
    #[serde(default)]
    pub add_offset: i32,
    #[serde(default)]
    pub limit: i32,
    #[serde(default)]
    pub max_id: i32,
    #[serde(default)]
    pub min_id: i32,
    #[serde(default, deserialize_with = "long")]
    pub hash: i64,
}

impl App {
    pub async fn get_history(
        &self,
        caller: &Caller,
        req: GetHistory,
    ) -> Result<Messages, AppError> {
        let owner = caller.user_id;
        // The access hash is checked here; whether the account exists comes with the page.
        let peer = self.chat_peer(owner, &req.peer)?.user_id(owner);
        let window = HistoryWindow::new(
            req.offset_id,
            req.offset_date,
            req.add_offset,
            req.limit,
            req.max_id,
            req.min_id,
        );
        // One round trip for the page, the peer's existence and the chat's count (kept in the
        // dialogs read model), one for the users: docs/performance.md, "Reads".
        let page = self.store.history_page(owner, peer, &window).await?;
        if !page.peer_exists {
            return Err(domain::DomainError::PeerIdInvalid.into());
        }
        self.messages_answer(owner, page.messages, Some(page.count))
            .await
    }

    /// `messages.messages` when the page is everything there is, `messages.messagesSlice` otherwise.
    pub(crate) async fn messages_answer(
        &self,
        owner: domain::UserId,
        page: Vec<domain::message::OwnerMessage>,
        count: Option<i64>,
    ) -> Result<Messages, AppError> {
        let users = self
            .users_for(owner, page.iter().flat_map(users_of_message))
            .await?;
        let returned = page.len() as i64;
        let messages = page
            .iter()
            .map(|m| MessageItem::Message(Message::render(m, self.file_refs())))
            .collect();
        Ok(match count {
            Some(count) if count > returned => Messages::Slice {
                count,
                messages,
                chats: Vec::new(),
                users,
            },
            _ => Messages::All {
                messages,
                chats: Vec::new(),
                users,
            },
        })
    }
}
