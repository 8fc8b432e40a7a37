//! The per-address limit on key exchanges started ([`super::limits::HANDSHAKES_PER_MINUTE`]): an
//! in-memory token bucket per IPv4 address or IPv6 /64, per process.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Instant;

use super::limits::{address_key, TRACKED_ADDRESSES};

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

pub struct HandshakeRate {
    per_minute: u32,
    tracked: usize,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

impl HandshakeRate {
    pub fn new(per_minute: u32) -> Self {
        Self::tracking(per_minute, TRACKED_ADDRESSES)
    }

    /// At most `tracked` addresses at once.
    fn tracking(per_minute: u32, tracked: usize) -> Self {
        Self {
            per_minute: per_minute.max(1),
            tracked: tracked.max(1),
            buckets: Mutex::default(),
        }
    }

    /// Whether `ip` may start one more key exchange at `now` (and counts it).
    pub fn allow(&self, ip: IpAddr, now: Instant) -> bool {
        let cap = f64::from(self.per_minute);
        let per_sec = cap / 60.0;
        let refill = |b: &Bucket| {
            (b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_sec).min(cap)
        };
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let key = address_key(ip);
        if !buckets.contains_key(&key) && buckets.len() >= self.tracked {
            // Full buckets say nothing a new one would not.
            buckets.retain(|_, b| refill(b) < cap);
            if buckets.len() >= self.tracked {
                return false;
            }
        }
        let b = buckets.entry(key).or_insert(Bucket {
            tokens: cap,
            at: now,
        });
        let tokens = refill(b);
        if tokens < 1.0 {
            return false;
        }
        *b = Bucket {
            tokens: tokens - 1.0,
            at: now,
        };
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn per_minute_at_the_limit_accepted_one_past_refused_then_refilled() {
        let rate = HandshakeRate::new(60);
        let t0 = Instant::now();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        for i in 0..60 {
            assert!(rate.allow(a, t0), "handshake {i}");
        }
        assert!(!rate.allow(a, t0), "the 61st within the minute");
        // Another address has its own bucket; so has another /64, not another host in the same.
        assert!(rate.allow("192.0.2.2".parse().unwrap(), t0));
        // One token back per second at 60 a minute.
        assert!(!rate.allow(a, t0 + Duration::from_millis(900)));
        assert!(rate.allow(a, t0 + Duration::from_millis(1100)));
        assert!(!rate.allow(a, t0 + Duration::from_millis(1200)));
        let v6 = HandshakeRate::new(1);
        assert!(v6.allow("2001:db8::1".parse().unwrap(), t0));
        assert!(!v6.allow("2001:db8::2".parse().unwrap(), t0));
        assert!(v6.allow("2001:db8:0:1::1".parse().unwrap(), t0));
    }

    #[test]
    fn at_most_the_tracked_addresses_refilled_ones_dropped_first() {
        let rate = HandshakeRate::tracking(2, 2);
        let t0 = Instant::now();
        let ip = |n: u8| IpAddr::from([198, 51, 100, n]);
        assert!(rate.allow(ip(1), t0));
        assert!(rate.allow(ip(2), t0));
        // Both buckets in use: a third address is refused ...
        assert!(!rate.allow(ip(3), t0));
        // ... until one has refilled (2 a minute: 30 s a token) and can be forgotten.
        assert!(rate.allow(ip(3), t0 + Duration::from_secs(31)));
        assert!(
            rate.allow(ip(2), t0 + Duration::from_secs(31)),
            "a forgotten address starts anew with a full bucket"
        );
    }
}
