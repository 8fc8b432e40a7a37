//! The push gateway: online devices (WebSocket sessions) and the fanout that feeds them from the
//! committed log. The rules of who gets what live in `application::fanout`; this is the plumbing.

mod contact_cache;
mod device_channel;
pub mod device_endings;
mod fanout;
pub mod metrics;
mod profile_push;
pub mod push_sockets;
pub mod session;
mod user_cache;

use std::sync::Arc;

use application::fanout::Hub;
use application::ports::Store;
use domain::access_hash::AccessHashKey;

pub use device_channel::DeviceSender;
pub use fanout::Fanout;
pub use metrics::GatewayMetrics;

pub struct Gateway {
    pub hub: Arc<Hub<DeviceSender>>,
    pub fanout: Arc<Fanout>,
    pub metrics: Arc<GatewayMetrics>,
    /// Frames buffered per device before `updatesTooLong`.
    pub push_buffer: usize,
    /// The cap on push sockets per account.
    pub push_sockets: Arc<push_sockets::PushSockets>,
}

impl Gateway {
    /// `max_push_sockets_per_account` of 0 turns that cap off.
    pub fn new(
        store: Arc<dyn Store>,
        keys: AccessHashKey,
        push_buffer: usize,
        max_push_sockets_per_account: usize,
    ) -> Self {
        let hub = Arc::new(Hub::new());
        let metrics = Arc::new(GatewayMetrics::default());
        let fanout = Arc::new(Fanout {
            hub: hub.clone(),
            users: user_cache::UserCache::new(store.clone()),
            contacts: contact_cache::ContactCache::new(store),
            keys,
            metrics: metrics.clone(),
        });
        Self {
            hub,
            fanout,
            metrics,
            push_buffer,
            push_sockets: Arc::new(push_sockets::PushSockets::new(max_push_sockets_per_account)),
        }
    }
}
