//! The benchmark's smoke run, so it cannot rot: the quick mode, in process, against the test
//! Postgres (PTSLOG_TEST_DATABASE_URL), in a few seconds. Every phase must be in the report and
//! every correctness check must hold.

use std::time::Duration;

use ptslog_bench::{live, run, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quick_run_has_every_phase_and_stays_correct() {
    let out = std::env::temp_dir().join(format!("ptslog-bench-smoke-{}.json", std::process::id()));
    let opts = Options {
        concurrency: vec![2],
        duration: Duration::from_millis(500),
        scale: vec![1_000, 3_000],
        out: Some(out.clone()),
        markdown: None,
        verbose: false,
        ..Options::quick()
    };
    let report = run(opts).await.expect("the quick benchmark runs");
    let failed: Vec<String> = report
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| format!("{} / {}: {}", c.phase, c.name, c.detail))
        .collect();
    assert!(failed.is_empty(), "correctness checks failed: {failed:?}");
    assert!(report.correctness_ok);
    assert!(
        report
            .checks
            .iter()
            .any(|c| c.name == "projections verify" && c.phase == "main"),
        "verify ran on the main database"
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("JSON written"))
            .expect("valid JSON");
    let _ = std::fs::remove_file(&out);
    let phases = json["phases"].as_array().expect("phases");
    let phase = |name: &str| {
        phases
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("phase {name} missing: {json}"))
    };
    for name in [
        "send_inproc_c2",
        "send_http_c2",
        "pgbench_c2",
        "send_open_loop",
        "latency_half_max",
        "mixed",
        "scale_1k",
        "scale_3k",
        "reads_messages_getHistory",
        "reads_messages_getHistory_pgbench",
        "reads_updates_getDifference",
        "reads_updates_getDifference_pgbench",
        "reads_messages_getDialogs",
        "reads_messages_getDialogs_pgbench",
        "reads_messages_getMessages",
        "reads_messages_getMessages_pgbench",
        "reads_messages_getHistory_mtproto",
        "reads_updates_getDifference_mtproto",
        "reads_messages_getDialogs_mtproto",
        "reads_messages_getMessages_mtproto",
    ] {
        let p = phase(name);
        assert_eq!(p["status"], "ok", "{name}: {p}");
        for (op, st) in p["ops"].as_object().expect("ops") {
            assert!(
                st["ok"].as_u64().unwrap_or(0) > 0,
                "{name}/{op} made no successful call: {st}"
            );
            assert_eq!(st["errors"], 0, "{name}/{op} had errors: {st}");
            for q in ["p50_ms", "p90_ms", "p99_ms", "p999_ms", "throughput_per_s"] {
                assert!(
                    st[q].as_f64().is_some_and(|v| v > 0.0),
                    "{name}/{op}.{q}: {st}"
                );
            }
        }
    }
    let mixed_ops: Vec<&String> = phase("mixed")["ops"]
        .as_object()
        .expect("ops")
        .keys()
        .collect();
    for op in [
        "sendMessage",
        "getDifference",
        "getHistory",
        "getDialogs",
        "readHistory",
        "editMessage",
        "deleteMessages",
    ] {
        assert!(
            mixed_ops.iter().any(|o| *o == op),
            "mixed lacks {op}: {mixed_ops:?}"
        );
    }
    for name in [
        "commit_to_push_inproc",
        "commit_to_push_kafka",
        "memory_10k_devices",
    ] {
        let p = phase(name);
        assert_eq!(p["status"], "skipped");
        assert_eq!(p["note"], live::NOT_RUN);
    }
    // The sends' four, each read's HTTP / pgbench of its SQL and its MTProto / HTTP; then the
    // media phase's.
    let (media_ratios, others): (Vec<&serde_json::Value>, Vec<&serde_json::Value>) = json["ratios"]
        .as_array()
        .expect("ratios")
        .iter()
        .partition(|r| r["name"].as_str().is_some_and(|n| n.starts_with("media ")));
    assert_eq!(
        others.len(),
        12,
        "in-process and HTTP ratios to pgbench, MTProto to HTTP: {}",
        json["ratios"]
    );
    assert!(media_ratios.len() >= 5, "media ratios: {media_ratios:?}");
    // The MTProto phases: signed-in connections (each call's answer was checked to be one of
    // its function's constructors, or it counts as an error above), the server's CPU measured.
    for op in ["getHistory", "getDifference", "getDialogs", "getMessages"] {
        let p = phases
            .iter()
            .find(|p| {
                p["group"] == "reads_mtproto"
                    && p["ops"]
                        .as_object()
                        .is_some_and(|o| o.keys().any(|k| k.starts_with(op)))
            })
            .unwrap_or_else(|| panic!("no MTProto phase of {op}"));
        let params = &p["params"];
        assert!(
            params["connections"]
                .as_u64()
                .is_some_and(|n| n >= params["concurrency"].as_u64().unwrap_or(u64::MAX)),
            "{p}"
        );
        assert!(
            params["server_cpu_us_per_op"]
                .as_f64()
                .is_some_and(|us| us > 0.0),
            "{p}"
        );
        let ratio = json["ratios"]
            .as_array()
            .and_then(|r| {
                r.iter().find(|r| {
                    r["name"]
                        .as_str()
                        .is_some_and(|n| n.starts_with(op) && n.contains("MTProto / HTTP"))
                })
            })
            .unwrap_or_else(|| panic!("no MTProto / HTTP ratio of {op}"));
        assert!(ratio["value"].as_f64().is_some_and(|v| v > 0.0), "{ratio}");
    }
    let media = phase("media");
    assert_eq!(media["status"], "ok", "{media}");
    assert!(
        media["params"]["transfers"]
            .as_array()
            .is_some_and(|t| t.len() >= 4),
        "{media}"
    );
    assert!(json["targets"].as_array().is_some_and(|t| !t.is_empty()));
    let plans = json["explain"].as_array().expect("explain");
    assert!(
        plans.len() >= 15,
        "every hot-path statement explained: {}",
        plans.len()
    );
    assert!(report.markdown().contains("| mixed | getHistory |"));
}
