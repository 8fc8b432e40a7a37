//! `updates.getDifference`: what happened to the account after the client's pts, straight from the
//! log, 100 events at a time.

use domain::events::UserEvent;
use domain::{limits, Pts, UserId};
use serde::Deserialize;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::LogEntry;
use crate::tl::{update_for_event, users_of_event, Difference, Message, State};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetDifference {
    pub pts: i32,
    #[serde(default)]
    pub pts_limit: Option<i32>,
    #[serde(default)]
    pub pts_total_limit: Option<i32>,
    #[serde(default)]
    pub date: i32,
    #[serde(default)]
    pub qts: i32,
    #[serde(default)]
    pub qts_limit: Option<i32>,
}

impl App {
    pub async fn get_difference(
        &self,
        caller: &Caller,
        req: GetDifference,
    ) -> Result<Difference, AppError> {
        let owner = caller.user_id;
        let from = Pts::new(req.pts).ok_or(domain::DomainError::PersistentTimestampInvalid)?;
        // The state and the slice in one round trip, from one snapshot.
        let (head, mut entries) = self
            .store
            .difference(owner, from, limits::DIFFERENCE_SLICE_EVENTS + 1)
            .await?;
        let current = head.pts;
        if from > current {
            return Err(domain::DomainError::PersistentTimestampInvalid.into());
        }
        if from == current {
            return Ok(Difference::Empty {
                date: unix_now(),
                seq: 0,
            });
        }
        let sliced = entries.len() as i64 > limits::DIFFERENCE_SLICE_EVENTS;
        entries.truncate(limits::DIFFERENCE_SLICE_EVENTS as usize);
        // The state moves past a row that cannot be read, so the client never asks for it again;
        // the row is left out (docs/events.md, "Rows that cannot be read").
        let last = entries.last().map(LogEntry::pts).unwrap_or(current);
        let events: Vec<_> = entries
            .into_iter()
            .filter_map(|entry| match entry {
                LogEntry::Event(e) => Some(e),
                LogEntry::Undecodable(u) => {
                    tracing::error!(user_id = %u.user_id, pts = u.pts.get(), kind = %u.kind, reason = %u.reason, "getDifference skips a log row it cannot read");
                    None
                }
            })
            .collect();

        // Sized once: a slice is mostly new messages, and each is a few hundred bytes to move.
        let mut new_messages = Vec::with_capacity(events.len());
        let mut other_updates = Vec::new();
        let mut mentioned: Vec<UserId> = Vec::with_capacity(events.len());
        for stored in &events {
            mentioned.extend(users_of_event(owner, &stored.event));
            match &stored.event {
                UserEvent::NewMessage(e) => {
                    new_messages.push(Message::render(&e.message, self.file_refs()))
                }
                _ => other_updates.push(update_for_event(stored, &self.keys)),
            }
        }
        let users = self.users_for(owner, mentioned).await?;
        let unread = head.unread_total;
        let state = State {
            pts: last.get(),
            qts: 0,
            date: unix_now(),
            seq: 0,
            unread_count: i32::try_from(unread).unwrap_or(i32::MAX),
        };
        let new_encrypted_messages = Vec::new();
        let chats = Vec::new();
        Ok(if sliced {
            Difference::Slice {
                new_messages,
                new_encrypted_messages,
                other_updates,
                chats,
                users,
                intermediate_state: state,
            }
        } else {
            Difference::Full {
                new_messages,
                new_encrypted_messages,
                other_updates,
                chats,
                users,
                state,
            }
        })
    }
}
