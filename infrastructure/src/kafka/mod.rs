//! Kafka: the relay's sink ([`KafkaSink`]) and the gateways' consumer ([`consumer`]). Nothing here
//! depends on a particular broker; tests run against tansu, deployments against any Kafka.

pub mod config;
pub mod consumer;
pub mod context;
pub mod sink;
pub mod topic;

pub use config::{KafkaConfig, KafkaProperties, DEFAULT_GROUP, DEFAULT_PARTITIONS, DEFAULT_TOPIC};
pub use consumer::{run_consumer, ConsumerHealth, ConsumerStatus};
pub use sink::{KafkaSink, KIND_HEADER};
