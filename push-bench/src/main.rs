//! `ptslog-bench-push`: live-push figures (issues 4 and 16), run through `scripts/bench-push`.
//!
//! 1. Commit-to-push latency over a ramp of send rates: `accounts` accounts with `devices` online
//!    WebSocket devices each (`/v1/updates`); each account's first device sends to the next account
//!    (open loop, paced per sender), so every send is pushed to the recipient's devices and to the
//!    sender's other devices. Each step runs at a fixed rate: a warm-up, then a measured window;
//!    every push's arrival time is matched with its event's `committed_at` in the log (same host,
//!    same clock). The ramp goes up until the achieved rate falls short of the asked one (the
//!    maximum), then one more step runs at 80 % of that maximum: the figure the target is judged on.
//!    Per step: p50/p90/p99/max commit-to-push, pushes received/expected, the relay's largest lag.
//! 2. Relay throughput: with the relay stopped, a backlog of sends piles up in the slot; then the
//!    relay starts and the time until it has confirmed the whole backlog gives records/s.
//!
//! Both in the mode the flags choose: no broker (the local sink) or Kafka (`--kafka-brokers`).
//! The server runs on a runtime of its own (as many workers as a `ptslog serve` process has), so
//! the clients' work does not queue on the server's workers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use clap::Parser;
use futures::StreamExt;
use hdrhistogram::Histogram;
use infrastructure::histogram::{quantile_bound, STAGE_BUCKETS};
use ptslog_push_bench::{admin, database_url, load_average, login, rpc, Device};
use ptslog_server::Config;
use rand::Rng;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;

#[derive(Parser, Debug)]
#[command(
    name = "ptslog-bench-push",
    about = "Commit-to-push latency over a ramp of send rates, and relay throughput, of ptslog"
)]
struct Args {
    /// The send rates of the ramp (sends per second), in order; the ramp stops at the first step
    /// whose achieved rate falls short of the asked one.
    #[arg(long, value_delimiter = ',', default_values_t = [50.0, 100.0, 200.0, 300.0, 400.0, 500.0, 700.0, 1000.0, 1400.0, 2000.0])]
    rates: Vec<f64>,
    /// Seconds of each step before its measured window (pushes of the warm-up are not counted).
    #[arg(long, default_value_t = 2.0)]
    warmup_secs: f64,
    /// Seconds of each step's measured window.
    #[arg(long, default_value_t = 8.0)]
    step_secs: f64,
    /// A step whose achieved rate is below this share of the asked rate is saturated.
    #[arg(long, default_value_t = 0.95)]
    saturated_below: f64,
    /// Accounts; each one's first device sends to the next account.
    #[arg(long, default_value_t = 40)]
    accounts: usize,
    /// Online devices (WebSockets) per account.
    #[arg(long, default_value_t = 3)]
    devices: usize,
    /// Sends piled up for the throughput phase (each is two log records); 0 skips it.
    #[arg(long, default_value_t = 10_000)]
    backlog: usize,
    /// Use Kafka (the relay produces, the server consumes) instead of the local sink.
    #[arg(long)]
    kafka_brokers: Option<String>,
    /// Run the relay and the consumer on a thread of their own (`PTSLOG_FEED_THREAD`, the
    /// default); `--feed-thread false` runs them on the request runtime, as before issue 16.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    feed_thread: bool,
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

/// The commit-to-push target of issue 16, judged at 80 % of the maximum send rate.
const P99_TARGET_MS: f64 = 50.0;
/// The share of the maximum send rate the target is judged at.
const TARGET_SHARE: f64 = 0.8;

fn send_params(peer: &Value, text: &str) -> Value {
    json!({"peer": peer, "message": text, "random_id": rand::thread_rng().gen_range(1..i64::MAX)})
}

fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// (user, pts) → the arrival time (unix µs) of that update at each device that got it.
type Arrivals = Arc<Mutex<HashMap<(i64, i64), Vec<i64>>>>;

fn arrivals_len(arrivals: &Arrivals) -> usize {
    arrivals.lock().unwrap_or_else(|e| e.into_inner()).len()
}

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
                                .entry((user, pts))
                                .or_default()
                                .push(at);
                        }
                    }
                }
            }
        }
    }))
}

