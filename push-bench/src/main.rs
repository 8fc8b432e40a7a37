//! `ptslog-bench-push`: live-push figures (issue 4), run through `scripts/bench-push`.
//!
//! 1. Commit-to-push latency at a stated send rate: receivers keep a WebSocket open on
//!    `/v1/updates`; senders send at a fixed rate (open loop); each push's arrival time is matched
//!    with its event's `committed_at` in the log (same host, same clock). Reported: p50, p99, max.
//! 2. Relay throughput: with the relay stopped, a backlog of sends piles up in the slot; then the
//!    relay starts and the time until it has confirmed the whole backlog gives records/s.
//!
//! Both in the mode the flags choose: no broker (the local sink) or Kafka (`--kafka-brokers`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Parser;
use futures::StreamExt;
use hdrhistogram::Histogram;
use ptslog_push_bench::{admin, database_url, load_average, login, rpc, Device};
use ptslog_server::Config;
use rand::Rng;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;

#[derive(Parser, Debug)]
#[command(
    name = "ptslog-bench-push",
    about = "Commit-to-push latency and relay throughput of ptslog"
)]
struct Args {
    /// Sends per second during the latency phase (each send is pushed to one receiver device).
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Seconds of the latency phase.
    #[arg(long, default_value_t = 10.0)]
    duration_secs: f64,
    /// Sender/receiver pairs (each receiver has one connected device).
    #[arg(long, default_value_t = 50)]
    pairs: usize,
    /// Sends piled up for the throughput phase (each is two log records).
    #[arg(long, default_value_t = 10_000)]
    backlog: usize,
    /// Use Kafka (the relay produces, the server consumes) instead of the local sink.
    #[arg(long)]
    kafka_brokers: Option<String>,
    /// A markdown document whose <!-- push:begin --> … <!-- push:end --> region gets the figures.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Where to write the figures as JSON (default bench-results/push-<mode>.json).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The Postgres server (its maintenance database) to create the benchmark database on; it must
    /// run with wal_level=logical.
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

fn send_params(peer: &Value, text: &str) -> Value {
    json!({"peer": peer, "message": text, "random_id": rand::thread_rng().gen_range(1..i64::MAX)})
}

fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// (user, pts) → arrival time in unix µs, for every pushed update.
type Arrivals = Arc<Mutex<HashMap<(i64, i64), i64>>>;

async fn connect(
    base: &str,
    device: &Device,
    arrivals: Arrivals,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let url = format!(
        "{}/v1/updates?token={}",
        base.replacen("http://", "ws://", 1),
        device.token
    );
    let (ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .context("WebSocket")?;
    let user = device.user_id;
    Ok(tokio::spawn(async move {
        let (_tx, mut rx) = ws.split();
        while let Some(Ok(msg)) = rx.next().await {
            let at = now_micros();
            if let tokio_tungstenite::tungstenite::Message::Text(t) = msg {
                if let Ok(v) = serde_json::from_str::<Value>(&t) {
                    for u in v["updates"].as_array().into_iter().flatten() {
                        if let Some(pts) = u["pts"].as_i64() {
                            arrivals
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .insert((user, pts), at);
                        }
                    }
                }
            }
        }
    }))
}

#[derive(Debug, serde::Serialize)]
struct Figures {
    mode: &'static str,
    rate_asked: f64,
    achieved_rate: f64,
    send_errors: usize,
    expected: usize,
    received: usize,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    backlog_records: i64,
    drain_secs: f64,
    records_per_sec: f64,
    load_average: String,
}

async fn run(args: &Args) -> anyhow::Result<Figures> {
    let stamp = format!(
        "{}_{:04x}",
        chrono::Utc::now().format("%Y%m%d_%H%M%S"),
        rand::thread_rng().gen::<u16>()
    );
    let db = format!("ptslog_benchpush_{stamp}");
    admin(&args.admin_url, &format!("CREATE DATABASE {db}")).await?;
    let mut vars = HashMap::new();
    vars.insert(
        "DATABASE_URL".to_string(),
        database_url(&args.admin_url, &db),
    );
    vars.insert("REDIS_URL".to_string(), args.redis_url.clone());
    vars.insert(
        "PTSLOG_REDIS_PREFIX".to_string(),
        format!("benchpush:{db}:"),
    );
    vars.insert("PTSLOG_HTTP_ADDR".to_string(), "127.0.0.1:0".to_string());
    vars.insert("PTSLOG_SEND_RATE_PER_MINUTE".to_string(), "0".to_string());
    // Benchmark devices sign in by phone (development sign-in).
    vars.insert("PTSLOG_DEV_LOGIN".to_string(), "true".to_string());
    vars.insert(
        "PTSLOG_RELAY_SLOT".to_string(),
        format!("benchpush_{stamp}"),
    );
    vars.insert("PTSLOG_PUSH_BUFFER".to_string(), "4096".to_string());
    if let Some(brokers) = &args.kafka_brokers {
        vars.insert("KAFKA_BROKERS".to_string(), brokers.clone());
    }
    let config = Config::from_vars(&vars)?;
    let mut running = ptslog_server::start(&config).await?;
    running.start_feed(&config)?;
    let result = measure(args, &running, &db).await;
    running.shutdown().await;
    // The slot goes with the database once its replication session has ended.
    for _ in 0..50 {
        if admin(
            &args.admin_url,
            &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
        )
        .await
        .is_ok()
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    result
}

async fn measure(
    args: &Args,
    running: &ptslog_server::Running,
    db: &str,
) -> anyhow::Result<Figures> {
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&database_url(&args.admin_url, db))
        .await?;
    let arrivals: Arrivals = Arc::default();
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    let mut sockets = Vec::new();
    for i in 0..args.pairs.max(1) {
        let s = login(&http, &base, &format!("+1777{:07}", i * 2)).await?;
        let r = login(&http, &base, &format!("+1777{:07}", i * 2 + 1)).await?;
        sockets.push(connect(&base, &r, arrivals.clone()).await?);
        let found = rpc(
            &http,
            &base,
            &s.token,
            "contacts.resolvePhone",
            json!({"phone": format!("+1777{:07}", i * 2 + 1)}),
        )
        .await?;
        let peer = json!({"_": "inputPeerUser", "user_id": r.user_id, "access_hash": found["users"][0]["access_hash"]});
        senders.push((s, peer));
        receivers.push(r);
    }
    // Ready when a probe arrives live.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let before = arrivals.lock().unwrap_or_else(|e| e.into_inner()).len();
        rpc(
            &http,
            &base,
            &senders[0].0.token,
            "messages.sendMessage",
            send_params(&senders[0].1, "probe"),
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        if arrivals.lock().unwrap_or_else(|e| e.into_inner()).len() > before {
            break;
        }
        if Instant::now() > deadline {
            bail!("pushes do not flow: {:?}", running.relay_status.health());
        }
    }
    let mode = if args.kafka_brokers.is_some() {
        "Kafka"
    } else {
        "in-process"
    };

    // Phase 1: latency at a fixed rate (open loop: a late send does not delay the next).
    let start_pts: HashMap<i64, i64> = {
        let rows: Vec<(i64, i32)> = sqlx::query_as("SELECT user_id, pts FROM user_sequences")
            .fetch_all(&pool)
            .await?;
        rows.into_iter().map(|(u, p)| (u, p as i64)).collect()
    };
    let senders = Arc::new(senders);
    let errors = Arc::new(AtomicUsize::new(0));
    let total = (args.rate * args.duration_secs).round().max(1.0) as usize;
    let interval = Duration::from_secs_f64(1.0 / args.rate.max(0.001));
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total);
    for i in 0..total {
        tokio::time::sleep_until((started + interval * i as u32).into()).await;
        let (http, base, senders, errors) =
            (http.clone(), base.clone(), senders.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let (s, peer) = &senders[i % senders.len()];
            if rpc(
                &http,
                &base,
                &s.token,
                "messages.sendMessage",
                send_params(peer, &format!("bench {i}")),
            )
            .await
            .is_err()
            {
                errors.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let achieved_rate = total as f64 / started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let receiver_ids: Vec<i64> = receivers.iter().map(|r| r.user_id).collect();
    let rows: Vec<(i64, i32, i64)> = sqlx::query_as(
        "SELECT user_id, pts, (extract(epoch FROM committed_at) * 1000000)::bigint FROM user_update_events WHERE user_id = ANY($1)",
    )
    .bind(&receiver_ids)
    .fetch_all(&pool)
    .await?;
    let mut histogram = Histogram::<u64>::new(3)?;
    let (mut expected, mut received) = (0, 0);
    {
        let arrivals = arrivals.lock().unwrap_or_else(|e| e.into_inner());
        for (user, pts, committed) in rows {
            if (pts as i64) <= start_pts.get(&user).copied().unwrap_or(0) {
                continue;
            }
            expected += 1;
            if let Some(at) = arrivals.get(&(user, pts as i64)) {
                received += 1;
                histogram.record(u64::try_from(at - committed).unwrap_or(0))?;
            }
        }
    }

    // Phase 2: relay throughput, draining a backlog.
    let relay = running
        .feed
        .relay
        .clone()
        .ok_or_else(|| anyhow!("no relay in this process"))?;
    relay.stop().await;
    let count_before: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&pool)
        .await?;
    let backlog_start = Instant::now();
    let concurrency = 32;
    let per_task = args.backlog.div_ceil(concurrency);
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let (http, base, senders) = (http.clone(), base.clone(), senders.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..per_task {
                let (s, peer) = &senders[(t * per_task + i) % senders.len()];
                let _ = rpc(
                    &http,
                    &base,
                    &s.token,
                    "messages.sendMessage",
                    send_params(peer, "backlog"),
                )
                .await;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    eprintln!(
        "backlog of {} sends written in {:?}",
        per_task * concurrency,
        backlog_start.elapsed()
    );
    let count_after: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(&pool)
        .await?;
    let backlog_records = count_after - count_before;
    // Drained: every backlog record handed to the sink, and nothing read is still unacknowledged.
    let produced_before = running.relay_status.records_produced();
    let drain = Instant::now();
    relay.start();
    while running.relay_status.records_produced() < produced_before + backlog_records as u64
        || running.relay_status.lag_seconds() > 0.0
    {
        if drain.elapsed() > Duration::from_secs(600) {
            bail!(
                "the relay did not drain the backlog: {:?}",
                running.relay_status.health()
            );
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let drain_secs = drain.elapsed().as_secs_f64();
    for s in sockets {
        s.abort();
    }
    pool.close().await;
    Ok(Figures {
        mode,
        rate_asked: args.rate,
        achieved_rate,
        send_errors: errors.load(Ordering::Relaxed),
        expected,
        received,
        p50_ms: histogram.value_at_quantile(0.50) as f64 / 1000.0,
        p99_ms: histogram.value_at_quantile(0.99) as f64 / 1000.0,
        max_ms: histogram.max() as f64 / 1000.0,
        backlog_records,
        drain_secs,
        records_per_sec: backlog_records as f64 / drain_secs.max(1e-9),
        load_average: load_average(),
    })
}

fn markdown(f: &Figures, args: &Args) -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    format!(
        "### Live pushes ({mode}, {date})\n\n\
         `scripts/bench-push{flags}` on this machine ({cores} cores; Postgres, Redis{broker}, the server and the \
         clients on one host).\n\n\
         | figure | value |\n|---|---|\n\
         | send rate asked / achieved | {rate:.0}/s / {achieved:.0}/s ({pairs} senders → {pairs} connected receivers, {secs:.0} s) |\n\
         | failed sends | {errors} |\n\
         | pushes received / expected | {received} / {expected} |\n\
         | commit-to-push latency p50 | {p50:.2} ms |\n\
         | commit-to-push latency p99 | {p99:.2} ms |\n\
         | commit-to-push latency max | {max:.2} ms |\n\
         | relay throughput (draining a backlog of {backlog} records) | {tput:.0} records/s ({drain:.2} s) |\n\
         | machine load average during the run | {load} |\n\n\
         Latency runs from the event's `committed_at` (taken inside the committing transaction) to the frame's \
         arrival at the client's socket. Throughput is the relay alone: reading the slot, decoding, handing to the \
         sink and confirming, from a cold start of the relay (connecting to the slot included).\n",
        mode = f.mode,
        date = chrono::Utc::now().format("%Y-%m-%d"),
        flags = if args.kafka_brokers.is_some() { " --kafka" } else { "" },
        broker = if args.kafka_brokers.is_some() { ", tansu" } else { "" },
        rate = args.rate,
        achieved = f.achieved_rate,
        pairs = args.pairs,
        secs = args.duration_secs,
        errors = f.send_errors,
        received = f.received,
        expected = f.expected,
        p50 = f.p50_ms,
        p99 = f.p99_ms,
        max = f.max_ms,
        backlog = f.backlog_records,
        tput = f.records_per_sec,
        drain = f.drain_secs,
        load = f.load_average,
    )
}

/// Replaces this mode's subsection of the push region, keeping the other mode's.
fn write_markdown(path: &PathBuf, section: &str, mode: &str) -> anyhow::Result<()> {
    const BEGIN: &str = "<!-- push:begin -->";
    const END: &str = "<!-- push:end -->";
    let mut doc = std::fs::read_to_string(path).unwrap_or_else(|_| "# Performance\n".to_string());
    if !doc.contains(BEGIN) || !doc.contains(END) {
        doc.push_str(&format!("\n## Live pushes\n\n{BEGIN}\n{END}\n"));
    }
    let (head, rest) = doc.split_once(BEGIN).ok_or_else(|| anyhow!("no {BEGIN}"))?;
    let (region, tail) = rest.split_once(END).ok_or_else(|| anyhow!("no {END}"))?;
    let own = format!("### Live pushes ({mode},");
    let mut parts: Vec<String> = region
        .split("### Live pushes (")
        .filter(|p| !p.trim().is_empty())
        .map(|p| format!("### Live pushes ({}", p.trim()))
        .filter(|p| !p.starts_with(&own))
        .collect();
    parts.push(section.trim().to_string());
    parts.sort();
    std::fs::write(
        path,
        format!("{head}{BEGIN}\n{}\n{END}{tail}", parts.join("\n\n")),
    )?;
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok(f) => {
            let md = markdown(&f, &args);
            println!("{md}");
            let out = args.out.clone().unwrap_or_else(|| {
                PathBuf::from(format!("bench-results/push-{}.json", f.mode.to_lowercase()))
            });
            let json = serde_json::to_string_pretty(&f).map_err(anyhow::Error::from);
            let written = out
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .map_err(anyhow::Error::from)
                .and_then(|_| json)
                .and_then(|j| std::fs::write(&out, j).map_err(anyhow::Error::from));
            if let Err(e) = written {
                eprintln!("writing {}: {e:#}", out.display());
                return std::process::ExitCode::from(1);
            }
            if let Some(path) = &args.markdown {
                if let Err(e) = write_markdown(path, &md, f.mode) {
                    eprintln!("writing {}: {e:#}", path.display());
                    return std::process::ExitCode::from(1);
                }
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ptslog-bench-push: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}
