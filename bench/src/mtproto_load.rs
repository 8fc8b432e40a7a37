//! The MTProto load of the `reads_*` phases: the same calls as the HTTP load, on the same
//! accounts and chats, over the MTProto front, from a client written with the protocol crate's
//! client side (the bench's client, [`crate::mtclient`], on `mtproto::client` for the key
//! exchange and `mtproto::session` for the encrypted layer).
//!
//! Each connection has its own auth key (made by the key exchange) signed in as one benchmark
//! account over the protocol (auth.sendCode, auth.signIn with the development code), all before
//! any measured window. A worker owns a few connections (different accounts) and serves one call
//! at a time, picking one of them at random per call: the same closed loop of the same
//! concurrency as the HTTP load, one request in flight per worker as one request per keep-alive
//! connection there. The connections live on one load thread for the whole of the read phases
//! (threads named [`cpu::LOAD_THREAD`], so the server's CPU is measured apart from them).
//!
//! What the client leaves out, because the server does nothing with it: acks (the server keeps
//! no answers for resending and reads `msgs_ack` as a no-op), containers, obfuscation. Answers
//! are not decoded into objects: each is checked to be an `rpc_result` for its request whose
//! object is one of the constructors the call must answer (when it is gzip-packed, only as far as
//! its constructor: the HTTP load reads only an answer's `"_"` too).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use mtproto::crypto::PublicKey;
use mtproto::tl::{encode_object, Schema, Writer};
use rand::Rng;
use serde_json::json;
use tokio::sync::{mpsc, oneshot, Mutex};

use crate::cpu::{self, CpuSample};
use crate::mtclient::Session;
use crate::readsql::{self, ReadOp};
use crate::runner::closed_loop;
use crate::stats::Recorder;
use crate::workload::Workload;
use crate::{loader, setup};

/// Connections (accounts) each worker spreads its calls over.
pub const CONNECTIONS_PER_WORKER: usize = 4;

/// Where the MTProto front listens and the key it signs the key exchange with.
#[derive(Clone)]
pub struct MtTarget {
    pub addr: SocketAddr,
    pub key: PublicKey,
}

/// The constructors an answer of `op` may be.
pub fn expected_answers(op: ReadOp) -> &'static [&'static str] {
    match op {
        ReadOp::History | ReadOp::Messages => &["messages.messages", "messages.messagesSlice"],
        ReadOp::Difference => &["updates.difference", "updates.differenceSlice"],
        ReadOp::Dialogs => &["messages.dialogs", "messages.dialogsSlice"],
    }
}

/// One client connection (the bench's MTProto client, [`mtclient::Session`]) signed in as
/// account index `user`.
pub struct MtConn {
    session: Session,
    /// The benchmark account (index into `Workload::users`) this connection is signed in as.
    pub user: usize,
}

impl MtConn {
    /// Connects, makes a permanent auth key and signs it in as benchmark account `user` (an
    /// existing account: the development code signs it in as a new device).
    pub async fn open(target: &MtTarget, user: usize) -> anyhow::Result<MtConn> {
        let session = Session::sign_in(target.addr.port(), &target.key, &setup::phone(user + 1))
            .await
            .with_context(|| format!("MTProto front at {}", target.addr))?;
        Ok(MtConn { session, user })
    }

