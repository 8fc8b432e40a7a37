//! Serving one RPC call: peel the wrappers (invokeWithLayer, initConnection, …) reading only their
//! own fields, look at the inner function's constructor and refuse it unread when it needs an
//! account the connection has not signed in to; then decode it into the JSON shape the
//! application speaks, within the message's decoding budget, route it (bootstrap answers,
//! sign-in, or the method table both fronts share, `crate::calls`: the decoded object becomes the
//! typed request, no bytes in between, and the typed answer is written straight as TL).

use std::borrow::Cow;

use application::devices::{DeviceInfo, DeviceText};
use application::tl::RpcError;
use mtproto::tl::{
    decode_fields_within, encode_result, upgrade_request, Combinator, DecodeBudget, Reader, Schema,
    TlError, Writer, GZIP_PACKED,
};
use serde_json::Value;

use super::connection::Conn;
use super::{bootstrap, sign_in, two_step};
use crate::calls::TlBytes;

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

    /// The answer to a call that did not decode.
    fn undecodable(e: &TlError) -> Self {
        match e {
            TlError::UnknownConstructor(_) => Self::new(400, "INPUT_METHOD_INVALID"),
            // Over the message's budget (docs/security.md, "mtproto-decoding").
            TlError::OverBudget(_) | TlError::TooDeep => Self::new(400, "INPUT_REQUEST_TOO_LONG"),
            _ => Self::new(400, "INPUT_FETCH_ERROR"),
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

/// Name prefixes of the calls served without an account (besides the bootstrap answers).
const BEFORE_SIGN_IN: &[&str] = &["help.", "auth.", "langpack."];

/// A call with its wrappers peeled: what they said, and the inner function with its parameters
/// not read yet (`body[pos..]`).
struct Peeled<'a> {
    layer: Option<i32>,
    /// initConnection's description of the client.
    init: Option<DeviceInfo>,
    without_updates: bool,
    function: &'static Combinator,
    body: Cow<'a, [u8]>,
    pos: usize,
}

/// Why a call was not decoded, with the constructor it failed on for the log.
struct Undecodable {
    constructor: Option<u32>,
    error: CallError,
}

pub(super) async fn call(conn: &mut Conn, body: &[u8]) -> Result<Vec<u8>, CallError> {
    // The message's budget (its containers and gzip were already charged): taken out of the
    // session for the decoding, and what is left put back for the next call of the message.
    let mut budget = conn
        .session
        .as_mut()
        .map(|s| *s.budget_mut())
        .unwrap_or_default();
    let decoded = decode(conn, body, &mut budget);
    if let Some(s) = conn.session.as_mut() {
        *s.budget_mut() = budget;
    }
    let (name, request) = decoded.map_err(|u| {
        let outer = Reader::new(body).u32().ok();
        tracing::debug!(
            constructor = u.constructor.or(outer).map(|id| format!("{id:#010x}")),
            outer = outer.map(|id| format!("{id:#010x}")),
            layer = ?conn.layer,
            error = %u.error.message,
            "MTProto call not decoded"
        );
        u.error
    })?;
    tracing::debug!(
        method = %name,
        user = ?conn.caller.map(|c| c.user_id.get()),
        key = ?conn.caller.map(|c| c.auth_key_id.0),
        "MTProto call"
    );
    if conn.device_unrecorded {
        conn.record_device().await;
    }
    // Every refused call is logged with its method, so an operator (and the Telegram Desktop
    // test) sees which calls of a client are not served as it expects.
    let answer = route(conn, &name, request).await.inspect_err(|e| {
        tracing::debug!(method = %name, code = e.code, error = %e.message, "MTProto call answered with an error");
    })?;
    match answer {
        Answer::Encoded(bytes) => Ok(bytes),
        Answer::Object(object) => {
            let mut w = Writer::new();
            encode_result(Schema::for_layer(conn.layer), &name, &object, &mut w).map_err(|e| {
                tracing::error!(method = %name, error = %e, "answer did not encode as TL");
                CallError::new(500, "INTERNAL")
            })?;
            Ok(w.buf)
        }
    }
}

/// A call's answer: the front's own (bootstrap, sign-in, 2FA) as a JSON object for the TL
/// encoder, or the method table's, already TL.
enum Answer {
    Object(Value),
    Encoded(Vec<u8>),
}

/// Peels the wrappers, applies what they say (layer, no updates), refuses a call that needs an
/// account on a connection without one before reading its parameters, and decodes the rest.
fn decode(
    conn: &mut Conn,
    body: &[u8],
    budget: &mut DecodeBudget,
) -> Result<(String, Value), Undecodable> {
    // Requests decode in any supported layer's ids; answers use the client's layer (see Schema).
    let schema = Schema::api();
    let peeled = peel(schema, body, budget).map_err(|e| Undecodable {
        constructor: unknown_constructor(conn, &e),
        error: CallError::undecodable(&e),
    })?;
    if let Some(layer) = peeled.layer {
        conn.layer = Some(layer);
        if let Some(s) = &conn.session {
            s.seen().set_layer(layer);
        }
    }
    if peeled.without_updates {
        conn.without_updates();
    }
    if let Some(mut info) = peeled.init {
        info.ip = DeviceText::new(&conn.peer.ip().to_string());
        conn.device_info = Some(info);
        conn.device_unrecorded = true;
    }
    let function = peeled.function;
    let refuse = |error| Undecodable {
        constructor: Some(function.id),
        error,
    };
    if !function.is_function {
        return Err(refuse(CallError::new(400, "INPUT_METHOD_INVALID")));
    }
    if conn.caller.is_none() && !served_before_sign_in(conn, &function.name) {
        return Err(refuse(CallError::new(401, "AUTH_KEY_UNREGISTERED")));
    }
    let mut r = Reader::new(&peeled.body[peeled.pos..]);
    let mut request =
        decode_fields_within(schema, function, &mut r, budget, false).map_err(|e| {
            unknown_constructor(conn, &e);
            refuse(CallError::undecodable(&e))
        })?;
    // An older layer's form (TDesktop's 152) in the shape the application reads.
    upgrade_request(&mut request);
    Ok((function.name.clone(), request))
}

/// Counts an unknown constructor per id in /metrics (an operator sees which calls a new client
/// version needs) and returns it for the log line.
fn unknown_constructor(conn: &Conn, e: &TlError) -> Option<u32> {
    match e {
        TlError::UnknownConstructor(id) => {
            conn.front.metrics.unknown_constructors.count(*id);
            Some(*id)
        }
        _ => None,
    }
}

/// Whether `name` is served to a connection that has not signed in (see [`route`]).
fn served_before_sign_in(conn: &Conn, name: &str) -> bool {
    BEFORE_SIGN_IN.iter().any(|p| name.starts_with(p))
        || two_step::BEFORE_SIGN_IN.contains(&name)
        || bootstrap::answer(conn, name, &Value::Null).is_some()
}

/// initConnection's fields as the device's description (each text cut to its cap).
fn device_info(fields: &Value) -> DeviceInfo {
    let text = |name: &str| DeviceText::new(fields[name].as_str().unwrap_or(""));
    DeviceInfo {
        device_model: text("device_model"),
        platform: text("lang_pack"),
        system_version: text("system_version"),
        app_version: text("app_version"),
        lang_code: text("lang_code"),
        api_id: fields["api_id"]
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .unwrap_or(0),
        ip: DeviceText::default(),
    }
}

/// Reads the wrappers' constructor ids and own fields (and inflates a `gzip_packed` query),
/// stopping at the first constructor that is not a wrapper.
fn peel<'a>(
    schema: &'static Schema,
    body: &'a [u8],
    budget: &mut DecodeBudget,
) -> Result<Peeled<'a>, TlError> {
    let (mut layer, mut without_updates, mut init) = (None, false, None);
    let (mut body, mut pos) = (Cow::Borrowed(body), 0);
    for depth in 0.. {
        budget.depth(depth)?;
        let mut r = Reader::new(&body[pos..]);
        let id = r.u32()?;
        if id == GZIP_PACKED {
            let inner = budget.gunzip(r.bytes()?)?;
            (body, pos) = (Cow::Owned(inner), 0);
            continue;
        }
        let c = schema.by_id(id).ok_or(TlError::UnknownConstructor(id))?;
        if !WRAPPERS.contains(&c.name.as_str()) {
            return Ok(Peeled {
                layer,
                init,
                without_updates,
                function: c,
                body,
                pos: pos + 4,
            });
        }
        let fields = decode_fields_within(schema, c, &mut r, budget, true)?;
        match c.name.as_str() {
            "invokeWithLayer" => layer = fields["layer"].as_i64().map(|l| l as i32),
            "invokeWithoutUpdates" => without_updates = true,
            "initConnection" => init = Some(device_info(&fields)),
            _ => {}
        }
        pos += r.pos();
    }
    Err(TlError::TooDeep)
}

