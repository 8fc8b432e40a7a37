//! A call's typed answer in each front's form, made once and straight from the typed answer (no
//! `serde_json::Value` between): the JSON API's response bytes, MTProto's TL bytes in the
//! client's layer. A renderer is taken by value, so a call renders its answer exactly once.

use application::tl::RpcError;
use mtproto::tl::{encode_result_typed, Schema, Writer};
use serde::Serialize;

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

/// MTProto: the answer as the TL type `function` returns in the client's layer's `schema`.
#[derive(Debug, Clone, Copy)]
pub struct TlBytes<'a> {
    pub schema: &'static Schema,
    pub function: &'a str,
}

impl Render for TlBytes<'_> {
    type Out = Vec<u8>;
    fn render<T: Serialize>(self, answer: &T) -> Result<Vec<u8>, Failure> {
        let mut w = Writer::new();
        encode_result_typed(self.schema, self.function, answer, &mut w).map_err(|e| {
            tracing::error!(method = self.function, error = %e, "answer did not encode as TL");
            Failure(RpcError::internal())
        })?;
        #[cfg(debug_assertions)]
        self.check_against_json(answer, &w.buf);
        Ok(w.buf)
    }
}

/// The answers clients ask for most (the reads the bench measures), whose types must keep their
/// fields in the schema's order so that the TL encoder writes them in one pass (debug builds
/// check it). Others may be written twice, as a JSON object's sorted keys always are.
#[cfg(debug_assertions)]
const ONE_PASS_ANSWERS: &[&str] = &[
    "updates.getDifference",
    "updates.getState",
    "messages.getHistory",
    "messages.getDialogs",
    "messages.getMessages",
    "messages.getPeerDialogs",
    "messages.search",
    "messages.sendMessage",
    "users.getUsers",
];

impl TlBytes<'_> {
    /// Debug builds (every test) check each answer against the JSON encoder's bytes for it,
    /// which the typed encoder must equal (`mtproto::tl::encode_result_typed`), and that the
    /// hot ones were written in one pass.
    #[cfg(debug_assertions)]
    fn check_against_json<T: Serialize>(self, answer: &T, typed: &[u8]) {
        let json = serde_json::to_value(answer).map_err(unserializable).ok();
        let mut w = Writer::new();
        let by_json =
            json.map(|v| mtproto::tl::encode_result(self.schema, self.function, &v, &mut w));
        assert!(
            matches!(by_json, Some(Ok(()))) && w.buf == typed,
            "{} (layer {}): the typed TL encoder and the JSON one disagree",
            self.function,
            self.schema.layer
        );
        assert!(
            !ONE_PASS_ANSWERS.contains(&self.function)
                || mtproto::tl::written_in_one_pass(self.schema, self.function, answer),
            "{} (layer {}): a field of the answer is out of the schema's order, so the TL \
             encoder wrote it twice; declare the type's fields in the schema's order",
            self.function,
            self.schema.layer
        );
    }
}
