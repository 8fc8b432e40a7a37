//! Binary TL ⇄ JSON objects, driven by the schema: `{"_": "<constructor>", "<param>": …}`, the
//! shape of the application's TL objects. `long`s are JSON numbers, `bytes`/`int128`/`int256` hex
//! strings, `Bool` and `flags.N?true` JSON booleans; absent optional parameters are left out.
//!
//! Encoding fills required parameters the object leaves out with their type's zero (0, "", empty
//! vector, false), so answers only name what they mean; a missing required object is an error.

use serde_json::{Map, Value};

use super::budget::{DecodeBudget, MAX_DEPTH};
use super::schema::{Combinator, ParamType, Schema};
use super::{Reader, TlError, Writer, BOOL_FALSE, BOOL_TRUE, GZIP_PACKED, VECTOR};

/// Encoding a JSON object as TL failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlJsonError {
    #[error("unknown constructor {0:?}")]
    UnknownConstructor(String),
    #[error("{0}: expected {1}")]
    WrongValue(String, &'static str),
    #[error("{0}: missing required object")]
    Missing(String),
    #[error("nesting too deep")]
    TooDeep,
    /// A typed answer's `Serialize` failed (see `typed`).
    #[error("answer did not serialize: {0}")]
    Unserializable(String),
    /// The typed writer's own: an object's fields came out of the schema's order, so it writes
    /// the answer again through scratch buffers (never returned by `encode_result_typed`).
    #[error("fields out of the schema's order")]
    OutOfOrder,
}

/// Reads one boxed object (type or function, `gzip_packed` unwrapped) as JSON, within one
/// message's default [`DecodeBudget`] (tools and tests reading a single object).
pub fn decode_object(schema: &Schema, r: &mut Reader<'_>) -> Result<Value, TlError> {
    decode_object_within(schema, r, &mut DecodeBudget::default())
}

/// Reads one boxed object as JSON, charging `budget` as it goes.
pub fn decode_object_within(
    schema: &Schema,
    r: &mut Reader<'_>,
    budget: &mut DecodeBudget,
) -> Result<Value, TlError> {
    decode_boxed(schema, r, budget, 0)
}

/// Reads the parameters of `c` (its constructor id already read) as a JSON object named by it.
/// With `until_query`, stops before the first `!X` parameter (a wrapper's `query`), leaving the
/// reader there: the caller looks at the wrapped call before anything of it is decoded.
pub fn decode_fields_within(
    schema: &Schema,
    c: &Combinator,
    r: &mut Reader<'_>,
    budget: &mut DecodeBudget,
    until_query: bool,
) -> Result<Value, TlError> {
    decode_fields(schema, c, r, budget, 0, until_query)
}

fn decode_boxed(
    schema: &Schema,
    r: &mut Reader<'_>,
    budget: &mut DecodeBudget,
    depth: usize,
) -> Result<Value, TlError> {
    budget.depth(depth)?;
    let id = r.u32()?;
    match id {
        BOOL_TRUE | BOOL_FALSE => {
            budget.values(1)?;
            return Ok(Value::Bool(id == BOOL_TRUE));
        }
        // A vector where an object stands (a function's `Vector<User>` result): of objects.
        VECTOR => {
            budget.values(1)?;
            let n = budget.items(r.count(4)?)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(decode_boxed(schema, r, budget, depth + 1)?);
            }
            return Ok(Value::Array(items));
        }
        GZIP_PACKED => {
            let inner = budget.gunzip(r.bytes()?)?;
            return decode_boxed(schema, &mut Reader::new(&inner), budget, depth + 1);
        }
        _ => {}
    }
    let c = schema.by_id(id).ok_or(TlError::UnknownConstructor(id))?;
    decode_fields(schema, c, r, budget, depth, false)
}

