//! The relay: streams the committed log (`user_update_events`) out of Postgres by logical
//! replication and hands every row, as a [`LogRecord`](application::fanout::LogRecord), to a sink
//! (Kafka, or the in-process fanout). See docs/architecture.md, "Live pushes".
//!
//! - [`pgoutput`] and [`log_row`] decode the replication messages into records;
//! - [`stream`] runs one session and confirms positions only behind the sink's acknowledgements;
//! - [`leader`] makes sure exactly one relay streams at a time;
//! - [`slot`] checks `wal_level` and creates the slot on first start.

pub mod connection;
pub mod error;
pub mod leader;
pub mod local_sink;
pub mod log_row;
pub mod pgoutput;
pub mod sink;
pub mod slot;
pub mod status;
pub mod stream;

pub use connection::PUBLICATION;
pub use error::RelayError;
pub use leader::{Relay, RelayConfig, DEFAULT_SLOT};
pub use local_sink::LocalSink;
pub use sink::{Ack, RecordSink, SinkError};
pub use status::{BrokerState, RelayHealth, RelayStatus, Role};
