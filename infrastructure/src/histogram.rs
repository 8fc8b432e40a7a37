//! A Prometheus histogram over fixed buckets, with atomics (observed from every device's writer
//! task or the relay, read by `/metrics` and the push benchmark).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds in seconds: from a millisecond (same-host push) to ten seconds (a relay restart).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Finer bounds for the stages of one push (commit to the relay's read, the sink's
/// acknowledgement, the gateway's receipt), whose sum must stay under 50 ms.
pub const STAGE_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15,
    0.25, 0.5, 1.0, 2.5, 10.0,
];

#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bucket plus one for +Inf, not cumulative.
    counts: Vec<AtomicU64>,
    sum_micros: AtomicU64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn observe_micros(&self, micros: u64) {
        let seconds = micros as f64 / 1e6;
        let i = self
            .bounds
            .iter()
            .position(|&b| seconds <= b)
            .unwrap_or(self.bounds.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// The time from a commit (unix µs) to now. Another host's clock may be a little ahead; a
    /// negative latency counts as zero.
    pub fn observe_since(&self, committed_at_micros: i64) {
        let now = chrono::Utc::now().timestamp_micros();
        self.observe_micros(u64::try_from(now - committed_at_micros).unwrap_or(0));
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    pub fn bounds(&self) -> &'static [f64] {
        self.bounds
    }

    /// The per-bucket counts (not cumulative; the last is +Inf), so that a reader can subtract
    /// two snapshots to get one window's histogram.
    pub fn counts(&self) -> Vec<u64> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// `name_bucket{le=…}` lines (cumulative), `name_sum` and `name_count`.
    pub fn render(&self, out: &mut String, name: &str) {
        let mut cumulative = 0;
        for (i, count) in self.counts.iter().enumerate() {
            cumulative += count.load(Ordering::Relaxed);
            let le = self
                .bounds
                .get(i)
                .map(|b| b.to_string())
                .unwrap_or_else(|| "+Inf".into());
            let _ = writeln!(out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
        }
        let _ = writeln!(
            out,
            "{name}_sum {}",
            self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "{name}_count {cumulative}");
    }
}

/// The upper bound (seconds) of the bucket that holds quantile `q` of `counts` (as
/// [`Histogram::counts`] gives them for `bounds`): an upper estimate, as Prometheus's
/// `histogram_quantile` without its interpolation. `None` for no observations; infinity when the
/// quantile lies past the last bound.
pub fn quantile_bound(bounds: &[f64], counts: &[u64], q: f64) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    // The rank of the quantile, 1-based: the smallest count whose share reaches q.
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut cumulative = 0;
    for (i, count) in counts.iter().enumerate() {
        cumulative += count;
        if cumulative >= rank {
            return Some(bounds.get(i).copied().unwrap_or(f64::INFINITY));
        }
    }
    Some(f64::INFINITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_inf_catches_the_rest() {
        let h = Histogram::new(&[0.001, 0.01]);
        h.observe_micros(500);
        h.observe_micros(1_000);
        h.observe_micros(5_000);
        h.observe_micros(60_000_000);
        let mut out = String::new();
        h.render(&mut out, "x");
        assert_eq!(out, "x_bucket{le=\"0.001\"} 2\nx_bucket{le=\"0.01\"} 3\nx_bucket{le=\"+Inf\"} 4\nx_sum 60.0065\nx_count 4\n");
        assert_eq!(h.count(), 4);
    }

    #[test]
    fn quantile_bound_is_the_bucket_that_reaches_the_rank() {
        let bounds = [0.001, 0.01, 0.1];
        assert_eq!(quantile_bound(&bounds, &[0, 0, 0, 0], 0.5), None);
        // 98 fast, 1 middling, 1 slow: p50 and p98 in the first bucket, p99 in the second,
        // p100 in the third.
        let counts = [98, 1, 1, 0];
        assert_eq!(quantile_bound(&bounds, &counts, 0.5), Some(0.001));
        assert_eq!(quantile_bound(&bounds, &counts, 0.98), Some(0.001));
        assert_eq!(quantile_bound(&bounds, &counts, 0.99), Some(0.01));
        assert_eq!(quantile_bound(&bounds, &counts, 1.0), Some(0.1));
        assert_eq!(
            quantile_bound(&bounds, &[0, 0, 0, 3], 0.5),
            Some(f64::INFINITY)
        );
        let h = Histogram::new(&[0.001, 0.01]);
        h.observe_micros(2_000);
        assert_eq!(h.counts(), vec![0, 1, 0]);
        assert_eq!(h.bounds(), &[0.001, 0.01]);
    }
}
