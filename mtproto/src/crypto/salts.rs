//! Server salts that rotate: one salt per 30-minute window, derived from the auth key with
//! HMAC-SHA256, so every instance computes the same salts without shared state and nobody without
//! the key can predict them. The handshake's first salt (new_nonce ⊕ server_nonce) stays valid for
//! one window after the key was made, and a window's salt is still accepted for a grace period
//! after the next one began (a client that asked `get_future_salts` switches on its own clock).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::AuthKey;

/// How long one salt is the current one (seconds): Telegram's `future_salts` show 30-minute
/// windows, and TDesktop and TDLib plan their salt changes around that.
pub const SALT_WINDOW_SECS: i64 = 1800;
/// How long after its window ended a salt is still accepted (seconds): covers clock skew and
/// messages in flight when the window changes (the msg_id rules allow 30 s ahead, 300 s behind).
pub const SALT_GRACE_SECS: i64 = 300;
/// The most salts one `get_future_salts` answers (the protocol says at most 64).
pub const MAX_FUTURE_SALTS: i32 = 64;

/// The salts one auth key accepts over time.
#[derive(Clone)]
pub struct ServerSalts {
    /// `None`: a fixed salt that never changes (tests, and the plain messages' msg_id counter).
    secret: Option<[u8; 32]>,
    /// The handshake's salt and until when (unix seconds) it is accepted.
    initial: i64,
    initial_until: i64,
}

impl std::fmt::Debug for ServerSalts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerSalts")
    }
}

/// One entry of `future_salts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FutureSalt {
    pub valid_since: i32,
    pub valid_until: i32,
    pub salt: i64,
}

fn window(now: i64) -> i64 {
    now.div_euclid(SALT_WINDOW_SECS)
}

impl ServerSalts {
    /// The salts of `key`, created at `created_at` (unix seconds) with the handshake's `initial`.
    pub fn new(key: &AuthKey, initial: i64, created_at: i64) -> Self {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key.bytes())
            .expect("HMAC takes keys of any length");
        mac.update(b"ptslog server salts");
        Self {
            secret: Some(mac.finalize().into_bytes().into()),
            initial,
            initial_until: created_at.saturating_add(SALT_WINDOW_SECS),
        }
    }

    /// A salt that never changes.
    pub fn fixed(salt: i64) -> Self {
        Self {
            secret: None,
            initial: salt,
            initial_until: i64::MAX,
        }
    }

    /// The salt of window `w`.
    fn of_window(&self, w: i64) -> i64 {
        let Some(secret) = &self.secret else {
            return self.initial;
        };
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes keys of any length");
        mac.update(&w.to_le_bytes());
        let out = mac.finalize().into_bytes();
        let mut b = [0u8; 8];
        b.copy_from_slice(&out[..8]);
        i64::from_le_bytes(b)
    }

    /// The salt the server hands out now (`bad_server_salt`, `new_session_created`, its own
    /// messages).
    pub fn current(&self, now: i64) -> i64 {
        self.of_window(window(now))
    }

    /// Whether a client message may carry `salt` at `now`.
    pub fn accepts(&self, salt: i64, now: i64) -> bool {
        let w = window(now);
        (salt == self.initial && now < self.initial_until)
            || salt == self.of_window(w)
            || (now - w * SALT_WINDOW_SECS < SALT_GRACE_SECS && salt == self.of_window(w - 1))
    }

    /// `num` salts from the current window on (1 to [`MAX_FUTURE_SALTS`]).
    pub fn future(&self, now: i64, num: i32) -> Vec<FutureSalt> {
        let w = window(now);
        (0..i64::from(num.clamp(1, MAX_FUTURE_SALTS)))
            .map(|i| {
                let since = (w + i) * SALT_WINDOW_SECS;
                FutureSalt {
                    valid_since: since.clamp(0, i64::from(i32::MAX)) as i32,
                    valid_until: (since + SALT_WINDOW_SECS).clamp(0, i64::from(i32::MAX)) as i32,
                    salt: self.of_window(w + i),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_764_489_600; // a window boundary (divisible by 1800)

    fn salts() -> ServerSalts {
        ServerSalts::new(&AuthKey::new([5; 256]), 77, T0 + 100)
    }

    #[test]
    fn salts_change_per_window_and_the_previous_one_has_a_grace_period() {
        let s = salts();
        let (a, b) = (s.current(T0 + 100), s.current(T0 + SALT_WINDOW_SECS));
        assert_ne!(a, b, "the salt rotates");
        assert_eq!(
            a,
            s.current(T0 + SALT_WINDOW_SECS - 1),
            "constant in a window"
        );
        // Another key has other salts; the same key on another instance the same ones.
        let other = ServerSalts::new(&AuthKey::new([6; 256]), 77, T0);
        assert_ne!(other.current(T0), a);
        assert_eq!(
            ServerSalts::new(&AuthKey::new([5; 256]), 1, 0).current(T0),
            a
        );
        // The previous window's salt: accepted for SALT_GRACE_SECS into the next window only.
        let next = T0 + SALT_WINDOW_SECS;
        assert!(s.accepts(a, next + SALT_GRACE_SECS - 1));
        assert!(!s.accepts(a, next + SALT_GRACE_SECS));
        assert!(s.accepts(b, next + SALT_GRACE_SECS));
        // A salt two windows ahead is not accepted yet.
        assert!(!s.accepts(s.current(next + SALT_WINDOW_SECS), next));
        // The handshake's salt: for one window after the key was made.
        assert!(s.accepts(77, T0 + 100 + SALT_WINDOW_SECS - 1));
        assert!(!s.accepts(77, T0 + 100 + SALT_WINDOW_SECS));
        // A fixed salt never changes.
        let f = ServerSalts::fixed(9);
        assert_eq!((f.current(0), f.current(T0)), (9, 9));
        assert!(f.accepts(9, T0) && !f.accepts(8, T0));
    }

    #[test]
    fn future_salts_are_the_salts_each_window_will_accept() {
        let s = salts();
        let now = T0 + 10;
        let future = s.future(now, 3);
        assert_eq!(future.len(), 3);
        for (i, f) in future.iter().enumerate() {
            assert_eq!(i64::from(f.valid_since), T0 + i as i64 * SALT_WINDOW_SECS);
            assert_eq!(f.valid_until - f.valid_since, SALT_WINDOW_SECS as i32);
            assert_eq!(f.salt, s.current(i64::from(f.valid_since)));
            assert!(s.accepts(f.salt, i64::from(f.valid_since)));
        }
        assert_eq!(s.future(now, MAX_FUTURE_SALTS).len(), 64);
        assert_eq!(s.future(now, MAX_FUTURE_SALTS + 1).len(), 64);
        assert_eq!(s.future(now, 0).len(), 1);
        assert_eq!(s.future(now, -5).len(), 1);
    }
}
