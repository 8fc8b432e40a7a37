//! `contacts.getBlocked`: the caller's block list, newest first.

use domain::limits;
use serde::Deserialize;

use crate::error::AppError;
use crate::tl::{Blocked, Peer, PeerBlocked};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetBlocked {
    #[serde(default)]
    pub my_stories_from: bool,
    #[serde(default)]
    pub offset: i32,
    #[serde(default)]
    pub limit: i32,
}

impl App {
    pub async fn get_blocked(&self, caller: &Caller, req: GetBlocked) -> Result<Blocked, AppError> {
        let owner = caller.user_id;
        let limit = if req.limit <= 0 {
            limits::MAX_BLOCKED_LIMIT
        } else {
            req.limit.min(limits::MAX_BLOCKED_LIMIT)
        };
        let (rows, count) = self.store.blocked(owner, req.offset.max(0), limit).await?;
        let users = self
            .users_for(owner, rows.iter().map(|r| r.peer_id))
            .await?;
        let blocked: Vec<PeerBlocked> = rows
            .iter()
            .map(|r| PeerBlocked {
                peer_id: Peer::user(r.peer_id),
                date: r.date,
            })
            .collect();
        Ok(if req.offset <= 0 && blocked.len() as i64 >= count {
            Blocked::All {
                blocked,
                chats: Vec::new(),
                users,
            }
        } else {
            Blocked::Slice {
                count,
                blocked,
                chats: Vec::new(),
                users,
            }
        })
    }
}
