//! Live pushes end to end (issue 4), in both modes: without a broker (the server's own relay feeds
//! its fanout) and with Kafka (a `ptslog relay` process produces to tansu, the server consumes).
//!
//! Alice has two devices, Bob one, all connected to `GET /v1/updates`. First a scripted exchange
//! (send, edit, delete, read) where every device must get exactly the updates of its account that
//! other devices caused, in pts order. Then, while both keep sending, the relay is killed
//! mid-stream and restarted, and (with Kafka) the broker is stopped for a while and started again:
//! every send must succeed, no connection may get an update twice or out of order, every device
//! must learn every update (live, or with updates.getDifference as a client does on a gap), and
//! pushes must flow live again afterwards.

#[path = "push/broker.rs"]
mod broker;
#[path = "push/client.rs"]
mod client;
#[path = "push/setup.rs"]
mod setup;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ptslog_tests::Device;
use serde_json::{json, Value};

use broker::{tansu, Broker};
use client::{Pushed, Socket};
use setup::{free_port, Mode, System};

/// The TL update a log kind is pushed as.
fn update_name(kind: &str) -> &'static str {
    match kind {
        "new_message" => "updateNewMessage",
        "edit_message" => "updateEditMessage",
        "delete_messages" => "updateDeleteMessages",
        "read_history_inbox" => "updateReadHistoryInbox",
        "read_history_outbox" => "updateReadHistoryOutbox",
        "read_message_contents" => "updateReadMessagesContents",
        "peer_blocked" => "updatePeerBlocked",
        other => panic!("unknown kind {other}"),
    }
}

struct Phone {
    name: &'static str,
    device: Device,
    auth_key_id: i64,
    socket: Socket,
}

/// What the device must have been pushed after `after`: its account's events not caused by it.
async fn expected(system: &System, phone: &Phone, after: i64) -> Vec<(i64, i64, &'static str)> {
    system
        .log_of(phone.device.user_id, after)
        .await
        .into_iter()
        .filter(|(_, _, _, origin)| *origin != phone.auth_key_id)
        .map(|(pts, count, kind, _)| (pts as i64, count as i64, update_name(&kind)))
        .collect()
}

fn got(pushed: &[Pushed], after: i64) -> Vec<(i64, i64, &'static str)> {
    pushed
        .iter()
        .filter(|p| p.pts > after)
        .map(|p| {
            let name: &'static str = match p.update["_"].as_str().unwrap_or_default() {
                "updateNewMessage" => "updateNewMessage",
                "updateEditMessage" => "updateEditMessage",
                "updateDeleteMessages" => "updateDeleteMessages",
                "updateReadHistoryInbox" => "updateReadHistoryInbox",
                "updateReadHistoryOutbox" => "updateReadHistoryOutbox",
                "updateReadMessagesContents" => "updateReadMessagesContents",
                _ => "other",
            };
            (p.pts, p.pts_count, name)
        })
        .collect()
}

/// Pushes on one connection only ever go up in pts: no duplicate, nothing out of order.
fn assert_increasing(who: &str, pushed: &[Pushed]) {
    for w in pushed.windows(2) {
        assert!(
            w[1].pts > w[0].pts,
            "{who} got pts {} after pts {} (duplicate or out of order)",
            w[1].pts,
            w[0].pts
        );
    }
}

async fn pts_of(device: &Device) -> i64 {
    device.state().await["pts"].as_i64().expect("pts")
}

/// Sends until every other device has a push again: the pipeline is live. Answers how long it took.
async fn wait_live(
    alice: &Phone,
    alice2: &Phone,
    bob: &Phone,
    bob_peer: &Value,
    alice_peer: &Value,
    timeout: Duration,
) -> Duration {
    let started = Instant::now();
    let mut round = 0;
    loop {
        round += 1;
        let (a2, b) = (alice2.socket.pushed().len(), bob.socket.pushed().len());
        let a1 = alice.socket.pushed().len();
        alice
            .device
            .send(bob_peer, &format!("probe {round} from alice"))
            .await;
        bob.device
            .send(alice_peer, &format!("probe {round} from bob"))
            .await;
        let step = Duration::from_secs(3);
        let live = alice2.socket.wait_until(step, |p| p.len() >= a2 + 2).await
            && bob.socket.wait_until(step, |p| p.len() > b).await
            && alice.socket.wait_until(step, |p| p.len() > a1).await;
        if live {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < timeout,
            "pushes did not flow within {timeout:?}"
        );
    }
}

