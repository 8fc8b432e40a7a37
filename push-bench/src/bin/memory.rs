//! `ptslog-bench-memory`: the server's resident memory idle and with many connected devices
//! (issue 3, target: < 300 MB with 10,000 devices), run through `scripts/bench-memory`.
//!
//! The server runs as its own process (the release `ptslog serve` binary), so its RSS holds only
//! what the server keeps: the clients live in this process. Steps: start the server on a fresh
//! database, read its RSS idle; sign in `devices` devices spread over `accounts` accounts and open
//! one `/v1/updates` WebSocket per device; read the RSS; send one message to every account from a
//! sender with no connected device, so every connected device gets exactly one frame, wait for all
//! of them, read the RSS again and the peak (VmHWM).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Parser;
use futures::{stream, StreamExt};
use ptslog_push_bench::{admin, database_url, load_average, login, rpc, write_region, Device};
use rand::Rng;
use serde_json::{json, Value};

#[derive(Parser, Debug)]
#[command(
    name = "ptslog-bench-memory",
    about = "Server RSS idle and with many connected devices"
)]
struct Args {
    /// Connected devices (WebSockets).
    #[arg(long, default_value_t = 10_000)]
    devices: usize,
    /// Accounts the devices are spread over (each sign-in of a phone is one more device).
    #[arg(long, default_value_t = 1_000)]
    accounts: usize,
    /// The server binary to measure.
    #[arg(long, default_value = "target/release/ptslog")]
    server_bin: PathBuf,
    /// A markdown document whose <!-- memory:begin --> … <!-- memory:end --> region gets the figures.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Where to write the figures as JSON.
    #[arg(long, default_value = "bench-results/memory.json")]
    out: PathBuf,
    #[arg(
        long,
        env = "PTSLOG_TEST_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    admin_url: String,
    #[arg(
        long,
        env = "PTSLOG_TEST_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    redis_url: String,
}

/// The target of issue 3.
const RSS_TARGET_MB: f64 = 300.0;

/// Resident and peak resident memory of a process, in MB (from /proc/<pid>/status).
fn rss_mb(pid: u32) -> anyhow::Result<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let field = |name: &str| -> anyhow::Result<f64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .ok_or_else(|| anyhow!("no {name} in /proc/{pid}/status"))?;
        let kb: f64 = line
            .split_whitespace()
            .nth(1)
            .ok_or_else(|| anyhow!("bad {line:?}"))?
            .parse()?;
        Ok(kb / 1024.0)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// The server child: killed when dropped, so a failed run leaves no process behind.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

#[derive(Debug, serde::Serialize)]
struct Figures {
    date: String,
    devices: usize,
    accounts: usize,
    rss_idle_mb: f64,
    rss_connected_mb: f64,
    rss_after_push_mb: f64,
    peak_rss_mb: f64,
    kb_per_device: f64,
    frames_expected: usize,
    frames_received: usize,
    connect_secs: f64,
    push_secs: f64,
    load_average: String,
    target_mb: f64,
    met: bool,
}

