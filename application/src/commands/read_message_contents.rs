//! `messages.readMessageContents`: clears media/reaction "unread" marks on the caller's exact boxes.
//! Ids that are not visible, or already read, produce nothing; a repeat gives `pts_count` 0.

use std::collections::BTreeSet;

use domain::events::{ReadMessageContents as ReadContentsEvent, UserEvent};
use domain::{limits, BoxId, DomainError};
use serde::Deserialize;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::Origin;
use crate::tl::AffectedMessages;
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct ReadMessageContents {
    pub id: Vec<i64>,
}

impl App {
    pub async fn read_message_contents(
        &self,
        caller: &Caller,
        req: ReadMessageContents,
    ) -> Result<AffectedMessages, AppError> {
        if req.id.len() > limits::MAX_DELETE_MESSAGE_IDS {
            return Err(DomainError::MessageIdsTooMuch.into());
        }
        let ids: Vec<BoxId> = req
            .id
            .iter()
            .filter_map(|raw| BoxId::from_client(*raw))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let owner = caller.user_id;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let unread = if ids.is_empty() {
            Vec::new()
        } else {
            tx.content_unread(owner, &ids).await?
        };
        if unread.is_empty() {
            return Ok(AffectedMessages {
                pts: tx.current_pts(owner)?.get(),
                pts_count: 0,
            });
        }
        let pts_count = unread.len() as i32;
        let event = ReadContentsEvent {
            ids: unread,
            date: unix_now(),
        };
        let pts = tx
            .append(
                owner,
                UserEvent::ReadMessageContents(event),
                Origin::from(caller),
            )
            .await?;
        tx.commit().await?;
        Ok(AffectedMessages {
            pts: pts.get(),
            pts_count,
        })
    }
}
