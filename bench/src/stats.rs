//! Latency histograms (HdrHistogram, microseconds) and their summary.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency a histogram can hold (longer ones are clamped to it): 5 minutes.
const MAX_MICROS: u64 = 300_000_000;

/// One operation's latencies and outcome counts.
#[derive(Clone)]
pub struct Recorder {
    hist: Histogram<u64>,
    pub ok: u64,
    pub errors: u64,
    /// The first few error messages, for the report.
    pub first_errors: Vec<String>,
    /// The slowest calls of an open-loop stream and when they were due, to tell a tail made of
    /// one stall (slow calls due together) from one spread over the phase.
    pub slowest: Vec<SlowCall>,
}

/// One slow call of an open-loop stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlowCall {
    /// When it was due, in seconds from the phase's start.
    pub due_s: f64,
    pub ms: f64,
}

/// Slow calls kept per stream.
pub const SLOWEST_KEPT: usize = 5;

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    pub fn new() -> Self {
        // 3 significant digits over 1 µs .. 5 min; the bounds are constants, so this cannot fail.
        let hist = Histogram::new_with_bounds(1, MAX_MICROS, 3)
            .expect("constant histogram bounds are valid");
        Self {
            hist,
            ok: 0,
            errors: 0,
            first_errors: Vec::new(),
            slowest: Vec::new(),
        }
    }

    /// [`Recorder::record`] for a call due `due` after the phase's start, keeping the slowest.
    pub fn record_due(&mut self, due: Duration, latency: Duration, outcome: Result<(), String>) {
        self.record(latency, outcome);
        let call = SlowCall {
            due_s: round3(due.as_secs_f64()),
            ms: round3(latency.as_secs_f64() * 1000.0),
        };
        if self.slowest.len() < SLOWEST_KEPT {
            self.slowest.push(call);
        } else if let Some(least) = self
            .slowest
            .iter_mut()
            .min_by(|a, b| a.ms.total_cmp(&b.ms))
            .filter(|least| least.ms < call.ms)
        {
            *least = call;
        }
    }

    /// Records one call: its latency (successes and failures alike) and its outcome.
    pub fn record(&mut self, latency: Duration, outcome: Result<(), String>) {
        let micros = u64::try_from(latency.as_micros())
            .unwrap_or(MAX_MICROS)
            .clamp(1, MAX_MICROS);
        self.hist.saturating_record(micros);
        match outcome {
            Ok(()) => self.ok += 1,
            Err(e) => {
                self.errors += 1;
                if self.first_errors.len() < 5 {
                    self.first_errors.push(e);
                }
            }
        }
    }

    pub fn record_micros(&mut self, micros: u64) {
        self.hist.saturating_record(micros.clamp(1, MAX_MICROS));
        self.ok += 1;
    }

    pub fn merge(&mut self, other: &Recorder) {
        // Same bounds on both sides: adding cannot fail; if it did, the counts would be off, not UB.
        let _ = self.hist.add(&other.hist);
        self.ok += other.ok;
        self.errors += other.errors;
        for e in &other.first_errors {
            if self.first_errors.len() < 5 {
                self.first_errors.push(e.clone());
            }
        }
        self.slowest.extend_from_slice(&other.slowest);
        self.slowest.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        self.slowest.truncate(SLOWEST_KEPT);
    }

    pub fn summary(&self, elapsed: Duration) -> OpStats {
        let ms = |q: f64| self.hist.value_at_quantile(q) as f64 / 1000.0;
        let total = self.ok + self.errors;
        let secs = elapsed.as_secs_f64().max(1e-9);
        OpStats {
            count: total,
            ok: self.ok,
            errors: self.errors,
            elapsed_s: round3(secs),
            throughput_per_s: round1(self.ok as f64 / secs),
            mean_ms: round3(if total == 0 {
                0.0
            } else {
                self.hist.mean() / 1000.0
            }),
            p50_ms: round3(ms(0.50)),
            p90_ms: round3(ms(0.90)),
            p99_ms: round3(ms(0.99)),
            p999_ms: round3(ms(0.999)),
            max_ms: round3(self.hist.max() as f64 / 1000.0),
            first_errors: self.first_errors.clone(),
            slowest: {
                let mut slowest = self.slowest.clone();
                slowest.sort_by(|a, b| b.ms.total_cmp(&a.ms));
                slowest
            },
        }
    }
}

/// The summary of one operation in one phase, as the JSON report holds it.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct OpStats {
    pub count: u64,
    pub ok: u64,
    pub errors: u64,
    pub elapsed_s: f64,
    pub throughput_per_s: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_errors: Vec<String>,
    /// Open-loop phases: the slowest calls, slowest first, and when each was due.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowest: Vec<SlowCall>,
}

pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_open_loop_stream_keeps_its_slowest_calls_and_when_they_were_due() {
        let mut r = Recorder::new();
        for i in 0..100u64 {
            // Call 37 is the slowest, then 90, 12, 55, 3, 70; the rest take 1 ms.
            let ms = match i {
                37 => 90,
                90 => 80,
                12 => 70,
                55 => 60,
                3 => 50,
                70 => 40,
                _ => 1,
            };
            r.record_due(
                Duration::from_millis(i * 10),
                Duration::from_millis(ms),
                Ok(()),
            );
        }
        let s = r.summary(Duration::from_secs(1));
        let kept: Vec<(f64, f64)> = s.slowest.iter().map(|c| (c.ms, c.due_s)).collect();
        assert_eq!(
            kept,
            vec![
                (90.0, 0.37),
                (80.0, 0.9),
                (70.0, 0.12),
                (60.0, 0.55),
                (50.0, 0.03)
            ]
        );
    }

    #[test]
    fn percentiles_and_throughput() {
        let mut r = Recorder::new();
        for i in 1..=1000u64 {
            r.record(Duration::from_micros(i * 10), Ok(()));
        }
        r.record(Duration::from_millis(1), Err("boom".into()));
        let s = r.summary(Duration::from_secs(2));
        assert_eq!(s.ok, 1000);
        assert_eq!(s.errors, 1);
        assert_eq!(s.throughput_per_s, 500.0);
        assert!((s.p50_ms - 5.0).abs() < 0.05, "{}", s.p50_ms);
        assert!((s.p99_ms - 9.9).abs() < 0.05, "{}", s.p99_ms);
        assert_eq!(s.first_errors, vec!["boom".to_string()]);
    }
}
