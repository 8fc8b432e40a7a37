//! A call's parameters as each front has them, parsed straight into the method's typed request:
//! the JSON API's body bytes, MTProto's decoded TL object. A parameter that does not parse is
//! `400 INPUT_REQUEST_INVALID` (with serde's explanation as the detail) on both.

use application::tl::RpcError;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Failure;

/// What a front has of a call's parameters.
pub trait Params {
    fn parse<T: DeserializeOwned>(self) -> Result<T, Failure>;
}

fn bad_input(e: serde_json::Error) -> Failure {
    Failure(RpcError::bad_input(e.to_string()))
}

/// A JSON API body. An empty body is `{}` (methods without parameters). Parameters are named: a
/// JSON array (positional fields, which serde would accept for a struct) is refused.
#[derive(Debug, Clone, Copy)]
pub struct JsonBody<'a>(pub &'a [u8]);

impl Params for JsonBody<'_> {
    fn parse<T: DeserializeOwned>(self) -> Result<T, Failure> {
        let body: &[u8] = if self.0.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            self.0
        };
        if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return Err(Failure(RpcError::bad_input(
                "the parameters must be a JSON object",
            )));
        }
        serde_json::from_slice(body).map_err(bad_input)
    }
}

/// An MTProto call's parameters, decoded from TL (always an object, named by the schema).
impl Params for Value {
    fn parse<T: DeserializeOwned>(self) -> Result<T, Failure> {
        serde_json::from_value(self).map_err(bad_input)
    }
}
