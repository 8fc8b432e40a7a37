//! TL: the binary primitives ([`Reader`], [`Writer`]), the API schema ([`Schema`]) and the
//! converter between TL bytes and JSON objects named by constructor (`{"_": "user", …}`), the
//! shape the application layer's answers and requests already have.

mod budget;
mod json;
mod reader;
mod schema;
mod typed;
mod upgrade;
mod writer;

pub use budget::{DecodeBudget, MAX_DEPTH, MAX_INFLATED_BYTES, MAX_VALUES};
pub use json::{
    decode_fields_within, decode_object, decode_object_within, encode_object, encode_result,
    gunzip, TlJsonError,
};
pub use reader::{Reader, TlError};
pub use schema::{Combinator, Param, ParamType, Schema, LAYERS, NEWEST_LAYER, OLDEST_LAYER};
pub use typed::{encode_result_typed, written_in_one_pass};
pub use upgrade::upgrade_request;
pub use writer::Writer;

/// `vector` (boxed `Vector`).
pub const VECTOR: u32 = 0x1cb5c415;
pub const BOOL_TRUE: u32 = 0x997275b5;
pub const BOOL_FALSE: u32 = 0xbc799737;
pub const GZIP_PACKED: u32 = 0x3072cfa1;
