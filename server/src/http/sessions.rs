//! The account's devices over JSON (and, through the dispatch table, MTProto):
//! `account.getAuthorizations`, `account.resetAuthorization`; and the JSON API's
//! `POST /v1/auth/logout` (`auth.logOut`) and `POST /v1/auth/resetAuthorizations`, which are not
//! in the RPC table: they end devices, which its every-method tests must not do by accident
//! (docs/security.md, "Sessions and devices").

use application::devices::{Authorization, TOKEN_LIFETIME_DAYS};
use application::{App, Caller};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::caller;
use super::reply::RpcFailure;
use super::HttpState;

/// `account.resetAuthorization`'s parameters.
#[derive(Debug, Deserialize)]
pub struct ResetAuthorization {
    pub hash: i64,
}

/// One device as the TL `authorization`.
fn authorization(a: &Authorization, current: bool) -> Value {
    let d = &a.device;
    json!({
        "_": "authorization",
        "current": current,
        "hash": a.id.0,
        "device_model": d.device_model.as_str(),
        "platform": d.platform.as_str(),
        "system_version": d.system_version.as_str(),
        "api_id": d.api_id,
        "app_name": "",
        "app_version": d.app_version.as_str(),
        "date_created": a.created_at,
        "date_active": a.active_at,
        "ip": d.ip.as_str(),
        "country": "",
        "region": "",
    })
}

/// `account.getAuthorizations`: the account's devices, the caller's own first and marked
/// `current`.
pub async fn get_authorizations(app: &App, c: &Caller) -> Result<Value, RpcFailure> {
    let all = app.authorizations(c).await?;
    Ok(json!({
        "_": "account.authorizations",
        "authorization_ttl_days": TOKEN_LIFETIME_DAYS,
        "authorizations": all
            .iter()
            .map(|a| authorization(a, a.id == c.auth_key_id))
            .collect::<Vec<_>>(),
    }))
}

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
