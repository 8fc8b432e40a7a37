//! One client connection: the transport, the key exchange on plain messages, then the encrypted
//! session; RPC calls are served in order, each answer written as soon as it is made (a
//! container's answers are not collected first), and the account's live updates are pushed in
//! between. The connection's limits are in [`super::limits`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use application::fanout::{DeviceId, Outgoing, RESERVED_SLOTS};
use application::Caller;
use domain::{AuthKeyId, SessionId, UserId};
use mtproto::crypto::{AuthKey, ServerSalts};
use mtproto::handshake::{decode_plain, encode_plain, Handshake, Step, REQ_PQ, REQ_PQ_MULTI};
use mtproto::service::{rpc_error, rpc_result};
use mtproto::session::{self, Action, Session};
use mtproto::tl::Schema;
use mtproto::transport::ServerTransport;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::connection_slots::Slot;
use super::{calls, limits, push_encoding, Front, MtprotoMetrics};
use crate::gateway::DeviceSender;

/// One write may take this long (a client that does not read is dropped).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// The transport error for an unknown auth key: the client creates a new one.
const UNKNOWN_KEY: i32 = -404;

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub(super) struct ConnKey {
    pub auth_key: AuthKey,
    /// The salts this key accepts over time.
    pub salts: ServerSalts,
    /// A temporary key's end (unix seconds): past it the key is unknown, as after a restart.
    pub expires_at: Option<i64>,
}

/// The state of one connection, shared with the call handlers.
pub(super) struct Conn {
    pub front: Arc<Front>,
    pub key: Option<ConnKey>,
    pub session: Option<Session>,
    /// msg_ids of plain (handshake) answers.
    plain_ids: Session,
    pub caller: Option<Caller>,
    device: Option<(UserId, DeviceId)>,
    push_rx: Option<mpsc::Receiver<Outgoing>>,
    /// The client wrapped a call in invokeWithoutUpdates: this connection gets no pushes.
    pub no_updates: bool,
    /// The API layer the client announced with invokeWithLayer.
    pub layer: Option<i32>,
    /// The msg_id of the call being served (auth.bindTempAuthKey checks it).
    pub current_msg_id: i64,
    /// What the client said in initConnection (and its address), recorded on its device.
    pub device_info: Option<application::devices::DeviceInfo>,
    /// `device_info` changed and is not recorded on the signed-in device yet.
    pub device_unrecorded: bool,
    idle: Duration,
    pub peer: SocketAddr,
    /// While a key exchange is under way (or nothing valid has arrived yet): when the connection
    /// is closed unless it finishes.
    handshake_deadline: Option<Instant>,
}

/// Where a connection's answers go: the transport's framing (and obfuscation) and the socket.
struct Wire<'a> {
    transport: &'a mut ServerTransport,
    wr: &'a mut OwnedWriteHalf,
}

impl Wire<'_> {
    /// Writes one packet; false when the client does not take it in time (or is gone). The
    /// await is the back-pressure: the next answer is made only once this one is written.
    async fn send(&mut self, payload: &[u8]) -> bool {
        let bytes = self.transport.encode(payload);
        write(self.wr, &bytes).await
    }
}

/// Whether the connection goes on after a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Go,
    Close,
}

impl Conn {
    /// Records `device_info` (or at least the address) on the signed-in device; a storage failure
    /// only costs the listing's freshness, so it is logged, not answered.
    pub async fn record_device(&mut self) {
        let Some(caller) = self.caller else {
            return;
        };
        let info = self
            .device_info
            .clone()
            .unwrap_or_else(|| application::devices::DeviceInfo {
                ip: application::devices::DeviceText::new(&self.peer.ip().to_string()),
                ..Default::default()
            });
        self.device_unrecorded = false;
        if let Err(e) = self.front.app.record_device(&caller, &info).await {
            tracing::warn!(error = %e, "recording a device's initConnection");
        }
    }

    /// The account this connection acts for: registers it with the hub for live updates.
    pub fn sign_in(&mut self, caller: Caller) {
        self.sign_out();
        self.caller = Some(caller);
        if self.no_updates {
            self.register_silent(caller);
            return;
        }
        let (tx, rx) = mpsc::channel(self.front.gateway.push_buffer + RESERVED_SLOTS);
        // One push per auth key: other connections of the key share it (hub docs).
        let id = self.front.gateway.hub.register_connection(
            caller.user_id,
            caller.auth_key_id,
            DeviceSender(tx),
        );
        self.device = Some((caller.user_id, id));
        self.push_rx = Some(rx);
    }

