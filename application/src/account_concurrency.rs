//! A cap on the requests one account has in flight at once, so one account cannot hold every
//! database connection (or every worker) while others wait. Both fronts take a permit per call
//! after authentication and hold it until the answer is ready.
//!
//! One semaphore per account with requests in flight, in a map. An account's entry is removed
//! when its last permit is released and nobody waits for one, so the map holds only accounts with
//! requests in flight or waiting: it is bounded by the requests in flight (itself bounded by the
//! fronts' connection caps), never by the number of accounts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use domain::UserId;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::AppError;

/// Requests one account may have in flight at once (`PTSLOG_ACCOUNT_MAX_CONCURRENT_REQUESTS`).
/// A Telegram client keeps a handful of calls open at a time (a few reads at start-up, a send, a
/// getDifference); 8 leaves room for several devices of one account while a 32-connection pool
/// still serves at least four accounts at full tilt.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: u32 = 8;

/// How long a call past the cap waits for a permit before it is refused with `FLOOD_WAIT_1`
/// (`PTSLOG_ACCOUNT_QUEUE_WAIT_MS`): long enough that a burst of one account's calls (a client
/// starting up, a retry storm) queues instead of failing, short enough that a client is not held
/// on a busy account. A waiting call holds no database connection.
pub const DEFAULT_QUEUE_WAIT: Duration = Duration::from_secs(2);

/// The seconds a refused call is told to wait (`FLOOD_WAIT_1`): the account's own calls end within
/// the request deadline, usually far sooner.
const RETRY_AFTER_SECS: u32 = 1;

type Entries = Arc<Mutex<HashMap<UserId, Arc<Semaphore>>>>;

/// The per-account cap. Cheap to clone (shared state).
#[derive(Clone)]
pub struct AccountConcurrency {
    entries: Entries,
    max_per_account: u32,
    queue_wait: Duration,
}

/// One call's place under its account's cap; released when dropped.
pub struct AccountPermit {
    user: UserId,
    semaphore: Arc<Semaphore>,
    permit: Option<OwnedSemaphorePermit>,
    entries: Entries,
}

impl AccountConcurrency {
    /// `max_per_account` of 0 turns the cap off.
    pub fn new(max_per_account: u32, queue_wait: Duration) -> Self {
        Self {
            entries: Arc::default(),
            max_per_account,
            queue_wait,
        }
    }

    pub fn max_per_account(&self) -> u32 {
        self.max_per_account
    }

    /// A permit for one call of `user`, waiting up to the queue wait for one to free up; past it
    /// `FloodWait(1)`. `None` when the cap is off.
    pub async fn acquire(&self, user: UserId) -> Result<Option<AccountPermit>, AppError> {
        if self.max_per_account == 0 {
            return Ok(None);
        }
        let semaphore = {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            entries
                .entry(user)
                .or_insert_with(|| Arc::new(Semaphore::new(self.max_per_account as usize)))
                .clone()
        };
        // A waiter holds a clone of the semaphore, so its entry stays while it waits.
        let mut permit = AccountPermit {
            user,
            semaphore: semaphore.clone(),
            permit: None,
            entries: self.entries.clone(),
        };
        match tokio::time::timeout(self.queue_wait, semaphore.acquire_owned()).await {
            Ok(Ok(p)) => {
                permit.permit = Some(p);
                Ok(Some(permit))
            }
            // The semaphore is never closed; a timeout is the cap. Dropping `permit` (without a
            // place) may remove the entry.
            Ok(Err(_)) | Err(_) => Err(AppError::FloodWait(RETRY_AFTER_SECS)),
        }
    }

    /// Accounts with calls in flight or waiting (the size of the map).
    pub fn tracked_accounts(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Drop for AccountPermit {
    fn drop(&mut self) {
        drop(self.permit.take());
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        // Under the map's lock no one can take a new clone: two references (the map's and ours)
        // mean no other call holds or waits for this account's semaphore.
        if Arc::strong_count(&self.semaphore) == 2 {
            if let Some(current) = entries.get(&self.user) {
                if Arc::ptr_eq(current, &self.semaphore) {
                    entries.remove(&self.user);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(n: i64) -> UserId {
        UserId::new(n).unwrap()
    }

    #[tokio::test]
    async fn at_the_cap_accepted_one_past_waits_then_refused() {
        let cap = AccountConcurrency::new(3, Duration::from_millis(50));
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(cap.acquire(user(1)).await.unwrap().unwrap());
        }
        let refused = cap.acquire(user(1)).await;
        assert!(matches!(refused, Err(AppError::FloodWait(1))));
        // Another account is not affected.
        assert!(cap.acquire(user(2)).await.unwrap().is_some());
        // A released place is taken by the next call.
        held.pop();
        assert!(cap.acquire(user(1)).await.unwrap().is_some());
    }

    #[tokio::test]
    async fn a_waiter_gets_the_place_freed_within_the_wait() {
        let cap = AccountConcurrency::new(1, Duration::from_secs(5));
        let first = cap.acquire(user(1)).await.unwrap();
        let waiter = tokio::spawn({
            let cap = cap.clone();
            async move { cap.acquire(user(1)).await.map(|p| p.is_some()) }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(first);
        assert!(waiter.await.unwrap().unwrap());
    }

    #[tokio::test]
    async fn idle_accounts_leave_the_map() {
        let cap = AccountConcurrency::new(2, Duration::from_millis(10));
        let a = cap.acquire(user(1)).await.unwrap();
        let b = cap.acquire(user(1)).await.unwrap();
        let c = cap.acquire(user(2)).await.unwrap();
        assert_eq!(cap.tracked_accounts(), 2);
        drop(a);
        assert_eq!(cap.tracked_accounts(), 2);
        drop(b);
        drop(c);
        assert_eq!(cap.tracked_accounts(), 0);
        // A refused call leaves nothing behind either.
        let _x = cap.acquire(user(3)).await.unwrap();
        let _y = cap.acquire(user(3)).await.unwrap();
        assert!(cap.acquire(user(3)).await.is_err());
        assert_eq!(cap.tracked_accounts(), 1);
        drop((_x, _y));
        assert_eq!(cap.tracked_accounts(), 0);
    }

    #[tokio::test]
    async fn zero_turns_it_off() {
        let cap = AccountConcurrency::new(0, Duration::from_millis(10));
        for _ in 0..100 {
            assert!(cap.acquire(user(1)).await.unwrap().is_none());
        }
    }
}
