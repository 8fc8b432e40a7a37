//! `GET /v1/updates`: the device's WebSocket of live pushes (docs/json-api.md, "Live updates").

use std::collections::HashMap;

use application::tl::RpcError;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::auth::bearer_token;
use super::reply::RpcFailure;
use super::HttpState;
use crate::gateway::session;

/// The token comes from `Authorization: Bearer` or, for clients that cannot set headers on a
/// WebSocket (browsers), from `?token=`.
pub async fn updates(
    State(state): State<HttpState>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    ws: WebSocketUpgrade,
) -> Response {
    let token = bearer_token(&headers).or_else(|| {
        query
            .get("token")
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    });
    let Some(token) = token else {
        return RpcFailure(RpcError::unauthorized()).into_response();
    };
    let caller = match state.app.authenticate(&token).await {
        Ok(Some(caller)) => caller,
        Ok(None) => return RpcFailure(RpcError::unauthorized()).into_response(),
        Err(e) => return RpcFailure::from(e).into_response(),
    };
    let gateway = state.gateway.clone();
    ws.on_upgrade(move |socket| session::run(gateway, caller, socket))
}
