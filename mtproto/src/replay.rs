//! Which client msg_ids were already served, per (auth key, session id), shared by every
//! connection of the process: a packet captured off the wire does not replay on a new connection
//! with the same key. Bounded twice: the last [`IDS_PER_SESSION`] ids of a session (a lower id
//! than all of those is refused once the set is full, as Telegram does), and at most
//! [`SESSIONS`] sessions, the least recently used forgotten first.
//!
//! Another server instance has none of this state: there (and for a session this process forgot)
//! what bounds a replay is the msg_id time window of the session rules (an id older than 300 s or
//! more than 30 s ahead is refused), and the server salt, which changes every 30 minutes.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// msg_ids remembered per session. Clients send increasing ids; only ids below the 128 latest
/// ones are refused, which no client sends (each resend gets a new id).
pub const IDS_PER_SESSION: usize = 128;
/// Sessions remembered by one process: above the default connection cap (10 000), at 128 ids of
/// 8 bytes at most 16 MiB.
pub const SESSIONS: usize = 16_384;

/// What a msg_id is for a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Not seen: now remembered.
    Fresh,
    /// Served already.
    Duplicate,
    /// Lower than every remembered id of a full set: it cannot be told from a replay.
    TooOld,
}

/// The remembered ids of one session, sorted.
#[derive(Debug, Default)]
struct RecentIds {
    ids: VecDeque<i64>,
    /// The API layer the client announced in this session: a client says it once per session
    /// (Telegram Desktop does not repeat invokeWithLayer on the connections it opens after one
    /// dropped), and every connection of the session answers in it.
    layer: Option<i32>,
}

impl RecentIds {
    fn insert(&mut self, id: i64, cap: usize) -> Seen {
        match self.ids.binary_search(&id) {
            Ok(_) => Seen::Duplicate,
            Err(0) if self.ids.len() >= cap => Seen::TooOld,
            Err(at) => {
                self.ids.insert(at, id);
                if self.ids.len() > cap {
                    self.ids.pop_front();
                }
                Seen::Fresh
            }
        }
    }

    fn contains(&self, id: i64) -> bool {
        self.ids.binary_search(&id).is_ok()
    }
}

type Key = (i64, i64);

struct Entry {
    ids: Arc<Mutex<RecentIds>>,
    stamp: u64,
}

#[derive(Default)]
struct Lru {
    entries: HashMap<Key, Entry>,
    by_use: BTreeMap<u64, Key>,
    clock: u64,
}

impl Lru {
    /// The entry of `key` (`own`: the one a handle already has, put back after an eviction),
    /// marked used now.
    fn touch(
        &mut self,
        key: Key,
        own: Option<&Arc<Mutex<RecentIds>>>,
        cap: usize,
    ) -> Arc<Mutex<RecentIds>> {
        self.clock += 1;
        let stamp = self.clock;
        if let Some(e) = self.entries.get_mut(&key) {
            self.by_use.remove(&e.stamp);
            e.stamp = stamp;
            self.by_use.insert(stamp, key);
            return e.ids.clone();
        }
        while self.entries.len() >= cap {
            let Some((_, old)) = self.by_use.pop_first() else {
                break;
            };
            self.entries.remove(&old);
        }
        let ids = own.cloned().unwrap_or_default();
        self.entries.insert(
            key,
            Entry {
                ids: ids.clone(),
                stamp,
            },
        );
        self.by_use.insert(stamp, key);
        ids
    }
}

/// The process-wide remembered msg_ids.
pub struct ReplayCache {
    lru: Mutex<Lru>,
    sessions: usize,
    ids_per_session: usize,
}

