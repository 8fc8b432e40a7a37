//! `GET /admin/projections`: the read models' status as JSON (the same as `ptslog projections
//! status --json`). Registered on the admin router, behind its operator token.

use axum::http::StatusCode;
use axum::Json;
use projections::status::ProjectionStatus;
use serde_json::{json, Value};
use sqlx::PgPool;

/// The answer of `GET /admin/projections`: 200 with the status, 503 if the database cannot tell.
pub async fn answer(pool: &PgPool) -> (StatusCode, Json<Value>) {
    match projections::status::load(pool, true).await {
        Ok(status) => (StatusCode::OK, Json(status_json(&status))),
        Err(e) => {
            tracing::warn!(error = %e, "projection status unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"error": "projection status unavailable"})),
            )
        }
    }
}

/// `{"projections": [...]}`, one object per read model in dependency order.
pub fn status_json(status: &[ProjectionStatus]) -> Value {
    let items: Vec<Value> = status
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "version": s.version,
                "code_version": s.code_version,
                "stale": s.is_stale(),
                "state": s.state.as_str(),
                "error": s.error,
                "events_applied": s.events_applied,
                "last_rebuilt_at": s.last_rebuilt_at.map(|t| t.to_rfc3339()),
                "last_swap_lock_ms": s.last_lock_ms,
                "lag_events": s.lag(),
                "rebuild": s.rebuild.as_ref().map(|r| json!({
                    "phase": r.phase,
                    "started_at": r.started_at.map(|t| t.to_rfc3339()),
                    "events_done": r.events_done,
                    "events_total": r.events_total,
                    "events_per_second": r.rate,
                    "eta_seconds": r.eta_seconds(),
                    "seconds_since_update": r.seconds_since_update,
                    "abandoned": r.abandoned(),
                    "shadow_lag_pts": r.shadow_lag_pts,
                })),
            })
        })
        .collect();
    json!({ "projections": items })
}
