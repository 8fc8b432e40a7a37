//! SRP-6a as Telegram's two-step verification does it (core.telegram.org/api/srp): the group
//! (Telegram's 2048-bit safe prime, g = 3), the server's public value B, and the check of a
//! client's proof M1. Pure math: randomness and storage come from the caller.
//!
//! The client derives x from the password (two salted SHA-256, PBKDF2-HMAC-SHA512 with 100000
//! iterations, SHA-256 again) and sends only the verifier v = g^x mod p when it sets a password;
//! the server keeps v and never sees the password or x.

use num_bigint::BigUint;
use sha2::{Digest, Sha256};
use thiserror::Error;

/// Bytes of p and of every number hashed (big-endian, left-padded with zeros).
pub const SIZE: usize = 256;

/// The generator Telegram's clients accept with [`PRIME`] without testing it (Telethon,
/// tdesktop: g in 3, 4, 5, 7).
pub const GENERATOR: u32 = 3;

/// Telegram's 2048-bit safe prime (core.telegram.org/api/srp; the one every official client
/// knows, so none of them runs its slow primality test on it). [`group_is_safe`] checks it.
pub const PRIME: [u8; SIZE] = [
    0xC7, 0x1C, 0xAE, 0xB9, 0xC6, 0xB1, 0xC9, 0x04, 0x8E, 0x6C, 0x52, 0x2F, 0x70, 0xF1, 0x3F, 0x73,
    0x98, 0x0D, 0x40, 0x23, 0x8E, 0x3E, 0x21, 0xC1, 0x49, 0x34, 0xD0, 0x37, 0x56, 0x3D, 0x93, 0x0F,
    0x48, 0x19, 0x8A, 0x0A, 0xA7, 0xC1, 0x40, 0x58, 0x22, 0x94, 0x93, 0xD2, 0x25, 0x30, 0xF4, 0xDB,
    0xFA, 0x33, 0x6F, 0x6E, 0x0A, 0xC9, 0x25, 0x13, 0x95, 0x43, 0xAE, 0xD4, 0x4C, 0xCE, 0x7C, 0x37,
    0x20, 0xFD, 0x51, 0xF6, 0x94, 0x58, 0x70, 0x5A, 0xC6, 0x8C, 0xD4, 0xFE, 0x6B, 0x6B, 0x13, 0xAB,
    0xDC, 0x97, 0x46, 0x51, 0x29, 0x69, 0x32, 0x84, 0x54, 0xF1, 0x8F, 0xAF, 0x8C, 0x59, 0x5F, 0x64,
    0x24, 0x77, 0xFE, 0x96, 0xBB, 0x2A, 0x94, 0x1D, 0x5B, 0xCD, 0x1D, 0x4A, 0xC8, 0xCC, 0x49, 0x88,
    0x07, 0x08, 0xFA, 0x9B, 0x37, 0x8E, 0x3C, 0x4F, 0x3A, 0x90, 0x60, 0xBE, 0xE6, 0x7C, 0xF9, 0xA4,
    0xA4, 0xA6, 0x95, 0x81, 0x10, 0x51, 0x90, 0x7E, 0x16, 0x27, 0x53, 0xB5, 0x6B, 0x0F, 0x6B, 0x41,
    0x0D, 0xBA, 0x74, 0xD8, 0xA8, 0x4B, 0x2A, 0x14, 0xB3, 0x14, 0x4E, 0x0E, 0xF1, 0x28, 0x47, 0x54,
    0xFD, 0x17, 0xED, 0x95, 0x0D, 0x59, 0x65, 0xB4, 0xB9, 0xDD, 0x46, 0x58, 0x2D, 0xB1, 0x17, 0x8D,
    0x16, 0x9C, 0x6B, 0xC4, 0x65, 0xB0, 0xD6, 0xFF, 0x9C, 0xA3, 0x92, 0x8F, 0xEF, 0x5B, 0x9A, 0xE4,
    0xE4, 0x18, 0xFC, 0x15, 0xE8, 0x3E, 0xBE, 0xA0, 0xF8, 0x7F, 0xA9, 0xFF, 0x5E, 0xED, 0x70, 0x05,
    0x0D, 0xED, 0x28, 0x49, 0xF4, 0x7B, 0xF9, 0x59, 0xD9, 0x56, 0x85, 0x0C, 0xE9, 0x29, 0x85, 0x1F,
    0x0D, 0x81, 0x15, 0xF6, 0x35, 0xB1, 0x05, 0xEE, 0x2E, 0x4E, 0x15, 0xD0, 0x4B, 0x24, 0x54, 0xBF,
    0x6F, 0x4F, 0xAD, 0xF0, 0x34, 0xB1, 0x04, 0x03, 0x11, 0x9C, 0xD8, 0xE3, 0xB9, 0x2F, 0xCC, 0x5B,
];

