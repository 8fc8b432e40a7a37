//! Where the relay hands committed records: Kafka in a deployment with a broker, the in-process
//! fanout without one. The relay confirms a commit's WAL position to Postgres only once the sink
//! acknowledged every record up to it, so what the sink has not acknowledged is read again after a
//! crash (a sink may see duplicates, never gaps).

use application::fanout::LogRecord;
use async_trait::async_trait;
use futures::future::BoxFuture;
use thiserror::Error;

#[derive(Debug, Error, Clone)]
pub enum SinkError {
    #[error("broker: {0}")]
    Broker(String),
    #[error("sink closed: {0}")]
    Closed(String),
}

/// Resolves once the sink has durably accepted every record of one [`RecordSink::send`].
pub type Ack = BoxFuture<'static, Result<(), SinkError>>;

#[async_trait]
pub trait RecordSink: Send + Sync {
    /// `"kafka"` or `"local"`, for health and logs.
    fn kind(&self) -> &'static str;

    /// Called before each replication session streams. What an earlier session left unacknowledged
    /// will be read again, so a sink may drop it and start afresh (a producer that failed is
    /// rebuilt here).
    async fn reset(&self) -> Result<(), SinkError>;

    /// Queues one committed transaction's records, in order. Returns once they are queued (waiting
    /// while the sink's buffer is full: that is the relay's backpressure) with an [`Ack`].
    async fn send(&self, records: Vec<LogRecord>) -> Result<Ack, SinkError>;
}
