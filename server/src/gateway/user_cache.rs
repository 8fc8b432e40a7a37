//! The user records push frames carry, cached per instance: a frame for every record would
//! otherwise cost a query. Names cannot change today (login takes names only for a new phone); a
//! profile photo can, and its record (`profile_photo_changed`, which every instance's fanout sees)
//! makes the owner's entry forgotten, or learned from the record itself for the owner's own frame.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use application::ports::{Store, StoreError, UserRecord};
use domain::UserId;

/// Past this many entries the cache starts over rather than grow without bound.
const MAX_ENTRIES: usize = 100_000;

#[derive(Default)]
struct Entries {
    records: HashMap<UserId, UserRecord>,
    /// Moves on each forget or learn: a load that started before one does not keep its result,
    /// which may predate the change.
    generation: u64,
}

pub struct UserCache {
    store: Arc<dyn Store>,
    entries: Mutex<Entries>,
}

impl UserCache {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// The store the records are read from.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The records of these users that exist, in the order asked.
    pub async fn get(&self, ids: &[UserId]) -> Result<Vec<UserRecord>, StoreError> {
        let mut found: HashMap<UserId, UserRecord> = HashMap::with_capacity(ids.len());
        let mut missing = Vec::new();
        let generation = {
            let entries = self.lock();
            for id in ids {
                match entries.records.get(id) {
                    Some(r) => {
                        found.insert(*id, r.clone());
                    }
                    None => missing.push(*id),
                }
            }
            entries.generation
        };
        if !missing.is_empty() {
            let loaded = self.store.users(&missing).await?;
            let mut entries = self.lock();
            let keep = entries.generation == generation;
            if entries.records.len() + loaded.len() > MAX_ENTRIES {
                entries.records.clear();
            }
            for r in loaded {
                if keep {
                    entries.records.insert(r.id, r.clone());
                }
                found.insert(r.id, r);
            }
        }
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }

    /// `user`'s record changed (its profile photo).
    pub fn forget(&self, user: UserId) {
        let mut entries = self.lock();
        entries.records.remove(&user);
        entries.generation += 1;
    }

    /// The record as a log record says it is now.
    pub fn learn(&self, record: UserRecord) {
        let mut entries = self.lock();
        if entries.records.len() >= MAX_ENTRIES {
            entries.records.clear();
        }
        entries.records.insert(record.id, record);
        entries.generation += 1;
    }
}