    /// The client made a call here (not wrapped in invokeWithoutUpdates, which unregisters the
    /// connection): its auth key's pushes come to this connection from now on.
    fn mark_current(&self) {
        if let Some((user, id)) = self.device {
            self.front.gateway.hub.make_current(user, id);
        }
    }

    /// invokeWithoutUpdates: stop pushing to this connection (clients use it on connections
    /// opened for other work, e.g. uploads, so that updates arrive once).
    pub fn without_updates(&mut self) {
        if !self.no_updates {
            self.no_updates = true;
            if let Some((user, id)) = self.device.take() {
                self.front.gateway.hub.unregister(user, id);
            }
            self.push_rx = None;
            if let Some(caller) = self.caller {
                self.register_silent(caller);
            }
        }
    }

    /// Registers this connection for no pushes, only so that logging its device out closes it
    /// (the receiver ends when the hub drops the sender).
    fn register_silent(&mut self, caller: Caller) {
        let (tx, rx) = mpsc::channel(1);
        let id = self.front.gateway.hub.register_silent(
            caller.user_id,
            caller.auth_key_id,
            DeviceSender(tx),
        );
        self.device = Some((caller.user_id, id));
        self.push_rx = Some(rx);
    }

    pub fn sign_out(&mut self) {
        if let Some((user, id)) = self.device.take() {
            self.front.gateway.hub.unregister(user, id);
        }
        self.push_rx = None;
        self.caller = None;
    }

    async fn packet(&mut self, packet: &[u8], hs: &mut Handshake, wire: &mut Wire<'_>) -> Flow {
        match session::auth_key_id(packet) {
            Some(0) => self.plain(packet, hs, wire).await,
            Some(id) => self.encrypted(id, packet, wire).await,
            None => Flow::Close,
        }
    }

