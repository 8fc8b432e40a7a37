//! Live fanout of the committed log to online devices, without I/O: the record relays publish
//! ([`record`]), the push frame ([`frame`]) and its per-format encodings ([`encodings`]) and the per-device delivery rules ([`hub`]). The relay
//! (infrastructure) produces records, the gateway (server) plugs in sockets; both meet at
//! [`RecordHandler`].

pub mod encodings;
pub mod frame;
pub mod hub;
pub mod record;

use async_trait::async_trait;

pub use encodings::{Encodings, ENCODING_SLOTS};
pub use frame::{frame_users, push_frame, push_updates, ContactLink, FrameUser};
pub use hub::{
    Delivery, DeliveryReport, DeviceChannel, DeviceId, Frame, Hub, Outgoing, PushError,
    RESERVED_SLOTS,
};
pub use record::{LogRecord, RecordError, RECORD_VERSION};

/// Whoever takes committed records in commit order: the gateway's fanout, fed by the in-process
/// relay or by a Kafka consumer.
#[async_trait]
pub trait RecordHandler: Send + Sync {
    /// Handles one committed transaction's records. Delivery to devices is best effort (a device
    /// that misses a push catches up with `updates.getDifference`), so this cannot fail.
    async fn handle(&self, records: &[LogRecord]);

    /// Whether a record of this account and kind can matter here, asked before its payload is
    /// decoded: a Kafka-fed instance sees every account's records, and decoding those of accounts
    /// with no device on it is most of its work as instances are added. `true` when unsure.
    fn wants(&self, _user_id: i64, _kind: &str) -> bool {
        true
    }
}
