//! The name of a stored blob: the SHA-256 of its bytes, so the same file uploaded twice is
//! stored once and a key always names exactly one content.

use sha2::{Digest, Sha256};

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobKey([u8; 32]);

impl BlobKey {
    /// The key of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// A key from a finished SHA-256 (a digest computed while streaming).
    pub fn from_digest(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex, 64 characters: how a key is written in paths and in the database.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 64 hex characters; anything else is not a key.
    pub fn from_hex(s: &str) -> Option<Self> {
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).ok()?;
        Some(Self(out))
    }
}

impl std::fmt::Debug for BlobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlobKey({})", self.hex())
    }
}

impl std::fmt::Display for BlobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hex())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_the_sha256_of_the_bytes_and_round_trips_as_hex() {
        let k = BlobKey::of(b"abc");
        assert_eq!(
            k.hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(BlobKey::from_hex(&k.hex()), Some(k));
        assert_eq!(BlobKey::from_hex(&k.hex()[1..]), None);
        assert_eq!(BlobKey::from_hex(&"g".repeat(64)), None);
    }
}
