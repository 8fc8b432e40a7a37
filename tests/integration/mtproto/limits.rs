//! The MTProto front's limits against a running `ptslog serve` (docs/security.md,
//! "mtproto-connections"), configured low so the test is quick: connections per address, the
//! handshake deadline, the idle timeout, key exchanges per address and minute; and replays across
//! connections of one auth key, the rotating salts (`get_future_salts`, `bad_server_salt`), and a
//! container's answers written as they are made.
//! Each client binds its own loopback address (127.0.0.x) to stand for another host.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use mtproto::client::RsaEncoding;
use mtproto::crypto::PublicKey;
use mtproto::crypto::Side;
use mtproto::handshake::{encode_plain, REQ_PQ_MULTI};
use mtproto::service::{
    BAD_SERVER_SALT, FUTURE_SALTS, GET_FUTURE_SALTS, MSG_CONTAINER, PING, PONG, RPC_RESULT,
};
use mtproto::session::{encrypt, Plain};
use mtproto::tl::{decode_object, encode_object, Reader, Schema, Writer};
use mtproto::transport::Kind;
use ptslog_tests::{database_url, drop_database, fresh_database, redis_url};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};

use super::raw::{Conn, Session};
use super::{free_low_port, free_port, Server};
use crate::two_processes::ptslog_binary;

const PER_IP: usize = 3;
const HANDSHAKE_SECS: u64 = 2;
const IDLE_SECS: u64 = 3;
const HANDSHAKES_PER_MINUTE: usize = 4;

fn host(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

async fn connect_from(from: IpAddr, port: u16) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(from, 0)).expect("bind");
    socket
        .connect(SocketAddr::from(([127, 0, 0, 1], port)))
        .await
        .expect("connect")
}

async fn open_from(from: IpAddr, port: u16) -> Conn {
    Conn::over(connect_from(from, port).await, Kind::Abridged, false).await
}

/// How long until the server closes `conn` (it sends nothing unasked).
async fn closed_after(conn: &mut Conn, since: Instant) -> Duration {
    assert_eq!(conn.recv().await, None, "the server sent something");
    since.elapsed()
}

/// How long until the server closes a connection on which the client sent nothing.
async fn silent_closed_after(mut stream: TcpStream, since: Instant) -> Duration {
    let mut b = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(30), stream.read(&mut b))
        .await
        .expect("closed within 30 s");
    assert!(matches!(n, Ok(0) | Err(_)), "the server sent something");
    since.elapsed()
}

fn ping(id: i64) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(PING).i64(id);
    w.buf
}

/// The next pong's ping_id, skipping other service messages.
async fn next_pong(s: &mut Session) -> i64 {
    loop {
        let body = s.next().await.expect("a pong before close");
        let mut r = Reader::new(&body);
        if r.u32().unwrap() == PONG {
            r.i64().unwrap();
            return r.i64().unwrap();
        }
    }
}

