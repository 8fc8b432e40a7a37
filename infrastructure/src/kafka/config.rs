//! Broker settings shared by the producer, the consumers and the topic check.

use domain::limits::{LOG_RECORD_ENVELOPE_BYTES, MAX_EVENT_PAYLOAD_BYTES};
use rdkafka::ClientConfig;

pub const DEFAULT_TOPIC: &str = "ptslog.user-updates";
pub const DEFAULT_GROUP: &str = "ptslog-gateway";
/// Partitions of the topic when the relay has to create it (an existing topic is left as it is).
pub const DEFAULT_PARTITIONS: i32 = 16;
/// The producer's `message.max.bytes` (and `batch.size`): the largest record the relay can
/// publish, a payload at the cap ([`MAX_EVENT_PAYLOAD_BYTES`], enforced when events are appended
/// and again by the relay) plus its envelope. Under Kafka's (and librdkafka's) 1 MB default, so a
/// broker with default settings takes every record.
pub const MAX_RECORD_BYTES: usize = MAX_EVENT_PAYLOAD_BYTES + LOG_RECORD_ENVELOPE_BYTES;

#[derive(Debug, Clone)]
pub struct KafkaConfig {
    /// `host:port[,host:port…]`.
    pub brokers: String,
    pub topic: String,
    /// The gateways' consumer group prefix; each instance appends its own id.
    pub group: String,
    pub partitions: i32,
}

impl KafkaConfig {
    pub fn new(brokers: impl Into<String>) -> Self {
        Self {
            brokers: brokers.into(),
            topic: DEFAULT_TOPIC.into(),
            group: DEFAULT_GROUP.into(),
            partitions: DEFAULT_PARTITIONS,
        }
    }

    fn base(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.brokers)
            // Notice new partitions and a re-created topic within seconds, not librdkafka's 5 minutes.
            .set("topic.metadata.refresh.interval.ms", "5000")
            .set("reconnect.backoff.max.ms", "2000");
        c
    }

    /// The relay's producer: idempotent with `acks=all`, so a retried send neither duplicates nor
    /// reorders within a partition, and an acknowledged record survives a broker failover. A record
    /// still unacknowledged after `message.timeout.ms` fails its transaction's acknowledgement; the
    /// relay then re-reads from its last confirmed position.
    pub fn producer(&self) -> ClientConfig {
        let mut c = self.base();
        c.set("enable.idempotence", "true")
            .set("acks", "all")
            .set("message.timeout.ms", "10000")
            .set("linger.ms", "2")
            .set("queue.buffering.max.messages", "100000")
            .set("message.max.bytes", MAX_RECORD_BYTES.to_string())
            .set("batch.size", MAX_RECORD_BYTES.to_string());
        c
    }

    /// A gateway's consumer. Every instance reads every partition (its own group), starting at
    /// the end: a device that missed pushes while its instance was away catches up with
    /// `updates.getDifference`, so replaying history into sockets would be waste.
    pub fn consumer(&self, instance_id: &str) -> ClientConfig {
        let mut c = self.base();
        c.set("group.id", format!("{}-{}", self.group, instance_id))
            .set("auto.offset.reset", "latest")
            // The group is this instance's alone and never resumed, so offsets are not worth storing.
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("session.timeout.ms", "10000")
            .set("fetch.wait.max.ms", "10");
        c
    }

    pub fn admin(&self) -> ClientConfig {
        self.base()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::producer::{FutureProducer, Producer};

    #[test]
    fn the_producer_takes_the_record_limit() {
        // librdkafka checks its settings when the client is created (no broker needed).
        let producer: FutureProducer = KafkaConfig::new("127.0.0.1:1")
            .producer()
            .create()
            .expect("a valid producer configuration");
        let _ = producer.client();
        let c = KafkaConfig::new("127.0.0.1:1").producer();
        assert_eq!(
            c.get("message.max.bytes"),
            Some(MAX_RECORD_BYTES.to_string().as_str())
        );
        // Well under Kafka's default broker limit (message.max.bytes = 1048588).
        const { assert!(MAX_RECORD_BYTES < 1_000_000) };
    }
}
