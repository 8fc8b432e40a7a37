//! The encrypted layer (MTProto 2.0): packet encryption and the per-session rules.
//!
//! A [`Session`] checks each decrypted message (msg_id parity and time window, duplicates, server
//! salt, seq_no parity), unwraps containers and gzip_packed, answers service messages itself
//! (ping, get_future_salts, destroy_session, msgs_state_req, …) and hands every other object to
//! the caller as a [`Action::Call`], whose answer goes back with [`Session::pack`].

use rand::{Rng, RngCore};

use crate::crypto::{ige_decrypt, ige_encrypt, AuthKey, ServerSalts, Side};
use crate::replay::{Seen, SeenIds};
use crate::service::*;
use crate::tl::{DecodeBudget, Reader, TlError, Writer, GZIP_PACKED, VECTOR};

/// Client messages may be this far in the past (seconds) …
const MAX_PAST: i64 = 300;
/// … or this far in the future.
const MAX_FUTURE: i64 = 30;
/// Messages one `msg_container` may carry: the figure Telegram's own server enforces (its
/// clients pack a few dozen at most); past it the whole container is refused.
pub const MAX_CONTAINER_MESSAGES: usize = 1020;
/// msg_ids one `msgs_state_req`, `msg_resend_req` or `msgs_all_info` may name: a client asks
/// about the messages it is waiting on, never more than a few containers' worth; past it the
/// request is refused (each id costs a lookup and a byte of the answer).
pub const MAX_STATE_REQ_IDS: usize = 4 * MAX_CONTAINER_MESSAGES;

/// A decrypted client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plain {
    pub salt: i64,
    pub session_id: i64,
    pub msg_id: i64,
    pub seq_no: i32,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecryptError {
    #[error("packet too short or misaligned")]
    Shape,
    #[error("msg_key does not match")]
    MsgKey,
    #[error("inner length or padding invalid")]
    Length,
}

/// The auth_key_id an encrypted packet names (0 for a plain message).
pub fn auth_key_id(packet: &[u8]) -> Option<i64> {
    Some(i64::from_le_bytes(packet.get(..8)?.try_into().ok()?))
}

/// Decrypts a client packet: auth_key_id ‖ msg_key ‖ AES-IGE(data). Trailing bytes past the
/// last 16-byte block (padded intermediate's padding) are ignored.
pub fn decrypt(key: &AuthKey, packet: &[u8]) -> Result<Plain, DecryptError> {
    decrypt_from(key, Side::Client, packet)
}

/// Decrypts a packet `side` encrypted (a client reads the server's with [`Side::Server`]).
pub fn decrypt_from(key: &AuthKey, side: Side, packet: &[u8]) -> Result<Plain, DecryptError> {
    if packet.len() < 24 + 48 {
        return Err(DecryptError::Shape);
    }
    let msg_key: [u8; 16] = packet[8..24].try_into().map_err(|_| DecryptError::Shape)?;
    let mut data = packet[24..].to_vec();
    data.truncate(data.len() - data.len() % 16);
    let (k, iv) = key.aes_key_iv(&msg_key, side);
    ige_decrypt(&mut data, &k, &iv);
    if key.msg_key(&data, side) != msg_key {
        return Err(DecryptError::MsgKey);
    }
    let mut r = Reader::new(&data);
    let (salt, session_id, msg_id) = (
        r.i64().map_err(|_| DecryptError::Shape)?,
        r.i64().map_err(|_| DecryptError::Shape)?,
        r.i64().map_err(|_| DecryptError::Shape)?,
    );
    let seq_no = r.i32().map_err(|_| DecryptError::Shape)?;
    let len = r.i32().map_err(|_| DecryptError::Shape)?;
    let len = usize::try_from(len).map_err(|_| DecryptError::Length)?;
    let padding = data
        .len()
        .checked_sub(32 + len)
        .ok_or(DecryptError::Length)?;
    if len % 4 != 0 || !(12..=1024).contains(&padding) {
        return Err(DecryptError::Length);
    }
    Ok(Plain {
        salt,
        session_id,
        msg_id,
        seq_no,
        body: data[32..32 + len].to_vec(),
    })
}

