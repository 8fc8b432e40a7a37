//! Bearer-token authentication of RPC calls.

use application::tl::RpcError;
use application::{App, Caller};
use axum::http::HeaderMap;

use super::reply::RpcFailure;

/// The token of `Authorization: Bearer <token>`, if there is one.
pub fn bearer_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

/// The caller named by `Authorization: Bearer <token>`, or 401 `AUTH_KEY_UNREGISTERED`.
pub async fn caller(app: &App, headers: &HeaderMap) -> Result<Caller, RpcFailure> {
    let token = bearer_token(headers).ok_or(RpcFailure(RpcError::unauthorized()))?;
    app.authenticate(&token)
        .await?
        .ok_or(RpcFailure(RpcError::unauthorized()))
}
