//! The report: JSON (everything) and a markdown table (the figures, ratios and targets) written
//! between `<!-- bench:begin -->` and `<!-- bench:end -->` of a document.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checks::Check;
use crate::explain::Plan;
use crate::stats::OpStats;

pub const BEGIN_MARKER: &str = "<!-- bench:begin -->";
pub const END_MARKER: &str = "<!-- bench:end -->";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Phase {
    /// Unique name, e.g. `send_inproc_c8`.
    pub name: String,
    /// What kind of phase: send_closed_inproc, send_closed_http, baseline_pgbench, send_open_loop,
    /// mixed, scale, commit_to_push, memory.
    pub group: String,
    /// The load: concurrency or rates, log size…
    pub params: Value,
    /// ok, skipped or failed.
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub ops: BTreeMap<String, OpStats>,
    pub wall_s: f64,
}

impl Phase {
    pub fn new(name: impl Into<String>, group: &str, params: Value) -> Self {
        Self {
            name: name.into(),
            group: group.to_string(),
            params,
            status: "ok".into(),
            note: None,
            ops: BTreeMap::new(),
            wall_s: 0.0,
        }
    }

    pub fn skipped(name: &str, group: &str, reason: &str) -> Self {
        Self {
            status: "skipped".into(),
            note: Some(reason.to_string()),
            ..Self::new(name, group, Value::Null)
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ratio {
    pub name: String,
    pub value: f64,
    pub numerator: f64,
    pub denominator: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Target {
    pub name: String,
    pub target: String,
    pub value: Option<f64>,
    /// None: not measured in this run (e.g. needs the relay).
    pub met: Option<bool>,
    pub note: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Machine {
    pub cpus: usize,
    pub cpu_model: String,
    pub memory_gib: f64,
    pub kernel: String,
    pub postgres: String,
    pub load_average_at_start: String,
    pub load_average_at_end: String,
}

impl Machine {
    pub fn probe() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
        let cpu_model = read("/proc/cpuinfo")
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .map(|r| r.trim_start_matches([' ', '\t', ':']).to_string())
            })
            .unwrap_or_default();
        let memory_gib = read("/proc/meminfo")
            .lines()
            .find_map(|l| {
                l.strip_prefix("MemTotal:")
                    .and_then(|r| r.split_whitespace().next()?.parse::<f64>().ok())
            })
            .map_or(0.0, |kb| (kb / 1024.0 / 1024.0 * 10.0).round() / 10.0);
        Self {
            cpus: std::thread::available_parallelism().map_or(0, usize::from),
            cpu_model,
            memory_gib,
            kernel: read("/proc/version")
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            postgres: String::new(),
            load_average_at_start: load_average(),
            load_average_at_end: String::new(),
        }
    }
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub started_at: String,
    pub wall_s: f64,
    pub quick: bool,
    pub machine: Machine,
    pub config: Value,
    /// Round trips of one send (BEGIN and COMMIT included), as the baseline script runs them.
    pub statements_per_send: usize,
    pub phases: Vec<Phase>,
    pub ratios: Vec<Ratio>,
    pub targets: Vec<Target>,
    pub checks: Vec<Check>,
    pub correctness_ok: bool,
    pub explain: Vec<Plan>,
}

impl Report {
    pub fn phase(&self, name: &str) -> Option<&Phase> {
        self.phases.iter().find(|p| p.name == name)
    }

    pub fn write_json(&self, path: &Path) -> anyhow::Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// The figures as markdown.
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let m = &self.machine;
        s.push_str(&format!(
            "Run {} ({}): {} CPUs ({}), {} GiB, {}; {}. Load average {} at the start, {} at the end. \
             {} users, {} s per phase, {} statements per send. Wall time {:.0} s.\n\n",
            self.started_at,
            if self.quick { "quick" } else { "full" },
            m.cpus,
            m.cpu_model,
            m.memory_gib,
            m.kernel,
            m.postgres,
            m.load_average_at_start,
            m.load_average_at_end,
            self.config["users"],
            self.config["duration_secs"],
            self.statements_per_send,
            self.wall_s
        ));
        s.push_str(
            "| phase | op | load | ok | errors | ops/s | p50 ms | p90 ms | p99 ms | p99.9 ms |\n",
        );
        s.push_str("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for p in &self.phases {
            let load = describe_params(&p.params);
            if p.status != "ok" {
                s.push_str(&format!(
                    "| {} | — | — | | | {} | | | | |\n",
                    p.name,
                    p.note.clone().unwrap_or_else(|| p.status.clone())
                ));
                continue;
            }
            for (op, st) in &p.ops {
                s.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} |\n",
                    p.name,
                    op,
                    load,
                    st.ok,
                    st.errors,
                    st.throughput_per_s,
                    st.p50_ms,
                    st.p90_ms,
                    st.p99_ms,
                    st.p999_ms
                ));
            }
        }
        s.push_str("\n**Ratios** (same run):\n\n| ratio | value | numerator | denominator |\n|---|---:|---:|---:|\n");
        for r in &self.ratios {
            s.push_str(&format!(
                "| {} | {:.2} | {:.1} | {:.1} |\n",
                r.name, r.value, r.numerator, r.denominator
            ));
        }
        s.push_str(
            "\n**Targets** (issue 3):\n\n| target | goal | measured | met |\n|---|---|---:|---|\n",
        );
        for t in &self.targets {
            let value = t.value.map_or("—".to_string(), |v| format!("{v:.2}"));
            let met = match t.met {
                Some(true) => "yes".to_string(),
                Some(false) => "**no**".to_string(),
                None if t.value.is_some() => format!("not judged: {}", t.note),
                None => format!("not measured: {}", t.note),
            };
            s.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                t.name, t.target, value, met
            ));
        }
        let failed: Vec<&Check> = self.checks.iter().filter(|c| !c.ok).collect();
        s.push_str(&format!(
            "\n**Correctness**: {} checks, {} failed{}.\n",
            self.checks.len(),
            failed.len(),
            if failed.is_empty() {
                " (pts dense, counters match the log, no duplicate, every message delivered after every phase; projections verify clean)"
                    .to_string()
            } else {
                format!(": {}", failed.iter().map(|c| format!("{} / {}: {}", c.phase, c.name, c.detail)).collect::<Vec<_>>().join("; "))
            }
        ));
        if !self.explain.is_empty() {
            let seq: Vec<String> = self
                .explain
                .iter()
                .filter(|p| p.seq_scan)
                .map(|p| format!("{} / {}", p.path, p.statement))
                .collect();
            s.push_str(&format!(
                "\n**Plans** (EXPLAIN ANALYZE on the largest log): {} hot-path statements, sequential scans: {}; slowest: {}.\n",
                self.explain.len(),
                if seq.is_empty() { "none".to_string() } else { seq.join(", ") },
                self.explain
                    .iter()
                    .max_by(|a, b| a.execution_ms.total_cmp(&b.execution_ms))
                    .map_or(String::new(), |p| format!("{} / {} {:.3} ms", p.path, p.statement, p.execution_ms))
            ));
        }
        s
    }

    /// Replaces the region between the markers of `path` (which must have both) with the figures.
    pub fn write_markdown(&self, path: &Path) -> anyhow::Result<()> {
        let doc =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let new = replace_region(&doc, &self.markdown())?;
        std::fs::write(path, new).with_context(|| format!("writing {}", path.display()))
    }
}

