//! The cryptography MTProto 2.0 uses: AES-256-IGE, the message key and AES key derivation, the
//! server's RSA key, Diffie-Hellman over Telegram's 2048-bit safe prime, pq for the handshake, and
//! the rotating server salts.

mod auth_key;
mod dh;
mod ige;
mod pq;
mod rsa_key;
mod salts;

pub use auth_key::{AuthKey, Side};
pub use dh::{DhError, DhSecret, DH_G, DH_PRIME};
pub use ige::{ige_decrypt, ige_encrypt};
pub use pq::PqPair;
pub use rsa_key::{PublicKey, RsaKeyError, ServerKey};
pub use salts::{FutureSalt, ServerSalts, MAX_FUTURE_SALTS, SALT_GRACE_SECS, SALT_WINDOW_SECS};

use sha1::{Digest as _, Sha1};
use sha2::Sha256;

pub fn sha1(parts: &[&[u8]]) -> [u8; 20] {
    let mut h = Sha1::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

pub fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}
