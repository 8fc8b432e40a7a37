//! A cap on the push WebSockets one account holds open at once. Past it a new socket is refused
//! before the upgrade (HTTP 429 `PUSH_SOCKETS_TOO_MUCH`); the sockets already open are kept. Refusing
//! the newcomer rather than closing the oldest means a stolen or leaked token cannot kick the
//! owner's devices off by opening sockets; a device whose old socket died unnoticed gets its place
//! back once the ping finds it (`session::PING_EVERY` plus the write timeout, under a minute).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use domain::UserId;

/// Push sockets one account may hold open (`PTSLOG_ACCOUNT_MAX_PUSH_SOCKETS`). Each device keeps
/// one; Telegram lets an account be signed in on a handful of devices at once and its clients keep
/// one update connection each, so 10 covers phones, desktops and browser tabs of one person while
/// one token cannot hold thousands of sockets.
pub const DEFAULT_MAX_PUSH_SOCKETS_PER_ACCOUNT: usize = 10;

/// Open push sockets per account; an account's entry goes when its last socket closes.
pub struct PushSockets {
    max_per_account: usize,
    open: Mutex<HashMap<UserId, usize>>,
}

/// One open socket's place; released when dropped (the session ends).
pub struct PushSocketSlot {
    sockets: Arc<PushSockets>,
    user: UserId,
}

impl PushSockets {
    /// `max_per_account` of 0 turns the cap off.
    pub fn new(max_per_account: usize) -> Self {
        Self {
            max_per_account,
            open: Mutex::default(),
        }
    }

    /// A place for one more socket of `user`, or `None` at the cap.
    pub fn try_open(self: &Arc<Self>, user: UserId) -> Option<PushSocketSlot> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(user).or_insert(0);
        if self.max_per_account != 0 && *count >= self.max_per_account {
            return None;
        }
        *count += 1;
        Some(PushSocketSlot {
            sockets: self.clone(),
            user,
        })
    }

    /// The account's open sockets.
    pub fn open(&self, user: UserId) -> usize {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(&user).copied().unwrap_or(0)
    }
}

impl Drop for PushSocketSlot {
    fn drop(&mut self) {
        let mut open = self.sockets.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.user) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_refused_and_freed_on_close() {
        let sockets = Arc::new(PushSockets::new(2));
        let user = UserId::new(1).unwrap();
        let a = sockets.try_open(user).unwrap();
        let _b = sockets.try_open(user).unwrap();
        assert!(sockets.try_open(user).is_none());
        assert!(sockets.try_open(UserId::new(2).unwrap()).is_some());
        drop(a);
        assert_eq!(sockets.open(user), 1);
        assert!(sockets.try_open(user).is_some());
        drop(_b);
        assert!(sockets.open.lock().unwrap().is_empty());
    }
}
