//! `/metrics` in the Prometheus text format (hand-rolled: a handful of counters does not need a
//! registry). Rates (records produced per second, pushes per second) are `rate()` of the counters.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use infrastructure::relay::Role;
use projections::status::{ProjectionStatus, RebuildState};

use crate::http::ops::Ops;

fn metric(out: &mut String, name: &str, kind: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
    );
}

pub fn render(ops: &Ops) -> String {
    let mut out = String::new();
    let relay = &ops.relay;
    let role = relay.role();
    metric(
        &mut out,
        "ptslog_relay_leader",
        "gauge",
        "1 while this process's relay holds the leader lock and streams.",
        u8::from(role == Role::Leader),
    );
    metric(
        &mut out,
        "ptslog_relay_failed",
        "gauge",
        "1 while the relay cannot run as configured (see /healthz/relay).",
        u8::from(role == Role::Failed),
    );
    metric(&mut out, "ptslog_relay_lag_bytes", "gauge", "WAL bytes between the newest position Postgres reported and the relay's confirmed position.", relay.lag_bytes());
    metric(&mut out, "ptslog_relay_lag_seconds", "gauge", "Age of the oldest committed transaction the relay read but the sink has not yet acknowledged.", relay.lag_seconds());
    metric(
        &mut out,
        "ptslog_relay_confirmed_lsn",
        "gauge",
        "The WAL position (as a number) confirmed to the replication slot.",
        relay.confirmed_lsn().as_u64(),
    );
    metric(
        &mut out,
        "ptslog_relay_records_produced_total",
        "counter",
        "Log records handed to the sink.",
        relay.records_produced(),
    );
    metric(
        &mut out,
        "ptslog_relay_produce_errors_total",
        "counter",
        "Failed hand-overs or deliveries to the sink (each restarts the relay session).",
        relay.produce_errors(),
    );
    metric(
        &mut out,
        "ptslog_relay_undecodable_records_total",
        "counter",
        "Log rows the relay could not read: published as undecodable records (no payload) or skipped; alert on any.",
        relay.undecodable_records(),
    );
    histogram(
        &mut out,
        "ptslog_relay_commit_to_read_seconds",
        "From a transaction's commit to the relay reading it off the replication slot.",
        &relay.commit_to_read,
    );
    histogram(
        &mut out,
        "ptslog_relay_sink_ack_seconds",
        "From the relay handing a transaction's records to the sink to the sink acknowledging them.",
        &relay.sink_ack,
    );
    if let Some(m) = &ops.mtproto {
        let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        metric(
            &mut out,
            "ptslog_mtproto_connections",
            "gauge",
            "MTProto connections open.",
            m.connections.load(Ordering::Relaxed),
        );
        metric(
            &mut out,
            "ptslog_mtproto_connections_total",
            "counter",
            "MTProto connections accepted.",
            get(&m.connections_total),
        );
        metric(
            &mut out,
            "ptslog_mtproto_auth_keys_created_total",
            "counter",
            "Auth keys created by the key exchange.",
            get(&m.auth_keys_created),
        );
        metric(
            &mut out,
            "ptslog_mtproto_calls_total",
            "counter",
            "MTProto RPC calls served.",
            get(&m.calls),
        );
        metric(
            &mut out,
            "ptslog_mtproto_call_errors_total",
            "counter",
            "MTProto RPC calls answered with rpc_error.",
            get(&m.call_errors),
        );
        metric(&mut out, "ptslog_mtproto_refused_total", "counter", "MTProto connections closed for bad input (malformed frame, unknown key, undecryptable packet, refused handshake step).", get(&m.refused));
        let _ = writeln!(
            out,
            "# HELP ptslog_mtproto_unknown_constructor_calls_total MTProto calls refused with INPUT_METHOD_INVALID, by the constructor id the server does not know (at most 256 ids, the rest as \"other\").\n# TYPE ptslog_mtproto_unknown_constructor_calls_total counter"
        );
        for (constructor, n) in m.unknown_constructors.snapshot() {
            let _ = writeln!(
                out,
                "ptslog_mtproto_unknown_constructor_calls_total{{constructor=\"{constructor}\"}} {n}"
            );
        }
    }
    if let Some(b) = &ops.send_batches {
        let c = b.read();
        metric(
            &mut out,
            "ptslog_send_batch_queued",
            "gauge",
            "Writes (sends, mark-reads, edits, deletions) waiting for a batch.",
            c.queued,
        );
        metric(
            &mut out,
            "ptslog_send_batches_total",
            "counter",
            "Group commit transactions committed.",
            c.batches,
        );
        metric(&mut out, "ptslog_send_batch_sends_total", "counter", "Writes answered from a committed batch transaction (this / ptslog_send_batches_total is the mean batch).", c.batched_sends);
        let _ = writeln!(
            out,
            "# HELP ptslog_sends_alone_total Writes taken out of group commit and run in a transaction of their own, by why: another transaction held one of their accounts, or their batch failed.\n# TYPE ptslog_sends_alone_total counter\nptslog_sends_alone_total{{reason=\"account_held\"}} {}\nptslog_sends_alone_total{{reason=\"batch_failed\"}} {}",
            c.alone_account_held, c.alone_batch_failed
        );
        metric(&mut out, "ptslog_send_batch_reruns_total", "counter", "Group commit transactions rolled back and run again (a write failing after writing, or a failure pinned on no write).", c.reruns);
    }
    if let Some(replica) = &ops.replica {
        let c = &replica.counts;
        let get = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
        metric(
            &mut out,
            "ptslog_replica_reads_total",
            "counter",
            "Reads the read replica (DATABASE_READ_URL) served.",
            get(&c.on_replica),
        );
        metric(&mut out, "ptslog_replica_reads_on_primary_total", "counter", "Reads sent to the primary instead: the replica had not replayed the reader's last write in time, was down, or a commit's position was lost; and getDifferences from a pts the replica had not reached.", get(&c.on_primary));
        metric(&mut out, "ptslog_replica_waits_total", "counter", "Reads that asked the replica how far it had replayed, their account having a write it was not known to have (served by either).", get(&c.waited));
    }
    if let Some(consumer) = &ops.consumer {
        let h = consumer.health();
        metric(
            &mut out,
            "ptslog_consumer_records_total",
            "counter",
            "Log records consumed from Kafka.",
            h.records,
        );
        metric(
            &mut out,
            "ptslog_consumer_skipped_total",
            "counter",
            "Log records passed over undecoded: of accounts with no device on this instance, of kinds no cache here follows.",
            h.skipped,
        );
        metric(
            &mut out,
            "ptslog_consumer_errors_total",
            "counter",
            "Kafka consumer errors (broker unreachable, …).",
            h.errors,
        );
        metric(
            &mut out,
            "ptslog_consumer_partitions",
            "gauge",
            "Partitions assigned to this instance's consumer.",
            h.partitions,
        );
    }
    if let Some(gateway) = &ops.gateway {
        let m = &gateway.metrics;
        metric(
            &mut out,
            "ptslog_devices_online",
            "gauge",
            "Devices connected to GET /v1/updates on this instance.",
            gateway.hub.devices_online(),
        );
        metric(
            &mut out,
            "ptslog_fanout_pushes_total",
            "counter",
            "Frames written to devices.",
            m.pushes.load(Ordering::Relaxed),
        );
        metric(
            &mut out,
            "ptslog_fanout_too_long_total",
            "counter",
            "Devices sent updatesTooLong because their buffer was full.",
            m.too_long.load(Ordering::Relaxed),
        );
        metric(
            &mut out,
            "ptslog_fanout_duplicates_total",
            "counter",
            "Records dropped as already seen by a device (relay redeliveries).",
            m.duplicates.load(Ordering::Relaxed),
        );
        metric(
            &mut out,
            "ptslog_fanout_bad_records_total",
            "counter",
            "Records that could not be turned into a push (left to getDifference).",
            m.bad_records.load(Ordering::Relaxed),
        );
        histogram(
            &mut out,
            "ptslog_push_latency_seconds",
            "From an event's committed_at to its frame written to the device's socket.",
            &m.push_latency,
        );
        histogram(
            &mut out,
            "ptslog_push_receive_latency_seconds",
            "From an event's committed_at to the gateway holding its record (relay and broker), for accounts with devices here.",
            &m.receive_latency,
        );
    }
    out
}

