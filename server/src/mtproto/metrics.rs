//! Counters of the MTProto front, rendered by `/metrics`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// How many distinct unknown constructors `/metrics` counts one by one; the rest are counted under
/// `other`. Bounds the memory (and the metric's cardinality) a client sending random constructor
/// ids can cause: a new client version needs a handful of new calls, not hundreds.
pub const MAX_UNKNOWN_CONSTRUCTORS: usize = 256;

#[derive(Debug, Default)]
pub struct MtprotoMetrics {
    /// Connections open now.
    pub connections: AtomicI64,
    pub connections_total: AtomicU64,
    pub auth_keys_created: AtomicU64,
    /// RPC calls served (answered with a result or an error).
    pub calls: AtomicU64,
    /// Calls answered with `rpc_error`.
    pub call_errors: AtomicU64,
    /// Connections closed for bad input: a malformed frame, an unknown key, an undecryptable
    /// packet, a refused handshake step.
    pub refused: AtomicU64,
    /// Calls refused with `INPUT_METHOD_INVALID` because a constructor in them is unknown.
    pub unknown_constructors: UnknownConstructors,
}

impl MtprotoMetrics {
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Calls that failed to decode, by the constructor id the decoder did not know.
#[derive(Debug, Default)]
pub struct UnknownConstructors {
    counts: Mutex<BTreeMap<u32, u64>>,
    /// Constructors beyond [`MAX_UNKNOWN_CONSTRUCTORS`].
    other: AtomicU64,
}

impl UnknownConstructors {
    pub fn count(&self, constructor: u32) {
        // Counting cannot leave the map half-updated, so a poisoned lock is still usable.
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(&constructor) {
            *n += 1;
        } else if counts.len() < MAX_UNKNOWN_CONSTRUCTORS {
            counts.insert(constructor, 1);
        } else {
            self.other.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `(label, count)` per constructor (`0x` and eight hex digits), then `other` if any.
    pub fn snapshot(&self) -> Vec<(String, u64)> {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let mut out: Vec<(String, u64)> = counts
            .iter()
            .map(|(id, n)| (format!("{id:#010x}"), *n))
            .collect();
        let other = self.other.load(Ordering::Relaxed);
        if other > 0 {
            out.push(("other".into(), other));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_constructors_are_capped_and_the_rest_counted_as_other() {
        let u = UnknownConstructors::default();
        u.count(0xdeadbeef);
        u.count(0xdeadbeef);
        assert_eq!(u.snapshot(), vec![("0xdeadbeef".to_string(), 2)]);
        for id in 1..MAX_UNKNOWN_CONSTRUCTORS as u32 {
            u.count(id);
        }
        // At the limit: every constructor has its own count.
        let s = u.snapshot();
        assert_eq!(s.len(), MAX_UNKNOWN_CONSTRUCTORS);
        assert!(s.iter().all(|(label, _)| label != "other"));
        // One past it: counted under `other`; known ones still count on their own.
        u.count(0x7000_0000);
        u.count(0x7000_0001);
        u.count(0xdeadbeef);
        let s = u.snapshot();
        assert_eq!(s.len(), MAX_UNKNOWN_CONSTRUCTORS + 1);
        assert_eq!(s.last(), Some(&("other".to_string(), 2)));
        assert!(s.contains(&("0xdeadbeef".to_string(), 3)));
        assert!(s.contains(&("0x00000001".to_string(), 1)));
    }
}
