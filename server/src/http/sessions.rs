//! The JSON API's `POST /v1/auth/logout` (`auth.logOut`) and `POST /v1/auth/resetAuthorizations`,
//! which are not in the RPC table (`crate::calls`, where `account.getAuthorizations` and
//! `account.resetAuthorization` are): they end devices, which its every-method tests must not do
//! by accident (docs/security.md, "Sessions and devices").

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};

use super::auth::caller;
use super::reply::RpcFailure;
use super::HttpState;

/// `POST /v1/auth/logout`: ends the device the bearer token stands for.
pub async fn logout(
    State(state): State<HttpState>,
    headers: HeaderMap,
) -> Result<Json<Value>, RpcFailure> {
    let c = caller(&state.app, &headers).await?;
    state.app.log_out(&c).await?;
    Ok(Json(json!({"_": "auth.loggedOut"})))
}

/// `POST /v1/auth/resetAuthorizations`: ends every other device of the token's account.
pub async fn reset_authorizations(
    State(state): State<HttpState>,
    headers: HeaderMap,
) -> Result<Json<Value>, RpcFailure> {
    let c = caller(&state.app, &headers).await?;
    state.app.reset_authorizations(&c).await?;
    Ok(Json(json!({"_": "boolTrue"})))
}