    async fn plain(&mut self, packet: &[u8], hs: &mut Handshake, wire: &mut Wire<'_>) -> Flow {
        let Ok((_, body)) = decode_plain(packet) else {
            tracing::info!(peer = %self.peer, "malformed plain message");
            return Flow::Close;
        };
        let starts = body
            .get(..4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .is_some_and(|id| id == REQ_PQ || id == REQ_PQ_MULTI);
        if starts
            && !self
                .front
                .handshake_rate
                .allow(self.peer.ip(), Instant::now())
        {
            tracing::info!(peer = %self.peer, "too many key exchanges from this address");
            return Flow::Close;
        }
        // A new exchange on a connection that had finished one gets its own deadline.
        let deadline = *self
            .handshake_deadline
            .get_or_insert_with(|| Instant::now() + self.front.limits.handshake_timeout);
        let now = now_ms();
        // The exponentiations run on the bounded pool, off the async workers; waiting for a turn
        // counts against the handshake's deadline.
        let front = self.front.clone();
        let mut state = std::mem::take(hs);
        let body = body.to_vec();
        let job = self.front.crypto.run(move || {
            let step = state.handle(&front.server_key, &body, (now / 1000) as i32);
            (state, step)
        });
        let Ok(Some((state, step))) = tokio::time::timeout_at(deadline.into(), job).await else {
            tracing::info!(peer = %self.peer, "key exchange step not computed in time");
            return Flow::Close;
        };
        *hs = state;
        let reply = match step {
            Ok(Step::Reply(reply)) => reply,
            Ok(Step::Done(reply, key)) => {
                let stored = self
                    .front
                    .keys
                    .create(
                        key.auth_key.id(),
                        key.auth_key.bytes(),
                        key.salt,
                        key.expires_in,
                    )
                    .await;
                let reply = match stored {
                    Ok(true) => {
                        MtprotoMetrics::inc(&self.front.metrics.auth_keys_created);
                        reply
                    }
                    // Another key has this id (a 2^-64 chance, or a replayed exchange).
                    Ok(false) => key.dh_gen_fail(),
                    Err(e) => {
                        tracing::error!(error = %e, "storing an MTProto auth key");
                        return Flow::Close;
                    }
                };
                tracing::debug!(
                    auth_key_id = key.auth_key.id(),
                    temp = key.expires_in.is_some(),
                    "auth key created"
                );
                self.handshake_deadline = None;
                reply
            }
            Err(e) => {
                tracing::info!(peer = %self.peer, error = %e, "key exchange refused");
                return Flow::Close;
            }
        };
        let payload = encode_plain(self.plain_ids.next_msg_id(now, true), &reply);
        if wire.send(&payload).await {
            Flow::Go
        } else {
            Flow::Close
        }
    }

    async fn load_key(&mut self, id: i64) -> Result<(), ()> {
        if self.key.as_ref().map(|k| k.auth_key.id()) == Some(id) {
            return Ok(());
        }
        let stored = match self.front.keys.load(id).await {
            Ok(Some(k)) => k,
            Ok(None) => return Err(()),
            Err(e) => {
                tracing::error!(error = %e, "loading an MTProto auth key");
                return Err(());
            }
        };
        let auth_key = AuthKey::from_slice(&stored.auth_key).ok_or(())?;
        self.sign_out();
        self.session = None;
        self.key = Some(ConnKey {
            salts: ServerSalts::new(&auth_key, stored.server_salt, stored.created_at),
            auth_key,
            expires_at: stored.expires_at,
        });
        if let Some((user, authz)) = stored.signed_in {
            if let Ok(user_id) = UserId::new(user) {
                self.sign_in(Caller {
                    user_id,
                    auth_key_id: AuthKeyId(authz),
                    session_id: SessionId(0),
                });
            }
        }
        Ok(())
    }

    /// Re-reads whom the current key is signed in as (after auth.bindTempAuthKey).
    pub async fn refresh_sign_in(&mut self) -> Result<(), sqlx::Error> {
        let Some(id) = self.key.as_ref().map(|k| k.auth_key.id()) else {
            return Ok(());
        };
        let session = self.session.as_ref().map(|s| s.id).unwrap_or(0);
        let stored = self.front.keys.load(id).await?;
        if let Some(key) = &mut self.key {
            // Binding can shorten the expiry (to the binding's expires_at).
            key.expires_at = stored.as_ref().and_then(|k| k.expires_at);
        }
        if let Some((user, authz)) = stored.and_then(|k| k.signed_in) {
            if let Ok(user_id) = UserId::new(user) {
                self.sign_in(Caller {
                    user_id,
                    auth_key_id: AuthKeyId(authz),
                    session_id: SessionId(session),
                });
            }
        }
        Ok(())
    }

    async fn encrypted(&mut self, id: i64, packet: &[u8], wire: &mut Wire<'_>) -> Flow {
        let expired = self
            .key
            .as_ref()
            .filter(|k| k.auth_key.id() == id)
            .and_then(|k| k.expires_at)
            .is_some_and(|at| at <= now_ms() / 1000);
        if expired || self.load_key(id).await.is_err() {
            wire.send(&UNKNOWN_KEY.to_le_bytes()).await;
            return Flow::Close;
        }
        let Some((auth_key, salts)) = self
            .key
            .as_ref()
            .map(|k| (k.auth_key.clone(), k.salts.clone()))
        else {
            return Flow::Close;
        };
        let m = match session::decrypt(&auth_key, packet) {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(error = %e, "undecryptable packet");
                return Flow::Close;
            }
        };
        // A valid message under a known key: no key exchange is pending any more.
        self.handshake_deadline = None;
        if self.session.as_ref().map(|s| s.id) != Some(m.session_id) {
            let seen = self.front.replay.session(auth_key.id(), m.session_id);
            // A session continued on a new connection answers in the layer it announced.
            if let Some(layer) = seen.layer() {
                self.layer = Some(layer);
            }
            self.session = Some(Session::shared(m.session_id, salts, seen));
        }
        if let Some(c) = &mut self.caller {
            c.session_id = SessionId(m.session_id);
        }
        let now = now_ms();
        let actions = match &mut self.session {
            Some(s) => s.receive(&m, now),
            None => Vec::new(),
        };
        for action in actions {
            let (body, content) = match action {
                Action::Send { body, content } => (body, content),
                Action::Call { msg_id, body } => {
                    self.current_msg_id = msg_id;
                    MtprotoMetrics::inc(&self.front.metrics.calls);
                    let result = match calls::call(self, &body).await {
                        Ok(bytes) => rpc_result(msg_id, &bytes),
                        Err(e) => {
                            MtprotoMetrics::inc(&self.front.metrics.call_errors);
                            rpc_error(msg_id, e.code, &e.message)
                        }
                    };
                    self.mark_current();
                    (result, true)
                }
                Action::DisconnectAfter(secs) => {
                    self.idle = limits::disconnect_after(secs);
                    continue;
                }
                Action::DestroySession(_) => continue,
            };
            let Some(s) = &mut self.session else {
                continue;
            };
            let payload = s.pack(&auth_key, body, content, true, now_ms());
            if !wire.send(&payload).await {
                return Flow::Close;
            }
        }
        Flow::Go
    }

    /// A live update's TL (encoded once per frame and layer, [`push_encoding`]) as an encrypted
    /// message of this connection.
    fn push(&mut self, tl: &[u8]) -> Option<Vec<u8>> {
        let key = self.key.as_ref()?.auth_key.clone();
        Some(
            self.session
                .as_mut()?
                .pack(&key, tl.to_vec(), true, false, now_ms()),
        )
    }
}