/// Telegram's rule for g^a and g^b: both n and p - n have at least 2048 - 64 bits, so neither is
/// close to 0 or p (core.telegram.org/api/srp, "checking for safety").
const MIN_DIFF_BITS: u64 = 2048 - 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum SrpError {
    /// `new_password_hash` is not a number in 1 < v < p - 1 of at most 256 bytes.
    #[error("the password verifier is out of range")]
    BadVerifier,
    /// The client's A is not a safe g^a (too long, or too close to 0 or p).
    #[error("the client's A is out of range")]
    BadA,
    /// M1 is not the proof of the stored password.
    #[error("the password proof does not match")]
    Mismatch,
}

fn prime() -> BigUint {
    BigUint::from_bytes_be(&PRIME)
}

/// `n` as 256 big-endian bytes (n < p, so it fits).
fn pad(n: &BigUint) -> [u8; SIZE] {
    let bytes = n.to_bytes_be();
    let mut out = [0u8; SIZE];
    out[SIZE - bytes.len()..].copy_from_slice(&bytes);
    out
}

fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn generator() -> BigUint {
    BigUint::from(GENERATOR)
}

/// k = H(p | g), the SRP-6a multiplier.
fn multiplier() -> BigUint {
    BigUint::from_bytes_be(&sha256(&[&PRIME, &pad(&generator())]))
}

fn safe_mod_exp(n: &BigUint, p: &BigUint) -> bool {
    n < p && n.bits() >= MIN_DIFF_BITS && (p - n).bits() >= MIN_DIFF_BITS
}

/// Equal without an early exit on the first differing byte (a wrong M1 must not tell how much
/// of it was right).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// v = g^x mod p, as the client sent it in `new_password_hash`: 1 < v < p - 1.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier([u8; SIZE]);

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not secret like a password, but an offline guessing target: kept out of logs.
        f.write_str("Verifier(..)")
    }
}

impl Verifier {
    pub fn parse(bytes: &[u8]) -> Result<Self, SrpError> {
        if bytes.len() > SIZE {
            return Err(SrpError::BadVerifier);
        }
        let v = BigUint::from_bytes_be(bytes);
        let p = prime();
        if v <= BigUint::from(1u8) || v >= &p - 1u8 {
            return Err(SrpError::BadVerifier);
        }
        Ok(Self(pad(&v)))
    }

    /// The verifier for x (what a client computes from the password; tests and tools only, the
    /// server never knows x).
    pub fn from_x(x: &[u8]) -> Self {
        Self(pad(
            &generator().modpow(&BigUint::from_bytes_be(x), &prime())
        ))
    }

    pub fn as_bytes(&self) -> &[u8; SIZE] {
        &self.0
    }
}

/// The server's half of one exchange: its secret b and public B = k·v + g^b mod p.
#[derive(Clone)]
pub struct ServerExchange {
    b: [u8; SIZE],
    public: [u8; SIZE],
}

impl ServerExchange {
    /// The exchange for secret `b` (256 random bytes; kept server-side between account.getPassword
    /// and the check, B recomputed from it); `None` when g^b or B falls outside the
    /// safe range (about 1 in 2^63): draw another b.
    pub fn new(v: &Verifier, b: [u8; SIZE]) -> Option<Self> {
        let p = prime();
        let g_b = generator().modpow(&BigUint::from_bytes_be(&b), &p);
        let public = (multiplier() * BigUint::from_bytes_be(&v.0) + &g_b) % &p;
        (safe_mod_exp(&g_b, &p) && safe_mod_exp(&public, &p)).then(|| Self {
            b,
            public: pad(&public),
        })
    }

    /// B, sent as `srp_B`.
    pub fn public(&self) -> &[u8; SIZE] {
        &self.public
    }

    /// b, kept server-side until the exchange is used or expires.
    pub fn secret(&self) -> &[u8; SIZE] {
        &self.b
    }

