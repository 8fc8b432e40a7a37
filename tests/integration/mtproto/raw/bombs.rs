//! Issue 11: memory and CPU bombs sent right after the key exchange, before any sign-in, by
//! several clients at once, against a real `ptslog serve` process. Nested `gzip_packed` bombs
//! (one ~32 KB message drove the release server to 17.8 GB), vectors announcing millions of
//! items, a container over its cap, a huge msgs_state_req and deep JSONValue nesting: each
//! attacker gets an error or is disconnected, the server's peak RSS (`VmHWM`) stays within 50 MB
//! of its idle value, and another client is served afterwards.

use std::io::Write;
use std::time::Instant;

use flate2::write::GzEncoder;
use flate2::Compression;
use mtproto::client::RsaEncoding;
use mtproto::crypto::{PublicKey, Side};
use mtproto::service::{MSGS_STATE_INFO, MSGS_STATE_REQ, MSG_CONTAINER, PING, RPC_RESULT};
use mtproto::session::{encrypt, Plain};
use mtproto::tl::{encode_object, Reader, Schema, Writer, BOOL_TRUE, GZIP_PACKED, VECTOR};
use mtproto::transport::Kind;
use serde_json::{json, Value};

use super::super::Setup;
use super::{init, now_ms, Conn, Session};

/// The server may grow by this much over its idle peak while it is bombed (issue 11).
const RSS_SLACK_KB: u64 = 50 * 1024;
const ATTACKERS: usize = 4;

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    e.write_all(data).expect("in memory");
    e.finish().expect("in memory")
}

fn packed(data: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(GZIP_PACKED).bytes(&gz(data));
    w.buf
}

fn id_of(name: &str) -> u32 {
    Schema::api().by_name(name).expect("in schema").id
}

/// `invokeWithLayer(initConnection(<inner bytes>))`, as a real client wraps its first call.
fn wrapped(inner: &[u8]) -> Vec<u8> {
    let probe = init(json!({"_": "help.getNearestDc"}));
    let mut w = Writer::new();
    encode_object(Schema::api(), &probe, &mut w).expect("encodes");
    // The probe ends with help.getNearestDc's 4-byte id: replace it by the inner call.
    w.buf.truncate(w.buf.len() - 4);
    w.buf.extend_from_slice(inner);
    w.buf
}

/// The messages each attacker sends, with what they are.
fn bombs() -> Vec<(&'static str, Vec<u8>)> {
    let mut out = Vec::new();
    // The bomb: a vector of a million objects (each a few hundred bytes as JSON), gzip
    // levels padded so that each inflates to megabytes, ~32 KB on the wire.
    let mut inner = Writer::new();
    inner.u32(VECTOR).i32(1 << 20);
    for _ in 0..(1 << 20) {
        inner.u32(id_of("inputPeerSelf"));
    }
    let mut level = inner.buf;
    for _ in 0..3 {
        let mut next = packed(&level);
        next.resize(next.len() + (12 << 20), 0);
        level = next;
    }
    out.push(("nested gzip bomb", packed(&level)));
    // Fits the inflation budget (1.9 MB), but announces 480 000 objects: over the value budget,
    // inside a call served before sign-in (help.saveAppLog).
    let mut w = Writer::new();
    w.u32(id_of("help.saveAppLog")).u32(VECTOR).i32(480_000);
    for _ in 0..480_000 {
        w.u32(id_of("inputPeerSelf"));
    }
    out.push(("values bomb before sign-in", wrapped(&packed(&w.buf))));
    // A call that needs an account, with 2^20 ids: refused before its body is read.
    let mut w = Writer::new();
    w.u32(id_of("messages.deleteMessages"))
        .u32(0)
        .u32(VECTOR)
        .i32(1 << 20);
    w.raw(&vec![0u8; 4 << 20]);
    out.push((
        "account call with a huge vector",
        wrapped(&packed(&w.buf[..1 << 20])),
    ));
    // A vector count far past the data (i32::MAX).
    let mut w = Writer::new();
    w.u32(id_of("help.saveAppLog")).u32(VECTOR).i32(i32::MAX);
    w.raw(&[0u8; 4096]);
    out.push(("forged vector count", wrapped(&w.buf)));
    // JSONValue nested far past the depth limit, in initConnection's params.
    let mut w = Writer::new();
    w.u32(id_of("invokeWithLayer"))
        .i32(230)
        .u32(id_of("initConnection"))
        .u32(1 << 1)
        .i32(1);
    for _ in 0..6 {
        w.bytes(b"x");
    }
    for _ in 0..5000 {
        w.u32(id_of("jsonArray")).u32(VECTOR).i32(1);
    }
    w.u32(id_of("jsonNull")).u32(id_of("help.getNearestDc"));
    out.push(("deep JSONValue", w.buf));
    // A vector of gzip_packed trues, each a fresh inflater.
    let one = packed(&BOOL_TRUE.to_le_bytes());
    let mut w = Writer::new();
    w.u32(id_of("help.saveAppLog")).u32(VECTOR).i32(16_000);
    for _ in 0..16_000 {
        w.raw(&one);
    }
    out.push(("many small gzip levels", wrapped(&w.buf)));
    // A container over its cap, and a msgs_state_req over its own.
    let mut w = Writer::new();
    w.u32(MSG_CONTAINER).i32(1021);
    let base = ((now_ms() / 1000) << 32) + 40_000;
    for i in 0..1021i64 {
        w.i64(base + i * 4).i32(1).i32(12).u32(PING).i64(i);
    }
    out.push(("container over its cap", w.buf));
    let mut w = Writer::new();
    w.u32(MSGS_STATE_REQ).u32(VECTOR).i32(100_000);
    for i in 0..100_000i64 {
        w.i64(i);
    }
    out.push(("msgs_state_req over its cap", w.buf));
    out
}

