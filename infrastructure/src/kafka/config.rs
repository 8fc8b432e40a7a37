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

/// The environment prefix of librdkafka properties passed through as they are:
/// `PTSLOG_KAFKA_OPT_SECURITY_PROTOCOL=SASL_SSL` sets `security.protocol` (the rest of the name
/// lower-cased, `_` read as `.` and `__` as `_`).
pub const PROPERTY_ENV_PREFIX: &str = "PTSLOG_KAFKA_OPT_";

/// Properties ptslog sets itself from its own settings; passing them through would be ambiguous.
const MANAGED_PROPERTIES: &[&str] = &["bootstrap.servers", "group.id"];

/// librdkafka properties from configuration (TLS, SASL, timeouts…), applied after ptslog's own
/// defaults so an operator can override them. Debug shows only the names: values such as
/// `sasl.password` are secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct KafkaProperties(Vec<(String, String)>);

impl std::fmt::Debug for KafkaProperties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(k, _)| k))
            .finish()
    }
}

impl KafkaProperties {
    /// Collects every `PTSLOG_KAFKA_OPT_<NAME>` of `vars`, sorted by property name.
    pub fn from_vars<'a>(
        vars: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Result<Self, String> {
        let mut props = Vec::new();
        for (k, v) in vars {
            let Some(name) = k.strip_prefix(PROPERTY_ENV_PREFIX) else {
                continue;
            };
            let property = property_name(name)
                .ok_or_else(|| format!("{k}: not a librdkafka property name"))?;
            if MANAGED_PROPERTIES.contains(&property.as_str()) {
                return Err(format!(
                    "{k}: {property} comes from ptslog's own settings (KAFKA_BROKERS, PTSLOG_KAFKA_GROUP)"
                ));
            }
            props.push((property, v.clone()));
        }
        props.sort();
        Ok(Self(props))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// `SECURITY_PROTOCOL` → `security.protocol`; `__` stands for a literal `_`.
fn property_name(env_name: &str) -> Option<String> {
    if env_name.is_empty()
        || env_name.contains("___")
        || !env_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return None;
    }
    let name = env_name
        .split("__")
        .map(|part| part.replace('_', "."))
        .collect::<Vec<_>>()
        .join("_")
        .to_ascii_lowercase();
    (!name.starts_with('.') && !name.ends_with('.') && !name.contains("..")).then_some(name)
}

#[derive(Debug, Clone)]
pub struct KafkaConfig {
    /// `host:port[,host:port…]`.
    pub brokers: String,
    pub topic: String,
    /// The gateways' consumer group prefix; each instance appends its own id.
    pub group: String,
    pub partitions: i32,
    /// Passed through to librdkafka (`PTSLOG_KAFKA_OPT_*`).
    pub properties: KafkaProperties,
}

impl KafkaConfig {
    pub fn new(brokers: impl Into<String>) -> Self {
        Self {
            brokers: brokers.into(),
            topic: DEFAULT_TOPIC.into(),
            group: DEFAULT_GROUP.into(),
            partitions: DEFAULT_PARTITIONS,
            properties: KafkaProperties::default(),
        }
    }

    fn base(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.brokers)
            // Notice new partitions and a re-created topic within seconds, not librdkafka's 5 minutes.
            .set("topic.metadata.refresh.interval.ms", "5000")
            .set("reconnect.backoff.max.ms", "2000");
        self.apply_properties(&mut c);
        c
    }

    // The operator's properties last of all, so they override ptslog's defaults.
    fn apply_properties(&self, c: &mut ClientConfig) {
        for (k, v) in self.properties.iter() {
            c.set(k, v);
        }
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
        self.apply_properties(&mut c);
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
        self.apply_properties(&mut c);
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

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn props(pairs: &[(&str, &str)]) -> Result<KafkaProperties, String> {
        let v = vars(pairs);
        KafkaProperties::from_vars(v.iter().map(|(k, v)| (k, v)))
    }

    #[test]
    fn env_names_map_to_librdkafka_properties() {
        let p = props(&[
            ("PTSLOG_KAFKA_OPT_SECURITY_PROTOCOL", "SASL_SSL"),
            ("PTSLOG_KAFKA_OPT_SASL_MECHANISMS", "SCRAM-SHA-512"),
            ("PTSLOG_KAFKA_OPT_SASL_USERNAME", "relay"),
            ("PTSLOG_KAFKA_OPT_SASL_PASSWORD", "s3cret"),
            (
                "PTSLOG_KAFKA_OPT_SSL_CA_LOCATION",
                "/etc/ptslog/kafka-ca.pem",
            ),
            ("PTSLOG_KAFKA_OPT_SOME__ODD_NAME", "x"),
            ("KAFKA_BROKERS", "ignored"),
        ])
        .unwrap();
        let got: Vec<_> = p.iter().collect();
        assert_eq!(
            got,
            vec![
                ("sasl.mechanisms", "SCRAM-SHA-512"),
                ("sasl.password", "s3cret"),
                ("sasl.username", "relay"),
                ("security.protocol", "SASL_SSL"),
                ("some_odd.name", "x"),
                ("ssl.ca.location", "/etc/ptslog/kafka-ca.pem"),
            ]
        );
        // Secrets stay out of Debug output (and so out of logged configuration).
        let shown = format!("{p:?}");
        assert!(
            shown.contains("sasl.password") && !shown.contains("s3cret"),
            "{shown}"
        );
    }

    #[test]
    fn bad_or_managed_names_are_refused() {
        for name in [
            "PTSLOG_KAFKA_OPT_",
            "PTSLOG_KAFKA_OPT_BOOTSTRAP_SERVERS",
            "PTSLOG_KAFKA_OPT_GROUP_ID",
            "PTSLOG_KAFKA_OPT_SSL-CA",
            "PTSLOG_KAFKA_OPT__LEADING",
            "PTSLOG_KAFKA_OPT_A___B",
        ] {
            assert!(props(&[(name, "v")]).is_err(), "{name}");
        }
    }

    #[test]
    fn properties_reach_every_client_and_override_defaults() {
        let mut c = KafkaConfig::new("b:9092");
        c.properties = props(&[
            ("PTSLOG_KAFKA_OPT_SECURITY_PROTOCOL", "SSL"),
            ("PTSLOG_KAFKA_OPT_MESSAGE_TIMEOUT_MS", "30000"),
            ("PTSLOG_KAFKA_OPT_SESSION_TIMEOUT_MS", "45000"),
        ])
        .unwrap();
        let producer = c.producer();
        assert_eq!(producer.get("security.protocol"), Some("SSL"));
        assert_eq!(producer.get("message.timeout.ms"), Some("30000"));
        assert_eq!(producer.get("bootstrap.servers"), Some("b:9092"));
        let consumer = c.consumer("i");
        assert_eq!(consumer.get("security.protocol"), Some("SSL"));
        assert_eq!(consumer.get("session.timeout.ms"), Some("45000"));
        assert_eq!(c.admin().get("security.protocol"), Some("SSL"));
    }
}
