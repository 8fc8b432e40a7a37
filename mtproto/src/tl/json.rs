//! Binary TL ⇄ JSON objects, driven by the schema: `{"_": "<constructor>", "<param>": …}`, the
//! shape of the application's TL objects. `long`s are JSON numbers, `bytes`/`int128`/`int256` hex
//! strings, `Bool` and `flags.N?true` JSON booleans; absent optional parameters are left out.
//!
//! Encoding fills required parameters the object leaves out with their type's zero (0, "", empty
//! vector, false), so answers only name what they mean; a missing required object is an error.

use flate2::read::GzDecoder;
use serde_json::{Map, Value};
use std::io::Read;

use super::schema::{Combinator, ParamType, Schema};
use super::{Reader, TlError, Writer, BOOL_FALSE, BOOL_TRUE, GZIP_PACKED, VECTOR};

const MAX_DEPTH: usize = 64;
/// A gzip_packed payload may not inflate past this.
const MAX_INFLATED: u64 = 16 << 20;

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
}

/// Reads one boxed object (type or function, `gzip_packed` unwrapped) as JSON.
pub fn decode_object(schema: &Schema, r: &mut Reader<'_>) -> Result<Value, TlError> {
    decode_boxed(schema, r, 0)
}

fn decode_boxed(schema: &Schema, r: &mut Reader<'_>, depth: usize) -> Result<Value, TlError> {
    if depth > MAX_DEPTH {
        return Err(TlError::TooDeep);
    }
    let id = r.u32()?;
    match id {
        BOOL_TRUE => return Ok(Value::Bool(true)),
        BOOL_FALSE => return Ok(Value::Bool(false)),
        // A vector where an object stands (a function's `Vector<User>` result): of objects.
        VECTOR => {
            let n = r.count(4)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(decode_boxed(schema, r, depth + 1)?);
            }
            return Ok(Value::Array(items));
        }
        GZIP_PACKED => {
            let inner = gunzip(r.bytes()?)?;
            return decode_boxed(schema, &mut Reader::new(&inner), depth + 1);
        }
        _ => {}
    }
    let c = schema.by_id(id).ok_or(TlError::UnknownConstructor(id))?;
    decode_fields(schema, c, r, depth)
}

fn decode_fields(
    schema: &Schema,
    c: &Combinator,
    r: &mut Reader<'_>,
    depth: usize,
) -> Result<Value, TlError> {
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
                    obj.insert(p.name.clone(), Value::Bool(set));
                    continue;
                }
                if !set {
                    continue;
                }
                inner.as_ref()
            }
            ty => ty,
        };
        let v = decode_value(schema, ty, r, depth + 1)?;
        obj.insert(p.name.clone(), v);
    }
    Ok(Value::Object(obj))
}