/// Decrypts an MTProto 1.0 message (the binding message of `auth.bindTempAuthKey`): msg_key is
/// the low 128 bits of SHA1 of the plaintext without padding.
pub fn decrypt_v1(key: &AuthKey, packet: &[u8]) -> Result<Plain, DecryptError> {
    if packet.len() < 24 + 48 || !(packet.len() - 24).is_multiple_of(16) {
        return Err(DecryptError::Shape);
    }
    if auth_key_id(packet) != Some(key.id()) {
        return Err(DecryptError::MsgKey);
    }
    let msg_key: [u8; 16] = packet[8..24].try_into().map_err(|_| DecryptError::Shape)?;
    let mut data = packet[24..].to_vec();
    let (k, iv) = key.aes_key_iv_v1(&msg_key, Side::Client);
    ige_decrypt(&mut data, &k, &iv);
    let mut r = Reader::new(&data);
    let (salt, session_id, msg_id) = (
        r.i64().map_err(|_| DecryptError::Shape)?,
        r.i64().map_err(|_| DecryptError::Shape)?,
        r.i64().map_err(|_| DecryptError::Shape)?,
    );
    let seq_no = r.i32().map_err(|_| DecryptError::Shape)?;
    let len = usize::try_from(r.i32().map_err(|_| DecryptError::Shape)?)
        .map_err(|_| DecryptError::Length)?;
    if 32 + len > data.len() || data.len() - 32 - len >= 16 {
        return Err(DecryptError::Length);
    }
    let h = crate::crypto::sha1(&[&data[..32 + len]]);
    if h[4..20] != msg_key {
        return Err(DecryptError::MsgKey);
    }
    Ok(Plain {
        salt,
        session_id,
        msg_id,
        seq_no,
        body: data[32..32 + len].to_vec(),
    })
}

/// Encrypts a message for `side`'s peer (the server encrypts with [`Side::Server`]).
pub fn encrypt(key: &AuthKey, side: Side, m: &Plain) -> Vec<u8> {
    let mut w = Writer::new();
    w.i64(m.salt)
        .i64(m.session_id)
        .i64(m.msg_id)
        .i32(m.seq_no)
        .i32(m.body.len() as i32)
        .raw(&m.body);
    let mut rng = rand::thread_rng();
    let mut pad = 12 + rng.gen_range(0..4) * 16;
    pad += (16 - (w.buf.len() + pad) % 16) % 16;
    let mut padding = vec![0u8; pad];
    rng.fill_bytes(&mut padding);
    w.raw(&padding);
    let mut data = w.buf;
    let msg_key = key.msg_key(&data, side);
    let (k, iv) = key.aes_key_iv(&msg_key, side);
    ige_encrypt(&mut data, &k, &iv);
    let mut out = Vec::with_capacity(24 + data.len());
    out.extend_from_slice(&key.id().to_le_bytes());
    out.extend_from_slice(&msg_key);
    out.extend_from_slice(&data);
    out
}

/// What the caller must do after a message was received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Serve this request (a function or a wrapper around one); answer with an `rpc_result` for
    /// `msg_id` through [`Session::pack`].
    Call { msg_id: i64, body: Vec<u8> },
    /// Send this service message (`content`: whether it counts for seq_no).
    Send { body: Vec<u8>, content: bool },
    /// `ping_delay_disconnect`: close the connection if nothing arrives for this many seconds.
    DisconnectAfter(i32),
    /// `destroy_session` named another session of this key.
    DestroySession(i64),
}

/// One client session of an auth key on a connection.
#[derive(Debug)]
pub struct Session {
    pub id: i64,
    /// The server salts this key accepts over time.
    salts: ServerSalts,
    last_msg_id: i64,
    content_sent: i32,
    /// The client msg_ids served, shared by every connection of this key and session.
    seen: SeenIds,
    announced: bool,
    /// What is left of the decoding budget of the message being served: its containers and gzip
    /// were charged to it, and the calls it carries charge the rest while they are decoded.
    budget: DecodeBudget,
}

/// Whether a client message must carry an odd seq_no (`Some(true)`: content-related, i.e. an API
/// call), an even one (`Some(false)`: acks, containers) or either: clients disagree about service
/// messages (Telethon sends ping as content-related, Pyrogram not), and Telegram accepts both.
fn expected_parity(id: u32) -> Option<bool> {
    match id {
        MSGS_ACK | MSG_CONTAINER | MSGS_STATE_INFO => Some(false),
        PING
        | PING_DELAY_DISCONNECT
        | HTTP_WAIT
        | MSG_RESEND_REQ
        | MSGS_ALL_INFO
        | MSGS_STATE_REQ
        | GET_FUTURE_SALTS
        | DESTROY_SESSION
        | RPC_DROP_ANSWER
        | GZIP_PACKED => None,
        _ => Some(true),
    }
}

