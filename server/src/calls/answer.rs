//! A call's typed answer in each front's form, made once: the JSON API's response bytes
//! (serialized straight from the typed answer, no `Value` between), MTProto's JSON object for the
//! TL encoder. A renderer is taken by value, so a call renders its answer exactly once.

use application::tl::RpcError;
use serde::Serialize;
use serde_json::Value;

use super::Failure;

/// What a front makes of a typed answer.
pub trait Render {
    type Out;
    fn render<T: Serialize>(self, answer: &T) -> Result<Self::Out, Failure>;
}

/// TL objects are plain data, so serializing cannot fail in practice; if it does, it is a bug
/// worth a log line and the client gets `500 INTERNAL`.
fn unserializable(e: serde_json::Error) -> Failure {
    tracing::error!(error = %e, "answer did not serialize");
    Failure(RpcError::internal())
}

/// The JSON API: the response body.
#[derive(Debug, Clone, Copy)]
pub struct JsonBytes;

impl Render for JsonBytes {
    type Out = Vec<u8>;
    fn render<T: Serialize>(self, answer: &T) -> Result<Vec<u8>, Failure> {
        serde_json::to_vec(answer).map_err(unserializable)
    }
}

/// MTProto: the object `mtproto::tl::encode_result` writes as TL.
#[derive(Debug, Clone, Copy)]
pub struct TlObject;

impl Render for TlObject {
    type Out = Value;
    fn render<T: Serialize>(self, answer: &T) -> Result<Value, Failure> {
        serde_json::to_value(answer).map_err(unserializable)
    }
}
