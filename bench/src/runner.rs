//! Load generators.
//!
//! - Closed loop: `concurrency` workers, each issuing its next call as soon as the previous one
//!   answers. Measures the maximum throughput at that concurrency (latency is then queueing-bound).
//! - Open loop: calls are scheduled at fixed intended start times (rate r: the i-th at t0 + i/r),
//!   each runs in its own task whether or not earlier ones have answered, and latency is measured
//!   from the *intended* start. A stall therefore shows up in the latency of every call scheduled
//!   during it — no coordinated omission.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::stats::{OpStats, Recorder};

/// Runs `op(worker)` in `concurrency` closed loops for `duration`; answers the merged recording and
/// the wall time the phase took (up to the last call's answer).
pub async fn closed_loop<F, Fut>(
    concurrency: usize,
    duration: Duration,
    op: F,
) -> (Recorder, Duration)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let op = Arc::new(op);
    let start = Instant::now();
    let end = start + duration;
    let mut set = JoinSet::new();
    for worker in 0..concurrency.max(1) {
        let op = op.clone();
        set.spawn(async move {
            let mut rec = Recorder::new();
            while Instant::now() < end {
                let t = Instant::now();
                let outcome = op(worker).await;
                rec.record(t.elapsed(), outcome);
            }
            rec
        });
    }
    let mut total = Recorder::new();
    while let Some(r) = set.join_next().await {
        match r {
            Ok(rec) => total.merge(&rec),
            Err(e) => total.record(Duration::ZERO, Err(format!("worker panicked: {e}"))),
        }
    }
    (total, start.elapsed())
}

/// One stream of an open-loop phase: a name, a rate (calls per second) and the call.
#[derive(Clone)]
pub struct Stream {
    pub name: String,
    pub rate_per_s: f64,
    pub op: Arc<
        dyn Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
            + Send
            + Sync,
    >,
}

impl Stream {
    pub fn new<F, Fut>(name: &str, rate_per_s: f64, op: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), String>> + Send + 'static,
    {
        Self {
            name: name.to_string(),
            rate_per_s,
            op: Arc::new(move || Box::pin(op())),
        }
    }
}

/// How long each open-loop phase first runs its streams unmeasured. The first calls of a kind on a
/// server that never made them wait for what is done once (most likely the pools opening
/// connections and each preparing and planning its statements, generic plans over 16
/// partitions), and in `mixed` that stalled every call due in its first 0.1–0.3 s by up to 250 ms
/// (seen by `OpStats::slowest` on 2026-12-05): a start-up cost of the process, not the steady
/// state the phases measure (docs/performance.md, "What it measures").
pub const WARM_UP: Duration = Duration::from_secs(1);

/// Runs the streams for [`WARM_UP`] and forgets how it went.
pub async fn warm_up(streams: &[Stream]) {
    let _ = open_loop(streams.to_vec(), WARM_UP).await;
}

/// Runs every stream at its rate for `duration`, together; answers each stream's summary, in order.
/// The elapsed time of a stream is its scheduled span, so its throughput is what it achieved.
pub async fn open_loop(streams: Vec<Stream>, duration: Duration) -> Vec<(String, OpStats)> {
    let start = Instant::now() + Duration::from_millis(20);
    let mut dispatchers = Vec::new();
    for s in streams {
        dispatchers.push(tokio::spawn(async move {
            let rec = Arc::new(Mutex::new(Recorder::new()));
            let mut calls = JoinSet::new();
            if s.rate_per_s > 0.0 {
                let interval = Duration::from_secs_f64(1.0 / s.rate_per_s);
                let mut i: u32 = 0;
                loop {
                    let intended = start + interval * i;
                    if intended >= start + duration {
                        break;
                    }
                    tokio::time::sleep_until(intended).await;
                    let op = s.op.clone();
                    let rec = rec.clone();
                    calls.spawn(async move {
                        let outcome = op().await;
                        let latency = Instant::now().saturating_duration_since(intended);
                        if let Ok(mut r) = rec.lock() {
                            r.record_due(intended - start, latency, outcome);
                        }
                    });
                    // Reap finished calls as we go so the set does not grow with the phase.
                    while calls.try_join_next().is_some() {}
                    i = i.saturating_add(1);
                }
            }
            while calls.join_next().await.is_some() {}
            let total = rec.lock().map(|r| r.clone()).unwrap_or_default();
            (s.name, total.summary(duration))
        }));
    }
    let mut out = Vec::new();
    for d in dispatchers {
        if let Ok(r) = d.await {
            out.push(r);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn open_loop_measures_from_the_intended_start() {
        // One call takes 50 ms, at 100/s: calls overlap, none is delayed by another, so the
        // latency stays ~50 ms and about 20 calls run in 200 ms.
        let streams = vec![Stream::new("sleep", 100.0, || async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(())
        })];
        let out = open_loop(streams, Duration::from_millis(200)).await;
        let s = &out[0].1;
        assert!((19..=21).contains(&s.count), "{s:?}");
        assert!(s.p50_ms >= 49.0 && s.p50_ms < 70.0, "{s:?}");
    }

    #[tokio::test]
    async fn closed_loop_runs_every_worker() {
        let (rec, _) = closed_loop(4, Duration::from_millis(50), |_| async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Ok(())
        })
        .await;
        let s = rec.summary(Duration::from_millis(50));
        assert!(s.ok >= 16, "{s:?}");
        assert_eq!(s.errors, 0);
    }
}
