//! `ptslog events replay --to-kafka`: re-publishes a selection of the log through the relay's own
//! Kafka sink, so the records are exactly what the relay produces (same JSON, payload as stored,
//! keyed by user id, idempotent producer with `acks=all`).

use std::sync::Arc;

use futures::StreamExt;
use infrastructure::kafka::{KafkaConfig, KafkaSink};
use infrastructure::postgres::log_export::LogExport;
use infrastructure::relay::{RecordSink, RelayStatus, SinkError};
use sqlx::PgPool;
use thiserror::Error;

/// Records handed to the producer before waiting for their acknowledgements.
const BATCH: usize = 1000;

#[derive(Debug, Error)]
pub enum ReplayError {
    #[error("reading the log: {0}")]
    Read(#[from] sqlx::Error),
    #[error("Kafka: {0}")]
    Kafka(#[from] SinkError),
}

/// The default replay topic: beside the live one, not on it, so gateways do not push history to
/// online devices.
pub fn default_topic(live_topic: &str) -> String {
    format!("{live_topic}.replay")
}

/// Publishes every selected event, in (user, pts) order; answers how many. Each batch is
/// acknowledged by the broker before the next is read, so memory stays bounded.
pub async fn replay(
    pool: &PgPool,
    export: &LogExport,
    kafka: KafkaConfig,
) -> Result<u64, ReplayError> {
    let sink = KafkaSink::new(kafka, Arc::new(RelayStatus::new("kafka")));
    sink.reset().await?;
    let mut rows = std::pin::pin!(export.rows(pool));
    let mut batch = Vec::with_capacity(BATCH);
    let mut n = 0u64;
    loop {
        let next = rows.next().await;
        let done = next.is_none();
        if let Some(record) = next {
            batch.push(record?);
        }
        if batch.len() >= BATCH || (done && !batch.is_empty()) {
            n += batch.len() as u64;
            let ack = sink.send(std::mem::take(&mut batch)).await?;
            ack.await?;
        }
        if done {
            return Ok(n);
        }
    }
}
