//! The admin endpoints under `/admin/`, for operators and analysts: every request needs
//! `Authorization: Bearer <PTSLOG_ADMIN_TOKEN>`. User tokens never work here (they are not compared
//! with the database at all). Without an admin token configured the routes are not mounted (404).
//! They are served on the public listener, or only on `PTSLOG_ADMIN_ADDR` when that is set.

use std::sync::Arc;

use application::tl::RpcError;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use sqlx::PgPool;

mod events;

use super::auth::bearer_token;
use crate::admin_token::AdminToken;

/// What the admin endpoints work with.
#[derive(Clone)]
pub struct AdminState {
    pub pool: PgPool,
    pub token: Arc<AdminToken>,
}

/// The admin routes. Add new admin endpoints here: `router` puts every one behind the token.
fn routes() -> Router<AdminState> {
    Router::new()
        .route("/admin/ping", get(ping))
        .route("/admin/projections", get(projections))
        .route("/admin/events", get(events::events))
}

/// The admin routes, each behind the operator token.
pub fn router(state: AdminState) -> Router {
    routes()
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            require_admin_token,
        ))
        .with_state(state)
}

/// 200 `ok`: lets an operator check the token and the listener.
async fn ping() -> &'static str {
    "ok"
}

/// `GET /admin/projections`: the read models' status (docs/operations.md).
async fn projections(State(state): State<AdminState>) -> impl IntoResponse {
    super::admin_projections::answer(&state.pool).await
}

/// 401 `ADMIN_TOKEN_INVALID` unless the request carries the operator token. Missing and wrong
/// tokens answer alike, so a caller learns nothing about which it was.
async fn require_admin_token(
    State(state): State<AdminState>,
    request: Request,
    next: Next,
) -> Response {
    let ok = bearer_token(request.headers()).is_some_and(|t| state.token.matches(&t));
    if ok {
        next.run(request).await
    } else {
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            Json(RpcError::new(401, "ADMIN_TOKEN_INVALID")),
        )
            .into_response()
    }
}
