//! Never-panics checks over every decoder a client's bytes reach: transport detection and framing
//! (plain and obfuscated), encrypted packet decryption, the session's unwrapping of containers and
//! gzip, the key exchange and the TL codec. Random and mutated inputs, a fixed seed (reproducible).

use ptslog_mtproto::crypto::{AuthKey, ServerKey, Side};
use ptslog_mtproto::handshake::Handshake;
use ptslog_mtproto::session::{decrypt, encrypt, Plain, Session};
use ptslog_mtproto::tl::{decode_object, Reader, Schema};
use ptslog_mtproto::transport::ServerTransport;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }

    fn bytes(&mut self, max: usize) -> Vec<u8> {
        let n = self.next() as usize % (max + 1);
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn transports_survive_random_streams() {
    let mut rng = Rng(1);
    for i in 0..3000 {
        let mut t = ServerTransport::new();
        // Steer some streams into each detection path, then garbage.
        let mut stream = match i % 5 {
            0 => vec![0xef],
            1 => vec![0xee; 4],
            2 => vec![0xdd; 4],
            3 => {
                let mut v = 52u32.to_le_bytes().to_vec();
                v.extend_from_slice(&[0; 4]);
                v
            }
            _ => Vec::new(),
        };
        stream.extend(rng.bytes(300));
        for chunk in stream.chunks(1 + rng.next() as usize % 64) {
            if t.feed(chunk).is_err() {
                break;
            }
            while let Ok(Some(_)) = t.next_packet() {}
        }
    }
}

#[test]
fn decryption_and_session_survive_random_packets() {
    let key = AuthKey::new([7; 256]);
    let mut rng = Rng(2);
    let now = 1_764_489_600_000i64;
    let mut session = Session::new(1, 5);
    for i in 0..3000 {
        let packet = if i % 2 == 0 {
            let mut p = key.id().to_le_bytes().to_vec();
            p.extend(rng.bytes(200));
            p
        } else {
            // Correctly encrypted, random body: reaches the session's unwrapping.
            let mut body = rng.bytes(120);
            if i % 4 == 1 && body.len() >= 4 {
                // A container or gzip_packed header in front of random data.
                let id: u32 = if i % 8 == 1 { 0x73f1f8dc } else { 0x3072cfa1 };
                body[..4].copy_from_slice(&id.to_le_bytes());
            }
            body.truncate(body.len() / 4 * 4);
            encrypt(
                &key,
                Side::Client,
                &Plain {
                    salt: 5,
                    session_id: 1,
                    msg_id: ((now / 1000) << 32) + 4 * i as i64,
                    seq_no: (rng.next() % 8) as i32,
                    body,
                },
            )
        };
        if let Ok(m) = decrypt(&key, &packet) {
            let _ = session.receive(&m, now);
        }
    }
}

#[test]
fn handshake_survives_random_messages() {
    let key = ServerKey::generate().expect("key");
    let mut rng = Rng(3);
    let mut hs = Handshake::default();
    for i in 0..2000 {
        let mut body = rng.bytes(400);
        if body.len() >= 4 {
            let id: u32 = [0xbe7e8ef1, 0xd712e4be, 0xf5045f1f, 0x60469778][i % 4];
            body[..4].copy_from_slice(&id.to_le_bytes());
        }
        let _ = hs.handle(&key, &body, 0);
    }
}

#[test]
fn tl_decoding_survives_random_objects() {
    let schema = Schema::api();
    let mut rng = Rng(4);
    let ids: Vec<u32> = [
        "messages.sendMessage",
        "invokeWithLayer",
        "initConnection",
        "updates",
        "message",
        "user",
    ]
    .iter()
    .map(|n| schema.by_name(n).expect("in schema").id)
    .collect();
    for i in 0..20000 {
        let mut body = ids[i % ids.len()].to_le_bytes().to_vec();
        body.extend(rng.bytes(200));
        let _ = decode_object(schema, &mut Reader::new(&body));
    }
}