fn decode_fields(
    schema: &Schema,
    c: &Combinator,
    r: &mut Reader<'_>,
    budget: &mut DecodeBudget,
    depth: usize,
    until_query: bool,
) -> Result<Value, TlError> {
    // The object and its "_" name.
    budget.values(2)?;
    let mut obj = Map::new();
    obj.insert("_".into(), Value::String(c.name.clone()));
    let mut flags: Vec<(&str, u32)> = Vec::new();
    for p in &c.params {
        let ty = match &p.ty {
            ParamType::Flags => {
                flags.push((&p.name, r.u32()?));
                continue;
            }
            ParamType::Conditional { field, bit, inner } => {
                let set = flags
                    .iter()
                    .find(|(n, _)| *n == field)
                    .map(|(_, v)| v & (1 << bit) != 0)
                    .unwrap_or(false);
                if matches!(**inner, ParamType::True) {
                    budget.values(1)?;
                    obj.insert(p.name.clone(), Value::Bool(set));
                    continue;
                }
                if !set {
                    continue;
                }
                inner.as_ref()
            }
            ParamType::Generic if until_query => break,
            ty => ty,
        };
        let v = decode_value(schema, ty, r, budget, depth + 1)?;
        obj.insert(p.name.clone(), v);
    }
    Ok(Value::Object(obj))
}

fn decode_value(
    schema: &Schema,
    ty: &ParamType,
    r: &mut Reader<'_>,
    budget: &mut DecodeBudget,
    depth: usize,
) -> Result<Value, TlError> {
    budget.depth(depth)?;
    let scalar = |budget: &mut DecodeBudget, v: Value| budget.values(1).map(|()| v);
    Ok(match ty {
        ParamType::Int => scalar(budget, Value::from(r.i32()?))?,
        ParamType::Long => scalar(budget, Value::from(r.i64()?))?,
        ParamType::Double => scalar(budget, Value::from(r.f64()?))?,
        ParamType::String => scalar(budget, Value::String(r.string()?))?,
        ParamType::Bytes => scalar(budget, Value::String(hex_text(r.bytes()?)))?,
        ParamType::Int128 => scalar(budget, Value::String(hex_text(r.take(16)?)))?,
        ParamType::Int256 => scalar(budget, Value::String(hex_text(r.take(32)?)))?,
        ParamType::Bool => scalar(budget, Value::Bool(r.bool()?))?,
        ParamType::True => scalar(budget, Value::Bool(true))?,
        ParamType::Vector(inner) => {
            let id = r.u32()?;
            if id != VECTOR {
                return Err(TlError::Unexpected {
                    got: id,
                    expected: "Vector",
                });
            }
            decode_items(schema, inner, r, budget, depth)?
        }
        ParamType::BareVector(inner) => decode_items(schema, inner, r, budget, depth)?,
        ParamType::Generic | ParamType::Boxed(_) => decode_boxed(schema, r, budget, depth)?,
        ParamType::Bare(name) => {
            let c = schema
                .by_name(name)
                .ok_or(TlError::Invalid("unknown bare type"))?;
            decode_fields(schema, c, r, budget, depth, false)?
        }
        ParamType::Flags | ParamType::Conditional { .. } => {
            return Err(TlError::Invalid("flags inside a value"))
        }
    })
}

fn decode_items(
    schema: &Schema,
    inner: &ParamType,
    r: &mut Reader<'_>,
    budget: &mut DecodeBudget,
    depth: usize,
) -> Result<Value, TlError> {
    budget.values(1)?;
    // The capacity is what the budget allows, never what the wire announces.
    let n = budget.items(r.count(4)?)?;
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        items.push(decode_value(schema, inner, r, budget, depth + 1)?);
    }
    Ok(Value::Array(items))
}

/// Inflates one `gzip_packed` payload within a message's default [`DecodeBudget`] (tools and
/// tests reading the server's answers).
pub fn gunzip(data: &[u8]) -> Result<Vec<u8>, TlError> {
    DecodeBudget::default().gunzip(data)
}

/// Writes a function's answer: `value` as the TL type the function `function` returns (a boxed
/// object, or a vector of objects or numbers).
pub fn encode_result(
    schema: &Schema,
    function: &str,
    value: &Value,
    w: &mut Writer,
) -> Result<(), TlJsonError> {
    let ty = result_type(schema, function);
    encode_value(
        schema,
        &ty,
        unwrapped_for(schema, &ty, value),
        w,
        At::top(function),
        0,
    )
}

/// The type `function` returns, as its answer is written.
pub(super) fn result_type(schema: &Schema, function: &str) -> ParamType {
    let ty = schema
        .by_name(function)
        .and_then(|c| super::schema::parse_type(&c.result))
        .unwrap_or(ParamType::Generic);
    match ty {
        // `X` in `invokeWithLayer … = X`, or a plain type: whatever the object says it is.
        ParamType::Bare(_) => ParamType::Generic,
        ty => ty,
    }
}