/// One step of the ramp.
#[derive(Debug, Clone, serde::Serialize)]
struct Step {
    rate_asked: f64,
    achieved_rate: f64,
    send_errors: usize,
    /// The sends' own latency (request to answer), p99.
    send_p99_ms: f64,
    /// Pushes the measured window's commits owe: each record to every device of its account but
    /// the one that caused it.
    expected: usize,
    received: usize,
    /// Pushes a device got more than once (must be 0).
    doubled: usize,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    /// The largest `lag_seconds` of the relay sampled during the step.
    relay_lag_max_s: f64,
    /// Records the relay handed to the sink per second during the measured window.
    relay_records_per_s: f64,
    /// The largest amount of WAL flushed but not yet sent by the relay's walsender
    /// (`pg_current_wal_flush_lsn() - sent_lsn` of `pg_stat_replication`), sampled during the window.
    wal_unsent_max_bytes: i64,
    /// The largest amount of WAL inserted but not yet flushed (the walsender cannot decode it yet).
    wal_unflushed_max_bytes: i64,
    /// CPU the relay's walsender used during the window, in % of one core (from /proc).
    walsender_cpu_pct: f64,
    /// CPU the server's runtime threads used during the window, in % of one core.
    server_cpu_pct: f64,
    /// Where the time of a push goes, from the server's own histograms over the window (p50,
    /// p99; bucket upper bounds in ms): commit to the relay reading it off the slot, the sink's
    /// acknowledgement (Kafka's producer and broker), commit to the gateway holding the record.
    stages: Stages,
    /// Measured at 80 % of the maximum (the step the target is judged on).
    at_target_share: bool,
    /// Unix µs bounds of the measured window, to assign commits to the step.
    #[serde(skip)]
    window: (i64, i64),
}

#[derive(Debug, serde::Serialize)]
struct Figures {
    mode: &'static str,
    accounts: usize,
    devices_per_account: usize,
    /// The highest achieved send rate of the ramp.
    max_rate: f64,
    /// Whether a step fell short of its rate; if none did, the maximum is at least `max_rate`.
    ramp_saturated: bool,
    steps: Vec<Step>,
    // The step at 80 % of the maximum, flattened (what `ptslog-bench` reads).
    rate_asked: f64,
    achieved_rate: f64,
    send_errors: usize,
    expected: usize,
    received: usize,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    target_met: bool,
    backlog_records: i64,
    drain_secs: f64,
    records_per_sec: f64,
    load_average_before: String,
    load_average: String,
}

/// p50 and p99 in ms of each stage of a push, over one window.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
struct Stages {
    read: (f64, f64),
    ack: (f64, f64),
    receive: (f64, f64),
}

/// The counts of the stage histograms at one moment.
struct StageCounts([Vec<u64>; 3]);

impl StageCounts {
    fn now(running: &ptslog_server::Running) -> Self {
        Self([
            running.relay_status.commit_to_read.counts(),
            running.relay_status.sink_ack.counts(),
            running.gateway.metrics.receive_latency.counts(),
        ])
    }

    /// The stages of what was observed between `start` and `self`.
    fn since(&self, start: &Self) -> Stages {
        let q = |i: usize| {
            let delta: Vec<u64> = self.0[i]
                .iter()
                .zip(&start.0[i])
                .map(|(a, b)| a.saturating_sub(*b))
                .collect();
            let at = |q| quantile_bound(STAGE_BUCKETS, &delta, q).map_or(0.0, |s| s * 1000.0);
            (at(0.5), at(0.99))
        };
        Stages {
            read: q(0),
            ack: q(1),
            receive: q(2),
        }
    }
}

/// The server, on a runtime of its own.
struct Server {
    runtime: tokio::runtime::Runtime,
    running: Option<ptslog_server::Running>,
}