async fn run(args: &Args) -> anyhow::Result<Figures> {
    if !args.server_bin.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p ptslog`",
            args.server_bin.display()
        );
    }
    let stamp = format!(
        "{}_{:04x}",
        chrono::Utc::now().format("%Y%m%d_%H%M%S"),
        rand::thread_rng().gen::<u16>()
    );
    let db = format!("ptslog_benchmem_{stamp}");
    admin(&args.admin_url, &format!("CREATE DATABASE {db}")).await?;
    let result = measure(args, &db, &stamp).await;
    for _ in 0..50 {
        let drop = format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)");
        if admin(&args.admin_url, &drop).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    result
}

async fn measure(args: &Args, db: &str, stamp: &str) -> anyhow::Result<Figures> {
    let port = free_port()?;
    let base = format!("http://127.0.0.1:{port}");
    let server = Server(
        Command::new(&args.server_bin)
            .arg("serve")
            // Devices sign in with POST /v1/auth/login.
            .env("PTSLOG_DEV_LOGIN", "true")
            .env("DATABASE_URL", database_url(&args.admin_url, db))
            .env("REDIS_URL", &args.redis_url)
            .env("PTSLOG_REDIS_PREFIX", format!("benchmem:{db}:"))
            .env("PTSLOG_HTTP_ADDR", format!("127.0.0.1:{port}"))
            .env("PTSLOG_SEND_RATE_PER_MINUTE", "0")
            .env("PTSLOG_RELAY_SLOT", format!("benchmem_{stamp}"))
            // The MTProto front is not measured here (and its default port may be taken).
            .env("PTSLOG_MTPROTO_ADDR", "off")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", args.server_bin.display()))?,
    );
    let pid = server.0.id();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()?;
    wait_streaming(&http, &base).await?;
    // Let start-up allocations settle before the idle reading.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_idle_mb, _) = rss_mb(pid)?;
    println!("server idle: {rss_idle_mb:.1} MB");

    let started = Instant::now();
    let phones: Vec<String> = (0..args.devices)
        .map(|i| format!("+1777{:07}", i % args.accounts))
        .collect();
    let devices: Vec<Device> = stream::iter(phones.iter())
        .map(|phone| login(&http, &base, phone))
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    let frames = Arc::new(AtomicUsize::new(0));
    let sockets: Vec<_> = stream::iter(devices.iter())
        .map(|d| connect(&base, d, frames.clone()))
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    let connect_secs = started.elapsed().as_secs_f64();
    println!(
        "{} devices signed in and connected in {connect_secs:.1} s",
        sockets.len()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss_connected_mb, _) = rss_mb(pid)?;
    println!(
        "server with {} devices: {rss_connected_mb:.1} MB",
        args.devices
    );

    // One message to each account from a sender whose only device is not connected.
    let sender = login(&http, &base, "+17779999999").await?;
    let mut recipients: Vec<(i64, String)> = devices
        .iter()
        .zip(phones.iter())
        .map(|(d, p)| (d.user_id, p.clone()))
        .collect();
    recipients.sort();
    recipients.dedup_by_key(|(id, _)| *id);
    let push_started = Instant::now();
    let sent: Vec<anyhow::Result<Value>> = stream::iter(recipients.iter())
        .map(|(_, phone)| send_to(&http, &base, &sender, phone))
        .buffer_unordered(16)
        .collect()
        .await;
    if let Some(Err(e)) = sent.into_iter().find(|r| r.is_err()) {
        return Err(e.context("a send failed"));
    }
    let expected = args.devices;
    let deadline = Instant::now() + Duration::from_secs(120);
    while frames.load(Ordering::Relaxed) < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let push_secs = push_started.elapsed().as_secs_f64();
    let received = frames.load(Ordering::Relaxed);
    let (rss_after_push_mb, peak_rss_mb) = rss_mb(pid)?;
    println!("after pushing one frame to each device: {rss_after_push_mb:.1} MB (peak {peak_rss_mb:.1} MB), {received}/{expected} frames in {push_secs:.1} s");
    for s in sockets {
        s.abort();
    }
    drop(server);
    if received < expected {
        bail!("only {received} of {expected} frames arrived within 120 s");
    }
    let worst = rss_connected_mb.max(rss_after_push_mb).max(peak_rss_mb);
    Ok(Figures {
        date: chrono::Utc::now().to_rfc3339(),
        devices: args.devices,
        accounts: args.accounts,
        rss_idle_mb,
        rss_connected_mb,
        rss_after_push_mb,
        peak_rss_mb,
        kb_per_device: (rss_after_push_mb - rss_idle_mb) * 1024.0 / args.devices.max(1) as f64,
        frames_expected: expected,
        frames_received: received,
        connect_secs,
        push_secs,
        load_average: load_average(),
        target_mb: RSS_TARGET_MB,
        met: worst < RSS_TARGET_MB,
    })
}

/// Waits until the server answers and its relay streams (so pushes flow).
async fn wait_streaming(http: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let health: Option<Value> = match http.get(format!("{base}/healthz/relay")).send().await {
            Ok(r) => r.json().await.ok(),
            Err(_) => None,
        };
        if health.as_ref().is_some_and(|h| {
            h["relay"]["role"] == "leader" && h["relay"]["sessions_started"].as_u64() > Some(0)
        }) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the server's relay did not stream within 180 s: {health:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn send_to(
    http: &reqwest::Client,
    base: &str,
    sender: &Device,
    phone: &str,
) -> anyhow::Result<Value> {
    let resolved = rpc(
        http,
        base,
        &sender.token,
        "contacts.resolvePhone",
        json!({"phone": phone}),
    )
    .await?;
    let user = &resolved["users"][0];
    let peer =
        json!({"_": "inputPeerUser", "user_id": user["id"], "access_hash": user["access_hash"]});
    rpc(
        http,
        base,
        &sender.token,
        "messages.sendMessage",
        json!({"peer": peer, "message": "memory bench", "random_id": rand::thread_rng().gen_range(1..i64::MAX)}),
    )
    .await
}

/// Opens a device's push socket; the task counts the frames carrying an update.
async fn connect(
    base: &str,
    device: &Device,
    frames: Arc<AtomicUsize>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let url = format!(
        "{}/v1/updates?token={}",
        base.replacen("http://", "ws://", 1),
        device.token
    );
    let (ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .context("WebSocket")?;
    Ok(tokio::spawn(async move {
        let (_tx, mut rx) = ws.split();
        while let Some(Ok(msg)) = rx.next().await {
            if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
                if t.contains("updateNewMessage") {
                    frames.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }))
}

fn markdown(f: &Figures) -> String {
    format!(
        "Run {date}: `scripts/bench-memory` ({devices} devices over {accounts} accounts; the server is its own \
         process, the clients another, on one host; load average {load}).\n\n\
         | figure | value |\n|---|---|\n\
         | server RSS idle | {idle:.1} MB |\n\
         | server RSS with {devices} connected devices | {connected:.1} MB |\n\
         | server RSS after one push to every device | {after:.1} MB |\n\
         | server peak RSS (VmHWM) | {peak:.1} MB |\n\
         | memory per connected device | {per:.1} KB |\n\
         | frames received / expected | {received} / {expected} (in {push:.1} s) |\n\
         | sign in and connect all devices | {connect:.1} s |\n\
         | target: RSS < {target:.0} MB with 10,000 devices | {met} |\n",
        date = f.date,
        devices = f.devices,
        accounts = f.accounts,
        load = f.load_average,
        idle = f.rss_idle_mb,
        connected = f.rss_connected_mb,
        after = f.rss_after_push_mb,
        peak = f.peak_rss_mb,
        per = f.kb_per_device,
        received = f.frames_received,
        expected = f.frames_expected,
        push = f.push_secs,
        connect = f.connect_secs,
        target = f.target_mb,
        met = if f.met { "met" } else { "**not met**" },
    )
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let figures = match run(&args).await {
        Ok(f) => f,
        Err(e) => {
            eprintln!("ptslog-bench-memory: {e:#}");
            return std::process::ExitCode::from(1);
        }
    };
    let md = markdown(&figures);
    println!("{md}");
    let written = (|| -> anyhow::Result<()> {
        if let Some(dir) = args.out.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&args.out, serde_json::to_string_pretty(&figures)?)?;
        if let Some(path) = &args.markdown {
            write_region(path, "memory", "Memory", &md)?;
        }
        Ok(())
    })();
    if let Err(e) = written {
        eprintln!("writing the figures: {e:#}");
        return std::process::ExitCode::from(1);
    }
    std::process::ExitCode::SUCCESS
}