impl Session {
    /// A session with a fixed salt whose seen msg_ids are its own.
    pub fn new(id: i64, salt: i64) -> Self {
        Self::shared(id, ServerSalts::fixed(salt), SeenIds::private())
    }

    /// A session with rotating `salts` and the msg_ids every connection of it has seen.
    /// The msg_ids (and layer) every connection of this key and session shares.
    pub fn seen(&self) -> &SeenIds {
        &self.seen
    }

    pub fn shared(id: i64, salts: ServerSalts, seen: SeenIds) -> Self {
        Self {
            id,
            salts,
            last_msg_id: 0,
            content_sent: 0,
            seen,
            announced: false,
            budget: DecodeBudget::default(),
        }
    }

    /// The server salt at `now_ms`.
    pub fn salt(&self, now_ms: i64) -> i64 {
        self.salts.current(now_ms / 1000)
    }

    /// The decoding budget left of the message being served (its calls charge it).
    pub fn budget_mut(&mut self) -> &mut DecodeBudget {
        &mut self.budget
    }

    /// A server msg_id: time-based, increasing, ≡ 1 (mod 4) for responses, 3 otherwise.
    pub fn next_msg_id(&mut self, now_ms: i64, response: bool) -> i64 {
        let secs = now_ms / 1000;
        let frac = ((now_ms % 1000) << 32) / 1000;
        let mut id = (secs << 32) | (frac & !3);
        if id <= self.last_msg_id {
            id = (self.last_msg_id & !3) + 4;
        }
        id |= if response { 1 } else { 3 };
        self.last_msg_id = id;
        id
    }

    fn next_seq(&mut self, content: bool) -> i32 {
        if content {
            self.content_sent += 1;
            self.content_sent * 2 - 1
        } else {
            self.content_sent * 2
        }
    }

    /// Encrypts one outgoing message of this session.
    pub fn pack(
        &mut self,
        key: &AuthKey,
        body: Vec<u8>,
        content: bool,
        response: bool,
        now_ms: i64,
    ) -> Vec<u8> {
        let msg_id = self.next_msg_id(now_ms, response);
        let seq_no = self.next_seq(content);
        encrypt(
            key,
            Side::Server,
            &Plain {
                salt: self.salt(now_ms),
                session_id: self.id,
                msg_id,
                seq_no,
                body,
            },
        )
    }

    /// Whether `msg_id` is new to this session (on any connection); a replay, or an id too old
    /// to tell from one, is not.
    fn remember(&mut self, msg_id: i64) -> bool {
        self.seen.insert(msg_id) == Seen::Fresh
    }

    /// Checks and unwraps one decrypted message.
    pub fn receive(&mut self, m: &Plain, now_ms: i64) -> Vec<Action> {
        let mut out = Vec::new();
        self.budget = DecodeBudget::default();
        if !self.announced {
            self.announced = true;
            out.push(Action::Send {
                body: new_session_created(m.msg_id, rand::random(), self.salt(now_ms)),
                content: true,
            });
        }
        if let Some(code) = check_msg_id(m.msg_id, now_ms) {
            out.push(Action::Send {
                body: bad_msg_notification(m.msg_id, m.seq_no, code),
                content: false,
            });
            return out;
        }
        if !self.salts.accepts(m.salt, now_ms / 1000) {
            out.push(Action::Send {
                body: bad_server_salt(m.msg_id, m.seq_no, self.salt(now_ms)),
                content: false,
            });
            return out;
        }
        if !self.remember(m.msg_id) {
            // A replayed msg_id: already served, ignored.
            return out;
        }
        self.object(m.msg_id, m.seq_no, &m.body, now_ms, &mut out, 0);
        out
    }

