//! Serving one RPC call: decode the TL function into the JSON shape the application speaks, peel
//! the wrappers (invokeWithLayer, initConnection, …), route it (bootstrap answers, sign-in, or the
//! JSON API's own dispatch table: one implementation, two fronts) and encode the answer as TL.

use application::tl::RpcError;
use mtproto::tl::{decode_object, encode_result, Reader, Schema, TlError, Writer};
use serde_json::{json, Value};

use super::connection::Conn;
use super::{bootstrap, sign_in};
use crate::http::rpc::{dispatch, METHODS};

/// An `rpc_error` to answer.
#[derive(Debug)]
pub(super) struct CallError {
    pub code: i32,
    pub message: String,
}

impl CallError {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl From<RpcError> for CallError {
    fn from(e: RpcError) -> Self {
        if let Some(detail) = &e.detail {
            tracing::debug!(error = %e.error_message, detail, "MTProto call refused");
        }
        Self::new(i32::from(e.error_code), e.error_message)
    }
}

/// Wrappers whose `query` is the real call.
const WRAPPERS: &[&str] = &[
    "invokeWithLayer",
    "initConnection",
    "invokeWithoutUpdates",
    "invokeAfterMsg",
    "invokeAfterMsgs",
    "invokeWithMessagesRange",
    "invokeWithTakeout",
    "invokeWithBusinessConnection",
    "invokeWithGooglePlayIntegrity",
    "invokeWithApnsSecret",
];

pub(super) async fn call(conn: &mut Conn, body: &[u8]) -> Result<Vec<u8>, CallError> {
    // Requests decode in either layer's ids; answers use the client's layer (see Schema).
    let schema = Schema::api();
    let mut request = decode_object(schema, &mut Reader::new(body)).map_err(|e| match e {
        TlError::UnknownConstructor(id) => {
            tracing::debug!(constructor = %format!("{id:#010x}"), layer = ?conn.layer, "MTProto call with an unknown constructor");
            conn.front.metrics.unknown_constructors.count(id);
            CallError::new(400, "INPUT_METHOD_INVALID")
        }
        _ => CallError::new(400, "INPUT_FETCH_ERROR"),
    })?;
    loop {
        let name = request["_"].as_str().unwrap_or_default();
        if !WRAPPERS.contains(&name) {
            break;
        }
        if name == "invokeWithLayer" {
            conn.layer = request["layer"].as_i64().map(|l| l as i32);
        }
        if name == "invokeWithoutUpdates" {
            conn.without_updates();
        }
        request = request["query"].take();
    }
    let name = request["_"].as_str().unwrap_or_default().to_string();
    if !schema.by_name(&name).is_some_and(|c| c.is_function) {
        return Err(CallError::new(400, "INPUT_METHOD_INVALID"));
    }
    tracing::debug!(method = %name, user = ?conn.caller.map(|c| c.user_id), "MTProto call");
    let answer = route(conn, &name, request).await?;
    let mut w = Writer::new();
    encode_result(Schema::for_layer(conn.layer), &name, &answer, &mut w).map_err(|e| {
        tracing::error!(method = %name, error = %e, "answer did not encode as TL");
        CallError::new(500, "INTERNAL")
    })?;
    Ok(w.buf)
}

async fn route(conn: &mut Conn, name: &str, request: Value) -> Result<Value, CallError> {
    if let Some(answer) = bootstrap::answer(conn, name, &request) {
        return Ok(answer);
    }
    if name.starts_with("auth.") {
        return sign_in::call(conn, name, &request).await;
    }
    let caller = conn
        .caller
        .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))?;
    let app = conn.front.app.clone();
    match name {
        "users.getFullUser" => {
            let users = dispatch(
                &app,
                &caller,
                "users.getUsers",
                &params(json!({"id": [request["id"]]})),
            )
            .await
            .map_err(|e| CallError::from(e.0))?;
            let user = users
                .get(0)
                .filter(|u| u["_"] == "user")
                .cloned()
                .ok_or_else(|| CallError::new(400, "USER_ID_INVALID"))?;
            // The chat's peer and notification settings as the JSON API keeps them (the user was
            // just resolved with the caller's access hash, so naming it again cannot fail on that).
            let peer = if user["self"] == true {
                json!({"_": "inputPeerSelf"})
            } else {
                json!({"_": "inputPeerUser", "user_id": user["id"], "access_hash": user["access_hash"]})
            };
            let settings = dispatch(
                &app,
                &caller,
                "messages.getPeerSettings",
                &params(json!({"peer": peer})),
            )
            .await
            .map_err(|e| CallError::from(e.0))?;
            let notify_settings = dispatch(
                &app,
                &caller,
                "account.getNotifySettings",
                &params(json!({"peer": {"_": "inputNotifyPeer", "peer": peer}})),
            )
            .await
            .map_err(|e| CallError::from(e.0))?;
            Ok(json!({
                "_": "users.userFull",
                "full_user": {
                    "_": "userFull",
                    "id": user["id"],
                    "settings": settings["settings"],
                    "notify_settings": notify_settings,
                    "common_chats_count": 0,
                },
                "chats": [],
                "users": [user],
            }))
        }
        _ if METHODS.contains(&name) => dispatch(&app, &caller, name, &params(request))
            .await
            .map_err(|e| CallError::from(e.0)),
        _ => {
            tracing::debug!(method = name, "MTProto method not served");
            Err(CallError::new(400, "METHOD_INVALID"))
        }
    }
}

fn params(v: Value) -> Vec<u8> {
    serde_json::to_vec(&v).unwrap_or_default()
}