/// The answer as the client's layer's function returns it. Newer layers wrap some results in an
/// object (`messages.getDialogFilters` returned `Vector<DialogFilter>` before it returned
/// `messages.dialogFilters`, `help.getAppConfig` a bare `JSONValue` before `help.appConfig`):
/// an answer object of another type than the function's is replaced by its one parameter of the
/// function's type. Anything else is left as it is.
pub(super) fn unwrapped_for<'v>(schema: &Schema, ty: &ParamType, value: &'v Value) -> &'v Value {
    let Some(c) = value
        .get("_")
        .and_then(Value::as_str)
        .and_then(|n| schema.by_name(n))
    else {
        return value;
    };
    let other_type = match ty {
        ParamType::Vector(_) => true,
        ParamType::Boxed(t) => c.result != *t,
        _ => false,
    };
    if !other_type {
        return value;
    }
    let unconditional = |p: &ParamType| match p {
        ParamType::Conditional { inner, .. } => (**inner).clone(),
        p => p.clone(),
    };
    let mut of_type = c.params.iter().filter(|p| unconditional(&p.ty) == *ty);
    match (of_type.next(), of_type.next()) {
        (Some(p), None) => value.get(&p.name).unwrap_or(value),
        _ => value,
    }
}

/// Writes a JSON object (`"_"` names the constructor) as a boxed TL object.
pub fn encode_object(schema: &Schema, value: &Value, w: &mut Writer) -> Result<(), TlJsonError> {
    encode_boxed(schema, value, w, At::top("result"), 0)
}

/// Where a value being encoded sits (`object.field`), for an error message: spelled out only
/// when an error needs it, never per field encoded.
#[derive(Debug, Clone, Copy)]
struct At<'a> {
    object: &'a str,
    field: Option<&'a str>,
}

impl<'a> At<'a> {
    fn top(name: &'a str) -> Self {
        Self {
            object: name,
            field: None,
        }
    }

    fn text(self) -> String {
        match self.field {
            Some(f) => format!("{}.{f}", self.object),
            None => self.object.to_string(),
        }
    }
}

fn encode_boxed(
    schema: &Schema,
    value: &Value,
    w: &mut Writer,
    path: At<'_>,
    depth: usize,
) -> Result<(), TlJsonError> {
    if depth > MAX_DEPTH {
        return Err(TlJsonError::TooDeep);
    }
    let name = value
        .get("_")
        .and_then(Value::as_str)
        .ok_or_else(|| TlJsonError::WrongValue(path.text(), "an object with \"_\""))?;
    match name {
        "boolTrue" => {
            w.u32(BOOL_TRUE);
            return Ok(());
        }
        "boolFalse" => {
            w.u32(BOOL_FALSE);
            return Ok(());
        }
        _ => {}
    }
    let c = schema
        .by_name(name)
        .ok_or_else(|| TlJsonError::UnknownConstructor(name.to_string()))?;
    w.u32(c.id);
    encode_fields(schema, c, value, w, depth)
}

fn present(v: Option<&Value>) -> bool {
    !matches!(v, None | Some(Value::Null) | Some(Value::Bool(false)))
}

fn encode_fields(
    schema: &Schema,
    c: &Combinator,
    value: &Value,
    w: &mut Writer,
    depth: usize,
) -> Result<(), TlJsonError> {
    for (i, p) in c.params.iter().enumerate() {
        let field = value.get(&p.name);
        let path = At {
            object: &c.name,
            field: Some(&p.name),
        };
        match &p.ty {
            ParamType::Flags => {
                let mut bits = 0u32;
                for (q, flag) in c.params.iter().zip(&c.flag_of) {
                    if let ParamType::Conditional { bit, inner, .. } = &q.ty {
                        if *flag != Some(i) {
                            continue;
                        }
                        let v = value.get(&q.name);
                        // `flags.N?Bool` carries a value: `false` is present too.
                        let set = if matches!(**inner, ParamType::Bool) {
                            !matches!(v, None | Some(Value::Null))
                        } else {
                            present(v)
                        };
                        if set {
                            bits |= 1 << bit;
                        }
                    }
                }
                w.u32(bits);
            }
            ParamType::Conditional { inner, .. } => {
                if matches!(**inner, ParamType::True) {
                    continue;
                }
                let set = if matches!(**inner, ParamType::Bool) {
                    !matches!(field, None | Some(Value::Null))
                } else {
                    present(field)
                };
                if set {
                    if let Some(v) = field {
                        encode_value(schema, inner, v, w, path, depth + 1)?;
                    }
                }
            }
            ty => match field {
                Some(v) if !v.is_null() => encode_value(schema, ty, v, w, path, depth + 1)?,
                _ => encode_zero(ty, w, path)?,
            },
        }
    }
    Ok(())
}

