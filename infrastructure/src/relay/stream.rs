//! One leader session: stream the slot, hand each committed transaction's log rows to the sink,
//! and confirm a commit's WAL position only after the sink acknowledged everything up to it.
//!
//! Acknowledgements are awaited in commit order while reading goes on (a bounded number of
//! transactions in flight), so the sink's latency does not limit throughput. Any failure ends the
//! session; the next one resumes at the slot's confirmed position, so what was in flight is read
//! (and sent) again: duplicates, never gaps.

use std::collections::VecDeque;
use std::time::Instant;

use futures::stream::FuturesOrdered;
use futures::{FutureExt, StreamExt};
use pgwire_replication::{Lsn, PgWireError, ReplicationClient, ReplicationEvent};
use tokio::sync::watch;

use super::connection::replication_config;
use super::error::RelayError;
use super::log_row::log_record;
use super::pgoutput::{self, Message, Relations, Row};
use super::sink::{Ack, RecordSink};
use super::status::RelayStatus;

/// Transactions read but not yet acknowledged, at most. Past it, reading waits for the sink.
const MAX_IN_FLIGHT: usize = 10_000;

/// Microseconds between the Unix epoch and Postgres's (2000-01-01), for commit times.
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

fn classify(e: PgWireError) -> RelayError {
    let text = format!("replication: {e}");
    let fatal = match &e {
        PgWireError::Auth(_) | PgWireError::Tls(_) => true,
        PgWireError::Server(msg) => [
            "SQLSTATE 42501",
            "SQLSTATE 28000",
            "SQLSTATE 28P01",
            "SQLSTATE 53400",
            "SQLSTATE 42704",
        ]
        .iter()
        .any(|code| msg.contains(code)),
        _ => false,
    };
    if fatal {
        RelayError::Fatal(text)
    } else {
        RelayError::Transient(text)
    }
}

/// A position to confirm once `ack` resolves.
struct Pending {
    lsn: Lsn,
    /// Unix µs; 0 for a keepalive position (no transaction behind it).
    commit_micros: i64,
    /// When its records went to the sink; `None` when there were none (nothing to time).
    sent_at: Option<Instant>,
}

/// An acknowledgement with the moment it resolved: acks are popped in commit order, so one that
/// resolved early may be popped late, and its latency must not include the wait behind another.
type TimedAck = futures::future::BoxFuture<'static, (Result<(), super::sink::SinkError>, Instant)>;

fn timed(ack: Ack) -> TimedAck {
    ack.map(|result| (result, Instant::now())).boxed()
}

/// Streams until `shutdown` turns true (then `Ok`) or something fails.
pub async fn run(
    database_url: &str,
    slot: &str,
    sink: &dyn RecordSink,
    status: &RelayStatus,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), RelayError> {
    sink.reset()
        .await
        .map_err(|e| RelayError::Transient(format!("sink: {e}")))?;
    let config = replication_config(database_url, slot).map_err(RelayError::Fatal)?;
    let mut client = ReplicationClient::connect(config).await.map_err(classify)?;
    client.wait_started().await.map_err(classify)?;
    status.session_started();
    tracing::info!(slot, sink = sink.kind(), "relay streaming");

    let result = pump(&mut client, sink, status, shutdown).await;
    // A clean stop (CopyDone) frees the slot at once for the next leader; after a failure the
    // connection is dropped, which the server notices as well.
    if result.is_ok() {
        let _ = client.shutdown().await;
    } else {
        client.abort();
    }
    result
}

