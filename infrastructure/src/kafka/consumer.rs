//! A gateway's consumer: reads every partition of the topic and hands each record to the local
//! fanout, which keeps only those of accounts with devices on this instance.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use application::fanout::{LogRecord, RecordHandler};
use rand::Rng;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::Message;
use serde::Serialize;
use tokio::sync::watch;

use super::config::KafkaConfig;
use super::context::ConsumerCtx;
use crate::relay::BrokerState;

#[derive(Debug, Default)]
pub struct ConsumerStatus {
    partitions: AtomicUsize,
    broker: AtomicU8,
    records: AtomicU64,
    bad_records: AtomicU64,
    errors: AtomicU64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumerHealth {
    /// Partitions assigned to this instance (all of the topic's, once it joined).
    pub partitions: usize,
    pub broker: BrokerState,
    pub records: u64,
    pub bad_records: u64,
    pub errors: u64,
}

impl ConsumerStatus {
    pub(super) fn assigned(&self, partitions: usize) {
        self.partitions.store(partitions, Ordering::Relaxed);
    }

    pub(super) fn set_broker(&self, state: BrokerState) {
        self.broker.store(state as u8, Ordering::Relaxed);
    }

    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    pub fn health(&self) -> ConsumerHealth {
        let broker = match self.broker.load(Ordering::Relaxed) {
            2 => BrokerState::Up,
            3 => BrokerState::Down,
            _ => BrokerState::Unknown,
        };
        ConsumerHealth {
            partitions: self.partitions.load(Ordering::Relaxed),
            broker,
            records: self.records(),
            bad_records: self.bad_records.load(Ordering::Relaxed),
            errors: self.errors(),
        }
    }
}

/// Consumes until `shutdown` turns true. Broker outages are waited out (librdkafka reconnects).
pub async fn run_consumer(
    config: KafkaConfig,
    handler: Arc<dyn RecordHandler>,
    status: Arc<ConsumerStatus>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), String> {
    let instance = format!("{:016x}", rand::thread_rng().gen::<u64>());
    let consumer: StreamConsumer<ConsumerCtx> = config
        .consumer(&instance)
        .create_with_context(ConsumerCtx {
            status: status.clone(),
        })
        .map_err(|e| format!("creating the Kafka consumer: {e}"))?;
    consumer
        .subscribe(&[&config.topic])
        .map_err(|e| format!("subscribing to {}: {e}", config.topic))?;
    tracing::info!(topic = %config.topic, group = %format!("{}-{}", config.group, instance), "consuming log records");
    loop {
        let message = tokio::select! {
            m = consumer.recv() => m,
            _ = crate::relay::leader::stopped(&mut shutdown) => break,
        };
        match message {
            Ok(m) => {
                status.set_broker(BrokerState::Up);
                status.records.fetch_add(1, Ordering::Relaxed);
                let Some(payload) = m.payload() else {
                    status.bad_records.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                match LogRecord::from_json(payload) {
                    Ok(record) => handler.handle(std::slice::from_ref(&record)).await,
                    Err(e) => {
                        // Skipped records show up to devices as a pts gap, which getDifference fills.
                        status.bad_records.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(error = %e, partition = m.partition(), offset = m.offset(), "skipping a record");
                    }
                }
            }
            Err(e) => {
                status.errors.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(error = %e, "consumer error");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    consumer.unsubscribe();
    Ok(())
}
