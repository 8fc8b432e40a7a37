//! A minimal MTProto client for the bench, on `ptslog_mtproto::client` (the spec client): one
//! connection (abridged framing), the key exchange, an encrypted session, one call at a time.
//! Calls are JSON (`encode_object`) except where the bench hand-encodes a hot call so the
//! client's own cost stays small (the media phase's parts and chunks).

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context};
use mtproto::client::{ClientHandshake, ClientStep, RsaEncoding};
use mtproto::crypto::{AuthKey, PublicKey, Side};
use mtproto::handshake::{decode_plain, encode_plain};
use mtproto::service::{BAD_MSG_NOTIFICATION, BAD_SERVER_SALT, RPC_ERROR, RPC_RESULT};
use mtproto::session::{decrypt_from, encrypt, Plain};
use mtproto::tl::{decode_object, encode_object, gunzip, Reader, Schema, Writer, GZIP_PACKED};
use mtproto::transport::{Framing, Kind};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What [`Session::answer`] says when the server refused the salt (and gave a new one).
const BAD_SALT: &str = "BAD_SERVER_SALT";

/// How long the bench waits for any one answer.
const ANSWER_WAIT: Duration = Duration::from_secs(60);

/// One msg_id sequence for every connection of the process: connections sharing a session key
/// must never send the same msg_id in one millisecond (the server drops replays).
static LAST_MSG_ID: AtomicI64 = AtomicI64::new(0);

fn msg_id() -> i64 {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let id = ((ms / 1000) << 32) | ((((ms % 1000) << 32) / 1000) & !3);
    let next = |last: i64| id.max(last + 4);
    let last = LAST_MSG_ID
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| Some(next(l)))
        .unwrap_or_else(|l| l);
    next(last)
}

/// A framed connection.
pub struct Conn {
    pub stream: TcpStream,
    framing: Framing,
    buf: Vec<u8>,
    /// The read buffer, kept: a fresh one per read would cost the client more than the call.
    chunk: Vec<u8>,
}

impl Conn {
    pub async fn open(port: u16) -> anyhow::Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        Self::over(stream).await
    }

    pub async fn over(mut stream: TcpStream) -> anyhow::Result<Conn> {
        stream.set_nodelay(true)?;
        stream.write_all(&[0xef]).await?;
        Ok(Conn {
            stream,
            framing: Framing::new(Kind::Abridged),
            buf: Vec::new(),
            chunk: vec![0u8; 256 * 1024],
        })
    }

    pub async fn send(&mut self, payload: &[u8]) -> anyhow::Result<()> {
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
            let n = tokio::time::timeout(ANSWER_WAIT, self.stream.read(&mut self.chunk))
                .await
                .context("no answer in time")??;
            if n == 0 {
                bail!("the server closed the connection");
            }
            self.buf.extend_from_slice(&self.chunk[..n]);
        }
    }

    async fn handshake(&mut self, key: &PublicKey) -> anyhow::Result<(AuthKey, i64)> {
        let (mut hs, mut body) = ClientHandshake::start(key.clone(), RsaEncoding::Old, None);
        loop {
            self.send(&encode_plain(msg_id(), &body)).await?;
            let packet = self.recv().await?;
            let (_, reply) = decode_plain(&packet).map_err(|e| anyhow!("plain answer: {e:?}"))?;
            match hs
                .handle(reply)
                .map_err(|e| anyhow!("handshake step: {e:?}"))?
            {
                ClientStep::Send(next) => body = next,
                ClientStep::Done { auth_key, salt } => return Ok((auth_key, salt)),
            }
        }
    }
}

/// An encrypted session over one connection.
pub struct Session {
    pub conn: Conn,
    pub key: AuthKey,
    pub salt: i64,
    id: i64,
    content: i32,
}

impl Session {
    /// A new session of an existing key over a new connection.
    pub async fn open(port: u16, key: AuthKey, salt: i64) -> anyhow::Result<Session> {
        Ok(Self::new(Conn::open(port).await?, key, salt))
    }

