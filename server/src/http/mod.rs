//! The JSON RPC API (docs/json-api.md): `POST /v1/auth/login`, `POST /v1/rpc/<method>`, `GET /healthz`.

mod auth;
mod login;
mod reply;
mod rpc;

pub use rpc::METHODS;

use application::App;
use axum::routing::{get, post};
use axum::Router;
use sqlx::PgPool;

#[derive(Clone)]
pub struct HttpState {
    pub app: App,
    pub pool: PgPool,
}

pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/auth/login", post(login::login))
        .route("/v1/rpc/{method}", post(rpc::rpc))
        .with_state(state)
}

/// 200 when the database answers, 503 otherwise.
async fn healthz(axum::extract::State(state): axum::extract::State<HttpState>) -> (axum::http::StatusCode, &'static str) {
    match sqlx::query("SELECT 1").execute(&state.pool).await {
        Ok(_) => (axum::http::StatusCode::OK, "ok"),
        Err(_) => (axum::http::StatusCode::SERVICE_UNAVAILABLE, "database unavailable"),
    }
}
