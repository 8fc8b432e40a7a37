//! The handshake's proof of work: pq, a product of two primes below 2^32 the client factors.

use rand::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PqPair {
    pub p: u32,
    pub q: u32,
}

fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((a as u128 * b as u128) % m as u128) as u64
}

fn pow_mod(mut b: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1u64;
    b %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, b, m);
        }
        b = mul_mod(b, b, m);
        e >>= 1;
    }
    r
}

/// Deterministic Miller-Rabin for n < 2^32 (bases 2, 7, 61).
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 61] {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    let mut d = n - 1;
    let mut s = 0;
    while d.is_multiple_of(2) {
        d /= 2;
        s += 1;
    }
    'bases: for a in [2u64, 7, 61] {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

fn random_prime() -> u32 {
    let mut rng = rand::thread_rng();
    loop {
        let n = rng.gen_range(0x4000_0000u32..0x7fff_ffff) | 1;
        if is_prime(u64::from(n)) {
            return n;
        }
    }
}

impl PqPair {
    pub fn generate() -> Self {
        loop {
            let (a, b) = (random_prime(), random_prime());
            if a != b {
                return PqPair {
                    p: a.min(b),
                    q: a.max(b),
                };
            }
        }
    }

    pub fn pq(&self) -> u64 {
        u64::from(self.p) * u64::from(self.q)
    }

    /// pq as the handshake sends it: big-endian without leading zeros.
    pub fn pq_bytes(&self) -> Vec<u8> {
        strip(&self.pq().to_be_bytes())
    }

    /// Whether the client's p and q (big-endian bytes) are ours.
    pub fn matches(&self, p: &[u8], q: &[u8]) -> bool {
        strip(p) == strip(&u64::from(self.p).to_be_bytes())
            && strip(q) == strip(&u64::from(self.q).to_be_bytes())
    }
}

fn strip(b: &[u8]) -> Vec<u8> {
    let i = b.iter().position(|x| *x != 0).unwrap_or(b.len());
    b[i..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pq_is_a_product_of_two_primes() {
        let pair = PqPair::generate();
        assert!(is_prime(pair.p.into()) && is_prime(pair.q.into()));
        assert!(pair.p < pair.q);
        assert_eq!(pair.pq_bytes().len(), 8);
        assert!(pair.matches(&pair.p.to_be_bytes(), &pair.q.to_be_bytes()));
        assert!(!pair.matches(&pair.q.to_be_bytes(), &pair.p.to_be_bytes()));
        assert!(is_prime(4294967291) && !is_prime(4294967295));
    }
}
