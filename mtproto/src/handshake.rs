//! Creating an auth key (the server's side of https://core.telegram.org/mtproto/auth_key), over
//! plain (unencrypted) messages: req_pq(_multi) → resPQ, req_DH_params → server_DH_params_ok,
//! set_client_DH_params → dh_gen_ok. req_DH_params is accepted in both encodings clients use:
//! RSA_PAD (TDesktop, TDLib, grammers) and the older sha1 ‖ data ‖ padding (Telethon, Pyrogram).

use rand::RngCore;

use crate::crypto::{
    ige_decrypt, ige_encrypt, sha1, sha256, AuthKey, DhSecret, PqPair, ServerKey, DH_G, DH_PRIME,
};
use crate::tl::{Reader, TlError, Writer};

pub const REQ_PQ: u32 = 0x60469778;
pub const REQ_PQ_MULTI: u32 = 0xbe7e8ef1;
pub const RES_PQ: u32 = 0x05162463;
pub const REQ_DH_PARAMS: u32 = 0xd712e4be;
pub const P_Q_INNER_DATA: u32 = 0x83c95aec;
pub const P_Q_INNER_DATA_DC: u32 = 0xa9f55f95;
pub const P_Q_INNER_DATA_TEMP: u32 = 0x3c6a84d4;
pub const P_Q_INNER_DATA_TEMP_DC: u32 = 0x56fddf88;
pub const SERVER_DH_PARAMS_OK: u32 = 0xd0e8075c;
pub const SERVER_DH_INNER_DATA: u32 = 0xb5890dba;
pub const SET_CLIENT_DH_PARAMS: u32 = 0xf5045f1f;
pub const CLIENT_DH_INNER_DATA: u32 = 0x6643b654;
pub const DH_GEN_OK: u32 = 0x3bcbf734;
pub const DH_GEN_RETRY: u32 = 0x46dc1fb9;
pub const DH_GEN_FAIL: u32 = 0xa69dae02;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("malformed handshake message: {0}")]
    Tl(#[from] TlError),
    #[error("unexpected handshake message {0:#010x} in this state")]
    Unexpected(u32),
    #[error("nonce mismatch")]
    Nonce,
    #[error("unknown server key fingerprint {0:#x}")]
    Fingerprint(i64),
    #[error("encrypted data could not be decrypted or its hash is wrong")]
    Decrypt,
    #[error("p and q do not match pq")]
    Pq,
    #[error("client DH value out of range")]
    Dh,
}

/// A plain message: auth_key_id 0, msg_id, length, body.
pub fn decode_plain(packet: &[u8]) -> Result<(i64, &[u8]), TlError> {
    let mut r = Reader::new(packet);
    if r.i64()? != 0 {
        return Err(TlError::Invalid("not a plain message"));
    }
    let msg_id = r.i64()?;
    let len = r.i32()?;
    let len = usize::try_from(len).map_err(|_| TlError::Invalid("negative length"))?;
    Ok((msg_id, r.take(len)?))
}

pub fn encode_plain(msg_id: i64, body: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.i64(0).i64(msg_id).i32(body.len() as i32).raw(body);
    w.buf
}

/// What a finished exchange produced.
#[derive(Debug, Clone)]
pub struct NewKey {
    pub auth_key: AuthKey,
    /// The first server salt: new_nonce[0..8] ⊕ server_nonce[0..8].
    pub salt: i64,
    /// `Some(seconds)` for a temporary key (p_q_inner_data_temp*).
    pub expires_in: Option<i32>,
    pub dc: Option<i32>,
    nonce: [u8; 16],
    server_nonce: [u8; 16],
    new_nonce: [u8; 32],
}

impl NewKey {
    /// `dh_gen_fail`, to send instead of the `dh_gen_ok` when the key cannot be kept (its id is
    /// already taken): the client starts over.
    pub fn dh_gen_fail(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(DH_GEN_FAIL)
            .raw(&self.nonce)
            .raw(&self.server_nonce)
            .raw(&new_nonce_hash(
                &self.new_nonce,
                3,
                &self.auth_key.aux_hash(),
            ));
        w.buf
    }
}