async fn route(conn: &mut Conn, name: &str, request: Value) -> Result<Answer, CallError> {
    if let Some(answer) = bootstrap::answer(conn, name, &request) {
        return Ok(Answer::Object(answer));
    }
    if let Some(answer) = two_step::call(conn, name, &request).await {
        return answer.map(Answer::Object);
    }
    if name.starts_with("auth.") {
        return sign_in::call(conn, name, request).await.map(Answer::Object);
    }
    let caller = conn
        .caller
        .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))?;
    if let Some((code, message)) = bootstrap::refusal(name) {
        return Err(CallError::new(code, message));
    }
    let app = conn.front.app.clone();
    // The table both fronts share; it holds the same per-account permit as the JSON front's
    // calls: an account's many connections (128 per address) cannot hold every database
    // connection while other accounts wait. An unknown name is `400 METHOD_INVALID`.
    let render = TlBytes {
        schema: Schema::for_layer(conn.layer),
        function: name,
    };
    crate::calls::call(&app, &caller, name, request, render)
        .await
        .map(Answer::Encoded)
        .map_err(|e| CallError::from(e.0))
}

#[cfg(test)]
mod tests {
    use mtproto::tl::{encode_object, VECTOR};
    use serde_json::json;

    use super::*;

    fn wrapped_around(inner: &[u8]) -> Vec<u8> {
        let probe = json!({"_": "invokeWithLayer", "layer": 198, "query": {"_": "initConnection",
            "api_id": 1, "device_model": "d", "system_version": "1", "app_version": "1",
            "system_lang_code": "en", "lang_pack": "", "lang_code": "en",
            "params": {"_": "jsonObject", "value": []},
            "query": {"_": "invokeWithoutUpdates", "query": {"_": "help.getNearestDc"}}}});
        let mut w = Writer::new();
        encode_object(Schema::api(), &probe, &mut w).unwrap();
        // help.getNearestDc's id is last: the inner call goes there instead.
        w.buf.truncate(w.buf.len() - 4);
        w.buf.extend_from_slice(inner);
        w.buf
    }

