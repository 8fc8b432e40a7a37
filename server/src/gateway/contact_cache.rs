//! The owners' contact links push frames overlay on their users (the owner's names for a contact,
//! `contact`, `mutual_contact`), cached per instance like the user records: without it every frame
//! would cost two queries.
//!
//! Unlike names of accounts, contact entries change: each change is a `contact_saved` or
//! `contact_deleted` record of the owner's log, and this instance sees every record (the local relay
//! hands it all of them; with Kafka it reads every partition), so the fanout calls [`ContactCache::forget`]
//! for each such record before it renders anything later. An entry is (owner, user); a change of
//! owner O's entry for U also forgets (U, O), whose `mutual_contact` it decides.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use application::fanout::ContactLink;
use application::ports::{Store, StoreError};
use domain::UserId;

/// Past this many entries the cache starts over rather than grow without bound.
const MAX_ENTRIES: usize = 100_000;

#[derive(Default)]
struct Entries {
    links: HashMap<(UserId, UserId), ContactLink>,
    /// Bumped by every forget: a load that started before a forget must not cache what it read
    /// (it may predate the change).
    generation: u64,
}

pub struct ContactCache {
    store: Arc<dyn Store>,
    entries: Mutex<Entries>,
}

impl ContactCache {
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            entries: Mutex::new(Entries::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `owner`'s links to each of `ids`, in the order asked.
    pub async fn get(&self, owner: UserId, ids: &[UserId]) -> Result<Vec<ContactLink>, StoreError> {
        let (mut found, missing, generation) = {
            let entries = self.lock();
            let mut found: HashMap<UserId, ContactLink> = HashMap::with_capacity(ids.len());
            let mut missing = Vec::new();
            for id in ids {
                match entries.links.get(&(owner, *id)) {
                    Some(link) => {
                        found.insert(*id, link.clone());
                    }
                    None => missing.push(*id),
                }
            }
            (found, missing, entries.generation)
        };
        if !missing.is_empty() {
            let (mine, theirs) = self.store.contact_links(owner, &missing).await?;
            let mut entries = self.lock();
            let fresh = entries.generation == generation;
            if fresh && entries.links.len() + missing.len() > MAX_ENTRIES {
                entries.links.clear();
            }
            for id in missing {
                let link = ContactLink {
                    contact: mine.iter().find(|c| c.user_id == id).cloned(),
                    they_have_owner: theirs.contains(&id),
                };
                if fresh {
                    entries.links.insert((owner, id), link.clone());
                }
                found.insert(id, link);
            }
        }
        Ok(ids
            .iter()
            .map(|id| found.get(id).cloned().unwrap_or_default())
            .collect())
    }

    /// `owner`'s link to `user` as a record of the change itself says it is (see
    /// `Fanout::overlay_contact_change`): kept whatever a concurrent load read.
    pub fn learn(&self, owner: UserId, user: UserId, link: ContactLink) {
        let mut entries = self.lock();
        if entries.links.len() >= MAX_ENTRIES {
            entries.links.clear();
        }
        entries.links.insert((owner, user), link);
        // A load that started before this must not overwrite it.
        entries.generation += 1;
    }

    /// `owner` changed its contact entry for `user`.
    pub fn forget(&self, owner: UserId, user: UserId) {
        let mut entries = self.lock();
        entries.links.remove(&(owner, user));
        entries.links.remove(&(user, owner));
        entries.generation += 1;
    }
}
