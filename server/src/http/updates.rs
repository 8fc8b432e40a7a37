//! `GET /v1/updates`: the device's WebSocket of live pushes (docs/json-api.md, "Live updates"). At
//! most `PTSLOG_ACCOUNT_MAX_PUSH_SOCKETS` per account: one more is refused with HTTP 429 (or, when
//! the token came in the first frame, closed with 4429).

use std::collections::HashMap;
use std::time::Duration;

use application::tl::RpcError;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

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

/// How long a socket opened without a token may take to send its `{"token":"…"}` frame.
/// Generous for a client on a slow link (one round trip after the upgrade), short enough that
/// unauthenticated sockets cannot pile up.
pub const FIRST_FRAME_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest first frame read as a token frame: tokens are 64 hex digits, so 1 KiB leaves room
/// for whitespace and nothing else.
pub const MAX_TOKEN_FRAME_BYTES: usize = 1024;
/// The close code when the first frame's token is refused (HTTP 401 in the 4000s range that
/// RFC 6455 leaves to applications).
pub const CLOSE_UNAUTHORIZED: u16 = 4401;
/// The close code when an account is at its push-socket cap (HTTP 429).
pub const CLOSE_TOO_MANY_SOCKETS: u16 = 4429;
/// RFC 6455's "internal error": the database could not check the token; try again.
const CLOSE_INTERNAL_ERROR: u16 = 1011;

/// The first frame of a socket opened without a token.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenFrame {
    token: String,
}

/// The token comes from `Authorization: Bearer`, from `?token=` (browsers cannot set headers on
/// a WebSocket), or, when neither is given, from the socket's first frame `{"token":"…"}`
/// (so it appears in no URL and no access log).
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
    let ws = ws
        .read_buffer_size(READ_BUFFER_BYTES)
        .write_buffer_size(WRITE_BUFFER_BYTES)
        .max_message_size(MAX_INCOMING_MESSAGE_BYTES)
        .max_frame_size(MAX_INCOMING_MESSAGE_BYTES);
    let Some(token) = token else {
        return ws.on_upgrade(move |socket| authenticate_first_frame(state, socket));
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
        return RpcFailure(too_many_sockets()).into_response();
    };
    ws.on_upgrade(move |socket| async move {
        session::run(gateway, caller, socket).await;
        drop(slot);
    })
}

fn too_many_sockets() -> RpcError {
    RpcError::new(429, "PUSH_SOCKETS_TOO_MUCH")
        .with_detail("this account has the most push sockets open it may; close one first")
}

/// Reads `{"token":"…"}` within [`FIRST_FRAME_TIMEOUT`], then serves the device as if the token
/// had come with the upgrade. A refusal is the usual `rpc_error` as a text frame, then a close.
async fn authenticate_first_frame(state: HttpState, mut socket: WebSocket) {
    let token = match tokio::time::timeout(FIRST_FRAME_TIMEOUT, socket.recv()).await {
        Ok(Some(Ok(Message::Text(text)))) if text.len() <= MAX_TOKEN_FRAME_BYTES => {
            serde_json::from_str::<TokenFrame>(text.as_str())
                .ok()
                .map(|f| f.token.trim().to_string())
                .filter(|t| !t.is_empty())
        }
        Ok(Some(Ok(Message::Close(_)) | Err(_)) | None) => return,
        Err(_) => {
            close(
                socket,
                RpcError::unauthorized(),
                CLOSE_UNAUTHORIZED,
                "no token frame in time",
            )
            .await;
            return;
        }
        Ok(Some(Ok(_))) => None,
    };
    let caller = match token {
        None => Ok(None),
        Some(token) => state.app.authenticate(&token).await,
    };
    let caller = match caller {
        Ok(Some(caller)) => caller,
        Ok(None) => {
            close(
                socket,
                RpcError::unauthorized(),
                CLOSE_UNAUTHORIZED,
                "token refused",
            )
            .await;
            return;
        }
        Err(e) => {
            tracing::warn!(error = %e, "authenticating a push socket");
            close(
                socket,
                RpcError::internal(),
                CLOSE_INTERNAL_ERROR,
                "try again",
            )
            .await;
            return;
        }
    };
    let gateway = state.gateway.clone();
    let Some(slot) = gateway.push_sockets.try_open(caller.user_id) else {
        close(
            socket,
            too_many_sockets(),
            CLOSE_TOO_MANY_SOCKETS,
            "too many push sockets",
        )
        .await;
        return;
    };
    session::run(gateway, caller, socket).await;
    drop(slot);
}

/// Sends `error` as a text frame and closes with `code`, within the write timeout of a push.
async fn close(mut socket: WebSocket, error: RpcError, code: u16, reason: &'static str) {
    let body = serde_json::to_string(&error).unwrap_or_default();
    let _ = tokio::time::timeout(FIRST_FRAME_TIMEOUT, async {
        socket.send(Message::Text(body.into())).await?;
        socket
            .send(Message::Close(Some(CloseFrame {
                code,
                reason: reason.into(),
            })))
            .await
    })
    .await;
}
