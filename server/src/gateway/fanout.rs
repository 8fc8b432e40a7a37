//! The gateway's [`RecordHandler`]: turns each record of an account with devices on this instance
//! into one push frame and offers it to the hub. Records of other accounts cost a map lookup (a
//! Kafka-fed instance sees every account's records; [`RecordHandler::wants`] lets the consumer
//! pass over them undecoded).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use application::fanout::{
    frame_users, push_frame, Delivery, FrameUser, Hub, LogRecord, RecordHandler,
};
use application::ports::{ContactRecord, UserPhoto};
use async_trait::async_trait;
use domain::access_hash::AccessHashKey;
use domain::events::{ContactDeleted, ContactSaved, EventKind, ProfilePhotoChanged, UserEvent};
use domain::UserId;

use super::contact_cache::ContactCache;
use super::device_channel::DeviceSender;
use super::metrics::GatewayMetrics;
use super::user_cache::UserCache;

pub struct Fanout {
    pub(super) hub: Arc<Hub<DeviceSender>>,
    pub(super) users: UserCache,
    pub(super) contacts: ContactCache,
    pub(super) keys: AccessHashKey,
    pub(super) metrics: Arc<GatewayMetrics>,
}

impl Fanout {
    async fn deliver(&self, record: &LogRecord) {
        let Ok(user_id) = record.user() else {
            self.metrics.bad_records.fetch_add(1, Ordering::Relaxed);
            return;
        };
        // Before the device check: a change of anyone's contact entry may change what frames of
        // accounts online here show (their `mutual_contact`).
        self.forget_contact_change(user_id, record);
        if record.kind == ProfilePhotoChanged::KIND {
            // Every frame that shows this user must show its new photo.
            self.users.forget(user_id);
            self.push_profile_photo(user_id, record).await;
        }
        if !self.hub.has_devices(user_id) {
            return;
        }
        let (stored, committed_at) = match (record.stored_event(), record.committed_at()) {
            (Ok(stored), Ok(at)) => (stored, at),
            (Err(e), _) | (_, Err(e)) => {
                // The device sees a pts gap and fills it with getDifference, which reads (and
                // upcasts) the same row.
                self.metrics.bad_records.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, user_id = record.user_id, pts = record.pts, "cannot push a record");
                return;
            }
        };
        self.metrics.received(committed_at.timestamp_micros());
        let users = match self.frame_users(user_id, &frame_users(&stored)).await {
            Ok(mut users) => {
                self.overlay_contact_change(user_id, &stored.event, &mut users);
                self.overlay_profile_photo(&stored.event, user_id, &mut users);
                users
            }
            Err(e) => {
                // A frame without user objects is still right about the update; the client can
                // ask for the users.
                tracing::warn!(error = %e, "loading users for a push frame");
                Vec::new()
            }
        };
        let frame = push_frame(&stored, &users, &self.keys, committed_at.timestamp_micros());
        let delivery = Delivery {
            user_id,
            pts: record.pts,
            origin: stored.origin.auth_key_id,
        };
        let report = self.hub.deliver(&delivery, &frame);
        self.metrics.delivered(&report);
    }
}

impl Fanout {
    /// The frame's users as the owner sees them: account records with the owner's contact links.
    async fn frame_users(
        &self,
        owner: UserId,
        ids: &[UserId],
    ) -> Result<Vec<FrameUser>, application::ports::StoreError> {
        let records = self.users.get(ids).await?;
        let found: Vec<UserId> = records.iter().map(|r| r.id).collect();
        let links = self.contacts.get(owner, &found).await?;
        Ok(records
            .into_iter()
            .zip(links)
            .map(|(record, link)| FrameUser { record, link })
            .collect())
    }

    /// A contact change's own frame shows the entry its record sets, not the one just read: the
    /// relay can hand over a commit a moment before other sessions see it (Postgres flushes the
    /// commit record before it marks the transaction visible), so the read may predate the change.
    /// The cache keeps the record's entry too, so later frames do not repeat a stale read.
    fn overlay_contact_change(&self, owner: UserId, event: &UserEvent, users: &mut [FrameUser]) {
        let (user, contact) = match event {
            UserEvent::ContactSaved(c) => (
                c.user_id,
                Some(ContactRecord {
                    user_id: c.user_id,
                    first_name: c.first_name.clone(),
                    last_name: c.last_name.clone(),
                    phone: c.phone.clone(),
                    imported: c.imported,
                    date: c.date,
                }),
            ),
            UserEvent::ContactDeleted(c) => (c.user_id, None),
            _ => return,
        };
        for u in users.iter_mut().filter(|u| u.record.id == user) {
            u.link.contact = contact.clone();
            self.contacts.learn(owner, user, u.link.clone());
        }
    }

    /// A profile photo change's own frame shows the photo its record sets, for the reason
    /// [`Self::overlay_contact_change`] gives; the cache learns it.
    fn overlay_profile_photo(&self, event: &UserEvent, owner: UserId, users: &mut [FrameUser]) {
        let UserEvent::ProfilePhotoChanged(e) = event else {
            return;
        };
        for u in users.iter_mut().filter(|u| u.record.id == owner) {
            u.record.photo = e.photo.as_ref().map(UserPhoto::of);
            self.users.learn(u.record.clone());
        }
    }

    /// Contact changes are read from the raw record (kind and `user_id` alone), so records of
    /// accounts not online here cost no payload decoding.
    fn forget_contact_change(&self, owner: UserId, record: &LogRecord) {
        if record.kind != ContactSaved::KIND && record.kind != ContactDeleted::KIND {
            return;
        }
        // A payload without a valid user_id is counted as bad where it is decoded for a frame.
        if let Some(Ok(user)) = record.payload["user_id"].as_i64().map(UserId::new) {
            self.contacts.forget(owner, user);
        }
    }
}

#[async_trait]
impl RecordHandler for Fanout {
    async fn handle(&self, records: &[LogRecord]) {
        for record in records {
            self.deliver(record).await;
        }
    }

    /// Contact and profile photo changes of anyone update the caches behind every frame here
    /// ([`Fanout::deliver`]); any other record matters only to an account with devices here.
    fn wants(&self, user_id: i64, kind: &str) -> bool {
        let caches = [
            ContactSaved::KIND,
            ContactDeleted::KIND,
            ProfilePhotoChanged::KIND,
        ];
        // An invalid id is decoded, to be counted as a bad record where `deliver` reads it.
        caches.contains(&kind) || UserId::new(user_id).map_or(true, |u| self.hub.has_devices(u))
    }
}
