//! A Prometheus histogram over fixed buckets, with atomics (observed from every device's writer
//! task, read by `/metrics`).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds in seconds: from a millisecond (same-host push) to ten seconds (a relay restart).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
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

    pub fn count(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
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
}