    fn object(
        &mut self,
        msg_id: i64,
        seq_no: i32,
        body: &[u8],
        now_ms: i64,
        out: &mut Vec<Action>,
        depth: usize,
    ) {
        let mut r = Reader::new(body);
        let Ok(id) = r.u32() else {
            return;
        };
        // 34: an even seq_no was expected, 35: an odd one.
        if let Some(odd) = expected_parity(id) {
            if (seq_no & 1 == 1) != odd {
                out.push(Action::Send {
                    body: bad_msg_notification(msg_id, seq_no, if odd { 35 } else { 34 }),
                    content: false,
                });
                return;
            }
        }
        let result: Result<(), TlError> = (|| {
            match id {
                MSG_CONTAINER if depth == 0 => {
                    let n = r.count(16)?;
                    if n > MAX_CONTAINER_MESSAGES {
                        return Err(TlError::OverBudget("too many messages in a container"));
                    }
                    self.budget.values(n)?;
                    for _ in 0..n {
                        let inner_id = r.i64()?;
                        let inner_seq = r.i32()?;
                        let len = usize::try_from(r.i32()?)
                            .map_err(|_| TlError::Invalid("negative length"))?;
                        let inner = r.take(len)?;
                        if let Some(code) = check_msg_id(inner_id, now_ms) {
                            out.push(Action::Send {
                                body: bad_msg_notification(inner_id, inner_seq, code),
                                content: false,
                            });
                            continue;
                        }
                        if self.remember(inner_id) {
                            self.object(inner_id, inner_seq, inner, now_ms, out, depth + 1);
                        }
                    }
                }
                GZIP_PACKED if depth < 2 => {
                    // Nested gzip_packed levels are inflated (and charged) in one go.
                    let inner = self.budget.gunzip(r.bytes()?)?;
                    self.object(msg_id, seq_no, &inner, now_ms, out, depth + 1);
                }
                MSGS_ACK | HTTP_WAIT => {}
                // Answers are not kept for resending, and the client's own state report needs
                // no answer; both are read within their caps.
                MSG_RESEND_REQ | MSGS_ALL_INFO => {
                    self.ids(&mut r)?;
                }
                PING => out.push(Action::Send {
                    body: pong(msg_id, r.i64()?),
                    content: true,
                }),
                PING_DELAY_DISCONNECT => {
                    let ping_id = r.i64()?;
                    let delay = r.i32()?;
                    out.push(Action::Send {
                        body: pong(msg_id, ping_id),
                        content: true,
                    });
                    out.push(Action::DisconnectAfter(delay));
                }
                GET_FUTURE_SALTS => {
                    let num = r.i32()?;
                    out.push(Action::Send {
                        body: future_salts(
                            msg_id,
                            (now_ms / 1000) as i32,
                            &self.salts.future(now_ms / 1000, num),
                        ),
                        content: true,
                    });
                }
                DESTROY_SESSION => {
                    let sid = r.i64()?;
                    let mut w = Writer::new();
                    if sid == self.id {
                        w.u32(DESTROY_SESSION_NONE).i64(sid);
                    } else {
                        w.u32(DESTROY_SESSION_OK).i64(sid);
                        out.push(Action::DestroySession(sid));
                    }
                    out.push(Action::Send {
                        body: rpc_result(msg_id, &w.buf),
                        content: true,
                    });
                }
                MSGS_STATE_REQ => {
                    let ids = self.ids(&mut r)?;
                    let info: Vec<u8> = ids
                        .iter()
                        .map(|i| if self.seen.contains(i) { 4 } else { 2 })
                        .collect();
                    let mut w = Writer::new();
                    w.u32(MSGS_STATE_INFO).i64(msg_id).bytes(&info);
                    out.push(Action::Send {
                        body: w.buf,
                        content: false,
                    });
                }
                RPC_DROP_ANSWER => {
                    let mut w = Writer::new();
                    w.u32(RPC_ANSWER_UNKNOWN);
                    out.push(Action::Send {
                        body: rpc_result(msg_id, &w.buf),
                        content: true,
                    });
                }
                _ => out.push(Action::Call {
                    msg_id,
                    body: body.to_vec(),
                }),
            }
            Ok(())
        })();
        if let Err(e) = result {
            let message = match e {
                TlError::OverBudget(_) | TlError::TooDeep => "INPUT_REQUEST_TOO_LONG",
                _ => "INPUT_REQUEST_INVALID",
            };
            out.push(Action::Send {
                body: rpc_error(msg_id, 400, message),
                content: true,
            });
        }
    }

    /// A `Vector<long>` of msg_ids, refused past [`MAX_STATE_REQ_IDS`] before any is read.
    fn ids(&mut self, r: &mut Reader<'_>) -> Result<Vec<i64>, TlError> {
        let id = r.u32()?;
        if id != VECTOR {
            return Err(TlError::Unexpected {
                got: id,
                expected: "Vector",
            });
        }
        let n = r.count(8)?;
        if n > MAX_STATE_REQ_IDS {
            return Err(TlError::OverBudget("too many msg_ids"));
        }
        self.budget.values(n)?;
        (0..n).map(|_| r.i64()).collect()
    }
}

