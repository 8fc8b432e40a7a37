//! `updates.getState`: the account's committed pts. Every event up to it is already readable by
//! `updates.getDifference` (the log is dense and commit-ordered).

use domain::UserId;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::tl::State;
use crate::{App, Caller};

impl App {
    pub async fn get_state(&self, caller: &Caller) -> Result<State, AppError> {
        self.state_of(caller.user_id).await
    }

    pub(crate) async fn state_of(&self, owner: UserId) -> Result<State, AppError> {
        let state = self.store.account_state(owner).await?;
        let (pts, unread) = (state.pts, state.unread_total);
        Ok(State {
            pts: pts.get(),
            qts: 0,
            date: unix_now(),
            seq: 0,
            unread_count: i32::try_from(unread).unwrap_or(i32::MAX),
        })
    }
}