#[derive(Debug)]
pub enum Step {
    /// Send this body back.
    Reply(Vec<u8>),
    /// Send this body (dh_gen_ok); the key exists from now on.
    Done(Vec<u8>, NewKey),
}

enum State {
    Start,
    Pq {
        nonce: [u8; 16],
        server_nonce: [u8; 16],
        pq: PqPair,
    },
    Dh {
        nonce: [u8; 16],
        server_nonce: [u8; 16],
        new_nonce: [u8; 32],
        secret: DhSecret,
        tmp_key: [u8; 32],
        tmp_iv: [u8; 32],
        expires_in: Option<i32>,
        dc: Option<i32>,
    },
}

/// One connection's key exchange in progress.
pub struct Handshake {
    state: State,
}

impl Default for Handshake {
    fn default() -> Self {
        Self {
            state: State::Start,
        }
    }
}

struct PqInner {
    pq: Vec<u8>,
    p: Vec<u8>,
    q: Vec<u8>,
    nonce: [u8; 16],
    server_nonce: [u8; 16],
    new_nonce: [u8; 32],
    dc: Option<i32>,
    expires_in: Option<i32>,
}

/// The longest life a temporary key gets, in seconds: a week (Telegram Desktop asks for a day).
/// A client asking for more gets this (the protocol lets the server shorten it; the client then
/// makes a new key, as after any expiry), so "temporary" keys cannot be made permanent and the
/// sweep of expired keys always reaches them.
pub const MAX_TEMP_KEY_LIFETIME_SECS: i32 = 7 * 86_400;

/// `expires_in` as the server grants it: at least a second, at most the maximum.
fn temp_key_lifetime(asked: i32) -> i32 {
    asked.clamp(1, MAX_TEMP_KEY_LIFETIME_SECS)
}

fn parse_pq_inner(r: &mut Reader<'_>) -> Result<PqInner, TlError> {
    let id = r.u32()?;
    if ![
        P_Q_INNER_DATA,
        P_Q_INNER_DATA_DC,
        P_Q_INNER_DATA_TEMP,
        P_Q_INNER_DATA_TEMP_DC,
    ]
    .contains(&id)
    {
        return Err(TlError::Unexpected {
            got: id,
            expected: "p_q_inner_data",
        });
    }
    let pq = r.bytes()?.to_vec();
    let p = r.bytes()?.to_vec();
    let q = r.bytes()?.to_vec();
    let nonce = r.array()?;
    let server_nonce = r.array()?;
    let new_nonce = r.array()?;
    let dc = if id == P_Q_INNER_DATA_DC || id == P_Q_INNER_DATA_TEMP_DC {
        Some(r.i32()?)
    } else {
        None
    };
    let expires_in = if id == P_Q_INNER_DATA_TEMP || id == P_Q_INNER_DATA_TEMP_DC {
        Some(temp_key_lifetime(r.i32()?))
    } else {
        None
    };
    Ok(PqInner {
        pq,
        p,
        q,
        nonce,
        server_nonce,
        new_nonce,
        dc,
        expires_in,
    })
}

/// The old encoding: 0 ‖ SHA1(data) ‖ data ‖ random padding to 255 bytes.
fn old_format(plain: &[u8; 256]) -> Option<PqInner> {
    if plain[0] != 0 {
        return None;
    }
    let hash = &plain[1..21];
    let data = &plain[21..];
    let mut r = Reader::new(data);
    let inner = parse_pq_inner(&mut r).ok()?;
    (sha1(&[&data[..r.pos()]]) == hash).then_some(inner)
}

/// RSA_PAD: temp_key_xor ‖ AES-IGE(reverse(data_with_padding) ‖ SHA256(temp_key ‖ data_with_padding)).
fn rsa_pad_format(plain: &[u8; 256]) -> Option<PqInner> {
    let aes_encrypted = &plain[32..];
    let h = sha256(&[aes_encrypted]);
    let mut temp_key = [0u8; 32];
    for i in 0..32 {
        temp_key[i] = plain[i] ^ h[i];
    }
    let mut data_with_hash = aes_encrypted.to_vec();
    ige_decrypt(&mut data_with_hash, &temp_key, &[0u8; 32]);
    let mut data = data_with_hash[..192].to_vec();
    data.reverse();
    if sha256(&[&temp_key, &data]) != data_with_hash[192..224] {
        return None;
    }
    parse_pq_inner(&mut Reader::new(&data)).ok()
}