impl Default for ReplayCache {
    fn default() -> Self {
        Self::new(SESSIONS, IDS_PER_SESSION)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing here panics while holding a lock; a poisoned one still holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl ReplayCache {
    pub fn new(sessions: usize, ids_per_session: usize) -> Self {
        Self {
            lru: Mutex::new(Lru::default()),
            sessions: sessions.max(1),
            ids_per_session: ids_per_session.max(1),
        }
    }

    /// The remembered ids of this session of this key, as every connection sees them.
    pub fn session(self: &Arc<Self>, auth_key_id: i64, session_id: i64) -> SeenIds {
        let key = (auth_key_id, session_id);
        let ids = lock(&self.lru).touch(key, None, self.sessions);
        SeenIds {
            cache: Some(self.clone()),
            key,
            ids,
            cap: self.ids_per_session,
        }
    }

    /// Sessions remembered now.
    pub fn len(&self) -> usize {
        lock(&self.lru).entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One session's remembered msg_ids.
#[derive(Clone)]
pub struct SeenIds {
    /// `None`: not shared (a session on its own, in tests).
    cache: Option<Arc<ReplayCache>>,
    key: Key,
    ids: Arc<Mutex<RecentIds>>,
    cap: usize,
}

impl std::fmt::Debug for SeenIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SeenIds({:#x}, {:#x})", self.key.0, self.key.1)
    }
}

impl SeenIds {
    /// Ids remembered by this session alone.
    pub fn private() -> Self {
        Self {
            cache: None,
            key: (0, 0),
            ids: Arc::default(),
            cap: IDS_PER_SESSION,
        }
    }

    /// Remembers `msg_id` unless it was seen (or is too old to tell).
    pub fn insert(&mut self, msg_id: i64) -> Seen {
        if let Some(cache) = &self.cache {
            // Marks the session used; puts it back if it was forgotten meanwhile (or takes the
            // entry another connection made since, so both share it again).
            self.ids = lock(&cache.lru).touch(self.key, Some(&self.ids), cache.sessions);
        }
        lock(&self.ids).insert(msg_id, self.cap)
    }

    pub fn contains(&self, msg_id: &i64) -> bool {
        lock(&self.ids).contains(*msg_id)
    }

    /// The layer the session announced on any of its connections (see [`RecentIds`]).
    pub fn layer(&self) -> Option<i32> {
        lock(&self.ids).layer
    }

    pub fn set_layer(&self, layer: i32) {
        lock(&self.ids).layer = Some(layer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_shared_by_every_handle_of_a_session() {
        let cache = Arc::new(ReplayCache::default());
        let mut a = cache.session(1, 10);
        let mut b = cache.session(1, 10);
        assert_eq!(a.insert(100), Seen::Fresh);
        assert_eq!(
            b.insert(100),
            Seen::Duplicate,
            "another connection, same session"
        );
        assert!(b.contains(&100));
        // Another session or another key: its own ids.
        assert_eq!(cache.session(1, 11).insert(100), Seen::Fresh);
        assert_eq!(cache.session(2, 10).insert(100), Seen::Fresh);
        assert_eq!(cache.len(), 3);
    }

    #[test]
    fn a_session_remembers_its_latest_ids_and_refuses_lower_ones_when_full() {
        let cache = Arc::new(ReplayCache::new(4, 3));
        let mut s = cache.session(1, 1);
        for id in [40, 10, 30] {
            assert_eq!(s.insert(id), Seen::Fresh);
        }
        // Full at 3: the lowest goes when a higher one comes; below all of them is refused.
        assert_eq!(s.insert(50), Seen::Fresh);
        assert!(!s.contains(&10));
        assert_eq!(s.insert(10), Seen::TooOld);
        assert_eq!(s.insert(20), Seen::TooOld);
        assert_eq!(s.insert(35), Seen::Fresh);
        assert_eq!(s.insert(30), Seen::TooOld);
        assert_eq!(s.insert(50), Seen::Duplicate);
        let mut p = SeenIds::private();
        assert_eq!(p.insert(1), Seen::Fresh);
        assert_eq!(p.insert(1), Seen::Duplicate);
    }

    #[test]
    fn at_most_the_configured_sessions_the_least_recently_used_forgotten_first() {
        let cache = Arc::new(ReplayCache::new(2, 8));
        let mut a = cache.session(1, 1);
        a.insert(1);
        let mut b = cache.session(1, 2);
        b.insert(1);
        a.insert(2); // a is now the most recently used
        let _c = cache.session(1, 3); // evicts b
        assert_eq!(cache.len(), 2);
        assert_eq!(
            cache.session(1, 2).insert(1),
            Seen::Fresh,
            "b was forgotten"
        );
        // a handle whose entry was evicted puts it back on its next message: still shared.
        assert_eq!(a.insert(3), Seen::Fresh);
        assert_eq!(cache.session(1, 1).insert(2), Seen::Duplicate);
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn a_session_keeps_its_layer_across_connections() {
        let cache = Arc::new(ReplayCache::default());
        let first = cache.session(1, 2);
        assert_eq!(first.layer(), None);
        first.set_layer(152);
        // A new connection of the same key and session, which does not say its layer again.
        assert_eq!(cache.session(1, 2).layer(), Some(152));
        assert_eq!(cache.session(1, 3).layer(), None, "another session");
        assert_eq!(cache.session(9, 2).layer(), None, "another key");
    }
}
