//! The gateway consumer against a real Kafka-protocol broker (`PTSLOG_TEST_KAFKA_BROKERS`, the
//! private tansu of scripts/test): records the handler does not want, by key and kind header, are
//! passed over without decoding; everything else is decoded as before.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use application::fanout::{LogRecord, RecordHandler, RECORD_VERSION};
use async_trait::async_trait;
use infrastructure::kafka::{
    run_consumer, topic::ensure_topic, ConsumerStatus, KafkaConfig, KafkaSink, KIND_HEADER,
};
use infrastructure::relay::{RecordSink, RelayStatus};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord};
use tokio::sync::watch;

/// Wants every record of account 1 and none of anyone else's.
#[derive(Default)]
struct OnlyAccountOne {
    handled: Mutex<Vec<(i64, i32)>>,
}

#[async_trait]
impl RecordHandler for OnlyAccountOne {
    async fn handle(&self, records: &[LogRecord]) {
        let mut handled = self.handled.lock().unwrap();
        handled.extend(records.iter().map(|r| (r.user_id, r.pts)));
    }

    fn wants(&self, user_id: i64, _kind: &str) -> bool {
        user_id == 1
    }
}

fn record(user_id: i64, pts: i32) -> LogRecord {
    LogRecord {
        v: RECORD_VERSION,
        user_id,
        pts,
        pts_count: 1,
        kind: "read_history_outbox".into(),
        payload_version: 1,
        payload: serde_json::json!({"peer_user_id": 3, "max_id": 1}),
        auth_key_id: 0,
        session_id: 0,
        committed_at: "2026-12-07T19:00:00.000000Z".into(),
        undecodable: None,
    }
}

fn brokers_or_skip() -> Option<String> {
    let brokers = std::env::var("PTSLOG_TEST_KAFKA_BROKERS").ok();
    if brokers.is_none() {
        // scripts/test and .ci/run always provide the broker; a bare `cargo test` may not.
        assert!(
            std::env::var("CI").is_err(),
            "PTSLOG_TEST_KAFKA_BROKERS is not set: .ci/run must start Kafka (scripts/lib/services.sh)"
        );
        eprintln!("skipped: no Kafka broker (run scripts/test)");
    }
    brokers
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_of_accounts_not_wanted_here_are_passed_over_undecoded() {
    let Some(brokers) = brokers_or_skip() else {
        return;
    };
    let mut config = KafkaConfig::new(brokers);
    config.topic = format!("consumer-skip.{}", rand::random::<u32>());
    config.partitions = 2;
    ensure_topic(&config).await.expect("topic");

    let handler = Arc::new(OnlyAccountOne::default());
    let status = Arc::new(ConsumerStatus::default());
    let (stop, stopped) = watch::channel(false);
    let consumer = tokio::spawn(run_consumer(
        config.clone(),
        handler.clone(),
        status.clone(),
        stopped,
    ));

    // The relay's own sink, which sets the kind header.
    let sink = KafkaSink::new(config.clone(), Arc::new(RelayStatus::new("kafka")));
    sink.reset().await.expect("producer");
    // The consumer starts at the end of the log: send account 1's records until one arrives.
    let mut pts = 0;
    while handler.handled.lock().unwrap().is_empty() {
        pts += 1;
        assert!(pts < 100, "the consumer never received a record");
        sink.send(vec![record(1, pts)])
            .await
            .unwrap()
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let before = status.health();

    // Not wanted: account 2, with a kind header and a payload that is not even JSON. Decoding
    // it would count a bad record; passing over it counts a skipped one.
    let raw: FutureProducer = config.producer().create().expect("producer");
    let garbage = FutureRecord::to(&config.topic)
        .key("2")
        .payload("{not json")
        .headers(OwnedHeaders::new().insert(Header {
            key: KIND_HEADER,
            value: Some("read_history_outbox"),
        }));
    raw.send(garbage, Duration::from_secs(10)).await.unwrap();
    // Account 2 through the sink: skipped too.
    sink.send(vec![record(2, 1)]).await.unwrap().await.unwrap();
    // Without the header (another producer's record) it is decoded, and handed over as before.
    let bare = record(2, 2).to_json();
    raw.send(
        FutureRecord::to(&config.topic).key("2").payload(&bare),
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    // Account 1 is wanted: decoded and handled.
    sink.send(vec![record(1, 1000)])
        .await
        .unwrap()
        .await
        .unwrap();

    wait_for("the four records", || {
        let h = handler.handled.lock().unwrap();
        h.contains(&(1, 1000)) && h.contains(&(2, 2))
    })
    .await;
    wait_for("the skipped records counted", || {
        status.health().skipped - before.skipped == 2
    })
    .await;
    let after = status.health();
    assert_eq!(
        after.bad_records, before.bad_records,
        "nothing was decoded of the skipped"
    );
    let handled = handler.handled.lock().unwrap().clone();
    assert!(!handled.contains(&(2, 1)), "{handled:?}");
    assert!(after.records - before.records >= 4);

    stop.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(30), consumer)
        .await
        .expect("the consumer stops")
        .unwrap()
        .unwrap();
}
