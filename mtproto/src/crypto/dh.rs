//! Diffie-Hellman over the 2048-bit safe prime Telegram's servers use, with g = 3.

use rand::RngCore;
use rsa::BigUint;

pub const DH_G: i32 = 3;

/// The prime, big-endian.
pub const DH_PRIME: [u8; 256] = hex_prime();

const PRIME_HEX: &str = "c71caeb9c6b1c9048e6c522f70f13f73980d40238e3e21c14934d037563d930f\
48198a0aa7c14058229493d22530f4dbfa336f6e0ac925139543aed44cce7c3720fd51f69458705ac68cd4fe6b6b13ab\
dc9746512969328454f18faf8c595f642477fe96bb2a941d5bcd1d4ac8cc49880708fa9b378e3c4f3a9060bee67cf9a4\
a4a695811051907e162753b56b0f6b410dba74d8a84b2a14b3144e0ef1284754fd17ed950d5965b4b9dd46582db1178d\
169c6bc465b0d6ff9ca3928fef5b9ae4e418fc15e83ebea0f87fa9ff5eed70050ded2849f47bf959d956850ce929851f\
0d8115f635b105ee2e4e15d04b2454bf6f4fadf034b10403119cd8e3b92fcc5b";

const fn hex_prime() -> [u8; 256] {
    let s = PRIME_HEX.as_bytes();
    let mut out = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        out[i] = (nibble(s[2 * i]) << 4) | nibble(s[2 * i + 1]);
        i += 1;
    }
    out
}

const fn nibble(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => 0,
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DhError {
    #[error("g_b is out of the safe range")]
    GbOutOfRange,
}

/// The server's secret exponent `a` of one key exchange.
pub struct DhSecret {
    a: BigUint,
}

fn prime() -> BigUint {
    BigUint::from_bytes_be(&DH_PRIME)
}

/// `x` left-padded to 256 big-endian bytes.
fn be256(x: &BigUint) -> [u8; 256] {
    let b = x.to_bytes_be();
    let mut out = [0u8; 256];
    let n = b.len().min(256);
    out[256 - n..].copy_from_slice(&b[b.len() - n..]);
    out
}

/// Whether 2^(2048-64) ≤ x ≤ p − 2^(2048-64) (the range the protocol asks both sides to check).
fn in_safe_range(x: &BigUint) -> bool {
    let p = prime();
    let margin = BigUint::from(1u8) << (2048 - 64);
    x >= &margin && x <= &(&p - &margin)
}

impl DhSecret {
    /// A fresh 2048-bit exponent whose g_a is in the safe range.
    pub fn generate() -> Self {
        loop {
            let mut bytes = [0u8; 256];
            rand::thread_rng().fill_bytes(&mut bytes);
            let s = DhSecret {
                a: BigUint::from_bytes_be(&bytes),
            };
            if in_safe_range(&BigUint::from_bytes_be(&s.g_a())) {
                return s;
            }
        }
    }

    /// g^a mod p, big-endian.
    pub fn g_a(&self) -> [u8; 256] {
        be256(&BigUint::from(DH_G as u32).modpow(&self.a, &prime()))
    }

    /// The auth key g_b^a mod p, after checking g_b is in the safe range.
    pub fn shared(&self, g_b: &[u8]) -> Result<[u8; 256], DhError> {
        let gb = BigUint::from_bytes_be(g_b);
        if g_b.len() > 256 || !in_safe_range(&gb) {
            return Err(DhError::GbOutOfRange);
        }
        Ok(be256(&gb.modpow(&self.a, &prime())))
    }

    /// The client's side of the exchange (tests and tools): g_b and the shared key for g_a.
    pub fn client_side(g_a: &[u8]) -> ([u8; 256], [u8; 256]) {
        let b = DhSecret::generate();
        let key = be256(&BigUint::from_bytes_be(g_a).modpow(&b.a, &prime()));
        (b.g_a(), key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_agree() {
        let a = DhSecret::generate();
        let (g_b, client_key) = DhSecret::client_side(&a.g_a());
        assert_eq!(a.shared(&g_b).unwrap(), client_key);
        assert_eq!(a.shared(&[1]), Err(DhError::GbOutOfRange));
        assert_eq!(DH_PRIME[0], 0xc7);
        assert_eq!(DH_PRIME[255], 0x5b);
    }
}