fn run(args: &Args) -> anyhow::Result<Figures> {
    let load_before = load_average();
    let stamp = format!(
        "{}_{:04x}",
        chrono::Utc::now().format("%Y%m%d_%H%M%S"),
        rand::thread_rng().gen::<u16>()
    );
    let db = format!("ptslog_benchpush_{stamp}");
    let clients = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("bench-client")
        .build()?;
    clients.block_on(admin(&args.admin_url, &format!("CREATE DATABASE {db}")))?;
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
    vars.insert(
        "PTSLOG_FEED_THREAD".to_string(),
        args.feed_thread.to_string(),
    );
    if let Some(brokers) = &args.kafka_brokers {
        vars.insert("KAFKA_BROKERS".to_string(), brokers.clone());
        // A topic of its own: a broker's cost may grow with what a topic holds (tansu's memory
        // storage does), and one run must not slow the next.
        vars.insert(
            "PTSLOG_KAFKA_TOPIC".to_string(),
            format!("benchpush.{stamp}"),
        );
        // librdkafka properties and the partition count to try, taken as `ptslog serve` takes them.
        vars.extend(
            std::env::vars().filter(|(k, _)| {
                k.starts_with("PTSLOG_KAFKA_OPT_") || k == "PTSLOG_KAFKA_PARTITIONS"
            }),
        );
    }
    let config = Config::from_vars(&vars)?;
    // As `#[tokio::main]` of `ptslog serve` builds it: one worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("server")
        .build()?;
    let running = runtime.block_on(async {
        let mut running = ptslog_server::start(&config).await?;
        running.start_feed(&config)?;
        anyhow::Ok(running)
    })?;
    let mut server = Server {
        runtime,
        running: Some(running),
    };
    let result = clients.block_on(measure(args, &server, &db));
    if let Some(running) = server.running.take() {
        server.runtime.block_on(running.shutdown());
    }
    drop(server);
    // The slot goes with the database once its replication session has ended.
    clients.block_on(async {
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
    });
    result.map(|mut f| {
        f.load_average_before = load_before;
        f
    })
}

/// One account: its devices (the first one sends) and the peer it sends to.
struct Account {
    devices: Vec<Device>,
    peer: Value,
}

struct Bench<'a> {
    args: &'a Args,
    pool: sqlx::PgPool,
    base: String,
    http: reqwest::Client,
    accounts: Arc<Vec<Account>>,
    relay: &'a ptslog_server::Running,
}

