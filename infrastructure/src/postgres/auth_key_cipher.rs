//! MTProto auth keys encrypted at rest: AES-256-GCM under a server key-encryption key, the
//! `auth_key_id` as associated data (a sealed key copied onto another row does not open).
//!
//! Stored form (`mtproto_auth_keys.auth_key`, migration 0013): `0x01 || nonce (12) || ciphertext
//! (256) || tag (16)`, 285 bytes. A 256-byte value is a key stored before encryption existed; it
//! still loads and is sealed on the way (`PgMtprotoKeys::load`, `seal_plaintext`).

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use rand::RngCore;

/// The length of an auth key (MTProto: 2048 bits).
pub const AUTH_KEY_BYTES: usize = 256;
/// The length of a key-encryption key (AES-256).
pub const KEY_ENCRYPTION_KEY_BYTES: usize = 32;
const VERSION: u8 = 1;
const NONCE_BYTES: usize = 12;
const TAG_BYTES: usize = 16;
/// The length of a sealed auth key as stored.
pub const SEALED_BYTES: usize = 1 + NONCE_BYTES + AUTH_KEY_BYTES + TAG_BYTES;
/// Binds the ciphertext to its purpose as well as to its row.
const AAD_LABEL: &[u8] = b"ptslog mtproto auth key v1:";

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CipherError {
    /// The stored value is neither a sealed key nor a legacy plaintext key.
    #[error("the stored auth key has an unknown form ({0} bytes)")]
    UnknownForm(usize),
    /// Wrong key-encryption key, a value moved to another row, or a damaged value.
    #[error("the stored auth key does not open with this server's key-encryption key")]
    WrongKeyOrDamaged,
    #[error("an auth key must be {AUTH_KEY_BYTES} bytes, not {0}")]
    BadAuthKey(usize),
}

/// What a stored value turned out to be.
#[derive(PartialEq, Eq)]
pub enum Opened {
    Sealed(Vec<u8>),
    /// Stored before encryption at rest: the caller should seal it.
    Plaintext(Vec<u8>),
}

/// The AES-256-GCM cipher of auth keys. Debug shows nothing of the key.
#[derive(Clone)]
pub struct AuthKeyCipher {
    aead: Aes256Gcm,
}

impl std::fmt::Debug for AuthKeyCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuthKeyCipher(..)")
    }
}

fn aad(auth_key_id: i64) -> Vec<u8> {
    let mut aad = AAD_LABEL.to_vec();
    aad.extend_from_slice(&auth_key_id.to_le_bytes());
    aad
}

impl AuthKeyCipher {
    pub fn new(key: &[u8; KEY_ENCRYPTION_KEY_BYTES]) -> Self {
        Self {
            aead: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)),
        }
    }

    /// Encrypts `auth_key` for the row `auth_key_id`, under a fresh random nonce.
    pub fn seal(&self, auth_key_id: i64, auth_key: &[u8]) -> Result<Vec<u8>, CipherError> {
        if auth_key.len() != AUTH_KEY_BYTES {
            return Err(CipherError::BadAuthKey(auth_key.len()));
        }
        let mut nonce = [0u8; NONCE_BYTES];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let aad = aad(auth_key_id);
        let sealed = self
            .aead
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: auth_key,
                    aad: &aad,
                },
            )
            // AES-GCM fails only past 64 GiB of message; a 256-byte key never does.
            .map_err(|_| CipherError::BadAuthKey(auth_key.len()))?;
        let mut out = Vec::with_capacity(SEALED_BYTES);
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&sealed);
        Ok(out)
    }

    /// Decrypts a stored value of the row `auth_key_id`.
    pub fn open(&self, auth_key_id: i64, stored: &[u8]) -> Result<Opened, CipherError> {
        match stored.len() {
            AUTH_KEY_BYTES => Ok(Opened::Plaintext(stored.to_vec())),
            SEALED_BYTES if stored[0] == VERSION => {
                let (nonce, sealed) = stored[1..].split_at(NONCE_BYTES);
                let aad = aad(auth_key_id);
                self.aead
                    .decrypt(
                        Nonce::from_slice(nonce),
                        Payload {
                            msg: sealed,
                            aad: &aad,
                        },
                    )
                    .map(Opened::Sealed)
                    .map_err(|_| CipherError::WrongKeyOrDamaged)
            }
            n => Err(CipherError::UnknownForm(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> AuthKeyCipher {
        AuthKeyCipher::new(&[b; KEY_ENCRYPTION_KEY_BYTES])
    }

    fn opened(o: Opened) -> Vec<u8> {
        match o {
            Opened::Sealed(k) => k,
            Opened::Plaintext(_) => panic!("expected a sealed key"),
        }
    }

    #[test]
    fn sealed_keys_open_only_with_their_key_and_row() {
        let auth_key: Vec<u8> = (0..=255u8).collect();
        let c = key(7);
        let sealed = c.seal(42, &auth_key).unwrap();
        assert_eq!(sealed.len(), SEALED_BYTES);
        assert!(
            !sealed
                .windows(16)
                .any(|w| auth_key.windows(16).any(|k| k == w)),
            "no run of the key appears in what is stored"
        );
        assert_ne!(
            c.seal(42, &auth_key).unwrap(),
            sealed,
            "a fresh nonce each time"
        );
        assert_eq!(opened(c.open(42, &sealed).unwrap()), auth_key);
        assert!(matches!(
            c.open(43, &sealed),
            Err(CipherError::WrongKeyOrDamaged)
        ));
        assert!(matches!(
            key(8).open(42, &sealed),
            Err(CipherError::WrongKeyOrDamaged)
        ));
        let mut damaged = sealed.clone();
        damaged[100] ^= 1;
        assert!(matches!(
            c.open(42, &damaged),
            Err(CipherError::WrongKeyOrDamaged)
        ));
    }

    #[test]
    fn legacy_plaintext_and_bad_forms() {
        let c = key(1);
        let plain = vec![9u8; AUTH_KEY_BYTES];
        assert!(c.open(1, &plain).unwrap() == Opened::Plaintext(plain.clone()));
        assert!(matches!(
            c.open(1, &[0u8; 10]),
            Err(CipherError::UnknownForm(10))
        ));
        let mut other_version = c.seal(1, &plain).unwrap();
        other_version[0] = 2;
        assert!(matches!(
            c.open(1, &other_version),
            Err(CipherError::UnknownForm(SEALED_BYTES))
        ));
        assert!(matches!(
            c.seal(1, &[0u8; 255]),
            Err(CipherError::BadAuthKey(255))
        ));
    }
}
