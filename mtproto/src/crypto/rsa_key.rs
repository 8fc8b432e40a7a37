//! The server's RSA-2048 key: created on first start, kept as a PKCS#1 PEM file; clients are
//! configured with its public half and know it by its fingerprint.

use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey, EncodeRsaPublicKey, LineEnding};
use rsa::traits::PublicKeyParts;
use rsa::{BigUint, RsaPrivateKey};

use super::sha1;
use crate::tl::Writer;

#[derive(Debug, thiserror::Error)]
pub enum RsaKeyError {
    #[error("generating the RSA key: {0}")]
    Generate(String),
    #[error("reading the RSA key: {0}")]
    Pem(String),
}

#[derive(Clone)]
pub struct ServerKey {
    private: RsaPrivateKey,
    fingerprint: i64,
}

impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServerKey({:#x})", self.fingerprint)
    }
}

impl ServerKey {
    pub fn generate() -> Result<Self, RsaKeyError> {
        let private = RsaPrivateKey::new(&mut rand::thread_rng(), 2048)
            .map_err(|e| RsaKeyError::Generate(e.to_string()))?;
        Ok(Self::from_private(private))
    }

    pub fn from_pem(pem: &str) -> Result<Self, RsaKeyError> {
        let private =
            RsaPrivateKey::from_pkcs1_pem(pem).map_err(|e| RsaKeyError::Pem(e.to_string()))?;
        Ok(Self::from_private(private))
    }

    fn from_private(private: RsaPrivateKey) -> Self {
        let mut w = Writer::new();
        w.bytes(&private.n().to_bytes_be())
            .bytes(&private.e().to_bytes_be());
        let h = sha1(&[&w.buf]);
        let mut low = [0u8; 8];
        low.copy_from_slice(&h[12..20]);
        Self {
            private,
            fingerprint: i64::from_le_bytes(low),
        }
    }

    /// The private key as PKCS#1 PEM, for the key file.
    pub fn private_pem(&self) -> Result<String, RsaKeyError> {
        Ok(self
            .private
            .to_pkcs1_pem(LineEnding::LF)
            .map_err(|e| RsaKeyError::Pem(e.to_string()))?
            .to_string())
    }

    /// `-----BEGIN RSA PUBLIC KEY-----`, the form clients embed.
    pub fn public_pem(&self) -> String {
        self.private
            .to_public_key()
            .to_pkcs1_pem(LineEnding::LF)
            .unwrap_or_default()
    }

    /// The modulus and public exponent, big-endian (for clients configured with numbers).
    pub fn public_numbers(&self) -> (Vec<u8>, Vec<u8>) {
        (
            self.private.n().to_bytes_be(),
            self.private.e().to_bytes_be(),
        )
    }

    /// The low 64 bits of SHA1 of the TL-serialized modulus and exponent.
    pub fn fingerprint(&self) -> i64 {
        self.fingerprint
    }

    /// The RSA primitive c^d mod n, big-endian, 256 bytes: `req_DH_params` carries its own
    /// padding (RSA_PAD or the old SHA1 scheme), which the handshake checks. Done by the `rsa`
    /// crate with CRT (about 3× faster than one 2048-bit exponentiation) and blinding (the time
    /// taken does not follow the ciphertext an attacker chose), and the result re-encrypted to
    /// catch a faulty CRT step. `None` when c ≥ n or the check fails.
    pub fn decrypt_raw(&self, cipher: &[u8]) -> Option<[u8; 256]> {
        self.decrypt_raw_with(&mut rand::thread_rng(), cipher)
    }

    /// [`Self::decrypt_raw`] with the blinding factor drawn from `rng`.
    pub fn decrypt_raw_with<R: rand::CryptoRng + rand::RngCore>(
        &self,
        rng: &mut R,
        cipher: &[u8],
    ) -> Option<[u8; 256]> {
        if cipher.len() > 256 {
            return None;
        }
        let c = BigUint::from_bytes_be(cipher);
        let m = rsa::hazmat::rsa_decrypt_and_check(&self.private, Some(rng), &c).ok()?;
        let b = m.to_bytes_be();
        let mut out = [0u8; 256];
        out[256usize.checked_sub(b.len())?..].copy_from_slice(&b);
        Some(out)
    }

    /// The public half, as a client holds it.
    pub fn public_key(&self) -> PublicKey {
        let (n, e) = self.public_numbers();
        PublicKey::new(&n, &e)
    }
}

/// A server's public key as a client holds it (tests and tools).
#[derive(Debug, Clone)]
pub struct PublicKey {
    n: BigUint,
    e: BigUint,
}

impl PublicKey {
    /// From the big-endian modulus and exponent.
    pub fn new(n: &[u8], e: &[u8]) -> Self {
        Self {
            n: BigUint::from_bytes_be(n),
            e: BigUint::from_bytes_be(e),
        }
    }

    pub fn fingerprint(&self) -> i64 {
        let mut w = Writer::new();
        w.bytes(&self.n.to_bytes_be()).bytes(&self.e.to_bytes_be());
        let h = sha1(&[&w.buf]);
        let mut low = [0u8; 8];
        low.copy_from_slice(&h[12..20]);
        i64::from_le_bytes(low)
    }

    /// Textbook RSA: m^e mod n, 256 bytes.
    pub fn encrypt_raw(&self, plain: &[u8]) -> Vec<u8> {
        let c = BigUint::from_bytes_be(plain).modpow(&self.e, &self.n);
        let b = c.to_bytes_be();
        let mut out = vec![0u8; 256usize.saturating_sub(b.len())];
        out.extend_from_slice(&b);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the random bytes drawn: blinding needs a fresh factor for every decryption.
    struct Counting(rand::rngs::ThreadRng, usize);

    impl rand::RngCore for Counting {
        fn next_u32(&mut self) -> u32 {
            self.1 += 4;
            self.0.next_u32()
        }
        fn next_u64(&mut self) -> u64 {
            self.1 += 8;
            self.0.next_u64()
        }
        fn fill_bytes(&mut self, dest: &mut [u8]) {
            self.1 += dest.len();
            self.0.fill_bytes(dest)
        }
        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
            self.1 += dest.len();
            self.0.try_fill_bytes(dest)
        }
    }
    impl rand::CryptoRng for Counting {}

    #[test]
    fn decryption_is_blinded_and_inverts_encryption() {
        let key = ServerKey::generate().unwrap();
        let public = key.public_key();
        let mut rng = Counting(rand::thread_rng(), 0);
        for i in 0..4u8 {
            let mut plain = [i; 256];
            plain[0] = 0;
            let cipher = public.encrypt_raw(&plain);
            let before = rng.1;
            assert_eq!(key.decrypt_raw_with(&mut rng, &cipher), Some(plain));
            assert!(rng.1 > before, "no blinding factor was drawn");
        }
        // c ≥ n, and more than 256 bytes, are refused.
        let (n, _) = key.public_numbers();
        assert_eq!(key.decrypt_raw(&n), None);
        assert_eq!(key.decrypt_raw(&[0xff; 256]), None);
        assert_eq!(key.decrypt_raw(&[1; 257]), None);
        // A key file written before (PKCS#1 PEM) loads and decrypts the same.
        let again = ServerKey::from_pem(&key.private_pem().unwrap()).unwrap();
        let cipher = public.encrypt_raw(&[7; 200]);
        assert_eq!(again.decrypt_raw(&cipher), key.decrypt_raw(&cipher));
    }
}