async fn send(s: &mut Session, salt: i64, body: &[u8]) -> i64 {
    let id = s.conn.msg_id();
    let packet = s.packet(id, salt, body);
    s.conn.send(&packet).await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mtproto_limits_replays_and_salts_against_the_running_server() {
    let bin = tokio::task::spawn_blocking(ptslog_binary)
        .await
        .expect("build thread")
        .expect("the ptslog binary");
    let db = fresh_database().await.expect("fresh database");
    let data_dir = std::env::temp_dir().join(format!("ptslog-mtproto-limits-{db}"));
    // A temporary key that expired while no server ran: the front's sweep at start deletes it.
    {
        let pool = sqlx::PgPool::connect(&database_url(&db))
            .await
            .expect("pool");
        sqlx::query(
            "INSERT INTO mtproto_auth_keys (auth_key_id, auth_key, server_salt, expires_at) \
             VALUES (42, $1, 0, now() - interval '1 hour')",
        )
        .bind(vec![0u8; 256])
        .execute(&pool)
        .await
        .expect("an expired key");
        pool.close().await;
    }
    let (http_port, port) = (free_port(), free_low_port());
    let mut server = Server(
        std::process::Command::new(&bin)
            .arg("serve")
            .env_remove("PTSLOG_CONFIG")
            .env("PTSLOG_DEV_LOGIN", "true")
            .env("DATABASE_URL", database_url(&db))
            .env("REDIS_URL", redis_url())
            .env("PTSLOG_REDIS_PREFIX", format!("test:{db}:"))
            .env("PTSLOG_HTTP_ADDR", format!("127.0.0.1:{http_port}"))
            .env("PTSLOG_MTPROTO_ADDR", format!("127.0.0.1:{port}"))
            .env("PTSLOG_DATA_DIR", &data_dir)
            .env("PTSLOG_RELAY", "off")
            .env("PTSLOG_DB_MAX_CONNECTIONS", "4")
            .env("PTSLOG_MTPROTO_MAX_CONNECTIONS_PER_IP", PER_IP.to_string())
            .env(
                "PTSLOG_MTPROTO_HANDSHAKE_TIMEOUT_SECS",
                HANDSHAKE_SECS.to_string(),
            )
            .env("PTSLOG_MTPROTO_IDLE_TIMEOUT_SECS", IDLE_SECS.to_string())
            .env(
                "PTSLOG_MTPROTO_HANDSHAKES_PER_MINUTE",
                HANDSHAKES_PER_MINUTE.to_string(),
            )
            .env("RUST_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawning ptslog serve"),
    );
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let info: Value = loop {
        if let Some(status) = server.0.try_wait().expect("child status") {
            panic!("ptslog serve exited early: {status}");
        }
        if let Ok(r) = http
            .get(format!(
                "http://127.0.0.1:{http_port}/v1/mtproto/public-key"
            ))
            .send()
            .await
        {
            if r.status() == 200 {
                break r.json().await.expect("key info");
            }
        }
        assert!(Instant::now() < deadline, "server not up within 120 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let pool = sqlx::PgPool::connect(&database_url(&db))
        .await
        .expect("pool");
    let swept_by = Instant::now() + Duration::from_secs(10);
    while sqlx::query_scalar::<_, i64>(
        "SELECT count(*) FROM mtproto_auth_keys WHERE auth_key_id = 42",
    )
    .fetch_one(&pool)
    .await
    .expect("count")
        > 0
    {
        assert!(
            Instant::now() < swept_by,
            "the expired key was not swept at start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pool.close().await;
    let key = PublicKey::new(
        &hex::decode(info["modulus_hex"].as_str().unwrap()).unwrap(),
        &hex::decode(info["exponent_hex"].as_str().unwrap()).unwrap(),
    );

    // Connections per address: PER_IP are served, the next one from there is closed at once
    // (well before the handshake deadline), while another address still gets in.
    let mut held = Vec::new();
    for _ in 0..PER_IP {
        held.push(open_from(host(1), port).await);
    }
    let t = Instant::now();
    let refused_in = silent_closed_after(connect_from(host(1), port).await, t).await;
    assert!(
        refused_in < Duration::from_millis(1500),
        "the connection over the cap was closed after {refused_in:?}"
    );
    let (_k, _) = held[0].handshake(&key, RsaEncoding::Pad, None).await;
    let mut other = open_from(host(2), port).await;
    let (other_key, other_salt) = other.handshake(&key, RsaEncoding::Old, None).await;
    let mut s = Session::new(other, other_key, other_salt);
    let salt = s.salt;
    send(&mut s, salt, &ping(1)).await;
    assert_eq!(next_pong(&mut s).await, 1, "another address is served");
    // A slot is free again once a connection closes.
    drop(held.pop());
    let t = Instant::now();
    loop {
        let mut c = open_from(host(1), port).await;
        let nonce: [u8; 16] = rand::random();
        let mut w = Writer::new();
        w.u32(REQ_PQ_MULTI).raw(&nonce);
        let id = c.msg_id();
        c.send(&encode_plain(id, &w.buf)).await;
        if c.recv().await.is_some() {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "the slot was not given back"
        );
    }
    drop(held);

    // Idle: a connection that says nothing for IDLE_SECS is closed.
    send(&mut s, salt, &ping(2)).await;
    assert_eq!(next_pong(&mut s).await, 2);
    let since = Instant::now();
    let idle_closed = closed_after(&mut s.conn, since).await;
    assert!(
        idle_closed >= Duration::from_secs(IDLE_SECS) - Duration::from_millis(800)
            && idle_closed < Duration::from_secs(IDLE_SECS + 3),
        "idle connection closed after {idle_closed:?}"
    );

    // The handshake deadline: a connection that sends nothing, or starts a key exchange and stops,
    // is closed HANDSHAKE_SECS after its first byte.
    let t = Instant::now();
    let silent = connect_from(host(5), port).await;
    let mut stalled = open_from(host(5), port).await;
    let mut w = Writer::new();
    w.u32(REQ_PQ_MULTI).raw(&[7u8; 16]);
    let id = stalled.msg_id();
    stalled.send(&encode_plain(id, &w.buf)).await;
    assert!(stalled.recv().await.is_some(), "resPQ");
    let (a, b) = tokio::join!(
        silent_closed_after(silent, t),
        closed_after(&mut stalled, t)
    );
    for after in [a, b] {
        assert!(
            after >= Duration::from_secs(HANDSHAKE_SECS) - Duration::from_millis(300)
                && after < Duration::from_secs(HANDSHAKE_SECS + 3),
            "an unfinished handshake was closed after {after:?}"
        );
    }

    // Key exchanges per address and minute: HANDSHAKES_PER_MINUTE are answered, the next is not
    // (its connection is closed). A second req_pq right after resPQ starts over (Telegram
    // Desktop tests each connection with one before its real exchange), and counts too.
    for i in 0..=HANDSHAKES_PER_MINUTE {
        let mut c = open_from(host(3), port).await;
        let mut w = Writer::new();
        w.u32(REQ_PQ_MULTI).raw(&[i as u8; 16]);
        let id = c.msg_id();
        c.send(&encode_plain(id, &w.buf)).await;
        let answer = c.recv().await;
        if i < HANDSHAKES_PER_MINUTE {
            assert!(answer.is_some(), "handshake {i} refused");
        } else {
            assert_eq!(answer, None, "handshake {i} over the limit was answered");
        }
    }

    let mut c = open_from(host(6), port).await;
    let mut w = Writer::new();
    w.u32(REQ_PQ_MULTI).raw(&[9u8; 16]);
    for i in 0..=HANDSHAKES_PER_MINUTE {
        let id = c.msg_id();
        c.send(&encode_plain(id, &w.buf)).await;
        assert_eq!(
            c.recv().await.is_some(),
            i < HANDSHAKES_PER_MINUTE,
            "req_pq {i} on one connection, before req_DH_params"
        );
    }

    // Replays: a packet captured on one connection does not replay on another connection of the
    // same key and session, even while the first is open.
    let mut a = open_from(host(4), port).await;
    let (auth_key, handshake_salt) = a.handshake(&key, RsaEncoding::Pad, None).await;
    let mut first = Session::new(a, auth_key.clone(), handshake_salt);
    let id = first.conn.msg_id();
    let captured = first.packet(id, handshake_salt, &ping(10));
    first.conn.send(&captured).await;
    assert_eq!(next_pong(&mut first).await, 10);
    let mut second = Session::new(open_from(host(4), port).await, auth_key, handshake_salt);
    second.id = first.id;
    second.conn.send(&captured).await;
    send(&mut second, handshake_salt, &ping(11)).await;
    assert_eq!(
        next_pong(&mut second).await,
        11,
        "the captured ping was served again on a new connection"
    );

    // Salts: get_future_salts answers distinct salts for consecutive 30-minute windows; a salt of
    // a later window is refused with bad_server_salt naming the current one, which is accepted.
    let mut w = Writer::new();
    w.u32(GET_FUTURE_SALTS).i32(3);
    send(&mut second, handshake_salt, &w.buf).await;
    let body = loop {
        let body = second.next().await.expect("future_salts");
        if body[..4] == FUTURE_SALTS.to_le_bytes() {
            break body;
        }
    };
    let mut r = Reader::new(&body[4..]);
    r.i64().unwrap();
    let now = i64::from(r.i32().unwrap());
    assert_eq!(r.i32().unwrap(), 3);
    let salts: Vec<(i32, i32, i64)> = (0..3)
        .map(|_| (r.i32().unwrap(), r.i32().unwrap(), r.i64().unwrap()))
        .collect();
    assert!(i64::from(salts[0].0) <= now && now < i64::from(salts[0].1));
    for pair in salts.windows(2) {
        assert_eq!(pair[1].0, pair[0].1, "consecutive windows");
        assert_ne!(pair[1].2, pair[0].2, "the salt changes every window");
    }
    assert_eq!(salts[0].1 - salts[0].0, 1800);
    let id = send(&mut second, salts[2].2, &ping(12)).await;
    let body = loop {
        let body = second.next().await.expect("bad_server_salt");
        if body[..4] == BAD_SERVER_SALT.to_le_bytes() {
            break body;
        }
    };
    let mut r = Reader::new(&body[4..]);
    assert_eq!(r.i64().unwrap(), id);
    r.i32().unwrap();
    assert_eq!(r.i32().unwrap(), 48);
    assert_eq!(r.i64().unwrap(), salts[0].2, "the current salt");
    send(&mut second, salts[0].2, &ping(13)).await;
    assert_eq!(next_pong(&mut second).await, 13);

    // A container's answers are written as they are made, not after its last call: the pong for
    // the ping ahead of an auth.logOut arrives while the logOut waits for a row lock.
    let pool = sqlx::PgPool::connect(&database_url(&db))
        .await
        .expect("pool");
    let mut lock = pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM mtproto_auth_keys WHERE auth_key_id = $1 FOR UPDATE")
        .bind(second.key.id())
        .fetch_one(&mut *lock)
        .await
        .expect("the key's row locked");
    let mut log_out = Writer::new();
    encode_object(Schema::api(), &json!({"_": "auth.logOut"}), &mut log_out).unwrap();
    let (ping_id, call_id) = (second.conn.msg_id(), second.conn.msg_id());
    let mut c = Writer::new();
    c.u32(MSG_CONTAINER).i32(2);
    for (id, seq, body) in [(ping_id, 2, ping(20)), (call_id, 3, log_out.buf)] {
        c.i64(id).i32(seq).i32(body.len() as i32).raw(&body);
    }
    let container_id = second.conn.msg_id();
    let packet = encrypt(
        &second.key,
        Side::Client,
        &Plain {
            salt: salts[0].2,
            session_id: second.id,
            msg_id: container_id,
            seq_no: 4,
            body: c.buf,
        },
    );
    second.conn.send(&packet).await;
    let pong = tokio::time::timeout(Duration::from_secs(5), next_pong(&mut second)).await;
    assert_eq!(pong.ok(), Some(20), "the pong waited for the blocked call");
    lock.rollback().await.expect("unlock");
    let result = loop {
        let body = second.next().await.expect("the logOut's result");
        let mut r = Reader::new(&body);
        if r.u32().unwrap() == RPC_RESULT && r.i64().unwrap() == call_id {
            break decode_object(Schema::api(), &mut r).expect("result decodes");
        }
    };
    assert_eq!(result["_"], "auth.loggedOut");
    pool.close().await;

    drop((first, second, stalled));
    drop(server);
    let _ = std::fs::remove_dir_all(&data_dir);
    drop_database(&db).await;
}
