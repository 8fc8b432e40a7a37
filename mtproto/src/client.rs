//! The client's side of the protocol, for tests and tools (the server never uses it): the key
//! exchange in either RSA encoding, pq factoring, and MTProto 1.0 encryption for the binding
//! message of `auth.bindTempAuthKey`.

use rand::RngCore;

use crate::crypto::{ige_decrypt, ige_encrypt, sha1, sha256, AuthKey, DhSecret, PublicKey, Side};
use crate::handshake::*;
use crate::session::Plain;
use crate::tl::{Reader, Writer};

/// How `req_DH_params` encrypts its inner data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RsaEncoding {
    /// `0 ‖ SHA1(data) ‖ data ‖ padding` (Telethon, Pyrogram).
    Old,
    /// RSA_PAD (TDesktop, TDLib, grammers).
    Pad,
}

/// `p_q_inner_data_dc`, or `p_q_inner_data_temp_dc` when `expires_in` is given.
pub fn pq_inner(
    pq: &[u8],
    p: u32,
    q: u32,
    nonce: &[u8; 16],
    sn: &[u8; 16],
    nn: &[u8; 32],
    expires_in: Option<i32>,
) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(if expires_in.is_some() {
        P_Q_INNER_DATA_TEMP_DC
    } else {
        P_Q_INNER_DATA_DC
    })
    .bytes(pq)
    .bytes(&p.to_be_bytes())
    .bytes(&q.to_be_bytes())
    .raw(nonce)
    .raw(sn)
    .raw(nn)
    .i32(2);
    if let Some(e) = expires_in {
        w.i32(e);
    }
    w.buf
}

pub fn old_encrypt(key: &PublicKey, data: &[u8]) -> Vec<u8> {
    let mut plain = vec![0u8];
    plain.extend_from_slice(&sha1(&[data]));
    plain.extend_from_slice(data);
    while plain.len() < 256 {
        plain.push(rand::random());
    }
    key.encrypt_raw(&plain)
}

pub fn rsa_pad_encrypt(key: &PublicKey, data: &[u8]) -> Vec<u8> {
    let mut padded = data.to_vec();
    while padded.len() < 192 {
        padded.push(rand::random());
    }
    loop {
        let temp_key: [u8; 32] = random();
        let mut with_hash: Vec<u8> = padded.iter().rev().copied().collect();
        with_hash.extend_from_slice(&sha256(&[&temp_key, &padded]));
        ige_encrypt(&mut with_hash, &temp_key, &[0u8; 32]);
        let h = sha256(&[&with_hash]);
        let mut out: Vec<u8> = temp_key.iter().zip(h).map(|(a, b)| a ^ b).collect();
        out.extend_from_slice(&with_hash);
        // Must be below the modulus (whose top bit is set): retry with another temp key.
        if out[0] < 0x80 {
            return key.encrypt_raw(&out);
        }
    }
}