/// bad_msg_notification codes for a client msg_id: 18 (not ≡ 0 mod 4), 16 (too old), 17 (too
/// far in the future).
fn check_msg_id(msg_id: i64, now_ms: i64) -> Option<i32> {
    if msg_id % 4 != 0 {
        return Some(18);
    }
    let t = msg_id >> 32;
    let now = now_ms / 1000;
    if t < now - MAX_PAST {
        Some(16)
    } else if t > now + MAX_FUTURE {
        Some(17)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> AuthKey {
        AuthKey::new(core::array::from_fn(|i| (i * 31 + 7) as u8))
    }

    const NOW: i64 = 1_764_489_600_000;

    fn client_msg(salt: i64, msg_id: i64, seq_no: i32, body: Vec<u8>) -> Vec<u8> {
        encrypt(
            &key(),
            Side::Client,
            &Plain {
                salt,
                session_id: 42,
                msg_id,
                seq_no,
                body,
            },
        )
    }

    fn msg_id(offset_s: i64, n: i64) -> i64 {
        ((NOW / 1000 + offset_s) << 32) + n * 4
    }

    fn call(n: u32) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(0xc4f9186b).i32(n as i32); // help.getConfig and junk: an opaque call
        w.buf
    }

    #[test]
    fn encrypted_messages_round_trip_and_tampering_is_caught() {
        let p = client_msg(5, msg_id(0, 1), 1, call(1));
        let m = decrypt(&key(), &p).unwrap();
        assert_eq!((m.salt, m.session_id, m.seq_no), (5, 42, 1));
        assert_eq!(m.body, call(1));
        for i in [8, 30, p.len() - 1] {
            let mut bad = p.clone();
            bad[i] ^= 1;
            assert!(decrypt(&key(), &bad).is_err());
        }
        let other = AuthKey::new([1; 256]);
        assert_eq!(decrypt(&other, &p), Err(DecryptError::MsgKey));
        assert_eq!(decrypt(&key(), &p[..40]), Err(DecryptError::Shape));
    }

    #[test]
    fn v1_binding_messages_decrypt() {
        let k = key();
        let mut w = Writer::new();
        w.i64(1).i64(2).i64(msg_id(0, 1)).i32(0).i32(8).i64(99);
        let plain = w.buf.clone();
        let h = crate::crypto::sha1(&[&plain]);
        let msg_key: [u8; 16] = h[4..20].try_into().unwrap();
        let mut data = plain;
        data.extend_from_slice(&[0u8; 8]);
        let (aes, iv) = k.aes_key_iv_v1(&msg_key, Side::Client);
        ige_encrypt(&mut data, &aes, &iv);
        let mut packet = k.id().to_le_bytes().to_vec();
        packet.extend_from_slice(&msg_key);
        packet.extend_from_slice(&data);
        let m = decrypt_v1(&k, &packet).unwrap();
        assert_eq!(
            (m.salt, m.session_id, m.body.clone()),
            (1, 2, 99i64.to_le_bytes().to_vec())
        );
        packet[30] ^= 1;
        assert!(decrypt_v1(&k, &packet).is_err());
    }

    #[test]
    fn session_rules() {
        let mut s = Session::new(42, 5);
        // First message: new_session_created, then the call.
        let m = decrypt(&key(), &client_msg(5, msg_id(0, 1), 1, call(1))).unwrap();
        let acts = s.receive(&m, NOW);
        assert!(
            matches!(&acts[0], Action::Send { body, .. } if body[..4] == NEW_SESSION_CREATED.to_le_bytes())
        );
        assert!(matches!(&acts[1], Action::Call { msg_id: id, .. } if *id == m.msg_id));
        // Replay: nothing.
        assert!(s.receive(&m, NOW).is_empty());
        // Wrong salt: bad_server_salt with ours.
        let m = decrypt(&key(), &client_msg(6, msg_id(0, 2), 3, call(2))).unwrap();
        let acts = s.receive(&m, NOW);
        assert!(
            matches!(&acts[0], Action::Send { body, .. } if body[..4] == BAD_SERVER_SALT.to_le_bytes() && body[body.len()-8..] == 5i64.to_le_bytes())
        );
        // Too old, too new, odd msg_id.
        for (id, code) in [
            (msg_id(-301, 3), 16),
            (msg_id(31, 3), 17),
            (msg_id(0, 3) + 1, 18),
        ] {
            let m = decrypt(&key(), &client_msg(5, id, 5, call(3))).unwrap();
            let acts = s.receive(&m, NOW);
            assert_eq!(
                acts,
                vec![Action::Send {
                    body: bad_msg_notification(id, 5, code),
                    content: false
                }]
            );
        }
        // An even seq_no for a call: 35 (odd expected).
        let id = msg_id(0, 9);
        let m = decrypt(&key(), &client_msg(5, id, 6, call(4))).unwrap();
        assert_eq!(
            s.receive(&m, NOW),
            vec![Action::Send {
                body: bad_msg_notification(id, 6, 35),
                content: false
            }]
        );
        // An odd seq_no for an ack: 34 (even expected); a ping may have either.
        let id = msg_id(0, 10);
        let mut ack = Writer::new();
        ack.u32(MSGS_ACK).vec_i64(&[1]);
        let m = decrypt(&key(), &client_msg(5, id, 7, ack.buf)).unwrap();
        assert_eq!(
            s.receive(&m, NOW),
            vec![Action::Send {
                body: bad_msg_notification(id, 7, 34),
                content: false
            }]
        );
        for (n, seq) in [(11, 8), (12, 9)] {
            let mut ping = Writer::new();
            ping.u32(PING).i64(n);
            let m = decrypt(&key(), &client_msg(5, msg_id(0, n), seq, ping.buf)).unwrap();
            assert!(
                matches!(&s.receive(&m, NOW)[0], Action::Send { body, .. } if body[..4] == PONG.to_le_bytes())
            );
        }
    }

    #[test]
    fn containers_and_gzip_unwrap_and_ping_is_answered() {
        let mut s = Session::new(42, 5);
        let mut ping = Writer::new();
        ping.u32(PING).i64(777);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &call(7)).unwrap();
        let mut packed = Writer::new();
        packed.u32(GZIP_PACKED).bytes(&gz.finish().unwrap());
        let mut c = Writer::new();
        c.u32(MSG_CONTAINER).i32(2);
        for (n, (seq, body)) in [(3, ping.buf.clone()), (5, packed.buf.clone())]
            .iter()
            .enumerate()
        {
            c.i64(msg_id(0, 10 + n as i64))
                .i32(*seq)
                .i32(body.len() as i32)
                .raw(body);
        }
        let m = decrypt(&key(), &client_msg(5, msg_id(0, 20), 6, c.buf)).unwrap();
        let acts = s.receive(&m, NOW);
        assert_eq!(acts.len(), 3, "{acts:?}");
        assert_eq!(
            acts[1],
            Action::Send {
                body: pong(msg_id(0, 10), 777),
                content: true
            }
        );
        assert_eq!(
            acts[2],
            Action::Call {
                msg_id: msg_id(0, 11),
                body: call(7)
            }
        );
    }

    fn container(first: i64, n: usize) -> Vec<u8> {
        let mut c = Writer::new();
        c.u32(MSG_CONTAINER).i32(n as i32);
        for i in 0..n {
            let mut ack = Writer::new();
            ack.u32(MSGS_ACK).vec_i64(&[1]);
            c.i64(msg_id(0, first + i as i64))
                .i32(0)
                .i32(ack.buf.len() as i32)
                .raw(&ack.buf);
        }
        c.buf
    }

    fn receive_body(s: &mut Session, id: i64, seq: i32, body: Vec<u8>) -> Vec<Action> {
        let m = decrypt(&key(), &client_msg(5, id, seq, body)).unwrap();
        s.receive(&m, NOW)
    }

    fn is_error(a: &Action, message: &str) -> bool {
        matches!(a, Action::Send { body, .. } if body.ends_with(&{
            let mut w = Writer::new();
            w.bytes(message.as_bytes());
            w.buf
        }))
    }

    #[test]
    fn containers_at_the_cap_are_served_and_one_more_is_refused() {
        let mut s = Session::new(42, 5);
        s.announced = true;
        let acts = receive_body(
            &mut s,
            msg_id(0, 5000),
            0,
            container(1, MAX_CONTAINER_MESSAGES),
        );
        assert!(acts.is_empty(), "acks need no answer: {acts:?}");
        assert!(s.seen.contains(&msg_id(0, MAX_CONTAINER_MESSAGES as i64)));
        let acts = receive_body(
            &mut s,
            msg_id(0, 5001),
            0,
            container(2000, MAX_CONTAINER_MESSAGES + 1),
        );
        assert_eq!(acts.len(), 1, "{acts:?}");
        assert!(is_error(&acts[0], "INPUT_REQUEST_TOO_LONG"), "{acts:?}");
        assert!(!s.seen.contains(&msg_id(0, 2000)), "nothing of it served");
    }

    #[test]
    fn msgs_state_req_at_the_cap_is_answered_fast_and_one_more_is_refused() {
        let mut s = Session::new(42, 5);
        s.announced = true;
        receive_body(&mut s, msg_id(0, 1), 0, container(10, 500));
        let ids: Vec<i64> = (0..MAX_STATE_REQ_IDS as i64)
            .map(|i| msg_id(0, 10 + i))
            .collect();
        let mut req = Writer::new();
        req.u32(MSGS_STATE_REQ).vec_i64(&ids);
        let started = std::time::Instant::now();
        let acts = receive_body(&mut s, msg_id(0, 9000), 0, req.buf);
        assert!(started.elapsed() < std::time::Duration::from_millis(500));
        let Action::Send { body, .. } = &acts[0] else {
            panic!("{acts:?}")
        };
        let mut r = Reader::new(body);
        assert_eq!(r.u32().unwrap(), MSGS_STATE_INFO);
        r.i64().unwrap();
        let info = r.bytes().unwrap();
        assert_eq!(info.len(), MAX_STATE_REQ_IDS);
        // The session remembers its latest ids only: this request's own and the container's last
        // IDS_PER_SESSION - 1.
        let forgotten = 500 - (crate::replay::IDS_PER_SESSION - 1);
        assert!(info[..forgotten].iter().all(|b| *b == 2));
        assert!(info[forgotten..500].iter().all(|b| *b == 4));
        assert!(info[500..].iter().all(|b| *b == 2));
        let mut over = Writer::new();
        over.u32(MSGS_STATE_REQ)
            .vec_i64(&vec![1; MAX_STATE_REQ_IDS + 1]);
        let acts = receive_body(&mut s, msg_id(0, 9001), 0, over.buf);
        assert!(is_error(&acts[0], "INPUT_REQUEST_TOO_LONG"), "{acts:?}");
    }

    #[test]
    fn gzip_in_a_container_is_charged_to_one_budget_for_the_message() {
        // Two calls of 1.5 MiB each, gzip-packed: each alone fits, both are over the budget.
        let mut big = Writer::new();
        big.u32(0xc4f9186b).raw(&vec![0u8; 3 << 19]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut gz, &big.buf).unwrap();
        let mut packed = Writer::new();
        packed.u32(GZIP_PACKED).bytes(&gz.finish().unwrap());
        let mut c = Writer::new();
        c.u32(MSG_CONTAINER).i32(2);
        for n in 0..2 {
            c.i64(msg_id(0, 10 + n))
                .i32(1)
                .i32(packed.buf.len() as i32)
                .raw(&packed.buf);
        }
        let mut s = Session::new(42, 5);
        s.announced = true;
        let acts = receive_body(&mut s, msg_id(0, 20), 0, c.buf);
        assert_eq!(acts.len(), 2, "{acts:?}");
        assert!(matches!(&acts[0], Action::Call { body, .. } if body.len() == big.buf.len()));
        assert!(is_error(&acts[1], "INPUT_REQUEST_TOO_LONG"), "{acts:?}");
        // The call's own decoding gets what is left of the message's budget.
        assert_eq!(
            s.budget_mut().inflated_left(),
            crate::tl::MAX_INFLATED_BYTES - big.buf.len()
        );
    }

    #[test]
    fn a_replay_on_another_connection_of_the_same_key_is_dropped() {
        let cache = std::sync::Arc::new(crate::replay::ReplayCache::default());
        let salts = ServerSalts::fixed(5);
        let packet = client_msg(5, msg_id(0, 1), 1, call(1));
        let m = decrypt(&key(), &packet).unwrap();
        // The first connection serves it ...
        let mut first = Session::shared(42, salts.clone(), cache.session(key().id(), 42));
        assert!(first
            .receive(&m, NOW)
            .iter()
            .any(|a| matches!(a, Action::Call { .. })));
        // ... a second connection with the same key and session (first still open) does not,
        let mut second = Session::shared(42, salts.clone(), cache.session(key().id(), 42));
        let acts = second.receive(&m, NOW);
        assert!(
            !acts.iter().any(|a| matches!(a, Action::Call { .. })),
            "{acts:?}"
        );
        // ... nor a third once both are gone.
        drop((first, second));
        let mut third = Session::shared(42, salts, cache.session(key().id(), 42));
        assert!(!third
            .receive(&m, NOW)
            .iter()
            .any(|a| matches!(a, Action::Call { .. })));
        // A new message on it is served.
        let m = decrypt(&key(), &client_msg(5, msg_id(0, 2), 3, call(2))).unwrap();
        assert!(third
            .receive(&m, NOW)
            .iter()
            .any(|a| matches!(a, Action::Call { .. })));
    }

    #[test]
    fn salts_rotate_and_bad_server_salt_names_the_current_one() {
        use crate::crypto::{SALT_GRACE_SECS, SALT_WINDOW_SECS};
        let salts = ServerSalts::new(&key(), 5, NOW / 1000 - 10 * SALT_WINDOW_SECS);
        let cache = std::sync::Arc::new(crate::replay::ReplayCache::default());
        let mut s = Session::shared(42, salts.clone(), cache.session(key().id(), 42));
        let now_s = NOW / 1000;
        let current = salts.current(now_s);
        assert_eq!(s.salt(NOW), current);
        // The handshake's salt is long expired: bad_server_salt with the current salt.
        let m = decrypt(&key(), &client_msg(5, msg_id(0, 1), 1, call(1))).unwrap();
        let acts = s.receive(&m, NOW);
        assert_eq!(
            acts[1],
            Action::Send {
                body: bad_server_salt(m.msg_id, 1, current),
                content: false
            }
        );
        // get_future_salts: the salts of this and the next windows, each then accepted.
        let mut w = Writer::new();
        w.u32(GET_FUTURE_SALTS).i32(3);
        let m = decrypt(&key(), &client_msg(current, msg_id(0, 2), 3, w.buf)).unwrap();
        let acts = s.receive(&m, NOW);
        let Action::Send { body, .. } = &acts[0] else {
            panic!("{acts:?}")
        };
        let mut r = Reader::new(body);
        assert_eq!(r.u32().unwrap(), FUTURE_SALTS);
        assert_eq!(r.i64().unwrap(), m.msg_id);
        assert_eq!(i64::from(r.i32().unwrap()), now_s);
        assert_eq!(r.i32().unwrap(), 3);
        let mut future = Vec::new();
        for _ in 0..3 {
            let (since, until, salt) = (r.i32().unwrap(), r.i32().unwrap(), r.i64().unwrap());
            assert_eq!(until - since, SALT_WINDOW_SECS as i32);
            future.push((i64::from(since), salt));
        }
        assert_eq!(future[0].1, current);
        assert!(future[0].1 != future[1].1 && future[1].1 != future[2].1);
        // The next window's salt is refused now and accepted once its window began; the
        // current one stays accepted for the grace period after that.
        let next_ms = future[1].0 * 1000;
        let ping = |n: i64| {
            let mut w = Writer::new();
            w.u32(PING).i64(n);
            w.buf
        };
        let early = decrypt(&key(), &client_msg(future[1].1, msg_id(0, 3), 5, ping(1))).unwrap();
        assert!(
            matches!(&s.receive(&early, NOW)[0], Action::Send { body, .. } if body[..4] == BAD_SERVER_SALT.to_le_bytes())
        );
        let at = |ms: i64, n: i64, salt: i64| {
            let id = ((ms / 1000) << 32) + n * 4;
            decrypt(&key(), &client_msg(salt, id, 7, ping(n))).unwrap()
        };
        let pong_for = |acts: Vec<Action>| matches!(&acts[0], Action::Send { body, .. } if body[..4] == PONG.to_le_bytes());
        assert!(pong_for(s.receive(&at(next_ms, 4, future[1].1), next_ms)));
        let late = next_ms + (SALT_GRACE_SECS - 1) * 1000;
        assert!(pong_for(s.receive(&at(late, 5, current), late)));
        let too_late = next_ms + SALT_GRACE_SECS * 1000;
        assert!(!pong_for(s.receive(&at(too_late, 6, current), too_late)));
    }

    #[test]
    fn server_msg_ids_increase_with_the_right_parity() {
        let mut s = Session::new(1, 1);
        let a = s.next_msg_id(NOW, true);
        let b = s.next_msg_id(NOW, false);
        let c = s.next_msg_id(NOW - 5000, true);
        assert!(a < b && b < c);
        assert_eq!((a % 4, b % 4, c % 4), (1, 3, 1));
    }
}