impl Bench<'_> {
    /// Sends at `rate` for the warm-up and the measured window: each account's sender paces itself
    /// at `rate / accounts` (open loop, at most one send in flight per sender, so a saturated
    /// server shows as an achieved rate below the asked one rather than as a growing queue).
    async fn step(&self, rate: f64) -> Step {
        let senders = self.accounts.len();
        let interval = Duration::from_secs_f64(senders as f64 / rate.max(0.001));
        let warmup = Duration::from_secs_f64(self.args.warmup_secs);
        let measured = Duration::from_secs_f64(self.args.step_secs);
        let started = Instant::now();
        let window_start = started + warmup;
        let window_end = window_start + measured;
        let now_unix = now_micros();
        let window = (
            now_unix + warmup.as_micros() as i64,
            now_unix + (warmup + measured).as_micros() as i64,
        );
        let errors = Arc::new(AtomicUsize::new(0));
        let completed = Arc::new(AtomicUsize::new(0));
        let send_latency = Arc::new(Mutex::new(
            Histogram::<u64>::new(3).expect("3 significant figures are valid"),
        ));
        let mut tasks = Vec::new();
        for i in 0..senders {
            let (http, base, accounts) =
                (self.http.clone(), self.base.clone(), self.accounts.clone());
            let (errors, completed, send_latency) =
                (errors.clone(), completed.clone(), send_latency.clone());
            // Senders are spread over the interval, so the sends are evenly spaced.
            let offset = interval.mul_f64(i as f64 / senders as f64);
            tasks.push(tokio::spawn(async move {
                let account = &accounts[i];
                let mut k = 0u32;
                loop {
                    let due = started + offset + interval * k;
                    if due >= window_end {
                        break;
                    }
                    tokio::time::sleep_until(due.into()).await;
                    let sent = Instant::now();
                    let ok = rpc(
                        &http,
                        &base,
                        &account.devices[0].token,
                        "messages.sendMessage",
                        send_params(&account.peer, &format!("bench {i} {k}")),
                    )
                    .await
                    .is_ok();
                    let done = Instant::now();
                    if !ok {
                        errors.fetch_add(1, Ordering::Relaxed);
                    } else if done >= window_start && done < window_end {
                        completed.fetch_add(1, Ordering::Relaxed);
                        let _ = send_latency
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .record((done - sent).as_micros() as u64);
                    }
                    k += 1;
                }
            }));
        }
        // The relay's lag and throughput, sampled while the step runs.
        let status = self.relay.relay_status.clone();
        let mut lag_max: f64 = 0.0;
        let mut wal_unsent_max: i64 = 0;
        let mut wal_unflushed_max: i64 = 0;
        let mut produced_at_start = None;
        let mut stages_at_start = None;
        let (mut walsender_cpu, mut server_cpu) = (None, None);
        while Instant::now() < window_end {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let now = Instant::now();
            if now >= window_start {
                lag_max = lag_max.max(status.lag_seconds());
                let walsender = walsender(&self.pool).await;
                if let Some((pid, unsent, unflushed)) = walsender {
                    wal_unsent_max = wal_unsent_max.max(unsent);
                    wal_unflushed_max = wal_unflushed_max.max(unflushed);
                    walsender_cpu
                        .get_or_insert((now, process_ticks(pid), None))
                        .2 = Some((now, process_ticks(pid)));
                }
                server_cpu.get_or_insert((now, server_ticks(), None)).2 =
                    Some((now, server_ticks()));
                produced_at_start.get_or_insert((now, status.records_produced()));
                stages_at_start.get_or_insert_with(|| StageCounts::now(self.relay));
            }
        }
        let stages = stages_at_start
            .map(|start| StageCounts::now(self.relay).since(&start))
            .unwrap_or_default();
        // The last sample may fall just short of the window's end: take the end after the loop.
        let produced_at_end = Some((Instant::now(), status.records_produced()));
        for t in tasks {
            let _ = t.await;
        }
        let records_per_s = match (produced_at_start, produced_at_end) {
            (Some((t0, n0)), Some((t1, n1))) if t1 > t0 => {
                (n1 - n0) as f64 / (t1 - t0).as_secs_f64()
            }
            _ => 0.0,
        };
        let send_p99_ms = send_latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .value_at_quantile(0.99) as f64
            / 1000.0;
        Step {
            rate_asked: rate,
            send_p99_ms,
            achieved_rate: completed.load(Ordering::Relaxed) as f64 / measured.as_secs_f64(),
            send_errors: errors.load(Ordering::Relaxed),
            expected: 0,
            received: 0,
            doubled: 0,
            p50_ms: 0.0,
            p90_ms: 0.0,
            p99_ms: 0.0,
            max_ms: 0.0,
            relay_lag_max_s: lag_max,
            relay_records_per_s: records_per_s,
            wal_unsent_max_bytes: wal_unsent_max,
            wal_unflushed_max_bytes: wal_unflushed_max,
            walsender_cpu_pct: cpu_pct(walsender_cpu),
            server_cpu_pct: cpu_pct(server_cpu),
            stages,
            at_target_share: false,
            window,
        }
    }

    /// Waits until the relay has nothing unconfirmed and the pushes stopped arriving (at most 10 s).
    async fn settle(&self, arrivals: &Arrivals) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut last = arrivals_len(arrivals);
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = arrivals_len(arrivals);
            if (now == last && self.relay.relay_status.lag_seconds() == 0.0)
                || Instant::now() > deadline
            {
                return;
            }
            last = now;
        }
    }
}

