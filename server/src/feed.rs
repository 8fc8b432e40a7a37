//! What feeds the gateway with committed records, besides HTTP: the relay candidate (with the
//! Kafka sink, or the local one straight into this process's fanout) and, with Kafka, the consumer.
//! `ptslog serve` starts it after the HTTP front; tests and the benchmark start it when they need
//! pushes.
//!
//! Both run on a thread of their own ([`FeedRuntime`]) unless `PTSLOG_FEED_THREAD=off`. On the
//! request runtime the relay is one task among every request's: each time it waits for the next
//! WAL message it goes to the back of the workers' queues, so under load each batch of commits
//! waits behind all the work queued before it (issue 16 saw the relay's record count stall and
//! then catch up at once while the sends kept up; docs/performance.md, "Pushes under load"). On
//! its own thread the relay reads, decodes and hands each commit to the devices' buffers when the
//! walsender sends it, whatever the request workers are doing.

use std::sync::{Arc, Mutex};

use infrastructure::kafka::{run_consumer, ConsumerStatus, KafkaConfig, KafkaSink};
use infrastructure::relay::{LocalSink, RecordSink, Relay, RelayConfig, RelayError, RelayStatus};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::gateway::Gateway;

pub fn kafka_config(config: &Config, brokers: &str) -> KafkaConfig {
    KafkaConfig {
        brokers: brokers.to_string(),
        topic: config.kafka_topic.clone(),
        group: config.kafka_group.clone(),
        partitions: config.kafka_partitions,
        properties: config.kafka_properties.clone(),
    }
}

/// The sink kind a relay of this configuration uses, for its status.
pub fn sink_kind(config: &Config) -> &'static str {
    if config.kafka_brokers.is_some() {
        "kafka"
    } else {
        "local"
    }
}

/// Where the feed's tasks run: a runtime on a thread of its own, or the caller's.
#[derive(Clone)]
pub struct FeedRuntime(Option<Arc<OwnRuntime>>);

/// A one-worker runtime; dropped without waiting, since its owner may be in async code.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

impl FeedRuntime {
    /// A thread of its own (`ptslog-feed`).
    pub fn own_thread() -> std::io::Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("ptslog-feed")
            .enable_all()
            .build()?;
        Ok(Self(Some(Arc::new(OwnRuntime(Some(rt))))))
    }

    /// The runtime of whoever spawns (the request runtime, in `ptslog serve`).
    pub fn shared() -> Self {
        Self(None)
    }

    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match self.0.as_ref().and_then(|own| own.0.as_ref()) {
            Some(rt) => rt.spawn(task),
            None => tokio::spawn(task),
        }
    }
}

/// A relay task that can be stopped, killed and started again (tests kill it mid-stream).
pub struct RelayControl {
    relay: Arc<Relay>,
    runtime: FeedRuntime,
    running: Mutex<Option<(watch::Sender<bool>, JoinHandle<Result<(), RelayError>>)>>,
}

impl RelayControl {
    /// A relay that runs on `runtime`.
    pub fn new(relay: Relay, runtime: FeedRuntime) -> Self {
        Self {
            relay: Arc::new(relay),
            runtime,
            running: Mutex::new(None),
        }
    }

    pub fn status(&self) -> &Arc<RelayStatus> {
        self.relay.status()
    }

    /// Starts the relay candidate unless it runs.
    pub fn start(&self) {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        if running
            .as_ref()
            .is_some_and(|(_, task)| !task.is_finished())
        {
            return;
        }
        let (stop, stopped) = watch::channel(false);
        let relay = self.relay.clone();
        let task = self.runtime.spawn(async move { relay.run(stopped).await });
        *running = Some((stop, task));
    }

    /// Ends the task at once, as a crash would: nothing in flight is confirmed.
    pub fn kill(&self) {
        if let Some((_, task)) = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            task.abort();
        }
    }

    /// Asks the relay to stop cleanly (the replication stream ends, the slot is free) and waits.
    pub async fn stop(&self) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some((stop, task)) = running {
            let _ = stop.send(true);
            let _ = task.await;
        }
    }
}

/// The running feed of one server.
#[derive(Default)]
pub struct Feed {
    pub relay: Option<Arc<RelayControl>>,
    consumer: Option<(watch::Sender<bool>, JoinHandle<()>)>,
    /// Held so that the feed's thread lives as long as the feed (the relay control holds it too).
    runtime: Option<FeedRuntime>,
}

impl Feed {
    /// Starts what `config` asks for: a relay candidate unless `PTSLOG_RELAY=off`, and with
    /// `KAFKA_BROKERS` a consumer of every partition.
    pub fn start(
        config: &Config,
        gateway: &Gateway,
        relay_status: Arc<RelayStatus>,
        consumer_status: Option<Arc<ConsumerStatus>>,
    ) -> anyhow::Result<Self> {
        let mut feed = Feed::default();
        let runtime = if config.feed_thread {
            FeedRuntime::own_thread()?
        } else {
            FeedRuntime::shared()
        };
        feed.runtime = Some(runtime.clone());
        if config.relay {
            let sink: Arc<dyn RecordSink> = match &config.kafka_brokers {
                Some(brokers) => Arc::new(KafkaSink::new(
                    kafka_config(config, brokers),
                    relay_status.clone(),
                )),
                None => Arc::new(LocalSink::new(gateway.fanout.clone())),
            };
            let relay_config =
                RelayConfig::new(config.database_url.clone(), config.relay_slot.clone())?;
            let control = Arc::new(RelayControl::new(
                Relay::new(relay_config, sink, relay_status),
                runtime.clone(),
            ));
            control.start();
            feed.relay = Some(control);
        }
        if let (Some(brokers), Some(status)) = (&config.kafka_brokers, consumer_status) {
            let (stop, stopped) = watch::channel(false);
            let kafka = kafka_config(config, brokers);
            let handler = gateway.fanout.clone();
            let task = runtime.spawn(async move {
                if let Err(e) = run_consumer(kafka, handler, status, stopped).await {
                    tracing::error!(error = %e, "the Kafka consumer stopped; no live pushes on this instance");
                }
            });
            feed.consumer = Some((stop, task));
        }
        Ok(feed)
    }

    /// Stops the relay cleanly and the consumer.
    pub async fn stop(&mut self) {
        if let Some(relay) = self.relay.take() {
            relay.stop().await;
        }
        if let Some((stop, task)) = self.consumer.take() {
            let _ = stop.send(true);
            let _ = task.await;
        }
        self.runtime = None;
    }
}