/// [`encode_value`] for the typed encoder's objects that it writes as JSON.
pub(super) fn encode_value_at(
    schema: &Schema,
    ty: &ParamType,
    v: &Value,
    w: &mut Writer,
    depth: usize,
) -> Result<(), TlJsonError> {
    encode_value(schema, ty, v, w, At::top("answer"), depth)
}

/// [`encode_zero`] of `object.field`, for the typed encoder.
pub(super) fn encode_zero_at(
    ty: &ParamType,
    w: &mut Writer,
    object: &str,
    field: &str,
) -> Result<(), TlJsonError> {
    encode_zero(
        ty,
        w,
        At {
            object,
            field: Some(field),
        },
    )
}

/// A required parameter the object left out: its type's zero.
fn encode_zero(ty: &ParamType, w: &mut Writer, path: At<'_>) -> Result<(), TlJsonError> {
    match ty {
        ParamType::Int => w.i32(0),
        ParamType::Long => w.i64(0),
        ParamType::Double => w.f64(0.0),
        ParamType::String | ParamType::Bytes => w.bytes(&[]),
        ParamType::Int128 => w.raw(&[0; 16]),
        ParamType::Int256 => w.raw(&[0; 32]),
        ParamType::Bool => w.bool(false),
        ParamType::Vector(_) => w.u32(VECTOR).i32(0),
        ParamType::BareVector(_) => w.i32(0),
        _ => return Err(TlJsonError::Missing(path.text())),
    };
    Ok(())
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_u64().map(|u| u as i64)),
        Value::String(s) => s.parse().ok(),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// `bytes` as the JSON shape's lowercase hex, SIMD, into one buffer: `hex::encode` builds its
/// `String` a `char` at a time, which made it most of an upload part's decoding (a 512 KiB part is
/// a 1 MiB string).
fn hex_text(bytes: &[u8]) -> String {
    let mut out = vec![0u8; bytes.len() * 2];
    if faster_hex::hex_encode(bytes, &mut out).is_ok() {
        if let Ok(text) = String::from_utf8(out) {
            return text;
        }
    }
    // Cannot happen (the buffer is twice the input, hex is ASCII); the slow path is still right.
    hex::encode(bytes)
}

fn hex_or_text(v: &Value) -> Option<Vec<u8>> {
    let s = v.as_str()?;
    Some(hex::decode(s).unwrap_or_else(|_| s.as_bytes().to_vec()))
}