/// Pollard's rho: the two factors of pq, smaller first.
pub fn factor(pq: u64) -> (u32, u32) {
    let f = |x: u64, c: u64| ((x as u128 * x as u128 + c as u128) % pq as u128) as u64;
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut p = 1;
    for c in 1..64 {
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
    let q = pq / p.max(1);
    (p.min(q) as u32, p.max(q) as u32)
}

/// What the client does next.
#[derive(Debug)]
pub enum ClientStep {
    Send(Vec<u8>),
    Done { auth_key: AuthKey, salt: i64 },
}

/// A client's key exchange in progress.
pub struct ClientHandshake {
    key: PublicKey,
    encoding: RsaEncoding,
    expires_in: Option<i32>,
    nonce: [u8; 16],
    server_nonce: [u8; 16],
    new_nonce: [u8; 32],
    tmp: Option<([u8; 32], [u8; 32])>,
    auth_key: Option<AuthKey>,
}

impl ClientHandshake {
    /// Starts an exchange (`expires_in`: a temporary key); answers the `req_pq_multi` to send.
    pub fn start(
        key: PublicKey,
        encoding: RsaEncoding,
        expires_in: Option<i32>,
    ) -> (Self, Vec<u8>) {
        let nonce: [u8; 16] = random();
        let mut w = Writer::new();
        w.u32(REQ_PQ_MULTI).raw(&nonce);
        (
            Self {
                key,
                encoding,
                expires_in,
                nonce,
                server_nonce: [0; 16],
                new_nonce: random(),
                tmp: None,
                auth_key: None,
            },
            w.buf,
        )
    }

    pub fn handle(&mut self, body: &[u8]) -> Result<ClientStep, HandshakeError> {
        let mut r = Reader::new(body);
        match r.u32()? {
            RES_PQ => {
                if r.array::<16>()? != self.nonce {
                    return Err(HandshakeError::Nonce);
                }
                self.server_nonce = r.array()?;
                let pq_bytes = r.bytes()?.to_vec();
                let fingerprints = r.vec_i64()?;
                if !fingerprints.contains(&self.key.fingerprint()) {
                    return Err(HandshakeError::Fingerprint(
                        fingerprints.first().copied().unwrap_or(0),
                    ));
                }
                let mut pq8 = [0u8; 8];
                let n = pq_bytes.len().min(8);
                pq8[8 - n..].copy_from_slice(&pq_bytes[pq_bytes.len() - n..]);
                let (p, q) = factor(u64::from_be_bytes(pq8));
                let inner = pq_inner(
                    &pq_bytes,
                    p,
                    q,
                    &self.nonce,
                    &self.server_nonce,
                    &self.new_nonce,
                    self.expires_in,
                );
                let encrypted = match self.encoding {
                    RsaEncoding::Old => old_encrypt(&self.key, &inner),
                    RsaEncoding::Pad => rsa_pad_encrypt(&self.key, &inner),
                };
                let mut w = Writer::new();
                w.u32(REQ_DH_PARAMS)
                    .raw(&self.nonce)
                    .raw(&self.server_nonce)
                    .bytes(&p.to_be_bytes())
                    .bytes(&q.to_be_bytes())
                    .i64(self.key.fingerprint())
                    .bytes(&encrypted);
                Ok(ClientStep::Send(w.buf))
            }
            SERVER_DH_PARAMS_OK => {
                r.take(32)?;
                let mut answer = r.bytes()?.to_vec();
                let (k, iv) = tmp_aes(&self.new_nonce, &self.server_nonce);
                if answer.len() % 16 != 0 || answer.len() < 32 {
                    return Err(HandshakeError::Decrypt);
                }
                ige_decrypt(&mut answer, &k, &iv);
                let mut a = Reader::new(&answer[20..]);
                if a.u32()? != SERVER_DH_INNER_DATA {
                    return Err(HandshakeError::Decrypt);
                }
                a.take(32)?;
                let _g = a.i32()?;
                let _prime = a.bytes()?;
                let g_a = a.bytes()?.to_vec();
                let _time = a.i32()?;
                if sha1(&[&answer[20..20 + a.pos()]]) != answer[..20] {
                    return Err(HandshakeError::Decrypt);
                }
                let (g_b, key) = DhSecret::client_side(&g_a);
                self.auth_key = Some(AuthKey::new(key));
                let mut inner = Writer::new();
                inner
                    .u32(CLIENT_DH_INNER_DATA)
                    .raw(&self.nonce)
                    .raw(&self.server_nonce)
                    .i64(0)
                    .bytes(&g_b);
                let mut data = sha1(&[&inner.buf]).to_vec();
                data.extend_from_slice(&inner.buf);
                while !data.len().is_multiple_of(16) {
                    data.push(rand::random());
                }
                ige_encrypt(&mut data, &k, &iv);
                self.tmp = Some((k, iv));
                let mut w = Writer::new();
                w.u32(SET_CLIENT_DH_PARAMS)
                    .raw(&self.nonce)
                    .raw(&self.server_nonce)
                    .bytes(&data);
                Ok(ClientStep::Send(w.buf))
            }
            DH_GEN_OK => {
                r.take(32)?;
                let hash: [u8; 16] = r.array()?;
                let auth_key = self
                    .auth_key
                    .clone()
                    .ok_or(HandshakeError::Unexpected(DH_GEN_OK))?;
                if hash != new_nonce_hash(&self.new_nonce, 1, &auth_key.aux_hash()) {
                    return Err(HandshakeError::Nonce);
                }
                let mut salt = [0u8; 8];
                for (i, s) in salt.iter_mut().enumerate() {
                    *s = self.new_nonce[i] ^ self.server_nonce[i];
                }
                Ok(ClientStep::Done {
                    auth_key,
                    salt: i64::from_le_bytes(salt),
                })
            }
            other => Err(HandshakeError::Unexpected(other)),
        }
    }
}

/// MTProto 1.0 encryption (SHA1 msg_key; padding to 16 bytes), as the binding message of
/// `auth.bindTempAuthKey` requires.
pub fn encrypt_v1(key: &AuthKey, m: &Plain) -> Vec<u8> {
    let mut w = Writer::new();
    w.i64(m.salt)
        .i64(m.session_id)
        .i64(m.msg_id)
        .i32(m.seq_no)
        .i32(m.body.len() as i32)
        .raw(&m.body);
    let h = sha1(&[&w.buf]);
    let mut msg_key = [0u8; 16];
    msg_key.copy_from_slice(&h[4..20]);
    let mut data = w.buf;
    while !data.len().is_multiple_of(16) {
        let mut b = [0u8; 1];
        rand::thread_rng().fill_bytes(&mut b);
        data.push(b[0]);
    }
    let (k, iv) = key.aes_key_iv_v1(&msg_key, Side::Client);
    ige_encrypt(&mut data, &k, &iv);
    let mut out = key.id().to_le_bytes().to_vec();
    out.extend_from_slice(&msg_key);
    out.extend_from_slice(&data);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::ServerKey;
    use crate::handshake::{Handshake, Step};

    #[test]
    fn client_and_server_agree_in_both_encodings_and_for_temp_keys() {
        let server_key = ServerKey::generate().unwrap();
        for (encoding, temp) in [(RsaEncoding::Old, None), (RsaEncoding::Pad, Some(3600))] {
            let mut server = Handshake::default();
            let (mut client, mut msg) =
                ClientHandshake::start(server_key.public_key(), encoding, temp);
            let (server_new, client_key) = loop {
                match server.handle(&server_key, &msg, 0).unwrap() {
                    Step::Reply(reply) => match client.handle(&reply).unwrap() {
                        ClientStep::Send(next) => msg = next,
                        ClientStep::Done { .. } => unreachable!(),
                    },
                    Step::Done(reply, new) => match client.handle(&reply).unwrap() {
                        ClientStep::Done { auth_key, salt } => {
                            assert_eq!(salt, new.salt);
                            break (new, auth_key);
                        }
                        ClientStep::Send(_) => unreachable!(),
                    },
                }
            };
            assert_eq!(server_new.auth_key.bytes(), client_key.bytes());
            assert_eq!(server_new.expires_in, temp);
        }
    }

    #[test]
    fn v1_round_trip() {
        let key = AuthKey::new([3; 256]);
        let m = Plain {
            salt: 1,
            session_id: 2,
            msg_id: 3 << 32,
            seq_no: 0,
            body: vec![1, 2, 3, 4],
        };
        assert_eq!(
            crate::session::decrypt_v1(&key, &encrypt_v1(&key, &m)).unwrap(),
            m
        );
    }
}
