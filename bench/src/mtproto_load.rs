//! The MTProto load of the `reads_*` phases: the same calls as the HTTP load, on the same
//! accounts and chats, over the MTProto front, from a client written with the protocol crate's
//! client side (`mtproto::client`: the key exchange; `mtproto::session`: the encrypted layer).
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
//! object is one of the constructors the call must answer (inflated first when gzip-packed).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context};
use mtproto::client::{ClientHandshake, ClientStep, RsaEncoding};
use mtproto::crypto::{AuthKey, PublicKey, Side};
use mtproto::handshake::{decode_plain, encode_plain};
use mtproto::service::{
    BAD_MSG_NOTIFICATION, BAD_SERVER_SALT, NEW_SESSION_CREATED, RPC_ERROR, RPC_RESULT,
};
use mtproto::session::{decrypt_from, encrypt, Plain};
use mtproto::tl::{decode_object, encode_object, gunzip, Reader, Schema, Writer, GZIP_PACKED};
use mtproto::transport::{Framing, Kind};
use rand::Rng;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Mutex};

use crate::cpu::{self, CpuSample};
use crate::readsql::{self, ReadOp};
use crate::runner::closed_loop;
use crate::stats::Recorder;
use crate::workload::Workload;
use crate::{loader, setup};

/// Connections (accounts) each worker spreads its calls over.
pub const CONNECTIONS_PER_WORKER: usize = 4;
/// How long the client waits for one answer before counting the call as failed.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// Attempts of a call refused with `bad_server_salt` (the salt rotates; the next try has it).
const SALT_RETRIES: usize = 3;

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

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// One client connection with its encrypted session, signed in as account index `user`.
pub struct MtConn {
    stream: TcpStream,
    framing: Framing,
    buf: Vec<u8>,
    key: AuthKey,
    salt: i64,
    session_id: i64,
    content: i32,
    last_msg_id: i64,
    /// The benchmark account (index into `Workload::users`) this connection is signed in as.
    pub user: usize,
}

/// What one answer was.
enum Answer {
    /// The result object's bytes (inflated).
    Result(Vec<u8>),
    Error(i32, String),
}

impl MtConn {
    /// Connects (intermediate framing) and makes a permanent auth key.
    pub async fn connect(target: &MtTarget) -> anyhow::Result<MtConn> {
        let mut stream = TcpStream::connect(target.addr)
            .await
            .with_context(|| format!("connecting to the MTProto front at {}", target.addr))?;
        stream.set_nodelay(true)?;
        stream.write_all(&[0xee; 4]).await?;
        let mut conn = MtConn {
            stream,
            framing: Framing::new(Kind::Intermediate),
            buf: Vec::with_capacity(64 * 1024),
            key: AuthKey::new([0; 256]),
            salt: 0,
            session_id: rand::thread_rng().gen(),
            content: 0,
            last_msg_id: 0,
            user: usize::MAX,
        };
        let (mut hs, mut body) = ClientHandshake::start(target.key.clone(), RsaEncoding::Pad, None);
        loop {
            let id = conn.msg_id();
            conn.send(&encode_plain(id, &body)).await?;
            let packet = conn.recv().await?;
            let (_, reply) =
                decode_plain(&packet).map_err(|e| anyhow!("key exchange answer: {e:?}"))?;
            match hs
                .handle(reply)
                .map_err(|e| anyhow!("key exchange: {e:?}"))?
            {
                ClientStep::Send(next) => body = next,
                ClientStep::Done { auth_key, salt } => {
                    conn.key = auth_key;
                    conn.salt = salt;
                    return Ok(conn);
                }
            }
        }
    }

    /// Signs this connection's key in as benchmark account `user` (an existing account: the
    /// development code signs it in as a new device), announcing the layer with the first call.
    pub async fn sign_in(&mut self, user: usize) -> anyhow::Result<()> {
        let phone = setup::phone(user + 1);
        let send_code = json!({"_": "invokeWithLayer", "layer": Schema::api().layer,
            "query": {"_": "initConnection", "api_id": 1, "device_model": "ptslog-bench",
            "system_version": "1", "app_version": "1", "system_lang_code": "en", "lang_pack": "",
            "lang_code": "en", "query": {"_": "auth.sendCode", "phone_number": phone, "api_id": 1,
            "api_hash": "bench", "settings": {"_": "codeSettings"}}}});
        let sent = self.call_value(&send_code).await?;
        let hash = sent["phone_code_hash"].clone();
        let signed = self
            .call_value(&json!({"_": "auth.signIn", "phone_number": phone,
                "phone_code_hash": hash,
                "phone_code": ptslog_server::mtproto::login_codes::DEFAULT_DEV_CODE}))
            .await?;
        if signed["_"] != "auth.authorization" {
            bail!("auth.signIn of {phone} answered {signed}");
        }
        self.user = user;
        Ok(())
    }