    pub fn new(conn: Conn, key: AuthKey, salt: i64) -> Session {
        Session {
            conn,
            key,
            salt,
            id: rand::random(),
            content: 0,
        }
    }

    /// Signs in `phone` (an existing account, with the development code) on a new key; answers
    /// the session, whose key other connections may share.
    pub async fn sign_in(port: u16, server_key: &PublicKey, phone: &str) -> anyhow::Result<Self> {
        let mut conn = Conn::open(port).await?;
        let (key, salt) = conn.handshake(server_key).await?;
        let mut s = Session::new(conn, key, salt);
        let sent = s
            .call(
                &json!({"_": "invokeWithLayer", "layer": Schema::api().layer, "query": {
                "_": "initConnection", "api_id": 1, "device_model": "ptslog-bench",
                "system_version": "1", "app_version": "1", "system_lang_code": "en",
                "lang_pack": "", "lang_code": "en",
                "query": {"_": "auth.sendCode", "phone_number": phone, "api_id": 1,
                    "api_hash": "x", "settings": {"_": "codeSettings"}}}}),
            )
            .await
            .map_err(|e| anyhow!("auth.sendCode: {e}"))?;
        let signed = s
            .call(&json!({"_": "auth.signIn", "phone_number": phone,
                "phone_code_hash": sent["phone_code_hash"],
                "phone_code": ptslog_server::mtproto::login_codes::DEFAULT_DEV_CODE}))
            .await
            .map_err(|e| anyhow!("auth.signIn: {e}"))?;
        if signed["_"] != "auth.authorization" {
            bail!("auth.signIn of {phone}: {signed}");
        }
        Ok(s)
    }

    /// Sends one request (a TL-serialized body); answers its msg_id.
    pub async fn send_request(&mut self, body: &[u8]) -> anyhow::Result<i64> {
        let id = msg_id();
        self.content += 1;
        let packet = encrypt(
            &self.key,
            Side::Client,
            &Plain {
                salt: self.salt,
                session_id: self.id,
                msg_id: id,
                seq_no: self.content * 2 - 1,
                body: body.to_vec(),
            },
        );
        self.conn.send(&packet).await?;
        Ok(id)
    }

    /// The answer to request `msg_id` (the bytes after `rpc_result`, unzipped), or the RPC
    /// error's message. A bad_server_salt is answered `BAD_SERVER_SALT` after the session took
    /// the new salt.
    pub async fn answer(&mut self, msg_id: i64) -> anyhow::Result<Result<Vec<u8>, String>> {
        self.answer_upto(msg_id, usize::MAX).await
    }

    /// [`Self::answer`], of which at most the first `head` bytes are inflated when the answer is
    /// gzip-packed (an error is always read whole).
    async fn answer_upto(
        &mut self,
        msg_id: i64,
        head: usize,
    ) -> anyhow::Result<Result<Vec<u8>, String>> {
        loop {
            let packet = self.conn.recv().await?;
            if packet.len() <= 4 {
                bail!("transport error {packet:?}");
            }
            let m = decrypt_from(&self.key, Side::Server, &packet)
                .map_err(|e| anyhow!("server message: {e:?}"))?;
            let mut r = Reader::new(&m.body);
            let id = r.u32().map_err(|e| anyhow!("server message: {e:?}"))?;
            if id == BAD_MSG_NOTIFICATION {
                // A request the server will never answer (a msg_id out of its window, …).
                if r.i64().ok() == Some(msg_id) {
                    let (_, code) = (r.i32(), r.i32());
                    bail!("bad_msg_notification {code:?} for the call");
                }
                continue;
            }
            if r.i64().ok() != Some(msg_id) {
                // Acks, new_session_created, pushes: not ours.
                continue;
            }
            if id == BAD_SERVER_SALT {
                let (_, _) = (r.i32(), r.i32());
                if let Ok(salt) = r.i64() {
                    self.salt = salt;
                }
                return Ok(Err(BAD_SALT.into()));
            }
            if id != RPC_RESULT {
                continue;
            }
            let result = r.remaining();
            let rest = if result.get(..4) == Some(&GZIP_PACKED.to_le_bytes()[..]) {
                let mut g = Reader::new(&result[4..]);
                let zipped = g.bytes().map_err(|e| anyhow!("gzip: {e:?}"))?;
                let rest = gunzip_head(zipped, head).map_err(|e| anyhow!("gunzip: {e}"))?;
                if rest.get(..4) == Some(&RPC_ERROR.to_le_bytes()[..]) {
                    gunzip(zipped).map_err(|e| anyhow!("gunzip: {e:?}"))?
                } else {
                    rest
                }
            } else {
                result.to_vec()
            };
            if rest.get(..4) == Some(&RPC_ERROR.to_le_bytes()[..]) {
                let mut e = Reader::new(&rest[4..]);
                let _code = e.i32();
                return Ok(Err(e.string().unwrap_or_default()));
            }
            return Ok(Ok(rest));
        }
    }