    /// Checks the client's `A` and `M1` against verifier `v` and the salts it was made with:
    /// S = (A·v^u)^b mod p, K = H(S), M1 = H(H(p) xor H(g) | H(salt1) | H(salt2) | A | B | K).
    pub fn verify(
        &self,
        v: &Verifier,
        salt1: &[u8],
        salt2: &[u8],
        a: &[u8],
        m1: &[u8],
    ) -> Result<(), SrpError> {
        let p = prime();
        if a.len() > SIZE {
            return Err(SrpError::BadA);
        }
        let a_num = BigUint::from_bytes_be(a);
        if !safe_mod_exp(&a_num, &p) {
            return Err(SrpError::BadA);
        }
        let a_pad = pad(&a_num);
        let u = BigUint::from_bytes_be(&sha256(&[&a_pad, &self.public]));
        if u == BigUint::ZERO {
            return Err(SrpError::BadA);
        }
        let v_num = BigUint::from_bytes_be(&v.0);
        let base = (a_num * v_num.modpow(&u, &p)) % &p;
        let s = base.modpow(&BigUint::from_bytes_be(&self.b), &p);
        let expected = proof(salt1, salt2, &a_pad, &self.public, &pad(&s));
        if constant_time_eq(&expected, m1) {
            Ok(())
        } else {
            Err(SrpError::Mismatch)
        }
    }
}

fn proof(salt1: &[u8], salt2: &[u8], a: &[u8; SIZE], b: &[u8; SIZE], s: &[u8; SIZE]) -> [u8; 32] {
    let hp = sha256(&[&PRIME]);
    let hg = sha256(&[&pad(&generator())]);
    let mut x = [0u8; 32];
    for (i, byte) in x.iter_mut().enumerate() {
        *byte = hp[i] ^ hg[i];
    }
    let k = sha256(&[s]);
    sha256(&[&x, &sha256(&[salt1]), &sha256(&[salt2]), a, b, &k])
}

/// The client's side (A, M1) for x, secret `a` and the server's `B`, as Telegram's clients
/// compute it; `None` when A is unsafe or g^b = B - k·v is (draw another a). Tests and tools
/// only: the server never runs it.
pub fn client_proof(
    x: &[u8],
    a: &[u8; SIZE],
    salt1: &[u8],
    salt2: &[u8],
    server_b: &[u8; SIZE],
) -> Option<([u8; SIZE], [u8; 32])> {
    let p = prime();
    let g = generator();
    let x = BigUint::from_bytes_be(x);
    let a_secret = BigUint::from_bytes_be(a);
    let a_pub = g.modpow(&a_secret, &p);
    if !safe_mod_exp(&a_pub, &p) {
        return None;
    }
    let a_pad = pad(&a_pub);
    let u = BigUint::from_bytes_be(&sha256(&[&a_pad, server_b]));
    let b_num = BigUint::from_bytes_be(server_b);
    let kv = (multiplier() * g.modpow(&x, &p)) % &p;
    let g_b = ((&b_num + &p) - kv) % &p;
    if !safe_mod_exp(&g_b, &p) || u == BigUint::ZERO {
        return None;
    }
    let s = g_b.modpow(&(a_secret + u * x), &p);
    Some((a_pad, proof(salt1, salt2, &a_pad, server_b, &pad(&s))))
}

/// Telegram's validity rules for a group (p, g) a client is given (core.telegram.org/api/srp,
/// "Checking for safety"): p a 2048-bit safe prime ((p - 1) / 2 prime too) and g a quadratic
/// residue generating the subgroup of order (p - 1) / 2, which is the rule on p mod 8, 3, 5, 24
/// or 7 for g = 2 to 7. Primality is Miller–Rabin with the first `rounds` primes as bases.
pub fn group_is_safe(p: &[u8], g: u32, rounds: usize) -> bool {
    let p = BigUint::from_bytes_be(p);
    if p.bits() != 2048 {
        return false;
    }
    let m = |n: u32| (&p % n).to_u32_digits().first().copied().unwrap_or(0);
    let g_ok = match g {
        2 => m(8) == 7,
        3 => m(3) == 2,
        4 => true,
        5 => matches!(m(5), 1 | 4),
        6 => matches!(m(24), 19 | 23),
        7 => matches!(m(7), 3 | 5 | 6),
        _ => false,
    };
    g_ok && probably_prime(&p, rounds) && probably_prime(&((&p - 1u8) >> 1), rounds)
}