    fn msg_id(&mut self) -> i64 {
        let ms = now_ms();
        let id = ((ms / 1000) << 32) | ((((ms % 1000) << 32) / 1000) & !3);
        self.last_msg_id = id.max(self.last_msg_id + 4);
        self.last_msg_id
    }

    async fn send(&mut self, payload: &[u8]) -> anyhow::Result<()> {
        let mut out = Vec::with_capacity(payload.len() + 4);
        self.framing.encode_as_client(payload, &mut out);
        self.stream.write_all(&out).await?;
        Ok(())
    }

    async fn recv(&mut self) -> anyhow::Result<Vec<u8>> {
        loop {
            if let Some(p) = self
                .framing
                .decode(&mut self.buf)
                .map_err(|e| anyhow!("server framing: {e:?}"))?
            {
                return Ok(p);
            }
            let n = tokio::time::timeout(ANSWER_TIMEOUT, self.stream.read_buf(&mut self.buf))
                .await
                .map_err(|_| anyhow!("no answer in {ANSWER_TIMEOUT:?}"))??;
            if n == 0 {
                bail!("the server closed the connection");
            }
        }
    }

    /// Sends `body` (a TL function) and waits for its answer, taking a new salt when told.
    async fn exchange(&mut self, body: &[u8]) -> anyhow::Result<Answer> {
        for _ in 0..SALT_RETRIES {
            let msg_id = self.msg_id();
            self.content += 1;
            let packet = encrypt(
                &self.key,
                Side::Client,
                &Plain {
                    salt: self.salt,
                    session_id: self.session_id,
                    msg_id,
                    seq_no: self.content * 2 - 1,
                    body: body.to_vec(),
                },
            );
            self.send(&packet).await?;
            loop {
                let packet = self.recv().await?;
                if packet.len() == 4 {
                    let code = i32::from_le_bytes([packet[0], packet[1], packet[2], packet[3]]);
                    bail!("transport error {code}");
                }
                let m = decrypt_from(&self.key, Side::Server, &packet)
                    .map_err(|e| anyhow!("server message: {e:?}"))?;
                let mut r = Reader::new(&m.body);
                let bad = |e| anyhow!("server message: {e:?}");
                match r.u32().map_err(bad)? {
                    RPC_RESULT if r.i64().map_err(bad)? == msg_id => {
                        let mut rest = r.remaining().to_vec();
                        if rest.get(..4) == Some(&GZIP_PACKED.to_le_bytes()[..]) {
                            let mut g = Reader::new(&rest[4..]);
                            rest = gunzip(g.bytes().map_err(bad)?).map_err(bad)?;
                        }
                        if rest.get(..4) == Some(&RPC_ERROR.to_le_bytes()[..]) {
                            let mut e = Reader::new(&rest[4..]);
                            let code = e.i32().map_err(bad)?;
                            return Ok(Answer::Error(code, e.string().map_err(bad)?));
                        }
                        return Ok(Answer::Result(rest));
                    }
                    NEW_SESSION_CREATED => {
                        r.i64().map_err(bad)?;
                        r.i64().map_err(bad)?;
                        self.salt = r.i64().map_err(bad)?;
                    }
                    BAD_SERVER_SALT if r.i64().map_err(bad)? == msg_id => {
                        r.i32().map_err(bad)?;
                        r.i32().map_err(bad)?;
                        self.salt = r.i64().map_err(bad)?;
                        break;
                    }
                    BAD_MSG_NOTIFICATION => {
                        let id = r.i64().map_err(bad)?;
                        r.i32().map_err(bad)?;
                        bail!("bad_msg_notification {} for {id}", r.i32().map_err(bad)?);
                    }
                    // Pushes and other service messages: not this call's answer.
                    _ => {}
                }
            }
        }
        bail!("{SALT_RETRIES} salts refused in a row")
    }

    /// A call as a JSON object, its answer decoded (sign-in; not the measured path).
    pub async fn call_value(&mut self, request: &Value) -> anyhow::Result<Value> {
        let mut w = Writer::new();
        encode_object(Schema::api(), request, &mut w)
            .map_err(|e| anyhow!("encoding {request}: {e}"))?;
        match self.exchange(&w.buf).await? {
            Answer::Result(bytes) => decode_object(Schema::api(), &mut Reader::new(&bytes))
                .map_err(|e| anyhow!("decoding the answer to {}: {e:?}", request["_"])),
            Answer::Error(code, message) => bail!("{} answered {code} {message}", request["_"]),
        }
    }

    /// A call whose answer must be one of the constructor ids `expect`.
    pub async fn call_expecting(&mut self, body: &[u8], expect: &[u32]) -> Result<(), String> {
        match self.exchange(body).await.map_err(|e| format!("{e:#}"))? {
            Answer::Result(bytes) => {
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
            Answer::Error(code, message) => Err(format!("rpc_error {code} {message}")),
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
                            let mut conn = MtConn::connect(&target).await?;
                            conn.sign_in(user)
                                .await
                                .with_context(|| format!("signing account {} in", user + 1))?;
                            anyhow::Ok(conn)
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
