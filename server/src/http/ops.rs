//! Operations endpoints: `GET /metrics` (Prometheus) and `GET /healthz/relay` (JSON).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::routing::get;
use axum::{Json, Router};
use infrastructure::kafka::ConsumerStatus;
use infrastructure::relay::{RelayStatus, Role};
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::gateway::Gateway;

/// What the operations endpoints report on.
#[derive(Clone)]
pub struct Ops {
    pub relay: Arc<RelayStatus>,
    pub consumer: Option<Arc<ConsumerStatus>>,
    /// `None` in a relay-only process.
    pub gateway: Option<Arc<Gateway>>,
    /// The database whose `projection_status` /metrics reports (`None` in a relay-only process).
    pub database: Option<PgPool>,
    /// The MTProto front's counters (`None` in a relay-only process).
    pub mtproto: Option<Arc<crate::mtproto::MtprotoMetrics>>,
    /// Group commit's counters (`None` in a relay-only process or without group commit).
    pub send_batches: Option<Arc<application::commands::send_batch::SendBatchCounters>>,
    /// The read replica's counters (`None` without `DATABASE_READ_URL`).
    pub replica: Option<Arc<infrastructure::postgres::replica::Replica>>,
}

pub fn router(ops: Ops) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz/relay", get(relay_health))
        .with_state(ops)
}

async fn metrics(State(ops): State<Ops>) -> ([(header::HeaderName, &'static str); 1], String) {
    let mut body = crate::metrics::render(&ops);
    if let Some(pool) = &ops.database {
        // A slow or unreachable database must not hang the scrape: the projection metrics are
        // left out then.
        let load = projections::status::load(pool, false);
        match tokio::time::timeout(std::time::Duration::from_secs(2), load).await {
            Ok(Ok(status)) => crate::metrics::render_projections(&mut body, &status),
            Ok(Err(e)) => tracing::warn!(error = %e, "projection status unavailable for /metrics"),
            Err(_) => tracing::warn!("projection status took over 2 s; left out of /metrics"),
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
}

/// 200 unless the relay cannot run as configured (503). A standby relay is healthy: another one
/// leads.
async fn relay_health(State(ops): State<Ops>) -> (StatusCode, Json<Value>) {
    let relay = ops.relay.health();
    let status = if relay.role == Role::Failed {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = json!({
        "relay": relay,
        "consumer": ops.consumer.as_ref().map(|c| c.health()),
        "devices_online": ops.gateway.as_ref().map(|g| g.hub.devices_online()),
    });
    (status, Json(body))
}