/// Serves one connection until it closes; `_slot` (its place under the connection caps) is given
/// back then.
pub(super) async fn serve(front: Arc<Front>, stream: TcpStream, peer: SocketAddr, _slot: Slot) {
    let (mut rd, mut wr) = stream.into_split();
    let mut transport = ServerTransport::new();
    let mut hs = Handshake::default();
    let limits = front.limits.clone();
    let mut conn = Conn {
        front,
        key: None,
        session: None,
        plain_ids: Session::new(0, 0),
        caller: None,
        device: None,
        push_rx: None,
        no_updates: false,
        layer: None,
        current_msg_id: 0,
        device_info: None,
        device_unrecorded: false,
        idle: limits.idle_timeout,
        peer,
        // From the first byte: a connection must finish a key exchange, or send a valid message
        // under a key it has, within this.
        handshake_deadline: Some(Instant::now() + limits.handshake_timeout),
    };
    let mut buf = vec![0u8; 64 * 1024];
    tracing::debug!(%peer, "MTProto connection");
    MtprotoMetrics::inc(&conn.front.metrics.connections_total);
    conn.front
        .metrics
        .connections
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    'conn: loop {
        let push = async {
            match &mut conn.push_rx {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        let wait = match conn.handshake_deadline {
            Some(at) => conn.idle.min(at.saturating_duration_since(Instant::now())),
            None => conn.idle,
        };
        tokio::select! {
            read = tokio::time::timeout(wait, rd.read(&mut buf)) => {
                let n = match read {
                    Ok(Ok(n)) if n > 0 => n,
                    Ok(_) => break,
                    Err(_) => {
                        if conn.handshake_deadline.is_some_and(|at| at <= Instant::now()) {
                            tracing::info!(%peer, "key exchange not finished in time");
                            MtprotoMetrics::inc(&conn.front.metrics.refused);
                        } else {
                            tracing::debug!(%peer, idle = ?conn.idle, "idle connection closed");
                        }
                        break;
                    }
                };
                if let Err(e) = transport.feed(&buf[..n]) {
                    tracing::info!(%peer, error = %e, "transport refused");
                    MtprotoMetrics::inc(&conn.front.metrics.refused);
                    break;
                }
                let mut wire = Wire { transport: &mut transport, wr: &mut wr };
                loop {
                    let packet = match wire.transport.next_packet() {
                        Ok(Some(p)) => p,
                        Ok(None) => break,
                        Err(e) => {
                            tracing::info!(%peer, error = %e, "bad frame");
                            MtprotoMetrics::inc(&conn.front.metrics.refused);
                            break 'conn;
                        }
                    };
                    if conn.packet(&packet, &mut hs, &mut wire).await == Flow::Close {
                        MtprotoMetrics::inc(&conn.front.metrics.refused);
                        break 'conn;
                    }
                }
            }
            item = push => match item {
                Some(Outgoing::Frame(frame)) => {
                    let tl = push_encoding::frame_tl(&frame, conn.layer);
                    if let Some(p) = tl.and_then(|tl| conn.push(&tl)) {
                        let bytes = transport.encode(&p);
                        if !write(&mut wr, &bytes).await {
                            break;
                        }
                        conn.front.gateway.metrics.pushed(frame.committed_at_micros);
                    }
                }
                Some(Outgoing::TooLong) => {
                    // The client then calls updates.getDifference; the connection stays usable,
                    // but this device's buffer was dropped by the hub, so sign it in again.
                    let tl = push_encoding::encode_json(
                        Schema::for_layer(conn.layer),
                        r#"{"_":"updatesTooLong"}"#,
                    );
                    if let Some(p) = tl.and_then(|tl| conn.push(&tl)) {
                        let bytes = transport.encode(&p);
                        let _ = write(&mut wr, &bytes).await;
                    }
                    if let Some(c) = conn.caller {
                        conn.sign_in(c);
                    }
                }
                // The hub dropped this connection's sender: its device was logged out (on this
                // or another instance, gateway::device_endings).
                None => {
                    tracing::debug!(%peer, "device logged out; connection closed");
                    break;
                }
            }
        }
    }
    conn.sign_out();
    conn.front
        .metrics
        .connections
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    tracing::debug!(%peer, "MTProto connection closed");
}

async fn write(wr: &mut OwnedWriteHalf, bytes: &[u8]) -> bool {
    matches!(
        tokio::time::timeout(WRITE_TIMEOUT, wr.write_all(bytes)).await,
        Ok(Ok(()))
    )
}
