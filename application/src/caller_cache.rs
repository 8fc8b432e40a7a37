//! Bearer token → [`Caller`], cached in process so an authenticated call costs no round trip
//! (docs/performance.md, "Reads"; docs/security.md, "Sessions and devices").
//!
//! A cached entry must never outlive its device. Three things keep it so:
//! - The cache only serves while it is *live*: while the revocation listener of this process holds
//!   a `LISTEN` on the database's revocation channel (migration 0019: a trigger announces every
//!   deleted device and every change of a token, owner or end, whoever made it). The listener marks
//!   the cache live once listening and empties it and marks it not live the moment its connection
//!   is lost, so no revocation can go unheard while an entry is served.
//! - A revocation evicts the device's entry on every instance as the notification arrives; the
//!   instance that ended the device evicts it before answering, so there it is immediate.
//! - A lookup that raced a revocation is not cached: the result is kept only if no revocation
//!   arrived between the start of its database read and its end (the generation counter).
//!
//! Entries also end with the token and at most [`CALLER_CACHE_TTL`] after they were read.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use domain::AuthKeyId;
use sha2::{Digest, Sha256};

use crate::Caller;

/// How long an entry may be served after its database read, whatever the token's own end.
pub const CALLER_CACHE_TTL: Duration = Duration::from_secs(60);
/// At most this many tokens are cached (about 100 bytes each); past it, the cache starts over.
pub const MAX_CACHED_CALLERS: usize = 100_000;

/// The cache key: the token's SHA-256, so the cache holds no usable token.
type TokenKey = [u8; 32];

fn key(token: &str) -> TokenKey {
    Sha256::digest(token.as_bytes()).into()
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    caller: Caller,
    until: Instant,
}

#[derive(Default)]
struct Inner {
    live: bool,
    /// Bumped by every eviction, flush and change of liveness.
    generation: u64,
    by_token: HashMap<TokenKey, Entry>,
    by_device: HashMap<AuthKeyId, TokenKey>,
}

impl Inner {
    fn flush(&mut self) {
        self.generation += 1;
        self.by_token.clear();
        self.by_device.clear();
    }
}

/// What a lookup that missed must hand back to [`CallerCache::insert`].
#[derive(Debug, Clone, Copy)]
pub struct Miss {
    key: TokenKey,
    generation: u64,
    live: bool,
}

#[derive(Default)]
pub struct CallerCache {
    inner: Mutex<Inner>,
}

impl CallerCache {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain maps behind: still consistent enough to
        // flush, which is what every writer path does on doubt.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The cached caller of `token`, or what to insert after reading it from the database.
    pub fn get(&self, token: &str) -> Result<Caller, Miss> {
        let key = key(token);
        let mut inner = self.lock();
        if inner.live {
            if let Some(e) = inner.by_token.get(&key).copied() {
                if e.until > Instant::now() {
                    return Ok(e.caller);
                }
                inner.by_token.remove(&key);
                inner.by_device.remove(&e.caller.auth_key_id);
            }
        }
        Err(Miss {
            key,
            generation: inner.generation,
            live: inner.live,
        })
    }

    /// Keeps what the database answered for a missed token until `token_ends_in` from now (at most
    /// [`CALLER_CACHE_TTL`]), unless a revocation (or a loss of the listener) came in between.
    pub fn insert(&self, miss: Miss, caller: Caller, token_ends_in: Duration) {
        if !miss.live || token_ends_in.is_zero() {
            return;
        }
        let mut inner = self.lock();
        if !inner.live || inner.generation != miss.generation {
            return;
        }
        if inner.by_token.len() >= MAX_CACHED_CALLERS {
            inner.by_token.clear();
            inner.by_device.clear();
        }
        let until = Instant::now() + token_ends_in.min(CALLER_CACHE_TTL);
        if let Some(old) = inner.by_device.insert(caller.auth_key_id, miss.key) {
            inner.by_token.remove(&old);
        }
        inner.by_token.insert(miss.key, Entry { caller, until });
    }