/// The relay's walsender (this process's replication session): its pid, the WAL flushed but not
/// yet sent to the relay, and the WAL written but not yet flushed, in bytes.
async fn walsender(pool: &sqlx::PgPool) -> Option<(i32, i64, i64)> {
    sqlx::query_as(
        "SELECT pid, greatest(pg_current_wal_flush_lsn() - sent_lsn, 0)::bigint, \
         (pg_current_wal_insert_lsn() - pg_current_wal_flush_lsn())::bigint FROM pg_stat_replication \
         WHERE application_name = $1",
    )
    .bind(format!("ptslog-relay-{}", std::process::id()))
    .fetch_optional(pool)
    .await
    .ok()
    .flatten()
}

/// utime + stime of a process or thread (clock ticks), from its /proc stat file.
fn stat_ticks(path: &str) -> Option<(String, u64)> {
    let stat = std::fs::read_to_string(path).ok()?;
    // The name is in parentheses and may hold spaces; the fields after it are numbers.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat[open + 1..close].to_string();
    let fields: Vec<&str> = stat[close + 2..].split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some((name, utime + stime))
}

fn process_ticks(pid: i32) -> u64 {
    stat_ticks(&format!("/proc/{pid}/stat")).map_or(0, |(_, t)| t)
}

/// CPU ticks of this process's server threads: its runtime ("server") and the feed's thread.
fn server_ticks() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| stat_ticks(&format!("{}/stat", t.path().display())))
        .filter(|(name, _)| name.starts_with("server") || name.starts_with("ptslog-feed"))
        .map(|(_, ticks)| ticks)
        .sum()
}

/// The first CPU sample of a window (when, ticks) and the latest one.
type CpuSamples = Option<(Instant, u64, Option<(Instant, u64)>)>;

/// Ticks used between two samples, in % of one core (Linux's USER_HZ is 100).
fn cpu_pct(samples: CpuSamples) -> f64 {
    match samples {
        Some((t0, n0, Some((t1, n1)))) if t1 > t0 => {
            n1.saturating_sub(n0) as f64 / (t1 - t0).as_secs_f64()
        }
        _ => 0.0,
    }
}

/// Fills in each step's deliveries and latencies from the log: every record committed in a step's
/// window is owed to each device of its account but the one that caused it.
async fn score(
    pool: &sqlx::PgPool,
    users: &[i64],
    devices: usize,
    arrivals: &Arrivals,
    steps: &mut [Step],
) -> anyhow::Result<()> {
    let Some(from) = steps.iter().map(|s| s.window.0).min() else {
        return Ok(());
    };
    let rows: Vec<(i64, i32, i64, bool)> = sqlx::query_as(
        "SELECT e.user_id, e.pts, (extract(epoch FROM e.committed_at) * 1000000)::bigint, \
         EXISTS (SELECT 1 FROM authorizations a WHERE a.user_id = e.user_id AND a.auth_key_id = e.auth_key_id) \
         FROM user_update_events e WHERE e.user_id = ANY($1) AND e.committed_at >= to_timestamp($2::float8 / 1000000)",
    )
    .bind(users)
    .bind(from as f64)
    .fetch_all(pool)
    .await?;
    let arrivals = arrivals.lock().unwrap_or_else(|e| e.into_inner());
    for step in steps.iter_mut() {
        let mut histogram = Histogram::<u64>::new(3)?;
        let (mut expected, mut received, mut doubled) = (0, 0, 0);
        for (user, pts, committed, own) in &rows {
            if *committed < step.window.0 || *committed >= step.window.1 {
                continue;
            }
            let owed = devices - usize::from(*own);
            expected += owed;
            let got = arrivals
                .get(&(*user, *pts as i64))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            received += got.len().min(owed);
            doubled += got.len().saturating_sub(owed);
            for at in got {
                histogram.record(u64::try_from(at - committed).unwrap_or(0))?;
            }
        }
        let ms = |q: f64| histogram.value_at_quantile(q) as f64 / 1000.0;
        step.expected = expected;
        step.received = received;
        step.doubled = doubled;
        step.p50_ms = ms(0.50);
        step.p90_ms = ms(0.90);
        step.p99_ms = ms(0.99);
        step.max_ms = histogram.max() as f64 / 1000.0;
    }
    Ok(())
}