    /// A call whose answer must be one of the constructor ids `expect`.
    pub async fn call_expecting(&mut self, body: &[u8], expect: &[u32]) -> Result<(), String> {
        match self
            .session
            .call_head(body, 4)
            .await
            .map_err(|e| format!("{e:#}"))?
        {
            Ok(bytes) => {
                let id = bytes
                    .get(..4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .unwrap_or(0);
                if expect.contains(&id) {
                    Ok(())
                } else {
                    let name = Schema::api()
                        .by_id(id)
                        .map_or(format!("{id:#010x}"), |c| c.name.clone());
                    Err(format!("unexpected answer {name}"))
                }
            }
            Err(message) => Err(format!("rpc_error {message}")),
        }
    }
}

/// The TL of one call of `op` by account index `u` (a random friend chat, a random first id).
fn request(work: &Workload, op: ReadOp, u: usize) -> anyhow::Result<Vec<u8>> {
    let n = work.users.len();
    let (f, first) = {
        let mut rng = rand::thread_rng();
        (
            rng.gen_range(1..=loader::FRIENDS.min(n as i64 - 1)) as usize,
            rng.gen_range(1..=readsql::MESSAGES_FIRST_MAX),
        )
    };
    let peer = work.peer_json_of(u, readsql::friend(u, f, n));
    let mut body = readsql::body(op, peer, first);
    body["_"] = json!(op.method());
    let mut w = Writer::new();
    encode_object(Schema::api(), &body, &mut w).map_err(|e| anyhow!("encoding {body}: {e}"))?;
    Ok(w.buf)
}

/// What one measured run answers: the recording, the wall time and the CPU around the window.
pub type Measured = (Recorder, Duration, CpuSample, CpuSample);

struct Job {
    op: ReadOp,
    duration: Duration,
    warm_up: Duration,
    reply: oneshot::Sender<Measured>,
}

/// Signed-in connections on a load thread of their own, serving measured runs on demand.
pub struct MtLoad {
    jobs: mpsc::UnboundedSender<Job>,
    /// The workers (closed loops) each run drives.
    pub workers: usize,
    pub connections: usize,
}

impl MtLoad {
    /// Opens `workers × CONNECTIONS_PER_WORKER` connections (at most one per account), spread
    /// evenly over the accounts, and signs each in; answers once every one is ready.
    pub async fn start(target: MtTarget, work: Workload, workers: usize) -> anyhow::Result<Self> {
        let n = work.users.len();
        let workers = workers.clamp(1, n);
        let total = (workers * CONNECTIONS_PER_WORKER).min(n);
        let (jobs, mut rx) = mpsc::unbounded_channel::<Job>();
        let (ready_tx, ready_rx) = oneshot::channel::<anyhow::Result<()>>();
        std::thread::Builder::new()
            .name(cpu::LOAD_THREAD.into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name(cpu::LOAD_THREAD)
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e.into()));
                        return;
                    }
                };
                rt.block_on(async move {
                    let opened = futures::future::try_join_all((0..total).map(|i| {
                        let target = target.clone();
                        async move {
                            let user = i * n / total;
                            MtConn::open(&target, user)
                                .await
                                .with_context(|| format!("signing account {} in", user + 1))
                        }
                    }))
                    .await;
                    let conns = match opened {
                        Ok(c) => c,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    // Worker w owns connections w, w + workers, …
                    let mut owned: Vec<Vec<MtConn>> = (0..workers).map(|_| Vec::new()).collect();
                    for (i, c) in conns.into_iter().enumerate() {
                        owned[i % workers].push(c);
                    }
                    let owned: Arc<Vec<Mutex<Vec<MtConn>>>> =
                        Arc::new(owned.into_iter().map(Mutex::new).collect());
                    let _ = ready_tx.send(Ok(()));
                    while let Some(job) = rx.recv().await {
                        let expect: Arc<Vec<u32>> = Arc::new(
                            expected_answers(job.op)
                                .iter()
                                .filter_map(|name| Schema::api().by_name(name).map(|c| c.id))
                                .collect(),
                        );
                        let call = {
                            let (owned, work) = (owned.clone(), work.clone());
                            move |worker: usize| {
                                let (owned, work, expect) =
                                    (owned.clone(), work.clone(), expect.clone());
                                async move {
                                    let mut conns = owned[worker].lock().await;
                                    let i = rand::thread_rng().gen_range(0..conns.len());
                                    let conn = &mut conns[i];
                                    let body = request(&work, job.op, conn.user)
                                        .map_err(|e| format!("{e:#}"))?;
                                    conn.call_expecting(&body, &expect).await
                                }
                            }
                        };
                        let _ = closed_loop(workers, job.warm_up, call.clone()).await;
                        let before = cpu::sample();
                        let (rec, elapsed) = closed_loop(workers, job.duration, call).await;
                        let after = cpu::sample();
                        let _ = job.reply.send((rec, elapsed, before, after));
                    }
                });
            })?;
        ready_rx.await.map_err(|_| {
            anyhow!("the MTProto load thread ended before its connections were ready")
        })??;
        Ok(Self {
            jobs,
            workers,
            connections: total,
        })
    }

    /// `op` in the closed loops for `duration`, after a `warm_up` not measured.
    pub async fn run(
        &self,
        op: ReadOp,
        duration: Duration,
        warm_up: Duration,
    ) -> anyhow::Result<Measured> {
        let (reply, rx) = oneshot::channel();
        self.jobs
            .send(Job {
                op,
                duration,
                warm_up,
                reply,
            })
            .map_err(|_| anyhow!("the MTProto load thread is gone"))?;
        rx.await
            .map_err(|_| anyhow!("the MTProto load thread ended without an answer"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_answers_are_constructors_of_each_function_s_type() {
        let schema = Schema::api();
        for op in ReadOp::ALL {
            let function = schema
                .by_name(op.method())
                .expect("the read is in the schema");
            for name in expected_answers(op) {
                let c = schema.by_name(name).expect("a constructor of the schema");
                assert!(!c.is_function, "{name}");
                assert_eq!(c.result, function.result, "{name} answers {}", op.method());
            }
        }
    }
}