fn probably_prime(n: &BigUint, rounds: usize) -> bool {
    const BASES: [u32; 16] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53];
    let one = BigUint::from(1u8);
    let n_1 = n - &one;
    let s = n_1.trailing_zeros().unwrap_or(0);
    let d = &n_1 >> s;
    BASES.iter().take(rounds).all(|&base| {
        let mut x = BigUint::from(base).modpow(&d, n);
        if x == one || x == n_1 {
            return true;
        }
        for _ in 1..s {
            x = x.modpow(&BigUint::from(2u8), n);
            if x == n_1 {
                return true;
            }
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn array(s: &str) -> [u8; SIZE] {
        unhex(s).try_into().unwrap()
    }

    /// Made with Telethon 1.45.0's own client code (telethon.password.compute_digest and
    /// compute_check, `os.urandom` fixed) for the password "pw1", salt1 = 01..28 (40 bytes),
    /// salt2 = a0..af, b = SHA-512("server b") x 4, a = SHA-512("client a") x 4; B computed in
    /// Python as (k·v + g^b) mod p. Printed by tests/mtproto/srp_vector.py.
    const TV_V: &str = concat!(
        "4c53f906d44c0a14165d0745e8f9a6e001d8d671b243c8b5371a66f7f6c4d5e5",
        "698643c86cc47416e97bad14a4c14f01a07d6f755ff852d1b0a762d69ee927f4",
        "3469d16f44b89455e3f06a2128f211ca4a11ed5ec739324db4038690c7fca8a1",
        "5db9ec161516e446bac9d5668e0c5ad308588cd46a76cdfcf6b645cd14d5a313",
        "0d2282eba9ce4e25d8e6fb491183747612a8d4944cc538bd5fd0006a304d7675",
        "377043f987edabc87b5830b409a677d1edba4d8f64e3bfd8a564b84fa97bff4d",
        "3121240d905e777ea183d396b5c958d2281d1281e78c8316485d28ddf4f7796c",
        "d6b10c08d334a9bf1b16820a60adadb441393d844ed7a156798f0997f8c4a13a"
    );
    const TV_SECRET_B: &str = concat!(
        "6456ab28c6d8f075679b3a7eaf2eeea0d40122e3309422bba700a3a79d116a8f",
        "2c23af9914f182b01bd2f77ef9d0e1887a24687fe00877d95a2f368bb1970393",
        "6456ab28c6d8f075679b3a7eaf2eeea0d40122e3309422bba700a3a79d116a8f",
        "2c23af9914f182b01bd2f77ef9d0e1887a24687fe00877d95a2f368bb1970393",
        "6456ab28c6d8f075679b3a7eaf2eeea0d40122e3309422bba700a3a79d116a8f",
        "2c23af9914f182b01bd2f77ef9d0e1887a24687fe00877d95a2f368bb1970393",
        "6456ab28c6d8f075679b3a7eaf2eeea0d40122e3309422bba700a3a79d116a8f",
        "2c23af9914f182b01bd2f77ef9d0e1887a24687fe00877d95a2f368bb1970393"
    );
    const TV_B: &str = concat!(
        "5a8ca1f0d5e6fe8e02bde7e15a2397d117ee84b448c5997d5b7704c498fb0d85",
        "9af314c24ff371298ffc29a2ff5f8d3dc0be07af1f782b883dd0f9395d91c5e0",
        "4a710087d6d80bc6c0fff2e4bc494a03361c16bf86409d78e9fd05a8c875a28b",
        "64461d4e18c7c897ceedfc8fe50baebcd4ad9636854294718cdf11b591d13a2c",
        "11964925796be3786a532e36f37cf3a767fbcbc229c2af3899c699b1402806ba",
        "ad34cf3d2d00036ed5a1844e8aef55b8a04864310bb455792765dfd57798171d",
        "4c9770fe1f947b602888e870044d624b38a64ccb76873ebb04a4987459649ffb",
        "61373bf05a69768e401ca79619a6fea3240bde8c42801b8c658f052f80797250"
    );
    const TV_A: &str = concat!(
        "b56e6668a9bd15fada885c638bd043ca3512cf770038f049f61b87b71fd94783",
        "b026b288474ca391ce03a72ca9c5758ae1bbd8c05c4bb99aa9641dc48079eb44",
        "77da0ab16673a35d1e4fa9943db40b89c5580e684c8cfc61926c55b75eb49787",
        "3b1be918fde3bfaa6556a536e2d7cf5209d251c217d360d73ab0bc6ac9311f5f",
        "2392649db4b190aa82182c5cc93d98cd67153881c1a21757b00ef5fc36716dd8",
        "9adcdbb334c4f1ed650e4d926de95241dd6a8be6566f199803faecbfdec96b0b",
        "04f3f0936beadc6fe3b776c608e56c5befef2162c21d1c236cbcd4e07a426a68",
        "0f916555886b99432d77d5a6d0d3dc970069cdb0839671f31cc7d1d501e7ef83"
    );
    const TV_M1: &str = "fc1c7bd56658768687c058027a5f4c48745c7c730f7cdf947a3ea77f98fe5333";

    fn salts() -> (Vec<u8>, Vec<u8>) {
        ((1..=40).collect(), (0xa0..0xb0).collect())
    }

    #[test]
    fn telethon_client_proof_verifies() {
        let (salt1, salt2) = salts();
        let v = Verifier::parse(&unhex(TV_V)).unwrap();
        let exchange = ServerExchange::new(&v, array(TV_SECRET_B)).unwrap();
        assert_eq!(exchange.public(), &array(TV_B));
        let (a, m1) = (unhex(TV_A), unhex(TV_M1));
        assert_eq!(exchange.verify(&v, &salt1, &salt2, &a, &m1), Ok(()));
        let mut wrong = m1.clone();
        wrong[31] ^= 1;
        assert_eq!(
            exchange.verify(&v, &salt1, &salt2, &a, &wrong),
            Err(SrpError::Mismatch)
        );
        assert_eq!(
            exchange.verify(&v, &salt2, &salt1, &a, &m1),
            Err(SrpError::Mismatch)
        );
        // Another exchange (another b) does not accept a proof made for this one.
        let other = ServerExchange::new(&v, [7u8; SIZE]).unwrap();
        assert_eq!(
            other.verify(&v, &salt1, &salt2, &a, &m1),
            Err(SrpError::Mismatch)
        );
    }

    #[test]
    fn client_and_server_agree_only_on_the_same_x() {
        let (salt1, salt2) = salts();
        let v = Verifier::from_x(&[0x42; 32]);
        let exchange = ServerExchange::new(&v, [0x35; SIZE]).unwrap();
        let (a, m1) = client_proof(
            &[0x42; 32],
            &[0x99; SIZE],
            &salt1,
            &salt2,
            exchange.public(),
        )
        .unwrap();
        assert_eq!(exchange.verify(&v, &salt1, &salt2, &a, &m1), Ok(()));
        let (a, m1) = client_proof(
            &[0x43; 32],
            &[0x99; SIZE],
            &salt1,
            &salt2,
            exchange.public(),
        )
        .unwrap();
        assert_eq!(
            exchange.verify(&v, &salt1, &salt2, &a, &m1),
            Err(SrpError::Mismatch)
        );
    }

    #[test]
    fn verifier_and_a_bounds() {
        let p = prime();
        let bytes = |n: &BigUint| n.to_bytes_be();
        assert_eq!(Verifier::parse(&[1]), Err(SrpError::BadVerifier));
        assert!(Verifier::parse(&[2]).is_ok());
        assert!(Verifier::parse(&bytes(&(&p - 2u8))).is_ok());
        assert_eq!(
            Verifier::parse(&bytes(&(&p - 1u8))),
            Err(SrpError::BadVerifier)
        );
        assert_eq!(Verifier::parse(&PRIME), Err(SrpError::BadVerifier));
        let mut long = vec![0u8];
        long.extend_from_slice(&pad(&BigUint::from(5u8)));
        assert_eq!(Verifier::parse(&long), Err(SrpError::BadVerifier));

        let v = Verifier::from_x(&[1; 32]);
        let exchange = ServerExchange::new(&v, [3; SIZE]).unwrap();
        let m1 = [0u8; 32];
        // A too close to 0 or to p, or longer than 256 bytes, is refused before any math.
        // 2^(n-1) has n bits: `low` is one bit short, `ok` just long enough.
        let low = BigUint::from(1u8) << (MIN_DIFF_BITS - 2);
        let high = &p - &low;
        for a in [
            bytes(&BigUint::from(1u8)),
            bytes(&low),
            bytes(&high),
            vec![0xff; SIZE + 1],
        ] {
            assert_eq!(exchange.verify(&v, &[], &[], &a, &m1), Err(SrpError::BadA));
        }
        let ok = BigUint::from(1u8) << (MIN_DIFF_BITS - 1);
        assert_eq!(
            exchange.verify(&v, &[], &[], &bytes(&ok), &m1),
            Err(SrpError::Mismatch)
        );
    }

    #[test]
    fn telegrams_group_passes_the_safety_rules() {
        assert!(group_is_safe(&PRIME, GENERATOR, 8));
        // p mod 8 is 3, so 2 does not generate the prime-order subgroup; 9 is not allowed.
        assert!(!group_is_safe(&PRIME, 2, 8));
        assert!(!group_is_safe(&PRIME, 9, 8));
        let mut not_prime = PRIME;
        // p + 6 keeps p mod 3 = 2 (the g rule holds), so only primality refuses it.
        not_prime[SIZE - 1] = not_prime[SIZE - 1].wrapping_add(6);
        assert!(!group_is_safe(&not_prime, GENERATOR, 8));
        assert!(!group_is_safe(&PRIME[1..], GENERATOR, 8));
    }
}