    /// One call, hand-encoded: the raw answer, or the error message.
    pub async fn call_raw(&mut self, body: &[u8]) -> anyhow::Result<Result<Vec<u8>, String>> {
        self.call_upto(body, usize::MAX).await
    }

    /// One call, hand-encoded: at least the first `head` bytes of its answer (all of them when
    /// it came unpacked), or the error message. The reads' load checks only an answer's
    /// constructor, as the HTTP load checks only its `"_"`: inflating each gzip-packed answer
    /// whole (20 KB for a getDifference) would charge the client's work to the cores the
    /// server is measured on.
    pub async fn call_head(
        &mut self,
        body: &[u8],
        head: usize,
    ) -> anyhow::Result<Result<Vec<u8>, String>> {
        self.call_upto(body, head).await
    }

    async fn call_upto(
        &mut self,
        body: &[u8],
        head: usize,
    ) -> anyhow::Result<Result<Vec<u8>, String>> {
        for _ in 0..3 {
            let id = self.send_request(body).await?;
            match self.answer_upto(id, head).await? {
                Err(e) if e == BAD_SALT => continue,
                other => return Ok(other),
            }
        }
        bail!("the server kept refusing the salt")
    }

    /// One call as JSON (the spec client's encoding).
    pub async fn call(&mut self, request: &Value) -> Result<Value, String> {
        let schema = Schema::api();
        let mut w = Writer::new();
        encode_object(schema, request, &mut w).map_err(|e| format!("encode: {e:?}"))?;
        let raw = self
            .call_raw(&w.buf)
            .await
            .map_err(|e| format!("{e:#}"))??;
        decode_object(schema, &mut Reader::new(&raw)).map_err(|e| format!("decode: {e:?}"))
    }
}

/// The first `head` bytes (or fewer, when there are fewer) of a gzip payload, inflated no
/// further than they reach; `usize::MAX` inflates all of it, within the protocol's budget.
fn gunzip_head(zipped: &[u8], head: usize) -> Result<Vec<u8>, String> {
    if head == usize::MAX {
        return gunzip(zipped).map_err(|e| format!("{e:?}"));
    }
    let mut out = vec![0u8; head];
    let mut inflate = flate2::read::GzDecoder::new(zipped);
    let mut got = 0;
    while got < head {
        match std::io::Read::read(&mut inflate, &mut out[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => return Err(e.to_string()),
        }
    }
    out.truncate(got);
    Ok(out)
}

/// The TL constructor id of `name` in the newest layer.
pub fn constructor(name: &str) -> anyhow::Result<u32> {
    Schema::api()
        .by_name(name)
        .map(|c| c.id)
        .ok_or_else(|| anyhow!("{name} is not in the schema"))
}

#[cfg(test)]
mod tests {
    use super::gunzip_head;
    use std::io::Write;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn a_head_is_the_first_bytes_and_no_more() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let zipped = gz(&data);
        assert_eq!(gunzip_head(&zipped, 4).unwrap(), data[..4]);
        assert_eq!(gunzip_head(&zipped, usize::MAX).unwrap(), data);
        // Fewer bytes than asked for: all of them.
        assert_eq!(gunzip_head(&gz(b"ab"), 4).unwrap(), b"ab");
        assert!(gunzip_head(b"not gzip", 4).is_err());
    }
}