pub(crate) fn tmp_aes(new_nonce: &[u8; 32], server_nonce: &[u8; 16]) -> ([u8; 32], [u8; 32]) {
    let ns = sha1(&[new_nonce, server_nonce]);
    let sn = sha1(&[server_nonce, new_nonce]);
    let nn = sha1(&[new_nonce, new_nonce]);
    let mut key = [0u8; 32];
    key[..20].copy_from_slice(&ns);
    key[20..].copy_from_slice(&sn[..12]);
    let mut iv = [0u8; 32];
    iv[..8].copy_from_slice(&sn[12..20]);
    iv[8..28].copy_from_slice(&nn);
    iv[28..].copy_from_slice(&new_nonce[..4]);
    (key, iv)
}

pub(crate) fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    rand::thread_rng().fill_bytes(&mut b);
    b
}

/// SHA1(data) ‖ data ‖ random padding to a multiple of 16, AES-IGE encrypted.
fn encrypt_answer(answer: &[u8], key: &[u8; 32], iv: &[u8; 32]) -> Vec<u8> {
    let mut out = sha1(&[answer]).to_vec();
    out.extend_from_slice(answer);
    while !out.len().is_multiple_of(16) {
        out.push(rand::random());
    }
    ige_encrypt(&mut out, key, iv);
    out
}

pub fn new_nonce_hash(new_nonce: &[u8; 32], n: u8, aux_hash: &[u8; 8]) -> [u8; 16] {
    let h = sha1(&[new_nonce, &[n], aux_hash]);
    let mut out = [0u8; 16];
    out.copy_from_slice(&h[4..20]);
    out
}