fn encode_value(
    schema: &Schema,
    ty: &ParamType,
    v: &Value,
    w: &mut Writer,
    path: At<'_>,
    depth: usize,
) -> Result<(), TlJsonError> {
    if depth > MAX_DEPTH {
        return Err(TlJsonError::TooDeep);
    }
    let wrong = |what| TlJsonError::WrongValue(path.text(), what);
    match ty {
        ParamType::Int => {
            let n = as_i64(v).ok_or_else(|| wrong("int"))?;
            w.i32(i32::try_from(n).map_err(|_| wrong("int in range"))?);
        }
        ParamType::Long => {
            w.i64(as_i64(v).ok_or_else(|| wrong("long"))?);
        }
        ParamType::Double => {
            w.f64(v.as_f64().ok_or_else(|| wrong("double"))?);
        }
        ParamType::String => match v {
            Value::String(s) => {
                w.bytes(s.as_bytes());
            }
            // A `TextWithEntities` where an older layer has a plain string (a dialog filter's
            // title in layer 152): its text.
            Value::Object(o) if o.get("_").and_then(Value::as_str) == Some("textWithEntities") => {
                let text = o.get("text").and_then(Value::as_str).unwrap_or("");
                w.bytes(text.as_bytes());
            }
            Value::Number(n) => {
                w.bytes(n.to_string().as_bytes());
            }
            _ => return Err(wrong("string")),
        },
        ParamType::Bytes => {
            w.bytes(&hex_or_text(v).ok_or_else(|| wrong("hex bytes"))?);
        }
        ParamType::Int128 | ParamType::Int256 => {
            let len = if matches!(ty, ParamType::Int128) {
                16
            } else {
                32
            };
            let b = v
                .as_str()
                .and_then(|s| hex::decode(s).ok())
                .filter(|b| b.len() == len)
                .ok_or_else(|| wrong("hex int128/int256"))?;
            w.raw(&b);
        }
        ParamType::Bool => {
            let b = match v {
                Value::Bool(b) => *b,
                Value::Object(_) => v.get("_").and_then(Value::as_str) == Some("boolTrue"),
                _ => return Err(wrong("Bool")),
            };
            w.bool(b);
        }
        ParamType::True => {}
        ParamType::Vector(inner) | ParamType::BareVector(inner) => {
            let items = v.as_array().ok_or_else(|| wrong("array"))?;
            if matches!(ty, ParamType::Vector(_)) {
                w.u32(VECTOR);
            }
            w.i32(items.len() as i32);
            for item in items {
                encode_value(schema, inner, item, w, path, depth + 1)?;
            }
        }
        ParamType::Generic | ParamType::Boxed(_) => {
            encode_boxed(schema, v, w, path, depth + 1)?;
        }
        ParamType::Bare(name) => {
            let c = schema
                .by_name(name)
                .ok_or_else(|| TlJsonError::UnknownConstructor(name.clone()))?;
            encode_fields(schema, c, v, w, depth + 1)?;
        }
        ParamType::Flags | ParamType::Conditional { .. } => return Err(wrong("a value")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tl::{MAX_INFLATED_BYTES, MAX_VALUES};

    #[test]
    fn hex_text_is_lowercase_hex_of_every_byte() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_text(&all), hex::encode(&all));
        assert_eq!(hex_text(&[]), "");
        assert_eq!(hex_text(&[0xab, 0x01]), "ab01");
    }

    fn round_trip(v: Value) -> Value {
        let s = Schema::api();
        let mut w = Writer::new();
        encode_object(s, &v, &mut w).unwrap();
        let mut r = Reader::new(&w.buf);
        let back = decode_object(s, &mut r).unwrap();
        assert!(r.remaining().is_empty());
        back
    }

    #[test]
    fn a_request_round_trips_with_flags() {
        let v = json!({"_": "messages.sendMessage", "silent": true,
            "peer": {"_": "inputPeerUser", "user_id": 2, "access_hash": -5},
            "message": "hi", "random_id": 77});
        let back = round_trip(v);
        assert_eq!(back["silent"], true);
        assert_eq!(back["no_webpage"], false);
        assert_eq!(back["peer"]["access_hash"], -5);
        assert_eq!(back["message"], "hi");
        assert!(back.get("reply_to").is_none());
    }

    #[test]
    fn missing_required_scalars_are_zero_and_unknown_fields_ignored() {
        let v = json!({"_": "user", "self": true, "id": 5, "access_hash": 9,
            "first_name": "A", "phone": "1555", "not_a_field": 1});
        let back = round_trip(v);
        assert_eq!(back["self"], true);
        assert_eq!(back["first_name"], "A");
        assert!(back.get("last_name").is_none());
        let d = round_trip(json!({"_": "updates.differenceEmpty"}));
        assert_eq!(d["date"], 0);
    }

    #[test]
    fn a_missing_required_object_is_an_error() {
        let mut w = Writer::new();
        let err = encode_object(Schema::api(), &json!({"_": "updateNewMessage"}), &mut w);
        assert!(matches!(err, Err(TlJsonError::Missing(_))));
    }

    /// Encodes a function's answer for a layer and decodes it with that layer's own schema only.
    fn answered_in(layer: i32, function: &str, answer: Value) -> Value {
        let mut w = Writer::new();
        encode_result(Schema::for_layer(Some(layer)), function, &answer, &mut w).unwrap();
        let mut r = Reader::new(&w.buf);
        let back = decode_object(Schema::exact(layer).unwrap(), &mut r).unwrap();
        assert!(r.remaining().is_empty());
        back
    }

    #[test]
    fn an_answer_wrapped_by_a_newer_layer_is_unwrapped_for_an_older_one() {
        let filters = json!({"_": "messages.dialogFilters", "tags_enabled": true, "filters": [
            {"_": "dialogFilterDefault"},
            {"_": "dialogFilter", "id": 2,
             "title": {"_": "textWithEntities", "text": "Work", "entities": []},
             "pinned_peers": [], "include_peers": [{"_": "inputPeerSelf"}], "exclude_peers": []}]});
        let old = answered_in(152, "messages.getDialogFilters", filters.clone());
        assert_eq!(old[0]["_"], "dialogFilterDefault");
        assert_eq!(old[1]["title"], "Work");
        assert_eq!(old[1]["include_peers"][0]["_"], "inputPeerSelf");
        // The newest layer keeps the wrapper and the title's shape.
        let new = answered_in(230, "messages.getDialogFilters", filters);
        assert_eq!(new["tags_enabled"], true);
        assert_eq!(new["filters"][1]["title"]["text"], "Work");

        let config = json!({"_": "help.appConfig", "hash": 5,
            "config": {"_": "jsonObject", "value": []}});
        assert_eq!(
            answered_in(152, "help.getAppConfig", config.clone())["_"],
            "jsonObject"
        );
        assert_eq!(answered_in(230, "help.getAppConfig", config)["hash"], 5);
    }

    #[test]
    fn fields_an_older_layer_lacks_are_dropped_and_its_own_are_zero() {
        // `color` and `profile_color` came after layer 152.
        let user = json!({"_": "user", "self": true, "id": 5, "access_hash": 9,
            "first_name": "A", "phone": "1555", "profile_color": {"_": "peerColor", "color": 3},
            "color": {"_": "peerColor", "color": 1}, "status": {"_": "userStatusRecently"}});
        let old = answered_in(152, "users.getUsers", json!([user.clone()]));
        assert_eq!(old[0]["first_name"], "A");
        assert!(old[0].get("profile_color").is_none() && old[0].get("color").is_none());
        assert_eq!(old[0]["status"]["_"], "userStatusRecently");
        let new = answered_in(230, "users.getUsers", json!([user]));
        assert_eq!(new[0]["profile_color"]["color"], 3);
        // Required in 152's config, not in newer ones: zero unless the answer has it.
        let config = answered_in(
            152,
            "help.getConfig",
            json!({"_": "config", "this_dc": 2,
            "pinned_dialogs_count_max": 5}),
        );
        assert_eq!(
            (
                config["this_dc"].clone(),
                config["pinned_dialogs_count_max"].clone(),
                config["saved_gifs_limit"].clone()
            ),
            (json!(2), json!(5), json!(0))
        );
    }

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut e, data).unwrap();
        e.finish().unwrap()
    }

    fn packed(data: &[u8]) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(GZIP_PACKED).bytes(&gz(data));
        w.buf
    }

    fn encode(v: Value) -> Vec<u8> {
        let mut w = Writer::new();
        encode_object(Schema::api(), &v, &mut w).unwrap();
        w.buf
    }

    /// The bomb of issue 11: each level inflates to a few MB of a gzip_packed object that
    /// inflates again. Every level used to get 16 MB of its own, all alive at once.
    #[test]
    fn nested_gzip_bombs_are_refused_within_one_budget() {
        // Innermost: a vector announcing a million `true` values (4 bytes each, 4 MB).
        let mut inner = Writer::new();
        inner.u32(VECTOR).i32(1 << 20);
        for _ in 0..(1 << 20) {
            inner.u32(BOOL_TRUE);
        }
        let mut level = inner.buf;
        for _ in 0..4 {
            let mut next = packed(&level);
            // Padding after the packed object makes each level large too.
            next.resize(next.len() + (3 << 20), 0);
            level = next;
        }
        let bomb = packed(&level);
        assert!(bomb.len() < 64 << 10, "{} bytes", bomb.len());
        let mut budget = DecodeBudget::default();
        let err = decode_object_within(Schema::api(), &mut Reader::new(&bomb), &mut budget);
        assert!(matches!(err, Err(TlError::OverBudget(_))), "{err:?}");
    }

    #[test]
    fn a_vector_count_past_the_budget_is_refused_before_its_items() {
        // messages.deleteMessages with 2^20 ids announced and present (after inflation).
        let mut w = Writer::new();
        w.u32(Schema::api().by_name("messages.deleteMessages").unwrap().id)
            .u32(0)
            .u32(VECTOR)
            .i32(1 << 20);
        w.raw(&vec![0u8; 4 << 20]);
        let mut budget = DecodeBudget::new(8 << 20, MAX_VALUES, MAX_DEPTH);
        let err = decode_object_within(Schema::api(), &mut Reader::new(&w.buf), &mut budget);
        assert_eq!(
            err,
            Err(TlError::OverBudget("vector longer than the value budget"))
        );
        // Only the object, its name, `revoke` and the vector itself were charged: it was
        // refused on its count.
        assert_eq!(budget.values_left(), MAX_VALUES - 4);
    }

    #[test]
    fn values_at_the_budget_decode_and_one_fewer_is_refused() {
        let ids: Vec<i64> = (0..1000).collect();
        let body = encode(json!({"_": "messages.deleteMessages", "revoke": true, "id": ids}));
        let mut budget = DecodeBudget::default();
        decode_object_within(Schema::api(), &mut Reader::new(&body), &mut budget).unwrap();
        let used = MAX_VALUES - budget.values_left();
        // The object, its name, `revoke`, the vector and its 1000 items.
        assert_eq!(used, 1004);
        let mut exact = DecodeBudget::new(MAX_INFLATED_BYTES, used, MAX_DEPTH);
        assert!(decode_object_within(Schema::api(), &mut Reader::new(&body), &mut exact).is_ok());
        let mut short = DecodeBudget::new(MAX_INFLATED_BYTES, used - 1, MAX_DEPTH);
        assert!(matches!(
            decode_object_within(Schema::api(), &mut Reader::new(&body), &mut short),
            Err(TlError::OverBudget(_))
        ));
    }

    #[test]
    fn the_largest_real_request_fits_the_budget() {
        // contacts.importContacts with the application's maximum of contacts.
        let contacts: Vec<Value> = (0..domain_max_import_contacts())
            .map(|i| {
                json!({"_": "inputPhoneContact", "client_id": i, "phone": "+15550000000",
                "first_name": "A", "last_name": "B"})
            })
            .collect();
        let body = encode(json!({"_": "contacts.importContacts", "contacts": contacts}));
        let gzipped = packed(&body);
        let mut budget = DecodeBudget::default();
        let v =
            decode_object_within(Schema::api(), &mut Reader::new(&gzipped), &mut budget).unwrap();
        assert_eq!(v["contacts"].as_array().unwrap().len(), 1000);
        assert!(budget.values_left() > MAX_VALUES / 2, "{budget:?}");
    }

    /// `domain::limits::MAX_IMPORT_CONTACTS` (this crate does not depend on domain).
    fn domain_max_import_contacts() -> usize {
        1000
    }

    #[test]
    fn depth_at_the_limit_decodes_and_one_deeper_is_refused() {
        // jsonArray nests: each level is a vector inside an object (JSONValue in
        // initConnection's params is where a client controls depth).
        let s = Schema::api();
        let nest = |levels: usize| {
            let mut w = Writer::new();
            for _ in 0..levels {
                w.u32(s.by_name("jsonArray").unwrap().id).u32(VECTOR).i32(1);
            }
            w.u32(s.by_name("jsonNull").unwrap().id);
            w.buf
        };
        // Each level is jsonArray (boxed), its Vector parameter and the boxed item: 2 steps.
        let ok = nest(MAX_DEPTH / 2);
        let deep = nest(MAX_DEPTH / 2 + 1);
        let mut b = DecodeBudget::default();
        assert!(decode_object_within(Schema::api(), &mut Reader::new(&ok), &mut b).is_ok());
        let mut b = DecodeBudget::default();
        assert_eq!(
            decode_object_within(Schema::api(), &mut Reader::new(&deep), &mut b),
            Err(TlError::TooDeep)
        );
    }

    #[test]
    fn garbage_never_panics() {
        let s = Schema::api();
        let mut seed = 0x1234_5678u64;
        let valid = {
            let mut w = Writer::new();
            encode_object(
                s,
                &json!({"_": "messages.getHistory", "peer": {"_": "inputPeerSelf"}, "limit": 3}),
                &mut w,
            )
            .unwrap();
            w.buf
        };
        for i in 0..20000 {
            let mut data = valid.clone();
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let pos = (seed >> 33) as usize % data.len();
            data[pos] ^= (seed >> 13) as u8 | 1;
            data.truncate(data.len() - (i % 5));
            let _ = decode_object(s, &mut Reader::new(&data));
        }
    }
}
