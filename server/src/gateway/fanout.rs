//! The gateway's [`RecordHandler`]: turns each record of an account with devices on this instance
//! into one push frame and offers it to the hub. Records of other accounts cost a JSON parse and a
//! map lookup (a Kafka-fed instance sees every account's records).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use application::fanout::{frame_users, push_frame, Delivery, Hub, LogRecord, RecordHandler};
use async_trait::async_trait;
use domain::access_hash::AccessHashKey;

use super::device_channel::DeviceSender;
use super::metrics::GatewayMetrics;
use super::user_cache::UserCache;

pub struct Fanout {
    pub(super) hub: Arc<Hub<DeviceSender>>,
    pub(super) users: UserCache,
    pub(super) keys: AccessHashKey,
    pub(super) metrics: Arc<GatewayMetrics>,
}

impl Fanout {
    async fn deliver(&self, record: &LogRecord) {
        let Ok(user_id) = record.user() else {
            self.metrics.bad_records.fetch_add(1, Ordering::Relaxed);
            return;
        };
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
        let users = match self.users.get(&frame_users(&stored)).await {
            Ok(users) => users,
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

#[async_trait]
impl RecordHandler for Fanout {
    async fn handle(&self, records: &[LogRecord]) {
        for record in records {
            self.deliver(record).await;
        }
    }
}
