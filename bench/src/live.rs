//! The live-push and memory phases. They need a server process of their own and WebSocket
//! clients, so they are measured by `ptslog-bench-push` and `ptslog-bench-memory` (crate
//! `push-bench`), which `scripts/bench` runs first; their JSON figures are read here so that one
//! report holds every phase and every target.

use std::path::Path;

use serde_json::{json, Value};

use crate::report::Phase;
use crate::stats::OpStats;

/// Why a live phase has no figures.
pub const NOT_RUN: &str =
    "skipped: run scripts/bench (it runs scripts/bench-push and scripts/bench-memory first)";

/// The op name commit-to-push latencies are reported under.
pub const COMMIT_TO_PUSH: &str = "commitToPush";

fn read(dir: &Path, file: &str) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The commit-to-push phase of one mode from `push-<mode>.json` (see push-bench's `Figures`).
pub fn commit_to_push(dir: Option<&Path>, name: &str, mode_file: &str) -> Phase {
    let Some(f) = dir.and_then(|d| read(d, mode_file)) else {
        return Phase::skipped(name, "commit_to_push", NOT_RUN);
    };
    let num = |k: &str| f[k].as_f64().unwrap_or(0.0);
    let received = f["received"].as_u64().unwrap_or(0);
    let expected = f["expected"].as_u64().unwrap_or(0);
    let mut phase = Phase::new(
        name,
        "commit_to_push",
        json!({
            "send_rate_per_s": num("achieved_rate").round(),
            "relay_records_per_s": num("records_per_sec").round(),
        }),
    );
    phase.note = Some(format!(
        "from {mode_file}: {received}/{expected} pushes received, {} failed sends",
        f["send_errors"]
    ));
    let stats = OpStats {
        count: expected,
        ok: received,
        errors: expected.saturating_sub(received) + f["send_errors"].as_u64().unwrap_or(0),
        elapsed_s: 0.0,
        throughput_per_s: num("achieved_rate"),
        mean_ms: 0.0,
        p50_ms: num("p50_ms"),
        p90_ms: 0.0,
        p99_ms: num("p99_ms"),
        p999_ms: 0.0,
        max_ms: num("max_ms"),
        first_errors: Vec::new(),
        slowest: Vec::new(),
    };
    phase.ops.insert(COMMIT_TO_PUSH.to_string(), stats);
    phase
}

/// The memory phase from `memory.json`: its figures go in the phase's parameters.
pub fn memory(dir: Option<&Path>) -> Phase {
    let Some(f) = dir.and_then(|d| read(d, "memory.json")) else {
        return Phase::skipped("memory_10k_devices", "memory", NOT_RUN);
    };
    let mut phase = Phase::new("memory_10k_devices", "memory", f.clone());
    phase.note = Some(format!(
        "server RSS {:.1} MB idle, {:.1} MB with {} devices, peak {:.1} MB",
        f["rss_idle_mb"].as_f64().unwrap_or(0.0),
        f["rss_after_push_mb"].as_f64().unwrap_or(0.0),
        f["devices"],
        f["peak_rss_mb"].as_f64().unwrap_or(0.0)
    ));
    phase
}

/// The worst server RSS the memory phase saw, in MB.
pub fn worst_rss_mb(phase: &Phase) -> Option<f64> {
    ["rss_connected_mb", "rss_after_push_mb", "peak_rss_mb"]
        .iter()
        .filter_map(|k| phase.params[k].as_f64())
        .reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_of_the_live_benchmarks_become_phases() {
        let dir = std::env::temp_dir().join(format!("ptslog-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let push = json!({"mode": "in-process", "achieved_rate": 199.6, "send_errors": 0,
            "expected": 2000, "received": 1999, "p50_ms": 3.5, "p99_ms": 12.25, "max_ms": 40.0,
            "records_per_sec": 5100.0});
        std::fs::write(dir.join("push-in-process.json"), push.to_string()).expect("write");
        let mem = json!({"devices": 10000, "rss_idle_mb": 20.0, "rss_connected_mb": 150.0,
            "rss_after_push_mb": 160.0, "peak_rss_mb": 170.5});
        std::fs::write(dir.join("memory.json"), mem.to_string()).expect("write");

        let p = commit_to_push(Some(&dir), "commit_to_push_inproc", "push-in-process.json");
        assert_eq!(p.status, "ok");
        let stats = &p.ops[COMMIT_TO_PUSH];
        assert_eq!((stats.ok, stats.errors), (1999, 1));
        assert_eq!(stats.p99_ms, 12.25);
        let missing = commit_to_push(Some(&dir), "commit_to_push_kafka", "push-kafka.json");
        assert_eq!(missing.status, "skipped");
        assert_eq!(missing.note.as_deref(), Some(NOT_RUN));
        let m = memory(Some(&dir));
        assert_eq!(worst_rss_mb(&m), Some(170.5));
        assert_eq!(memory(None).status, "skipped");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
