//! `users.getUsers`.

use domain::{limits, DomainError, UserId};
use serde::Deserialize;

use crate::error::AppError;
use crate::tl::{InputUser, User};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetUsers {
    pub id: Vec<InputUser>,
}

impl App {
    pub async fn get_users(&self, caller: &Caller, req: GetUsers) -> Result<Vec<User>, AppError> {
        if req.id.len() > limits::MAX_GET_USERS_IDS {
            return Err(DomainError::LimitInvalid.into());
        }
        let mut ids: Vec<UserId> = Vec::with_capacity(req.id.len());
        for u in &req.id {
            if let Some(id) = self.input_user(caller.user_id, u)? {
                ids.push(id);
            }
        }
        let found = self.users_for(caller.user_id, ids.iter().copied()).await?;
        // In the order asked, like Telegram.
        Ok(ids
            .iter()
            .filter_map(|id| found.iter().find(|u| u.id == id.get()).cloned())
            .collect())
    }
}