    /// The device's token is no longer to be trusted (ended, or its token or end changed).
    pub fn evict_device(&self, device: AuthKeyId) {
        let mut inner = self.lock();
        inner.generation += 1;
        if let Some(key) = inner.by_device.remove(&device) {
            inner.by_token.remove(&key);
        }
    }

    /// The revocation listener is listening (`true`, from an empty cache) or lost its connection
    /// (`false`: everything is dropped and nothing is cached until it listens again).
    pub fn set_live(&self, live: bool) {
        let mut inner = self.lock();
        inner.flush();
        inner.live = live;
    }

    pub fn is_live(&self) -> bool {
        self.lock().live
    }

    pub fn len(&self) -> usize {
        self.lock().by_token.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use domain::{SessionId, UserId};

    use super::*;

    fn caller(device: i64) -> Caller {
        Caller {
            user_id: UserId::new(7).unwrap(),
            auth_key_id: AuthKeyId(device),
            session_id: SessionId(device),
        }
    }

    const LONG: Duration = Duration::from_secs(3600);

    #[test]
    fn serves_only_while_live() {
        let cache = CallerCache::new();
        let miss = cache.get("t").unwrap_err();
        cache.insert(miss, caller(1), LONG);
        assert!(cache.get("t").is_err(), "not live: nothing cached");
        cache.set_live(true);
        let miss = cache.get("t").unwrap_err();
        cache.insert(miss, caller(1), LONG);
        assert_eq!(cache.get("t").unwrap(), caller(1));
        cache.set_live(false);
        assert!(cache.get("t").is_err(), "losing the listener empties it");
        assert!(cache.is_empty());
    }

    #[test]
    fn a_revocation_evicts_and_beats_a_racing_lookup() {
        let cache = CallerCache::new();
        cache.set_live(true);
        let miss = cache.get("t").unwrap_err();
        cache.insert(miss, caller(1), LONG);
        cache.evict_device(AuthKeyId(1));
        assert!(cache.get("t").is_err());
        // A lookup that started before a revocation and ends after it is not kept.
        let miss = cache.get("t").unwrap_err();
        cache.evict_device(AuthKeyId(1));
        cache.insert(miss, caller(1), LONG);
        assert!(cache.get("t").is_err());
        // Another device's revocation also voids it (the counter is global): safe, just a miss.
        let miss = cache.get("u").unwrap_err();
        cache.evict_device(AuthKeyId(99));
        cache.insert(miss, caller(2), LONG);
        assert!(cache.get("u").is_err());
    }

    #[test]
    fn entries_end_with_their_token() {
        let cache = CallerCache::new();
        cache.set_live(true);
        let miss = cache.get("t").unwrap_err();
        cache.insert(miss, caller(1), Duration::ZERO);
        assert!(cache.get("t").is_err(), "an ended token is not cached");
        let miss = cache.get("t").unwrap_err();
        cache.insert(miss, caller(1), Duration::from_millis(20));
        assert!(cache.get("t").is_ok());
        std::thread::sleep(Duration::from_millis(40));
        assert!(cache.get("t").is_err());
    }

    #[test]
    fn bounded_at_max_cached_callers() {
        let cache = CallerCache::new();
        cache.set_live(true);
        for i in 0..MAX_CACHED_CALLERS {
            let miss = cache.get(&format!("t{i}")).unwrap_err();
            cache.insert(miss, caller(i as i64 + 1), LONG);
        }
        assert_eq!(cache.len(), MAX_CACHED_CALLERS);
        let miss = cache.get("one more").unwrap_err();
        cache.insert(miss, caller(-1), LONG);
        assert_eq!(cache.len(), 1, "full: starts over");
        assert!(cache.get("one more").is_ok());
    }

    #[test]
    fn a_device_has_one_cached_token() {
        let cache = CallerCache::new();
        cache.set_live(true);
        let miss = cache.get("old").unwrap_err();
        cache.insert(miss, caller(1), LONG);
        let miss = cache.get("new").unwrap_err();
        cache.insert(miss, caller(1), LONG);
        assert!(cache.get("old").is_err());
        cache.evict_device(AuthKeyId(1));
        assert!(cache.get("new").is_err());
    }
}
