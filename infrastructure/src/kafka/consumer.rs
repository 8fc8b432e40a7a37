//! A gateway's consumer: reads every partition of the topic and hands each record to the local
//! fanout, which keeps only those of accounts with devices on this instance.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use application::fanout::{LogRecord, RecordHandler};
use rand::Rng;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{BorrowedMessage, Headers};
use rdkafka::Message;
use serde::Serialize;
use tokio::sync::watch;

use super::config::KafkaConfig;
use super::context::ConsumerCtx;
use super::sink::KIND_HEADER;
use super::topic::ensure_topic;
use crate::relay::BrokerState;

#[derive(Debug, Default)]
pub struct ConsumerStatus {
    partitions: AtomicUsize,
    broker: AtomicU8,
    records: AtomicU64,
    bad_records: AtomicU64,
    skipped: AtomicU64,
    errors: AtomicU64,
    /// Set when librdkafka reports every broker down; the consumer session then ends.
    all_brokers_down: AtomicBool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumerHealth {
    /// Partitions assigned to this instance (all of the topic's, once it joined).
    pub partitions: usize,
    pub broker: BrokerState,
    pub records: u64,
    pub bad_records: u64,
    /// Records passed over undecoded: of accounts with no device here, of kinds no cache here
    /// follows ([`RecordHandler::wants`]).
    pub skipped: u64,
    pub errors: u64,
}

impl ConsumerStatus {
    pub(super) fn assigned(&self, partitions: usize) {
        self.partitions.store(partitions, Ordering::Relaxed);
    }

    pub(super) fn all_brokers_down(&self) {
        self.all_brokers_down.store(true, Ordering::Relaxed);
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
            skipped: self.skipped.load(Ordering::Relaxed),
            errors: self.errors(),
        }
    }
}

/// How long the consumer waits between checks that the broker is back.
const BROKER_RETRY: Duration = Duration::from_millis(500);
/// How often the consumer looks at the broker state its context reports.
const BROKER_CHECK: Duration = Duration::from_millis(100);

/// Why one consumer session ended.
enum SessionEnd {
    Shutdown,
    BrokerLost,
}

/// Consumes the topic into `handler` until `shutdown`, one consumer per broker session.
///
/// When the broker becomes unreachable the consumer is closed, and a new one (a new group, from
/// the end of the log) is made once the broker answers again with the topic. Records committed in
/// between are not pushed; devices learn them with `updates.getDifference` at their next gap, as
/// after any missed push. Keeping the old consumer across a broker restart is also a hazard: it
/// fetches with the topic id it knew, and a broker that lost its state (as tansu's memory engine
/// does) answers with leader-change tags on a zero topic id, on which librdkafka 2.12.1 crashes the
/// process (`rd_kafka_metadata_update_op` looks the topic up by a null name).
pub async fn run_consumer(
    config: KafkaConfig,
    handler: Arc<dyn RecordHandler>,
    status: Arc<ConsumerStatus>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), String> {
    loop {
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
        let end = consume(&consumer, &*handler, &status, &mut shutdown).await;
        status.assigned(0);
        // Closing may wait on a broker that is gone; it must not hold up the runtime.
        let closing = tokio::task::spawn_blocking(move || {
            consumer.unsubscribe();
            drop(consumer);
        });
        match end {
            SessionEnd::Shutdown => {
                let _ = closing.await;
                return Ok(());
            }
            SessionEnd::BrokerLost => {
                tracing::warn!("the Kafka broker is unreachable; the consumer waits for it");
                let _ = closing.await;
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep(BROKER_RETRY) => {}
                        _ = crate::relay::leader::stopped(&mut shutdown) => return Ok(()),
                    }
                    if ensure_topic(&config).await.is_ok() {
                        break;
                    }
                }
            }
        }
    }
}

/// One consumer session: records to the handler until shutdown or until the broker is lost.
async fn consume(
    consumer: &StreamConsumer<ConsumerCtx>,
    handler: &dyn RecordHandler,
    status: &ConsumerStatus,
    shutdown: &mut watch::Receiver<bool>,
) -> SessionEnd {
    let mut check = tokio::time::interval(BROKER_CHECK);
    loop {
        let message = tokio::select! {
            m = consumer.recv() => m,
            _ = check.tick() => {
                if status.all_brokers_down.swap(false, Ordering::Relaxed) {
                    return SessionEnd::BrokerLost;
                }
                continue;
            }
            _ = crate::relay::leader::stopped(shutdown) => return SessionEnd::Shutdown,
        };
        match message {
            Ok(m) => {
                status.set_broker(BrokerState::Up);
                status.records.fetch_add(1, Ordering::Relaxed);
                if !wanted(&m, handler) {
                    status.skipped.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let Some(payload) = m.payload() else {
                    status.bad_records.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                match LogRecord::from_json(payload) {
                    Ok(record) => handler.handle(std::slice::from_ref(&record)).await,
                    Err(e) => {
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
}

/// Whether the handler may want this record, from its key (the account) and kind header alone;
/// a record without them (another producer's) is decoded as before.
fn wanted(m: &BorrowedMessage<'_>, handler: &dyn RecordHandler) -> bool {
    let Some(user_id) = m
        .key()
        .and_then(|k| std::str::from_utf8(k).ok())
        .and_then(|k| k.parse::<i64>().ok())
    else {
        return true;
    };
    let kind = m.headers().and_then(|headers| {
        headers
            .iter()
            .find(|h| h.key == KIND_HEADER)
            .and_then(|h| h.value)
            .and_then(|v| std::str::from_utf8(v).ok())
    });
    kind.is_none_or(|kind| handler.wants(user_id, kind))
}