fn describe_params(v: &Value) -> String {
    match v {
        Value::Object(m) => m
            .iter()
            .filter(|(k, _)| k.as_str() != "command")
            .map(|(k, v)| match v {
                Value::Number(n) => format!("{k}={n}"),
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The byte offset of the first line that is exactly `marker` (prose may quote the markers).
fn marker_line(doc: &str, marker: &str) -> Option<usize> {
    let mut at = 0;
    for line in doc.split_inclusive('\n') {
        if line.trim_end() == marker {
            return Some(at);
        }
        at += line.len();
    }
    None
}

pub fn replace_region(doc: &str, body: &str) -> anyhow::Result<String> {
    replace_marked(doc, BEGIN_MARKER, END_MARKER, body)
}

/// Replaces the region between the lines `begin` and `end` (each alone on its line) with `body`.
pub fn replace_marked(doc: &str, begin: &str, end: &str, body: &str) -> anyhow::Result<String> {
    let (Some(b), Some(e)) = (marker_line(doc, begin), marker_line(doc, end)) else {
        bail!("the document has no {begin} … {end} region (each marker alone on its line)");
    };
    if e < b {
        bail!("{end} comes before {begin}");
    }
    Ok(format!(
        "{}{begin}\n{}\n{}",
        &doc[..b],
        body.trim_end(),
        &doc[e..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_region_is_replaced() {
        let doc = "# T\nquoted `<!-- bench:begin -->` in prose\n<!-- bench:begin -->\nold\n<!-- bench:end -->\nafter\n";
        let out = replace_region(doc, "new table\n").unwrap();
        assert_eq!(out, "# T\nquoted `<!-- bench:begin -->` in prose\n<!-- bench:begin -->\nnew table\n<!-- bench:end -->\nafter\n");
        assert!(replace_region("no markers", "x").is_err());
    }
}
