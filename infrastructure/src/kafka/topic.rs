//! Making sure the topic exists before producing. Brokers differ: some create topics on first
//! use, some (and most production clusters) do not; asking first works with all of them.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::types::RDKafkaErrorCode;

use super::config::KafkaConfig;

const TIMEOUT: Duration = Duration::from_secs(10);

/// Creates the topic with `config.partitions` partitions (and the broker's default replication)
/// unless it exists.
pub async fn ensure_topic(config: &KafkaConfig) -> Result<(), String> {
    let admin: AdminClient<DefaultClientContext> = config
        .admin()
        .create()
        .map_err(|e| format!("creating the Kafka admin client: {e}"))?;
    let topic = config.topic.clone();
    // fetch_metadata blocks; keep it off the async workers.
    let (admin, exists) = tokio::task::spawn_blocking(move || {
        let found = admin
            .inner()
            .fetch_metadata(Some(&topic), TIMEOUT)
            .map(|m| {
                m.topics()
                    .iter()
                    .any(|t| t.name() == topic && t.error().is_none() && !t.partitions().is_empty())
            });
        (admin, found)
    })
    .await
    .map_err(|e| format!("metadata task: {e}"))?;
    if exists.map_err(|e| format!("reading topic metadata from {}: {e}", config.brokers))? {
        return Ok(());
    }
    // -1: the broker's default replication factor (KIP-464), right for any cluster size.
    let new = NewTopic::new(
        &config.topic,
        config.partitions,
        TopicReplication::Fixed(-1),
    );
    let results = admin
        .create_topics(
            [&new],
            &AdminOptions::new()
                .operation_timeout(Some(TIMEOUT))
                .request_timeout(Some(TIMEOUT)),
        )
        .await
        .map_err(|e| format!("creating topic {}: {e}", config.topic))?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, code)) => return Err(format!("creating topic {name}: {code}")),
        }
    }
    tracing::info!(topic = %config.topic, partitions = config.partitions, "created the Kafka topic");
    Ok(())
}