fn decode_value(
    schema: &Schema,
    ty: &ParamType,
    r: &mut Reader<'_>,
    depth: usize,
) -> Result<Value, TlError> {
    if depth > MAX_DEPTH {
        return Err(TlError::TooDeep);
    }
    Ok(match ty {
        ParamType::Int => Value::from(r.i32()?),
        ParamType::Long => Value::from(r.i64()?),
        ParamType::Double => Value::from(r.f64()?),
        ParamType::String => Value::String(r.string()?),
        ParamType::Bytes => Value::String(hex::encode(r.bytes()?)),
        ParamType::Int128 => Value::String(hex::encode(r.take(16)?)),
        ParamType::Int256 => Value::String(hex::encode(r.take(32)?)),
        ParamType::Bool => Value::Bool(r.bool()?),
        ParamType::True => Value::Bool(true),
        ParamType::Vector(inner) => {
            let id = r.u32()?;
            if id != VECTOR {
                return Err(TlError::Unexpected {
                    got: id,
                    expected: "Vector",
                });
            }
            decode_items(schema, inner, r, depth)?
        }
        ParamType::BareVector(inner) => decode_items(schema, inner, r, depth)?,
        ParamType::Generic | ParamType::Boxed(_) => decode_boxed(schema, r, depth)?,
        ParamType::Bare(name) => {
            let c = schema
                .by_name(name)
                .ok_or(TlError::Invalid("unknown bare type"))?;
            decode_fields(schema, c, r, depth)?
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
    depth: usize,
) -> Result<Value, TlError> {
    let n = r.count(4)?;
    let mut items = Vec::with_capacity(n);
    for _ in 0..n {
        items.push(decode_value(schema, inner, r, depth + 1)?);
    }
    Ok(Value::Array(items))
}

/// Inflates a `gzip_packed` payload, refusing anything that inflates past [`MAX_INFLATED`].
pub fn gunzip(data: &[u8]) -> Result<Vec<u8>, TlError> {
    let mut out = Vec::new();
    GzDecoder::new(data)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|_| TlError::Invalid("bad gzip_packed data"))?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(TlError::Invalid("gzip_packed data too large"));
    }
    Ok(out)
}

/// Writes a function's answer: `value` as the TL type the function `function` returns (a boxed
/// object, or a vector of objects or numbers).
pub fn encode_result(
    schema: &Schema,
    function: &str,
    value: &Value,
    w: &mut Writer,
) -> Result<(), TlJsonError> {
    let ty = schema
        .by_name(function)
        .and_then(|c| super::schema::parse_type(&c.result))
        .unwrap_or(ParamType::Generic);
    let ty = match ty {
        // `X` in `invokeWithLayer … = X`, or a plain type: whatever the object says it is.
        ParamType::Bare(_) => ParamType::Generic,
        ty => ty,
    };
    encode_value(schema, &ty, value, w, function, 0)
}

/// Writes a JSON object (`"_"` names the constructor) as a boxed TL object.
pub fn encode_object(schema: &Schema, value: &Value, w: &mut Writer) -> Result<(), TlJsonError> {
    encode_boxed(schema, value, w, "result", 0)
}

fn encode_boxed(
    schema: &Schema,
    value: &Value,
    w: &mut Writer,
    path: &str,
    depth: usize,
) -> Result<(), TlJsonError> {
    if depth > MAX_DEPTH {
        return Err(TlJsonError::TooDeep);
    }
    let name = value
        .get("_")
        .and_then(Value::as_str)
        .ok_or_else(|| TlJsonError::WrongValue(path.to_string(), "an object with \"_\""))?;
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
    for p in &c.params {
        let field = value.get(&p.name);
        let path = || format!("{}.{}", c.name, p.name);
        match &p.ty {
            ParamType::Flags => {
                let mut bits = 0u32;
                for q in &c.params {
                    if let ParamType::Conditional { field, bit, inner } = &q.ty {
                        if field != &p.name {
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
                        encode_value(schema, inner, v, w, &path(), depth + 1)?;
                    }
                }
            }
            ty => match field {
                Some(v) if !v.is_null() => encode_value(schema, ty, v, w, &path(), depth + 1)?,
                _ => encode_zero(ty, w, &path())?,
            },
        }
    }
    Ok(())
}

/// A required parameter the object left out: its type's zero.
fn encode_zero(ty: &ParamType, w: &mut Writer, path: &str) -> Result<(), TlJsonError> {
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
        _ => return Err(TlJsonError::Missing(path.to_string())),
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

fn hex_or_text(v: &Value) -> Option<Vec<u8>> {
    let s = v.as_str()?;
    Some(hex::decode(s).unwrap_or_else(|_| s.as_bytes().to_vec()))
}

fn encode_value(
    schema: &Schema,
    ty: &ParamType,
    v: &Value,
    w: &mut Writer,
    path: &str,
    depth: usize,
) -> Result<(), TlJsonError> {
    if depth > MAX_DEPTH {
        return Err(TlJsonError::TooDeep);
    }
    let wrong = |what| TlJsonError::WrongValue(path.to_string(), what);
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