async fn pump(
    client: &mut ReplicationClient,
    sink: &dyn RecordSink,
    status: &RelayStatus,
    shutdown: &mut watch::Receiver<bool>,
) -> Result<(), RelayError> {
    let mut relations = Relations::default();
    let mut acks: FuturesOrdered<TimedAck> = FuturesOrdered::new();
    let mut pending: VecDeque<Pending> = VecDeque::new();
    // Records of the transaction being read (between Begin and Commit).
    let mut transaction: Option<Vec<application::fanout::LogRecord>> = None;
    let mut last_queued = Lsn::ZERO;

    loop {
        tokio::select! {
            biased;
            // Shutdown requested, or its sender dropped (the owner is gone): stop cleanly.
            _ = super::leader::stopped(shutdown) => return Ok(()),
            Some((acked, resolved_at)) = acks.next(), if !acks.is_empty() => {
                if let Err(e) = acked {
                    status.produce_error();
                    return Err(RelayError::Transient(format!("sink: {e}")));
                }
                let Some(done) = pending.pop_front() else {
                    return Err(RelayError::Transient("bug: an acknowledgement without a pending position".into()));
                };
                if let Some(sent_at) = done.sent_at {
                    status.sink_ack.observe_micros(resolved_at.saturating_duration_since(sent_at).as_micros() as u64);
                }
                client.update_applied_lsn(done.lsn);
                let oldest = pending.iter().map(|p| p.commit_micros).find(|&m| m != 0).unwrap_or(0);
                status.confirmed(done.lsn, oldest);
            }
            event = client.recv(), if pending.len() < MAX_IN_FLIGHT => {
                let event = match event {
                    Ok(Some(event)) => event,
                    Ok(None) => return Err(RelayError::Transient("the replication stream ended".into())),
                    Err(e) => return Err(classify(e)),
                };
                match event {
                    ReplicationEvent::Begin { .. } => transaction = Some(Vec::new()),
                    ReplicationEvent::XLogData { data, wal_end, .. } => {
                        status.saw_wal_end(wal_end);
                        match pgoutput::decode(&data).map_err(|e| RelayError::Fatal(e.to_string()))? {
                            Message::Relation(relation) => relations.learn(relation),
                            Message::Insert { relation_id, values } => {
                                let relation = relations.get(relation_id).ok_or_else(|| {
                                    RelayError::Transient(format!("insert into relation {relation_id} before its Relation message"))
                                })?;
                                let row = Row::new(relation, values).map_err(|e| RelayError::Fatal(e.to_string()))?;
                                // One row the relay cannot read must not stop every account's
                                // pushes: it goes out as an undecodable record (position, kind,
                                // reason; no payload), or, when not even its position reads, is
                                // skipped. Both are logged and counted (docs/events.md, "Rows that
                                // cannot be read").
                                match log_record(&row) {
                                    Ok(record) => {
                                        if let Some(reason) = &record.undecodable {
                                            status.undecodable();
                                            tracing::error!(user_id = record.user_id, pts = record.pts, kind = %record.kind, reason = %reason, "relay publishes an undecodable record");
                                        }
                                        transaction.get_or_insert_with(Vec::new).push(record);
                                    }
                                    Err(e) => {
                                        status.undecodable();
                                        tracing::error!(error = %e, "relay skips a log row whose position cannot be read");
                                    }
                                }
                            }
                            Message::Other(_) => {}
                        }
                    }
                    ReplicationEvent::Commit { end_lsn, commit_time_micros, .. } => {
                        status.saw_wal_end(end_lsn);
                        let records = transaction.take().unwrap_or_default();
                        let commit_micros = commit_time_micros + PG_EPOCH_MICROS;
                        let (ack, sent_at) = if records.is_empty() {
                            (futures::future::ready(Ok(())).boxed(), None)
                        } else {
                            let count = records.len() as u64;
                            status.read_commit(commit_micros);
                            status.read_transaction(commit_micros);
                            let sent_at = Instant::now();
                            let ack = sink.send(records).await.map_err(|e| {
                                status.produce_error();
                                RelayError::Transient(format!("sink: {e}"))
                            })?;
                            status.produced(count);
                            (ack, Some(sent_at))
                        };
                        acks.push_back(timed(ack));
                        pending.push_back(Pending { lsn: end_lsn, commit_micros, sent_at });
                        last_queued = end_lsn;
                    }
                    ReplicationEvent::KeepAlive { wal_end, .. } => {
                        status.saw_wal_end(wal_end);
                        // Between transactions, everything the server sent so far has been read:
                        // its position can be confirmed (behind what is in flight), so an idle log
                        // does not hold WAL of other tables' writes.
                        if transaction.is_none() && wal_end > last_queued {
                            acks.push_back(timed(futures::future::ready(Ok(())).boxed()));
                            pending.push_back(Pending { lsn: wal_end, commit_micros: 0, sent_at: None });
                            last_queued = wal_end;
                        }
                    }
                    ReplicationEvent::Message { .. } | ReplicationEvent::StoppedAt { .. } => {}
                }
            }
        }
    }
}
