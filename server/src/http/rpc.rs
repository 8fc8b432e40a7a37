//! `POST /v1/rpc/<method>`: the body parsed straight into the method's typed request and the
//! typed answer serialized straight into the response, through the table both fronts share
//! ([`crate::calls`]).

use application::tl::RpcError;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};

use super::auth::caller;
use super::reply::RpcFailure;
use super::HttpState;
use crate::calls::{self, JsonBody, JsonBytes, Params};

pub async fn rpc(
    State(state): State<HttpState>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, RpcFailure> {
    // Before the token: an unknown method is that, whoever asks.
    if !calls::serves(&method) {
        return Err(RpcFailure(RpcError::method_invalid(&method)));
    }
    let caller = caller(&state.app, &headers).await?;
    let answer = calls::call(&state.app, &caller, &method, JsonBody(&body), JsonBytes).await?;
    Ok(([(header::CONTENT_TYPE, "application/json")], answer).into_response())
}

/// A JSON body parsed as the RPC calls' are (the sign-in endpoints' too).
pub fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, RpcFailure> {
    Ok(JsonBody(body).parse()?)
}