async fn scenario(mode: Mode, broker: Option<Broker>, broker_outage: bool) {
    let mut system = System::start(mode, broker).await;
    let mut phones = Vec::new();
    for (name, phone, header) in [
        ("alice", "+15550401", true),
        ("alice2", "+15550401", false),
        ("bob", "+15550402", false),
    ] {
        let device = system.login(phone, name).await;
        let auth_key_id = system.auth_key_id(&device).await;
        let socket = Socket::connect(&system.base, &device.token, header).await;
        phones.push(Phone {
            name,
            device,
            auth_key_id,
            socket,
        });
    }
    let (alice, alice2, bob) = (&phones[0], &phones[1], &phones[2]);
    let bob_peer = alice.device.peer_of("+15550402").await;
    let alice_peer = bob.device.peer_of("+15550401").await;

    // Creating the replication slot waits for every transaction in progress on the server to end;
    // in the full suite other tests' long transactions can make that take a while.
    system.wait_ready(Duration::from_secs(240)).await;
    // With Kafka the consumer may join after its partitions got their first records; probes show
    // when pushes really flow.
    wait_live(
        alice,
        alice2,
        bob,
        &bob_peer,
        &alice_peer,
        // Joining the consumer group and the first fetches can take long on a loaded machine.
        Duration::from_secs(180),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // --- Phase 1: a scripted exchange; exact updates per device. ---
    let alice_base = pts_of(&alice.device).await;
    let bob_base = pts_of(&bob.device).await;
    bob.device.send(&alice_peer, "hello alice").await;
    let mut sent = Vec::new();
    for text in ["m1", "m2", "m3"] {
        sent.push(
            alice.device.send(&bob_peer, text).await["id"]
                .as_i64()
                .expect("id"),
        );
    }
    alice
        .device
        .rpc(
            "messages.editMessage",
            json!({"peer": bob_peer, "id": sent[1], "message": "m2 edited"}),
        )
        .await;
    alice
        .device
        .rpc(
            "messages.deleteMessages",
            json!({"id": [sent[2]], "revoke": true}),
        )
        .await;
    let newest_from_bob = alice
        .device
        .rpc(
            "messages.getHistory",
            json!({"peer": bob_peer, "limit": 20}),
        )
        .await["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["out"] == false)
        .map(|m| m["id"].as_i64().unwrap_or(0))
        .max()
        .expect("bob's message is in alice's history");
    alice
        .device
        .rpc(
            "messages.readHistory",
            json!({"peer": bob_peer, "max_id": newest_from_bob}),
        )
        .await;
    let newest_from_alice = sent_to(bob, &alice_peer).await;
    bob.device
        .rpc(
            "messages.readHistory",
            json!({"peer": alice_peer, "max_id": newest_from_alice}),
        )
        .await;

    for (phone, base) in [(alice, alice_base), (alice2, alice_base), (bob, bob_base)] {
        let want = expected(&system, phone, base).await;
        assert!(!want.is_empty());
        let arrived = phone
            .socket
            .wait_until(Duration::from_secs(20), |p| {
                got(p, base).len() >= want.len()
            })
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            arrived,
            "{} ({mode:?}) got {:?}, wanted {want:?}",
            phone.name,
            got(&phone.socket.pushed(), base)
        );
        assert_eq!(
            got(&phone.socket.pushed(), base),
            want,
            "{} ({mode:?}): exactly its account's updates caused by others, in pts order",
            phone.name
        );
    }
    // What the frames carry: bob sees alice's message with alice as a user (with bob's access hash).
    let pushed = bob.socket.pushed();
    let m1 = pushed
        .iter()
        .find(|p| p.update["message"]["message"] == "m1")
        .expect("bob got m1");
    assert_eq!(m1.frame["_"], "updates");
    assert_eq!(
        (
            m1.frame["seq"].as_i64(),
            m1.frame["chats"].as_array().map(Vec::len)
        ),
        (Some(0), Some(0))
    );
    let alice_user = m1.frame["users"]
        .as_array()
        .expect("users")
        .iter()
        .find(|u| u["id"] == alice.device.user_id)
        .expect("alice in users");
    assert_eq!(alice_user["access_hash"], alice_peer["access_hash"]);
    let deleted = pushed
        .iter()
        .find(|p| p.update["_"] == "updateDeleteMessages")
        .expect("bob got the delete");
    assert_eq!(
        deleted.pts_count,
        deleted.update["messages"]
            .as_array()
            .map(|a| a.len() as i64)
            .unwrap_or(0)
    );
    // The client's ping was answered.
    assert!(
        alice.socket.raw().iter().any(|f| f["_"] == "pong"),
        "no pong for the client's ping"
    );

    // --- Phase 2: crashes and outages while both keep sending. ---
    let chaos_base: HashMap<&str, i64> = [
        ("alice", pts_of(&alice.device).await),
        ("bob", pts_of(&bob.device).await),
    ]
    .into_iter()
    .collect();
    let total = 60;
    let sender = {
        let (a, b) = (alice.device.clone(), bob.device.clone());
        let (bp, ap) = (bob_peer.clone(), alice_peer.clone());
        tokio::spawn(async move {
            let mut texts = Vec::new();
            for i in 0..total {
                let (from, to, text) = if i % 2 == 0 {
                    (&a, &bp, format!("chaos {i} a->b"))
                } else {
                    (&b, &ap, format!("chaos {i} b->a"))
                };
                // Device::send asserts the answer is 200: a send must never fail, broker or not.
                from.send(to, &text).await;
                texts.push(text);
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            texts
        })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    system.kill_relay();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    system.start_relay();
    if broker_outage {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        system.broker.as_mut().expect("broker").stop();
        tokio::time::sleep(Duration::from_secs(3)).await;
        system.broker.as_mut().expect("broker").restart();
    }
    let texts = sender.await.expect("sender task");
    assert_eq!(texts.len(), total);
    let recovery = wait_live(
        alice,
        alice2,
        bob,
        &bob_peer,
        &alice_peer,
        Duration::from_secs(120),
    )
    .await;
    eprintln!("{mode:?}: pushes live again {recovery:?} after the last chaos send");
    tokio::time::sleep(Duration::from_millis(500)).await;

    for phone in [alice, alice2, bob] {
        let user_base = chaos_base[if phone.name == "bob" { "bob" } else { "alice" }];
        let pushed: Vec<Pushed> = phone.socket.pushed();
        assert_increasing(phone.name, &pushed);
        // Every push is the log's event at that pts, never one the device caused itself.
        let log: HashMap<i64, (i64, String, i64)> = system
            .log_of(phone.device.user_id, 0)
            .await
            .into_iter()
            .map(|(pts, count, kind, origin)| (pts as i64, (count as i64, kind, origin)))
            .collect();
        for p in &pushed {
            let (count, kind, origin) = log
                .get(&p.pts)
                .unwrap_or_else(|| panic!("{} got pts {} not in the log", phone.name, p.pts));
            assert_eq!(
                (p.pts_count, p.update["_"].as_str().unwrap_or_default()),
                (*count, update_name(kind)),
                "{} pts {}",
                phone.name,
                p.pts
            );
            assert_ne!(
                *origin, phone.auth_key_id,
                "{} was pushed its own update at pts {}",
                phone.name, p.pts
            );
        }
        // Like a client that finds a gap (or reconnects): getDifference from where the pushes left
        // off fills in whatever was not pushed live.
        let pushed_texts: BTreeSet<String> = pushed
            .iter()
            .filter(|p| p.pts > user_base && p.update["_"] == "updateNewMessage")
            .filter_map(|p| p.update["message"]["message"].as_str().map(str::to_string))
            .collect();
        let live = pushed.iter().filter(|p| p.pts > user_base).count();
        let mut from = user_base;
        let mut diff_texts: BTreeSet<String> = BTreeSet::new();
        loop {
            let diff = phone
                .device
                .rpc(
                    "updates.getDifference",
                    json!({"pts": from, "date": 0, "qts": 0}),
                )
                .await;
            for m in diff["new_messages"].as_array().into_iter().flatten() {
                diff_texts.insert(m["message"].as_str().unwrap_or_default().to_string());
            }
            match diff["_"].as_str() {
                Some("updates.differenceSlice") => {
                    from = diff["intermediate_state"]["pts"].as_i64().expect("pts")
                }
                Some("updates.difference" | "updates.differenceEmpty") => break,
                other => panic!("unexpected difference {other:?}"),
            }
        }
        let theirs: Vec<&String> = texts
            .iter()
            .filter(|t| {
                let by_alice = t.ends_with("a->b");
                // Every chaos message lands in both accounts; only the sending device itself is
                // not told (it has the answer).
                !(phone.name == "alice" && by_alice) && !(phone.name == "bob" && !by_alice)
            })
            .collect();
        let missing: Vec<&&String> = theirs
            .iter()
            .filter(|t| !pushed_texts.contains(t.as_str()) && !diff_texts.contains(t.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "{} ({mode:?}) never learned {missing:?}",
            phone.name
        );
        let via_difference = theirs
            .iter()
            .filter(|t| !pushed_texts.contains(t.as_str()))
            .count();
        eprintln!("{mode:?}: {} got {live} pushes during and after the chaos; {via_difference} of its {} chaos messages only via getDifference", phone.name, theirs.len());
    }

    // /metrics tells the story.
    let metrics = system
        .http
        .get(format!("{}/metrics", system.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    for name in [
        "ptslog_fanout_pushes_total",
        "ptslog_devices_online 3",
        "ptslog_push_latency_seconds_bucket",
        "ptslog_relay_lag_bytes",
    ] {
        assert!(metrics.contains(name), "/metrics lacks {name}:\n{metrics}");
    }
    // Every stage of a push was timed: the gateway's receipt of each record of an online account
    // and, where this instance's relay handed records to its sink (with Kafka the relays are
    // other processes), the relay's read and the sink's acknowledgement of each transaction.
    let value = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|n| n.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("/metrics lacks {name}:\n{metrics}"))
    };
    let mut timed = vec!["ptslog_push_receive_latency_seconds_count"];
    if value("ptslog_relay_records_produced_total") > 0.0 {
        timed.extend([
            "ptslog_relay_commit_to_read_seconds_count",
            "ptslog_relay_sink_ack_seconds_count",
        ]);
    }
    for name in timed {
        assert!(value(name) > 0.0, "{name} observed nothing:\n{metrics}");
    }

    for phone in phones {
        assert_eq!(
            phone.socket.closed(),
            None,
            "{}'s socket closed during the run",
            phone.name
        );
        phone.socket.close();
    }
    system.stop().await;
}

/// The newest message bob got from alice (bob's box id).
async fn sent_to(bob: &Phone, alice_peer: &Value) -> i64 {
    bob.device
        .rpc(
            "messages.getHistory",
            json!({"peer": alice_peer, "limit": 20}),
        )
        .await["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["out"] == false)
        .map(|m| m["id"].as_i64().unwrap_or(0))
        .max()
        .expect("alice's messages are in bob's history")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pushes_survive_relay_crashes_in_process() {
    scenario(Mode::InProcess, None, false).await;
}

/// The broker, when scripts/test or .ci/run provide one.
fn tansu_or_skip() -> Option<Broker> {
    let Some(bin) = tansu() else {
        // scripts/test and .ci/run always provide the broker; a bare `cargo test` may not.
        assert!(
            std::env::var("CI").is_err(),
            "PTSLOG_TEST_TANSU is not set: .ci/run must start Kafka (scripts/lib/services.sh)"
        );
        eprintln!("skipped: no tansu broker (run scripts/test, which builds and exports PTSLOG_TEST_TANSU)");
        return None;
    };
    Some(Broker::start(bin, free_port()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pushes_survive_relay_crashes_with_kafka() {
    if let Some(broker) = tansu_or_skip() {
        scenario(Mode::Kafka, Some(broker), false).await;
    }
}

/// The broker stopped for a while and restarted (losing its state: tansu's memory engine). The
/// gateway's consumer closes when every broker is down and a new one starts once the broker is
/// back (infrastructure/src/kafka/consumer.rs says why).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pushes_survive_relay_crashes_and_broker_outages_with_kafka() {
    if let Some(broker) = tansu_or_skip() {
        scenario(Mode::Kafka, Some(broker), true).await;
    }
}

/// A device that does not read its socket gets `updatesTooLong`, then the socket closes; the other
/// devices go on getting everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_that_cannot_keep_up_gets_updates_too_long() {
    let db = ptslog_tests::fresh_database().await.expect("db");
    let mut config = ptslog_tests::test_config(&db);
    config.relay_slot = format!("relay_{}", db.trim_start_matches("ptslog_t_"));
    config.relay = true;
    // Room for bursts (the relay may fall behind on a busy machine and catch up at once), and
    // still quickly full for a device that reads nothing.
    config.push_buffer = 64;
    let mut running = ptslog_server::start(&config).await.expect("server");
    running.start_feed(&config).expect("feed");
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let login = |phone: &'static str| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let body: Value = http
                .post(format!("{base}/v1/auth/login"))
                .json(&json!({"phone": phone, "first_name": "x", "last_name": ""}))
                .send()
                .await
                .expect("login")
                .json()
                .await
                .expect("body");
            Device {
                base,
                http,
                token: body["token"].as_str().expect("token").into(),
                user_id: body["user_id"].as_i64().expect("id"),
            }
        }
    };
    let (alice, bob) = (login("+15550501").await, login("+15550502").await);
    let bob_peer = alice.peer_of("+15550502").await;
    // The slow device: a raw TCP WebSocket handshake and then no reading at all, so the server's
    // socket buffer fills and then the device's push buffer.
    let slow = slow_device(&base, &bob.token).await;
    let fast = Socket::connect(&base, &bob.token, true).await;
    // As in the scenario: creating the slot waits for other tests' transactions in progress.
    ptslog_tests::wait_relay_streaming(&running.relay_status, Duration::from_secs(240)).await;
    // Big messages fill the kernel's socket buffers quickly.
    let text = "x".repeat(4000);
    let alice = Arc::new(alice);
    let mut sent = 0;
    while running
        .gateway
        .metrics
        .too_long
        .load(std::sync::atomic::Ordering::Relaxed)
        == 0
    {
        alice.send(&bob_peer, &text).await;
        sent += 1;
        assert!(
            sent < 3000,
            "no updatesTooLong after {sent} pushes to a device that does not read"
        );
    }
    let bob_pts = bob.state().await["pts"].as_i64().expect("pts");
    let complete = fast
        .wait_until(Duration::from_secs(20), |p| {
            p.last().map(|l| l.pts) == Some(bob_pts)
        })
        .await;
    assert!(
        complete,
        "the fast device still gets everything: last pts {:?} of {bob_pts}, closed {:?}",
        fast.pushed().last().map(|p| p.pts),
        fast.closed()
    );
    assert_increasing("fast", &fast.pushed());
    drop(slow);
    fast.close();
    running.shutdown().await;
    ptslog_tests::drop_database(&db).await;
}

/// Opens a WebSocket by hand and never reads from it.
async fn slow_device(base: &str, token: &str) -> tokio::net::TcpStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = base.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /v1/updates?token={token} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.expect("handshake");
    let mut buf = [0u8; 1024];
    let n = tcp.read(&mut buf).await.expect("handshake answer");
    assert!(
        String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 101"),
        "upgrade refused"
    );
    tcp
}

/// The relay does not wait for the request runtime (issue 16): with every worker of the server's
/// runtime busy, a commit still reaches an online device's buffer. On the request runtime the relay
/// is queued behind whatever the workers run, so here it would never get its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_reach_device_buffers_while_every_request_worker_is_busy() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use application::fanout::Outgoing;
    use domain::{AuthKeyId, UserId};
    use ptslog_server::gateway::DeviceSender;

    const WORKERS: usize = 2;
    let db = ptslog_tests::fresh_database().await.expect("db");
    let mut config = ptslog_tests::test_config(&db);
    config.relay_slot = format!("relay_{}", db.trim_start_matches("ptslog_t_"));
    config.relay = true;
    assert!(
        config.feed_thread,
        "the feed has a thread of its own by default"
    );
    let mut running = ptslog_server::start(&config).await.expect("server");
    running.start_feed(&config).expect("feed");
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let mut devices = Vec::new();
    for phone in ["+15550601", "+15550602"] {
        let body: Value = http
            .post(format!("{base}/v1/auth/login"))
            .json(&json!({"phone": phone, "first_name": "x", "last_name": ""}))
            .send()
            .await
            .expect("login")
            .json()
            .await
            .expect("body");
        devices.push(Device {
            base: base.clone(),
            http: http.clone(),
            token: body["token"].as_str().expect("token").into(),
            user_id: body["user_id"].as_i64().expect("id"),
        });
    }
    let (alice, bob) = (&devices[0], &devices[1]);
    // Bob's device is a buffer the test reads itself: no socket writer on the busy runtime.
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let bob_id = UserId::new(bob.user_id).expect("user id");
    running
        .gateway
        .hub
        .register(bob_id, AuthKeyId(i64::MAX), DeviceSender(tx));
    ptslog_tests::wait_relay_streaming(&running.relay_status, Duration::from_secs(240)).await;
    let bob_peer = alice.peer_of("+15550602").await;
    alice.send(&bob_peer, "first").await;
    let first = tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("the first push arrives")
        .expect("the device is registered");
    let first = match first {
        Outgoing::Frame(frame) => frame,
        other => panic!("a frame, not {other:?}"),
    };

    // Every worker of the server's runtime spins until released.
    let busy = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(AtomicBool::new(false));
    let mut spinners = Vec::new();
    for _ in 0..WORKERS {
        let (busy, release) = (busy.clone(), release.clone());
        spinners.push(tokio::spawn(async move {
            busy.fetch_add(1, Ordering::SeqCst);
            while !release.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }));
    }
    // The test body runs on its own thread (block_on), so it may wait without a worker.
    let deadline = Instant::now() + Duration::from_secs(30);
    while busy.load(Ordering::SeqCst) < WORKERS {
        assert!(
            Instant::now() < deadline,
            "the workers did not all get busy"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // A commit from outside the server's runtime: the same record again, one pts further.
    let url = ptslog_tests::database_url(&db);
    let (user, pts) = (bob.user_id, first.pts);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
            sqlx::query(
                "INSERT INTO user_update_events (user_id, pts, pts_count, kind, payload_version, payload) \
                 SELECT user_id, pts + 1, pts_count, kind, payload_version, payload FROM user_update_events \
                 WHERE user_id = $1 AND pts = $2",
            )
            .bind(user)
            .bind(pts)
            .execute(&mut conn)
            .await
            .expect("insert");
        })
    })
    .join()
    .expect("the writer thread");
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        match rx.try_recv() {
            Ok(item) => break Some(item),
            Err(_) if Instant::now() > deadline => break None,
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    release.store(true, Ordering::SeqCst);
    for s in spinners {
        let _ = s.await;
    }
    match got {
        Some(Outgoing::Frame(f)) => assert_eq!(f.pts, first.pts + 1, "the new commit's frame"),
        other => panic!("no push while the request workers were busy: {other:?}"),
    }
    running.shutdown().await;
    ptslog_tests::drop_database(&db).await;
}
