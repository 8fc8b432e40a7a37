//! The JSON RPC API (docs/json-api.md): `POST /v1/auth/sendCode`/`signIn`/`signUp` (and the
//! development `POST /v1/auth/login`), `POST /v1/rpc/<method>`, uploads
//! `PUT /v1/upload/...` and downloads `GET /v1/files/...`, `GET /healthz`,
//! the push WebSocket `GET /v1/updates`, the operations endpoints (`ops`) and, with an operator
//! token, the admin endpoints (`admin`).

pub mod admin;
pub mod admin_projections;
mod auth;
mod downloads;
mod login;
pub mod ops;
pub(crate) mod reply;
pub(crate) mod rpc;
pub mod serve;
mod sessions;
pub mod updates;
mod uploads;

pub use crate::calls::METHODS;

use std::sync::{Arc, OnceLock};

use application::App;
use axum::routing::{get, post, put};
use axum::Router;
use sqlx::PgPool;

use crate::gateway::Gateway;

#[derive(Clone)]
pub struct HttpState {
    pub app: App,
    pub pool: PgPool,
    pub gateway: Arc<Gateway>,
    pub ops: ops::Ops,
    /// Filled once the MTProto front runs (`GET /v1/mtproto/public-key`).
    pub mtproto_key: Arc<OnceLock<crate::mtproto::PublicKeyInfo>>,
    /// The admin endpoints to serve on this (the public) listener, if any.
    pub admin: Option<admin::AdminState>,
    /// Whether `/metrics` and `/healthz/relay` are served here; `PTSLOG_OPS_ON_ADMIN_ONLY` moves
    /// them to the admin listener (`/healthz` stays, for load balancers).
    pub serve_ops: bool,
}

pub fn router(state: HttpState) -> Router {
    let ops = state.serve_ops.then(|| ops::router(state.ops.clone()));
    let admin = state.admin.clone().map(admin::router);
    let router = Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/auth/login", post(login::login))
        .route("/v1/auth/sendCode", post(login::send_code))
        .route("/v1/auth/resendCode", post(login::resend_code))
        .route("/v1/auth/cancelCode", post(login::cancel_code))
        .route("/v1/auth/signIn", post(login::sign_in))
        .route("/v1/auth/getPassword", post(login::get_password))
        .route("/v1/auth/checkPassword", post(login::check_password))
        .route("/v1/auth/signUp", post(login::sign_up))
        .route("/v1/auth/logout", post(sessions::logout))
        .route(
            "/v1/auth/resetAuthorizations",
            post(sessions::reset_authorizations),
        )
        .route("/v1/rpc/{method}", post(rpc::rpc))
        .route("/v1/upload/{file_id}/{part}", put(uploads::put_part))
        .route("/v1/files/{kind}/{id}", get(downloads::get_file))
        .route("/v1/updates", get(updates::updates))
        .route("/v1/mtproto/public-key", get(mtproto_public_key))
        .with_state(state);
    let router = match ops {
        Some(ops) => router.merge(ops),
        None => router,
    };
    match admin {
        Some(admin) => router.merge(admin),
        None => router,
    }
}

/// The MTProto server key clients must be configured with, or 404 while the front is off.
async fn mtproto_public_key(
    axum::extract::State(state): axum::extract::State<HttpState>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    match state.mtproto_key.get() {
        Some(info) => axum::Json(info.clone()).into_response(),
        None => (
            axum::http::StatusCode::NOT_FOUND,
            "the MTProto front is not running",
        )
            .into_response(),
    }
}

/// 200 when the database answers, 503 otherwise.
async fn healthz(
    axum::extract::State(state): axum::extract::State<HttpState>,
) -> (axum::http::StatusCode, &'static str) {
    match sqlx::query("SELECT 1").execute(&state.pool).await {
        Ok(_) => (axum::http::StatusCode::OK, "ok"),
        Err(_) => (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "database unavailable",
        ),
    }
}