/// Sends `body` as one message and waits for what the server makes of it: `Ok(text)` for an
/// answer to it (an rpc_error's message, or the answer's constructor), `Err(())` when the server
/// closed the connection.
async fn bomb(s: &mut Session, body: &[u8]) -> Result<String, ()> {
    let msg_id = s.conn.msg_id();
    // A container's seq_no is even; everything else here is content-related (odd).
    let seq_no = if body[..4] == MSG_CONTAINER.to_le_bytes() {
        s.content * 2
    } else {
        s.content += 1;
        s.content * 2 - 1
    };
    let packet = encrypt(
        &s.key,
        Side::Client,
        &Plain {
            salt: s.salt,
            session_id: s.id,
            msg_id,
            seq_no,
            body: body.to_vec(),
        },
    );
    s.conn.send(&packet).await;
    loop {
        let Some(answer) = s.next().await else {
            return Err(());
        };
        let mut r = Reader::new(&answer);
        match r.u32() {
            Ok(RPC_RESULT) => {
                r.i64().map_err(|_| ())?;
                let rest = r.remaining();
                if rest[..4] == 0x2144ca19u32.to_le_bytes() {
                    let mut e = Reader::new(&rest[8..]);
                    return Ok(e.string().unwrap_or_default());
                }
                return Ok(format!(
                    "result {:08x}",
                    Reader::new(rest).u32().unwrap_or(0)
                ));
            }
            Ok(MSGS_STATE_INFO) => return Ok("msgs_state_info".into()),
            _ => continue,
        }
    }
}

fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} missing from /proc/{pid}/status"))
}

async fn served(port: u16, key: &PublicKey) -> Value {
    let mut conn = Conn::open(port, Kind::Abridged, false).await;
    let (auth, salt) = conn.handshake(key, RsaEncoding::Old, None).await;
    let mut s = Session::new(conn, auth, salt);
    s.call(init(json!({"_": "help.getNearestDc"})))
        .await
        .expect("a client is served")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_sign_in_bombs_leave_peak_rss_flat_and_others_served() {
    let setup = Setup::fresh("bombs").await;
    // Relay off: only the MTProto front is under test.
    let (mut server, http_port, port) = setup.spawn_production().await;
    let info: Value = reqwest::get(format!(
        "http://127.0.0.1:{http_port}/v1/mtproto/public-key"
    ))
    .await
    .expect("public key")
    .json()
    .await
    .expect("public key JSON");
    let key = PublicKey::new(
        &hex::decode(info["modulus_hex"].as_str().unwrap()).unwrap(),
        &hex::decode(info["exponent_hex"].as_str().unwrap()).unwrap(),
    );
    // Idle, once every code path a client takes was run once.
    assert_eq!(served(port, &key).await["_"], "nearestDc");
    let pid = server.0.id();
    let idle = status_kb(pid, "VmHWM:");

    let bombs = bombs();
    let started = Instant::now();
    let attackers: Vec<_> = (0..ATTACKERS)
        .map(|_| {
            let (key, bombs) = (key.clone(), bombs.clone());
            tokio::spawn(async move {
                let mut outcomes = Vec::new();
                let mut conn = Conn::open(port, Kind::Intermediate, false).await;
                let (auth, salt) = conn.handshake(&key, RsaEncoding::Old, None).await;
                let mut s = Session::new(conn, auth.clone(), salt);
                for (what, body) in &bombs {
                    let outcome = bomb(&mut s, body).await;
                    if outcome.is_err() {
                        // Disconnected: the next bomb comes on a new connection, same key.
                        let conn = Conn::open(port, Kind::Intermediate, false).await;
                        s = Session::new(conn, auth.clone(), salt);
                    }
                    outcomes.push((*what, outcome));
                }
                outcomes
            })
        })
        .collect();
    for a in attackers {
        for (what, outcome) in a.await.expect("attacker task") {
            eprintln!("{what}: {outcome:?}");
            match outcome.as_deref() {
                Err(()) => {}
                Ok(
                    "INPUT_REQUEST_TOO_LONG"
                    | "AUTH_KEY_UNREGISTERED"
                    | "INPUT_FETCH_ERROR"
                    | "INPUT_METHOD_INVALID",
                ) => {}
                Ok(other) => panic!("{what}: answered {other}, not an error"),
            }
        }
    }
    let peak = status_kb(pid, "VmHWM:");
    eprintln!("VmHWM idle {idle} kB, after the bombs {peak} kB");
    assert!(
        server.0.try_wait().expect("child status").is_none(),
        "the server died under the bombs"
    );
    assert!(
        peak <= idle + RSS_SLACK_KB,
        "peak RSS grew from {idle} kB to {peak} kB under the bombs"
    );
    assert!(
        started.elapsed().as_secs() < 60,
        "bombs took {:?} to answer",
        started.elapsed()
    );
    // Another client is served as before.
    assert_eq!(served(port, &key).await["_"], "nearestDc");
    drop(server);
    drop(setup);
}