async fn measure(args: &Args, server: &Server, db: &str) -> anyhow::Result<Figures> {
    let running = server
        .running
        .as_ref()
        .ok_or_else(|| anyhow!("no server"))?;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&database_url(&args.admin_url, db))
        .await?;
    let arrivals: Arrivals = Arc::default();
    let n = args.accounts.max(2);
    let phone = |i: usize| format!("+1777{:07}", i);
    let mut signed_in: Vec<Vec<Device>> = Vec::new();
    let mut sockets = Vec::new();
    for i in 0..n {
        let mut devices = Vec::new();
        for _ in 0..args.devices.max(1) {
            let d = login(&http, &base, &phone(i)).await?;
            sockets.push(connect(&base, &d, arrivals.clone()).await?);
            devices.push(d);
        }
        signed_in.push(devices);
    }
    let users: Vec<i64> = signed_in.iter().map(|d| d[0].user_id).collect();
    let mut accounts = Vec::new();
    for (i, devices) in signed_in.into_iter().enumerate() {
        let next = (i + 1) % n;
        let found = rpc(
            &http,
            &base,
            &devices[0].token,
            "contacts.resolvePhone",
            json!({"phone": phone(next)}),
        )
        .await?;
        let peer = json!({"_": "inputPeerUser", "user_id": users[next], "access_hash": found["users"][0]["access_hash"]});
        accounts.push(Account { devices, peer });
    }
    // Ready when a probe arrives live; then one round of sends warms every account's path
    // (caches of users and contact links) before the ramp.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let before = arrivals_len(&arrivals);
        rpc(
            &http,
            &base,
            &accounts[0].devices[0].token,
            "messages.sendMessage",
            send_params(&accounts[0].peer, "probe"),
        )
        .await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        if arrivals_len(&arrivals) > before {
            break;
        }
        if Instant::now() > deadline {
            bail!("pushes do not flow: {:?}", running.relay_status.health());
        }
    }
    for a in &accounts {
        rpc(
            &http,
            &base,
            &a.devices[0].token,
            "messages.sendMessage",
            send_params(&a.peer, "warm-up"),
        )
        .await?;
    }
    let mode = if args.kafka_brokers.is_some() {
        "Kafka"
    } else {
        "in-process"
    };

    // Phase 1: the ramp, then the step at 80 % of its maximum.
    let bench = Bench {
        args,
        pool: pool.clone(),
        base: base.clone(),
        http: http.clone(),
        accounts: Arc::new(accounts),
        relay: running,
    };
    bench.settle(&arrivals).await;
    let mut steps = Vec::new();
    let mut ramp_saturated = false;
    for &rate in &args.rates {
        let step = bench.step(rate).await;
        eprintln!(
            "step {:.0}/s: achieved {:.0}/s, send p99 {:.1} ms, relay lag max {:.2} s, WAL unflushed {} B unsent {} B, walsender {:.0} %, server {:.0} %, stages p50/p99 ms: read {:?} ack {:?} at gateway {:?}",
            rate, step.achieved_rate, step.send_p99_ms, step.relay_lag_max_s, step.wal_unflushed_max_bytes, step.wal_unsent_max_bytes, step.walsender_cpu_pct, step.server_cpu_pct,
            step.stages.read, step.stages.ack, step.stages.receive
        );
        ramp_saturated = step.achieved_rate < rate * args.saturated_below;
        steps.push(step);
        bench.settle(&arrivals).await;
        if ramp_saturated {
            break;
        }
    }
    let max_rate = steps.iter().map(|s| s.achieved_rate).fold(0.0, f64::max);
    let mut target = bench.step((max_rate * TARGET_SHARE).round()).await;
    target.at_target_share = true;
    eprintln!(
        "step at {:.0} % of max {:.0}/s: achieved {:.0}/s, relay lag max {:.2} s",
        TARGET_SHARE * 100.0,
        max_rate,
        target.achieved_rate,
        target.relay_lag_max_s
    );
    steps.push(target);
    bench.settle(&arrivals).await;
    score(&pool, &users, args.devices.max(1), &arrivals, &mut steps).await?;
    let load_after_ramp = load_average();

    // Phase 2: relay throughput, draining a backlog.
    let (backlog_records, drain_secs) = if args.backlog == 0 {
        (0, 0.0)
    } else {
        backlog(&bench, &pool, server).await?
    };
    for s in sockets {
        s.abort();
    }
    pool.close().await;
    let t = steps.last().cloned().ok_or_else(|| anyhow!("no steps"))?;
    Ok(Figures {
        mode,
        accounts: n,
        devices_per_account: args.devices.max(1),
        max_rate,
        ramp_saturated,
        rate_asked: t.rate_asked,
        achieved_rate: t.achieved_rate,
        send_errors: t.send_errors,
        expected: t.expected,
        received: t.received,
        p50_ms: t.p50_ms,
        p90_ms: t.p90_ms,
        p99_ms: t.p99_ms,
        max_ms: t.max_ms,
        target_met: t.p99_ms < P99_TARGET_MS && t.received == t.expected && t.doubled == 0,
        steps,
        backlog_records,
        drain_secs,
        records_per_sec: backlog_records as f64 / drain_secs.max(1e-9),
        load_average_before: String::new(),
        load_average: load_after_ramp,
    })
}

