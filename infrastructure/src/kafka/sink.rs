//! The relay's Kafka sink: one record per log row, keyed by the account's id (so one account's
//! records stay in one partition, in pts order), produced idempotently with `acks=all`. Each
//! carries its kind in a [`KIND_HEADER`] too, so a consumer can pass over the records it has no
//! use for without decoding them.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use application::fanout::LogRecord;
use async_trait::async_trait;
use futures::FutureExt;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};

use super::config::{KafkaConfig, MAX_RECORD_BYTES};
use super::context::ProducerContext;
use super::topic::ensure_topic;
use crate::relay::{Ack, BrokerState, RecordSink, RelayStatus, SinkError};

/// The header that repeats a record's `kind` (docs/events.md, "Log records").
pub const KIND_HEADER: &str = "kind";

/// How long to wait before retrying when librdkafka's local queue is full.
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(5);

/// The record that stands for one too big to publish.
fn oversized(record: &LogRecord, size: usize) -> LogRecord {
    tracing::error!(
        user_id = record.user_id,
        pts = record.pts,
        size,
        "a record is too big for Kafka"
    );
    LogRecord {
        kind: record.kind.chars().take(64).collect(),
        payload: serde_json::Value::Null,
        undecodable: Some(format!(
            "record of {size} bytes is over the {MAX_RECORD_BYTES}-byte Kafka limit"
        )),
        ..record.clone()
    }
}

pub struct KafkaSink {
    config: KafkaConfig,
    status: Arc<RelayStatus>,
    producer: Mutex<Option<FutureProducer<ProducerContext>>>,
}

impl KafkaSink {
    pub fn new(config: KafkaConfig, status: Arc<RelayStatus>) -> Self {
        Self {
            config,
            status,
            producer: Mutex::new(None),
        }
    }

    fn current(&self) -> Result<FutureProducer<ProducerContext>, SinkError> {
        self.producer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| SinkError::Closed("no producer (reset was not called)".into()))
    }
}

#[async_trait]
impl RecordSink for KafkaSink {
    fn kind(&self) -> &'static str {
        "kafka"
    }

    /// A new producer per session: after a failed delivery the idempotent producer may be in a
    /// fatal state, and whatever it still holds will be read again from the slot anyway.
    async fn reset(&self) -> Result<(), SinkError> {
        self.producer
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Err(e) = ensure_topic(&self.config).await {
            self.status.set_broker(BrokerState::Down);
            return Err(SinkError::Broker(e));
        }
        let producer: FutureProducer<ProducerContext> = self
            .config
            .producer()
            .create_with_context(ProducerContext {
                status: self.status.clone(),
            })
            .map_err(|e| SinkError::Broker(format!("creating the producer: {e}")))?;
        self.status.set_broker(BrokerState::Up);
        *self.producer.lock().unwrap_or_else(|e| e.into_inner()) = Some(producer);
        Ok(())
    }

    async fn send(&self, records: Vec<LogRecord>) -> Result<Ack, SinkError> {
        let producer = self.current()?;
        let mut deliveries = Vec::with_capacity(records.len());
        for record in &records {
            let key = record.user_id.to_string();
            let mut published = Cow::Borrowed(record);
            let mut payload = record.to_json();
            if payload.len() > MAX_RECORD_BYTES {
                // The relay already caps payloads; a record still too big (a long kind name?)
                // would fail its delivery and stop the stream, so it goes out undecodable.
                published = Cow::Owned(oversized(record, payload.len()));
                payload = published.to_json();
                self.status.undecodable();
            }
            let headers = OwnedHeaders::new().insert(Header {
                key: KIND_HEADER,
                value: Some(published.kind.as_str()),
            });
            let mut message = FutureRecord::to(&self.config.topic)
                .key(&key)
                .payload(&payload)
                .headers(headers);
            loop {
                match producer.send_result(message) {
                    Ok(delivery) => {
                        deliveries.push(delivery);
                        break;
                    }
                    // librdkafka's buffer is full (the broker is slow or away): wait, which in
                    // turn stops the relay reading the slot.
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                        message = back;
                        tokio::time::sleep(QUEUE_FULL_PAUSE).await;
                    }
                    Err((e, _)) => return Err(SinkError::Broker(format!("producing: {e}"))),
                }
            }
        }
        let status = self.status.clone();
        Ok(async move {
            for delivery in deliveries {
                match delivery.await {
                    Ok(Ok(_)) => {}
                    Ok(Err((e, _))) => {
                        status.set_broker(BrokerState::Down);
                        return Err(SinkError::Broker(format!("delivery: {e}")));
                    }
                    Err(_) => {
                        return Err(SinkError::Closed(
                            "the producer went away before delivering".into(),
                        ))
                    }
                }
            }
            status.set_broker(BrokerState::Up);
            Ok(())
        }
        .boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_too_big_for_kafka_goes_out_undecodable() {
        let record = LogRecord {
            v: application::fanout::RECORD_VERSION,
            user_id: 2,
            pts: 9,
            pts_count: 1,
            kind: "new_message".into(),
            payload_version: 1,
            payload: serde_json::json!({"text": "x".repeat(MAX_RECORD_BYTES)}),
            auth_key_id: 0,
            session_id: 0,
            committed_at: "2025-11-30T09:10:00.000000Z".into(),
            undecodable: None,
        };
        let size = record.to_json().len();
        assert!(size > MAX_RECORD_BYTES);
        let stand_in = oversized(&record, size);
        assert!(stand_in.to_json().len() < 1024);
        assert_eq!((stand_in.user_id, stand_in.pts), (2, 9));
        assert_eq!(stand_in.payload, serde_json::Value::Null);
        assert!(stand_in.undecodable.unwrap().contains("Kafka limit"));
    }
}
