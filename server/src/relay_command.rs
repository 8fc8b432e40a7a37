//! `ptslog relay`: only the relay, producing to Kafka, for deployments that run it apart from the
//! gateways (and for tests that kill it). It serves `/metrics` and `/healthz/relay` on
//! `PTSLOG_HTTP_ADDR`. Several may run; one leads, the others stand by.

use std::sync::Arc;

use anyhow::{anyhow, Context};
use infrastructure::kafka::KafkaSink;
use infrastructure::relay::{Relay, RelayConfig, RelayStatus};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::Config;
use crate::feed::kafka_config;
use crate::http::ops::{self, Ops};
use crate::wiring::redact;

pub async fn run(config: &Config) -> anyhow::Result<()> {
    let brokers = config.kafka_brokers.as_deref().ok_or_else(|| {
        anyhow!("`ptslog relay` produces to Kafka: set KAFKA_BROKERS (without a broker, `ptslog serve` runs the relay in-process)")
    })?;
    // The publication the relay streams comes with the migrations.
    let pool = infrastructure::connect(&config.database_url, 2)
        .await
        .with_context(|| format!("connecting to Postgres at {}", redact(&config.database_url)))?;
    infrastructure::migrate(&pool)
        .await
        .context("applying migrations")?;
    pool.close().await;

    let status = Arc::new(RelayStatus::new("kafka"));
    let sink = Arc::new(KafkaSink::new(
        kafka_config(config, brokers),
        status.clone(),
    ));
    let mut relay_config =
        RelayConfig::new(config.database_url.clone(), config.relay_slot.clone())?;
    relay_config.exit_on_fatal = true;
    let relay = Relay::new(relay_config, sink, status.clone());

    let listener = TcpListener::bind(config.http_addr)
        .await
        .with_context(|| format!("binding {}", config.http_addr))?;
    tracing::info!(addr = %listener.local_addr()?, "relay serving /metrics and /healthz/relay");
    let router = ops::router(Ops {
        mtproto: None,
        relay: status,
        consumer: None,
        gateway: None,
        database: None,
        send_batches: None,
        replica: None,
    });
    let http = tokio::spawn(async move { axum::serve(listener, router).await });

    let (stop, stopped) = watch::channel(false);
    let mut task = tokio::spawn(async move { relay.run(stopped).await });
    let outcome = tokio::select! {
        r = &mut task => r,
        _ = tokio::signal::ctrl_c() => {
            tracing::info!("stopping the relay");
            let _ = stop.send(true);
            task.await
        }
    };
    http.abort();
    outcome
        .context("relay task")?
        .map_err(|e| anyhow!("relay: {e}"))
}
