//! MTProto 2.0, server side, without I/O.
//!
//! Layers, bottom up: [`transport`] (framing codecs: abridged, intermediate, padded intermediate,
//! full, obfuscated2), [`crypto`] (AES-IGE, message keys, RSA, Diffie-Hellman), [`tl`] (the binary
//! TL codec: primitives, and a schema-driven converter between TL and the JSON objects the
//! application layer speaks), [`handshake`] (creating an auth key) and [`session`] (the encrypted
//! message layer: salts, msg_id and seq_no rules, containers, service messages). The server crate
//! adds the sockets and the RPC handlers.

pub mod client;
pub mod crypto;
pub mod handshake;
pub mod replay;
pub mod service;
pub mod session;
pub mod tl;
pub mod transport;

/// The largest frame a transport accepts (the API's biggest request, a file part, is 512 KiB).
pub const MAX_FRAME: usize = 1 << 20;