    #[test]
    fn wrappers_are_peeled_without_reading_the_inner_call() {
        let schema = Schema::api();
        // messages.deleteMessages announcing 2^30 ids that are not there.
        let mut inner = Writer::new();
        inner
            .u32(schema.by_name("messages.deleteMessages").unwrap().id)
            .u32(0)
            .u32(VECTOR)
            .i32(1 << 30);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &inner.buf).unwrap();
        let mut packed = Writer::new();
        packed.u32(GZIP_PACKED).bytes(&gz.finish().unwrap());
        let body = wrapped_around(&packed.buf);
        let mut budget = DecodeBudget::default();
        let p = peel(schema, &body, &mut budget).unwrap();
        assert_eq!(p.function.name, "messages.deleteMessages");
        assert_eq!((p.layer, p.without_updates), (Some(198), true));
        assert_eq!(&p.body[p.pos..], &inner.buf[4..]);
        // Only the wrappers' fields were charged (a dozen values), and the inflated bytes.
        assert!(
            budget.values_left() > mtproto::tl::MAX_VALUES - 40,
            "{budget:?}"
        );
        assert_eq!(
            budget.inflated_left(),
            mtproto::tl::MAX_INFLATED_BYTES - inner.buf.len()
        );
    }

    #[test]
    fn unknown_and_deep_wrappers_are_errors() {
        let schema = Schema::api();
        let mut budget = DecodeBudget::default();
        assert_eq!(
            peel(
                schema,
                &wrapped_around(&0xdead_beefu32.to_le_bytes()),
                &mut budget
            )
            .err(),
            Some(TlError::UnknownConstructor(0xdead_beef))
        );
        let mut deep = Writer::new();
        for _ in 0..=mtproto::tl::MAX_DEPTH {
            deep.u32(schema.by_name("invokeWithoutUpdates").unwrap().id);
        }
        deep.u32(schema.by_name("help.getNearestDc").unwrap().id);
        let mut budget = DecodeBudget::default();
        assert_eq!(
            peel(schema, &deep.buf, &mut budget).err(),
            Some(TlError::TooDeep)
        );
        assert!(peel(schema, &deep.buf[4..], &mut DecodeBudget::default()).is_ok());
    }
}
