//! The user records push frames carry, cached per instance: a frame for every record would
//! otherwise cost a query. Accounts' names cannot change today (login takes names only for a new
//! phone), so entries never go stale; a future profile edit must invalidate here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use application::ports::{Store, StoreError, UserRecord};
use domain::UserId;

/// Past this many entries the cache starts over rather than grow without bound.
const MAX_ENTRIES: usize = 100_000;

pub struct UserCache {
    store: Arc<dyn Store>,
    entries: Mutex<HashMap<UserId, UserRecord>>,
}

impl UserCache {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The records of these users that exist, in the order asked.
    pub async fn get(&self, ids: &[UserId]) -> Result<Vec<UserRecord>, StoreError> {
        let mut found: HashMap<UserId, UserRecord> = HashMap::with_capacity(ids.len());
        let mut missing = Vec::new();
        {
            let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            for id in ids {
                match entries.get(id) {
                    Some(r) => {
                        found.insert(*id, r.clone());
                    }
                    None => missing.push(*id),
                }
            }
        }
        if !missing.is_empty() {
            let loaded = self.store.users(&missing).await?;
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            if entries.len() + loaded.len() > MAX_ENTRIES {
                entries.clear();
            }
            for r in loaded {
                entries.insert(r.id, r.clone());
                found.insert(r.id, r);
            }
        }
        Ok(ids.iter().filter_map(|id| found.get(id).cloned()).collect())
    }
}
