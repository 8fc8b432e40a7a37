//! `GET /v1/updates`: the device's WebSocket of live pushes (docs/json-api.md, "Live updates"). At
//! most `PTSLOG_ACCOUNT_MAX_PUSH_SOCKETS` per account: one more is refused with HTTP 429.

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

/// Per-socket buffers. tungstenite's defaults (128 KiB to read, 128 KiB to batch writes) would cost
/// ~140 KB per connected device; a push socket reads almost nothing (pings, close) and writes one
/// frame per update, which should leave at once rather than wait in a batch.
const READ_BUFFER_BYTES: usize = 4 * 1024;
const WRITE_BUFFER_BYTES: usize = 0;
/// A device has nothing big to say on this socket: larger frames close it.
const MAX_INCOMING_MESSAGE_BYTES: usize = 64 * 1024;

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
    // Held by the session (or dropped with the closure if the upgrade never happens).
    let Some(slot) = gateway.push_sockets.try_open(caller.user_id) else {
        tracing::debug!(user_id = %caller.user_id, "push socket refused: the account is at its cap");
        return RpcFailure(
            RpcError::new(429, "PUSH_SOCKETS_TOO_MUCH")
                .with_detail("this account has the most push sockets open it may; close one first"),
        )
        .into_response();
    };
    ws.read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_message_size(MAX_INCOMING_MESSAGE_BYTES)
        .max_frame_size(MAX_INCOMING_MESSAGE_BYTES)
        .on_upgrade(move |socket| async move {
            session::run(gateway, caller, socket).await;
            drop(slot);
        })
}
