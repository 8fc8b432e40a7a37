//! Transports: how MTProto packets are framed on a TCP stream. Pure codecs over byte buffers.
//!
//! The server tells them apart from the first bytes a client sends ([`ServerTransport`]):
//! `0xef` abridged, `0xeeeeeeee` intermediate, `0xdddddddd` padded intermediate, a plausible
//! length followed by sequence number 0 the full transport, anything else a 64-byte obfuscated2
//! header whose protocol tag names one of the first three.

mod framing;
mod obfuscated;
mod server;

pub use framing::{Framing, Kind};
pub use obfuscated::{ClientObfuscation, Obfuscation};
pub use server::ServerTransport;

/// The stream cannot be read any further; the connection must close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("frame of {0} bytes is over the limit")]
    TooLarge(usize),
    #[error("frame length {0} is invalid")]
    BadLength(usize),
    #[error("full transport: sequence number {got}, expected {expected}")]
    BadSeq { got: u32, expected: u32 },
    #[error("full transport: checksum mismatch")]
    BadCrc,
    #[error("unknown transport or obfuscation tag")]
    UnknownProtocol,
}