impl Handshake {
    /// Handles one plain message body; `now` is the server's unix time.
    pub fn handle(
        &mut self,
        key: &ServerKey,
        body: &[u8],
        now: i32,
    ) -> Result<Step, HandshakeError> {
        let mut r = Reader::new(body);
        let id = r.u32()?;
        match (id, &self.state) {
            // Where an exchange starts, or right after resPQ: Telegram Desktop tests a new
            // connection with a req_pq_multi whose resPQ it only checks, then starts its real
            // exchange on it with another (nothing the server holds is lost yet: it made pq only).
            // After req_DH_params it would throw away the DH state the client's next step
            // depends on. Every req_pq counts against the address's handshake rate.
            (REQ_PQ | REQ_PQ_MULTI, State::Start | State::Pq { .. }) => {
                let nonce: [u8; 16] = r.array()?;
                let server_nonce: [u8; 16] = random();
                let pq = PqPair::generate();
                let mut w = Writer::new();
                w.u32(RES_PQ)
                    .raw(&nonce)
                    .raw(&server_nonce)
                    .bytes(&pq.pq_bytes())
                    .vec_i64(&[key.fingerprint()]);
                self.state = State::Pq {
                    nonce,
                    server_nonce,
                    pq,
                };
                Ok(Step::Reply(w.buf))
            }
            (
                REQ_DH_PARAMS,
                State::Pq {
                    nonce,
                    server_nonce,
                    pq,
                },
            ) => {
                let (nonce, server_nonce, pq) = (*nonce, *server_nonce, *pq);
                if r.array::<16>()? != nonce || r.array::<16>()? != server_nonce {
                    return Err(HandshakeError::Nonce);
                }
                let (p, q) = (r.bytes()?.to_vec(), r.bytes()?.to_vec());
                let fingerprint = r.i64()?;
                let encrypted = r.bytes()?;
                if fingerprint != key.fingerprint() {
                    return Err(HandshakeError::Fingerprint(fingerprint));
                }
                if !pq.matches(&p, &q) {
                    return Err(HandshakeError::Pq);
                }
                let plain = key.decrypt_raw(encrypted).ok_or(HandshakeError::Decrypt)?;
                let inner = old_format(&plain)
                    .or_else(|| rsa_pad_format(&plain))
                    .ok_or(HandshakeError::Decrypt)?;
                if inner.nonce != nonce || inner.server_nonce != server_nonce {
                    return Err(HandshakeError::Nonce);
                }
                if inner.pq != pq.pq_bytes() || !pq.matches(&inner.p, &inner.q) {
                    return Err(HandshakeError::Pq);
                }
                let secret = DhSecret::generate();
                let mut answer = Writer::new();
                answer
                    .u32(SERVER_DH_INNER_DATA)
                    .raw(&nonce)
                    .raw(&server_nonce)
                    .i32(DH_G)
                    .bytes(&DH_PRIME)
                    .bytes(&secret.g_a())
                    .i32(now);
                let (tmp_key, tmp_iv) = tmp_aes(&inner.new_nonce, &server_nonce);
                let encrypted_answer = encrypt_answer(&answer.buf, &tmp_key, &tmp_iv);
                let mut w = Writer::new();
                w.u32(SERVER_DH_PARAMS_OK)
                    .raw(&nonce)
                    .raw(&server_nonce)
                    .bytes(&encrypted_answer);
                self.state = State::Dh {
                    nonce,
                    server_nonce,
                    new_nonce: inner.new_nonce,
                    secret,
                    tmp_key,
                    tmp_iv,
                    expires_in: inner.expires_in,
                    dc: inner.dc,
                };
                Ok(Step::Reply(w.buf))
            }
            (
                SET_CLIENT_DH_PARAMS,
                State::Dh {
                    nonce,
                    server_nonce,
                    new_nonce,
                    secret,
                    tmp_key,
                    tmp_iv,
                    expires_in,
                    dc,
                },
            ) => {
                if r.array::<16>()? != *nonce || r.array::<16>()? != *server_nonce {
                    return Err(HandshakeError::Nonce);
                }
                let mut data = r.bytes()?.to_vec();
                if data.len() % 16 != 0 || data.len() < 32 {
                    return Err(HandshakeError::Decrypt);
                }
                ige_decrypt(&mut data, tmp_key, tmp_iv);
                let mut inner = Reader::new(&data[20..]);
                if inner.u32()? != CLIENT_DH_INNER_DATA {
                    return Err(HandshakeError::Decrypt);
                }
                if inner.array::<16>()? != *nonce || inner.array::<16>()? != *server_nonce {
                    return Err(HandshakeError::Nonce);
                }
                let _retry_id = inner.i64()?;
                let g_b = inner.bytes()?.to_vec();
                if sha1(&[&data[20..20 + inner.pos()]]) != data[..20] {
                    return Err(HandshakeError::Decrypt);
                }
                let key_bytes = secret.shared(&g_b).map_err(|_| HandshakeError::Dh)?;
                let auth_key = AuthKey::new(key_bytes);
                let mut salt = [0u8; 8];
                for i in 0..8 {
                    salt[i] = new_nonce[i] ^ server_nonce[i];
                }
                let mut w = Writer::new();
                w.u32(DH_GEN_OK)
                    .raw(nonce)
                    .raw(server_nonce)
                    .raw(&new_nonce_hash(new_nonce, 1, &auth_key.aux_hash()));
                let done = NewKey {
                    auth_key,
                    salt: i64::from_le_bytes(salt),
                    expires_in: *expires_in,
                    dc: *dc,
                    nonce: *nonce,
                    server_nonce: *server_nonce,
                    new_nonce: *new_nonce,
                };
                self.state = State::Start;
                Ok(Step::Done(w.buf, done))
            }
            (id, _) => Err(HandshakeError::Unexpected(id)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_keys_live_at_most_the_maximum() {
        assert_eq!(temp_key_lifetime(86_400), 86_400);
        assert_eq!(
            temp_key_lifetime(MAX_TEMP_KEY_LIFETIME_SECS),
            MAX_TEMP_KEY_LIFETIME_SECS
        );
        assert_eq!(
            temp_key_lifetime(MAX_TEMP_KEY_LIFETIME_SECS + 1),
            MAX_TEMP_KEY_LIFETIME_SECS
        );
        assert_eq!(temp_key_lifetime(i32::MAX), MAX_TEMP_KEY_LIFETIME_SECS);
        assert_eq!(temp_key_lifetime(-5), 1);
    }
    use crate::client::{old_encrypt, pq_inner, rsa_pad_encrypt};

    fn factor(pq: u64) -> (u32, u32) {
        let mut p = 3u64;
        // Test-only trial division over the generated primes' range is too slow; use Pollard rho.
        let f = |x: u64, c: u64| ((x as u128 * x as u128 + c as u128) % pq as u128) as u64;
        let gcd = |mut a: u64, mut b: u64| {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        };
        for c in 1.. {
            let (mut x, mut y, mut d) = (2u64, 2u64, 1u64);
            while d == 1 {
                x = f(x, c);
                y = f(f(y, c), c);
                d = gcd(x.abs_diff(y), pq);
            }
            if d != pq {
                p = d;
                break;
            }
        }
        let q = pq / p;
        (p.min(q) as u32, p.max(q) as u32)
    }

    fn exchange(key: &ServerKey, old: bool) -> (NewKey, [u8; 256]) {
        finish(key, &mut Handshake::default(), old)
    }

    fn finish(key: &ServerKey, hs: &mut Handshake, old: bool) -> (NewKey, [u8; 256]) {
        finish_checking(key, hs, old, |_| {})
    }

    /// [`finish`], calling `mid` between server_DH_params_ok and set_client_DH_params.
    fn finish_checking(
        key: &ServerKey,
        hs: &mut Handshake,
        old: bool,
        mid: impl FnOnce(&mut Handshake),
    ) -> (NewKey, [u8; 256]) {
        let nonce: [u8; 16] = random();
        let mut w = Writer::new();
        w.u32(REQ_PQ_MULTI).raw(&nonce);
        let Step::Reply(res_pq) = hs.handle(key, &w.buf, 1000).unwrap() else {
            panic!()
        };
        let mut r = Reader::new(&res_pq);
        assert_eq!(r.u32().unwrap(), RES_PQ);
        assert_eq!(r.array::<16>().unwrap(), nonce);
        let sn: [u8; 16] = r.array().unwrap();
        let pq_bytes = r.bytes().unwrap().to_vec();
        assert_eq!(r.vec_i64().unwrap(), vec![key.fingerprint()]);
        let mut pq8 = [0u8; 8];
        pq8[8 - pq_bytes.len()..].copy_from_slice(&pq_bytes);
        let (p, q) = factor(u64::from_be_bytes(pq8));
        let nn: [u8; 32] = random();
        let inner = pq_inner(&pq_bytes, p, q, &nonce, &sn, &nn, None);
        let enc = if old {
            old_encrypt(&key.public_key(), &inner)
        } else {
            rsa_pad_encrypt(&key.public_key(), &inner)
        };
        let mut w = Writer::new();
        w.u32(REQ_DH_PARAMS)
            .raw(&nonce)
            .raw(&sn)
            .bytes(&p.to_be_bytes())
            .bytes(&q.to_be_bytes())
            .i64(key.fingerprint())
            .bytes(&enc);
        let Step::Reply(dh) = hs.handle(key, &w.buf, 1000).unwrap() else {
            panic!()
        };
        let mut r = Reader::new(&dh);
        assert_eq!(r.u32().unwrap(), SERVER_DH_PARAMS_OK);
        r.take(32).unwrap();
        let mut answer = r.bytes().unwrap().to_vec();
        let (k, iv) = tmp_aes(&nn, &sn);
        ige_decrypt(&mut answer, &k, &iv);
        let mut a = Reader::new(&answer[20..]);
        assert_eq!(a.u32().unwrap(), SERVER_DH_INNER_DATA);
        a.take(32).unwrap();
        assert_eq!(a.i32().unwrap(), 3);
        assert_eq!(a.bytes().unwrap(), &DH_PRIME[..]);
        let g_a = a.bytes().unwrap().to_vec();
        let (g_b, client_key) = DhSecret::client_side(&g_a);
        let mut cin = Writer::new();
        cin.u32(CLIENT_DH_INNER_DATA)
            .raw(&nonce)
            .raw(&sn)
            .i64(0)
            .bytes(&g_b);
        let mut data = sha1(&[&cin.buf]).to_vec();
        data.extend_from_slice(&cin.buf);
        while !data.len().is_multiple_of(16) {
            data.push(0);
        }
        ige_encrypt(&mut data, &k, &iv);
        mid(hs);
        let mut w = Writer::new();
        w.u32(SET_CLIENT_DH_PARAMS)
            .raw(&nonce)
            .raw(&sn)
            .bytes(&data);
        let Step::Done(ok, new_key) = hs.handle(key, &w.buf, 1000).unwrap() else {
            panic!()
        };
        let mut r = Reader::new(&ok);
        assert_eq!(r.u32().unwrap(), DH_GEN_OK);
        r.take(32).unwrap();
        let ck = AuthKey::new(client_key);
        assert_eq!(
            r.array::<16>().unwrap(),
            new_nonce_hash(&nn, 1, &ck.aux_hash())
        );
        (new_key, client_key)
    }

    #[test]
    fn both_rsa_encodings_complete_the_exchange() {
        let key = ServerKey::generate().unwrap();
        for old in [true, false] {
            let (new_key, client_key) = exchange(&key, old);
            assert_eq!(new_key.auth_key.bytes(), &client_key);
            assert_eq!(new_key.dc, Some(2));
        }
        let pem = key.private_pem().unwrap();
        assert_eq!(
            ServerKey::from_pem(&pem).unwrap().fingerprint(),
            key.fingerprint()
        );
        assert!(key
            .public_pem()
            .starts_with("-----BEGIN RSA PUBLIC KEY-----"));
    }

    #[test]
    fn req_pq_starts_over_until_req_dh_params() {
        let key = ServerKey::generate().unwrap();
        let req_pq = |id: u32| {
            let mut w = Writer::new();
            w.u32(id).raw(&[1; 16]);
            w.buf
        };
        // Telegram Desktop's connection test: a req_pq_multi whose resPQ it only checks, then
        // its real exchange on the same connection (which `finish` starts with another).
        for first in [REQ_PQ, REQ_PQ_MULTI] {
            let mut hs = Handshake::default();
            assert!(matches!(
                hs.handle(&key, &req_pq(first), 0),
                Ok(Step::Reply(_))
            ));
            finish(&key, &mut hs, false);
        }
        // Once req_DH_params is answered the DH state is needed: a req_pq is refused and the
        // exchange still finishes.
        for again in [REQ_PQ, REQ_PQ_MULTI] {
            let mut hs = Handshake::default();
            finish_checking(&key, &mut hs, false, |hs| {
                assert_eq!(
                    hs.handle(&key, &req_pq(again), 0).unwrap_err(),
                    HandshakeError::Unexpected(again)
                );
            });
        }
        // After a finished exchange another one may start on the same connection (TDesktop
        // creates its permanent and temporary keys one after the other).
        let mut hs = Handshake::default();
        finish(&key, &mut hs, false);
        assert!(matches!(
            hs.handle(&key, &req_pq(REQ_PQ_MULTI), 0),
            Ok(Step::Reply(_))
        ));
    }

    #[test]
    fn out_of_order_or_garbage_messages_are_errors() {
        let key = ServerKey::generate().unwrap();
        let mut hs = Handshake::default();
        let mut w = Writer::new();
        w.u32(SET_CLIENT_DH_PARAMS).raw(&[0; 32]).bytes(&[0; 48]);
        assert!(hs.handle(&key, &w.buf, 0).is_err());
        assert!(hs.handle(&key, &[1, 2], 0).is_err());
        let mut w = Writer::new();
        w.u32(REQ_PQ).raw(&[1; 16]);
        assert!(hs.handle(&key, &w.buf, 0).is_ok());
        let mut w = Writer::new();
        w.u32(REQ_DH_PARAMS).raw(&[1; 16]).raw(&[0; 16]);
        assert_eq!(
            hs.handle(&key, &w.buf, 0).unwrap_err(),
            HandshakeError::Nonce
        );
    }
}