/// With the relay stopped, `backlog` sends pile up; answers the records written and the seconds
/// the relay took to hand them all to the sink once started.
async fn backlog(
    bench: &Bench<'_>,
    pool: &sqlx::PgPool,
    server: &Server,
) -> anyhow::Result<(i64, f64)> {
    let running = bench.relay;
    let relay = running
        .feed
        .relay
        .clone()
        .ok_or_else(|| anyhow!("no relay in this process"))?;
    {
        let relay = relay.clone();
        server
            .runtime
            .spawn(async move { relay.stop().await })
            .await?;
    }
    let count_before: i64 = sqlx::query_scalar("SELECT count(*) FROM user_update_events")
        .fetch_one(pool)
        .await?;
    let backlog_start = Instant::now();
    let concurrency = 32;
    let per_task = bench.args.backlog.div_ceil(concurrency);
    let mut tasks = Vec::new();
    for t in 0..concurrency {
        let (http, base, accounts) = (
            bench.http.clone(),
            bench.base.clone(),
            bench.accounts.clone(),
        );
        tasks.push(tokio::spawn(async move {
            for i in 0..per_task {
                let a = &accounts[(t * per_task + i) % accounts.len()];
                let _ = rpc(
                    &http,
                    &base,
                    &a.devices[0].token,
                    "messages.sendMessage",
                    send_params(&a.peer, "backlog"),
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
        .fetch_one(pool)
        .await?;
    let backlog_records = count_after - count_before;
    // Drained: every backlog record handed to the sink, and nothing read is still unacknowledged.
    let produced_before = running.relay_status.records_produced();
    let drain = Instant::now();
    {
        // The relay task runs on the server's runtime.
        let _entered = server.runtime.enter();
        relay.start();
    }
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
    Ok((backlog_records, drain.elapsed().as_secs_f64()))
}

fn markdown(f: &Figures, args: &Args) -> String {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let mut rows = String::new();
    for s in &f.steps {
        rows.push_str(&format!(
            "| {asked:.0}{mark} | {achieved:.0} | {send99:.1} | {received} / {expected}{doubled} | {p50:.2} | {p90:.2} | {p99:.2} | {max:.2} | {lag:.2} | {rps:.0} | {unflushed:.0} | {unsent:.0} | {ws:.0} % | {srv:.0} % | {read} | {ack} | {recv} |\n",
            asked = s.rate_asked,
            mark = if s.at_target_share { " (80 % of max)" } else { "" },
            achieved = s.achieved_rate,
            send99 = s.send_p99_ms,
            received = s.received,
            expected = s.expected,
            doubled = if s.doubled > 0 { format!(", {} doubled", s.doubled) } else { String::new() },
            p50 = s.p50_ms,
            p90 = s.p90_ms,
            p99 = s.p99_ms,
            max = s.max_ms,
            lag = s.relay_lag_max_s,
            rps = s.relay_records_per_s,
            unsent = s.wal_unsent_max_bytes as f64 / 1024.0,
            unflushed = s.wal_unflushed_max_bytes as f64 / 1024.0,
            ws = s.walsender_cpu_pct,
            srv = s.server_cpu_pct,
            read = pair(s.stages.read),
            ack = pair(s.stages.ack),
            recv = pair(s.stages.receive),
        ));
    }
    let backlog = if f.backlog_records > 0 {
        format!(
            "Relay throughput, draining a backlog of {} records from a cold start of the relay (connecting \
             to the slot included): {:.0} records/s ({:.2} s).\n\n",
            f.backlog_records, f.records_per_sec, f.drain_secs
        )
    } else {
        String::new()
    };
    format!(
        "### Live pushes ({mode}, {date})\n\n\
         `scripts/bench-push{flags}{feed}` on this machine ({cores} cores; Postgres, Redis{broker}, the server and the \
         clients on one host; load average {before} before the run, {after} after the ramp). {accounts} accounts × \
         {devices} online WebSocket devices; each account's first device sends to the next account, so each send \
         is pushed to the recipient's {devices} devices and the sender's {others} others. Each step: {warm:.0} s \
         warm-up, {secs:.0} s measured.\n\n\
         | sends/s asked | achieved | send p99 ms | pushes received / expected | p50 ms | p90 ms | p99 ms | max ms | relay lag max s | relay records/s | WAL unflushed max KiB | WAL unsent max KiB | walsender CPU | server CPU | commit→relay read p50 / p99 ms | sink ack p50 / p99 ms | commit→gateway p50 / p99 ms |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n\
         {rows}\n\
         Maximum send rate {maxr:.0}/s{top}; at 80 % of it ({target:.0}/s asked) commit-to-push p99 is {p99:.2} ms: \
         {verdict} (target < {goal:.0} ms, every push delivered once).\n\n\
         {backlog}\
         Latency runs from the event's `committed_at` (taken inside the committing transaction) to the frame's \
         arrival at the client's socket. WAL unflushed: inserted but not yet on disk (no walsender can decode it \
         yet); WAL unsent: flushed but not yet sent to the relay by its walsender (`pg_stat_replication.sent_lsn`). CPU in % of one core, from /proc: the walsender process and the \
         server's threads (its runtime and the feed's thread; the clients run on threads of their own). The last three \
         columns are the server's own stage histograms over the window (`ptslog_relay_commit_to_read_seconds`, \
         `ptslog_relay_sink_ack_seconds`, `ptslog_push_receive_latency_seconds`), as the upper bounds of the buckets \
         holding p50 and p99: commit to the relay reading the transaction off the slot; the relay handing it to the \
         sink to the sink's acknowledgement; commit to the gateway holding the record (from Kafka or the in-process feed). \
         What the last leaves of the push's p99 is rendering, the hub and the sockets.\n",
        mode = f.mode,
        date = chrono::Utc::now().format("%Y-%m-%d"),
        flags = if args.kafka_brokers.is_some() { " --kafka" } else { "" },
        feed = if args.feed_thread { "" } else { " --feed-thread false" },
        broker = if args.kafka_brokers.is_some() { ", tansu" } else { "" },
        before = f.load_average_before,
        after = f.load_average,
        accounts = f.accounts,
        devices = f.devices_per_account,
        others = f.devices_per_account.saturating_sub(1),
        warm = args.warmup_secs,
        secs = args.step_secs,
        maxr = f.max_rate,
        top = if f.ramp_saturated {
            ""
        } else {
            " or more (no step of the ramp fell short: the top step's rate)"
        },
        target = f.rate_asked,
        p99 = f.p99_ms,
        verdict = if f.target_met { "**met**" } else { "**not met**" },
        goal = P99_TARGET_MS,
    )
}

/// A stage's p50 / p99 as a table cell.
fn pair((p50, p99): (f64, f64)) -> String {
    format!("{p50} / {p99}")
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

/// The serving allocator (server/src/allocator.rs).
#[global_allocator]
static ALLOCATOR: ptslog_server::allocator::Serving = ptslog_server::allocator::Serving;

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    match run(&args) {
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
                .and(json)
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
