//! An auth key and the MTProto 2.0 message key / AES key derivation.

use super::{sha1, sha256};

/// Who encrypts: the key material is taken at offset x = 0 from the client, x = 8 from the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

impl Side {
    fn x(self) -> usize {
        match self {
            Side::Client => 0,
            Side::Server => 8,
        }
    }
}

#[derive(Clone)]
pub struct AuthKey {
    key: [u8; 256],
    id: i64,
    aux_hash: [u8; 8],
}

impl std::fmt::Debug for AuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuthKey({:#x})", self.id)
    }
}

impl AuthKey {
    pub fn new(key: [u8; 256]) -> Self {
        let h = sha1(&[&key]);
        let mut id = [0u8; 8];
        id.copy_from_slice(&h[12..20]);
        let mut aux_hash = [0u8; 8];
        aux_hash.copy_from_slice(&h[..8]);
        Self {
            key,
            id: i64::from_le_bytes(id),
            aux_hash,
        }
    }

    pub fn from_slice(key: &[u8]) -> Option<Self> {
        Some(Self::new(key.try_into().ok()?))
    }

    /// The low 64 bits of SHA1(key): what every encrypted packet starts with.
    pub fn id(&self) -> i64 {
        self.id
    }

    pub fn aux_hash(&self) -> [u8; 8] {
        self.aux_hash
    }

    pub fn bytes(&self) -> &[u8; 256] {
        &self.key
    }

    /// msg_key: the middle 128 bits of SHA256(auth_key[88+x..120+x] ‖ plaintext with padding).
    pub fn msg_key(&self, plaintext: &[u8], side: Side) -> [u8; 16] {
        let x = side.x();
        let large = sha256(&[&self.key[88 + x..120 + x], plaintext]);
        let mut out = [0u8; 16];
        out.copy_from_slice(&large[8..24]);
        out
    }

    /// MTProto 1.0's key and iv (SHA1-based); still used for the message inside
    /// `auth.bindTempAuthKey`, which is encrypted with the permanent key.
    pub fn aes_key_iv_v1(&self, msg_key: &[u8; 16], side: Side) -> ([u8; 32], [u8; 32]) {
        let x = side.x();
        let k = &self.key;
        let a = sha1(&[msg_key, &k[x..x + 32]]);
        let b = sha1(&[&k[32 + x..48 + x], msg_key, &k[48 + x..64 + x]]);
        let c = sha1(&[&k[64 + x..96 + x], msg_key]);
        let d = sha1(&[msg_key, &k[96 + x..128 + x]]);
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&a[..8]);
        key[8..20].copy_from_slice(&b[8..20]);
        key[20..].copy_from_slice(&c[4..16]);
        let mut iv = [0u8; 32];
        iv[..12].copy_from_slice(&a[8..20]);
        iv[12..20].copy_from_slice(&b[..8]);
        iv[20..24].copy_from_slice(&c[16..20]);
        iv[24..].copy_from_slice(&d[..8]);
        (key, iv)
    }

    /// The AES-256-IGE key and iv for a message with this msg_key.
    pub fn aes_key_iv(&self, msg_key: &[u8; 16], side: Side) -> ([u8; 32], [u8; 32]) {
        let x = side.x();
        let a = sha256(&[msg_key, &self.key[x..x + 36]]);
        let b = sha256(&[&self.key[40 + x..76 + x], msg_key]);
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&a[..8]);
        key[8..24].copy_from_slice(&b[8..24]);
        key[24..].copy_from_slice(&a[24..32]);
        let mut iv = [0u8; 32];
        iv[..8].copy_from_slice(&b[..8]);
        iv[8..24].copy_from_slice(&a[8..24]);
        iv[24..].copy_from_slice(&b[24..32]);
        (key, iv)
    }
}
