//! `contacts.resolvePhone`: how one account finds another (and learns its access hash). Each
//! number counts against the caller's phone look-up limit (`FLOOD_WAIT_X` past it).

use domain::DomainError;
use serde::Deserialize;

use crate::commands::login::normalize_phone;
use crate::error::AppError;
use crate::tl::{Peer, ResolvedPeer};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct ResolvePhone {
    pub phone: String,
}

impl App {
    pub async fn resolve_phone(
        &self,
        caller: &Caller,
        req: ResolvePhone,
    ) -> Result<ResolvedPeer, AppError> {
        let phone = normalize_phone(&req.phone)?;
        // Every number tried counts, found or not: that is what enumeration tries.
        self.limiter
            .check_phone_lookups(caller.user_id, std::slice::from_ref(&phone))
            .await
            .map_err(AppError::FloodWait)?;
        let record = self
            .store
            .user_by_phone(&phone)
            .await?
            .ok_or(DomainError::PhoneNotOccupied)?;
        // As every other answer: the caller's own names for a contact (users_for overlays them).
        let mut users = self.users_for(caller.user_id, [record.id]).await?;
        for user in &mut users {
            // The caller just proved it knows the number.
            user.phone = Some(phone.trim_start_matches('+').to_string());
        }
        Ok(ResolvedPeer {
            peer: Peer::user(record.id),
            chats: Vec::new(),
            users,
        })
    }
}