fn histogram(out: &mut String, name: &str, help: &str, h: &infrastructure::histogram::Histogram) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    h.render(out, name);
}

/// One gauge with a value per projection.
fn per_projection(
    out: &mut String,
    name: &str,
    help: &str,
    status: &[ProjectionStatus],
    value: impl Fn(&ProjectionStatus) -> Option<f64>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    for s in status {
        if let Some(v) = value(s) {
            let _ = writeln!(out, "{name}{{projection=\"{}\"}} {v}", s.name);
        }
    }
}

/// The read models' versions, states and rebuild progress, from `projection_status` (which the
/// rebuild, usually another process, keeps up to date).
pub fn render_projections(out: &mut String, status: &[ProjectionStatus]) {
    per_projection(
        out,
        "ptslog_projection_version",
        "Projector version that built the live table (absent: unknown).",
        status,
        |s| s.version.map(f64::from),
    );
    per_projection(
        out,
        "ptslog_projection_stale",
        "1 when the live table was built by another projector version than this code's.",
        status,
        |s| Some(f64::from(u8::from(s.is_stale()))),
    );
    per_projection(
        out,
        "ptslog_projection_rebuilding",
        "1 while a rebuild of the projection runs.",
        status,
        |s| Some(f64::from(u8::from(s.state == RebuildState::Rebuilding))),
    );
    per_projection(
        out,
        "ptslog_projection_failed",
        "1 when the last rebuild failed (the live table is untouched).",
        status,
        |s| Some(f64::from(u8::from(s.state == RebuildState::Failed))),
    );
    per_projection(
        out,
        "ptslog_projection_lag_events",
        "Events of the log not applied to the live table (0: projected inline).",
        status,
        |s| Some(s.lag() as f64),
    );
    per_projection(
        out,
        "ptslog_projection_rebuild_events_done",
        "Events the running rebuild has applied to its shadow copy.",
        status,
        |s| s.rebuild.as_ref().map(|r| r.events_done as f64),
    );
    per_projection(out, "ptslog_projection_rebuild_events_total", "Events the running rebuild has to apply (the log when it started plus what it found since).", status, |s| s.rebuild.as_ref().map(|r| r.events_total as f64));
    per_projection(
        out,
        "ptslog_projection_rebuild_events_per_second",
        "Replay rate of the running rebuild.",
        status,
        |s| s.rebuild.as_ref().map(|r| r.rate),
    );
    per_projection(
        out,
        "ptslog_projection_rebuild_eta_seconds",
        "Estimated seconds left for the running rebuild.",
        status,
        |s| s.rebuild.as_ref().and_then(|r| r.eta_seconds()),
    );
    per_projection(
        out,
        "ptslog_projection_last_swap_lock_seconds",
        "How long the last rebuild's swap held writers back.",
        status,
        |s| s.last_lock_ms.map(|ms| ms / 1000.0),
    );
}
