//! `ptslog-bench`: see docs/performance.md. Usually run through `scripts/bench`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ptslog_bench::{run, Options};

#[derive(Parser, Debug)]
#[command(
    name = "ptslog-bench",
    about = "Load benchmark of ptslog against a same-run pgbench baseline"
)]
struct Args {
    /// Accounts (default 1000; 40 with --quick).
    #[arg(long)]
    users: Option<usize>,
    /// Closed-loop concurrencies, comma-separated (default 1,8,32,128; 1,4 with --quick).
    #[arg(long, value_delimiter = ',')]
    concurrency: Option<Vec<usize>>,
    /// Seconds per measured phase (default 5; 1 with --quick).
    #[arg(long)]
    duration_secs: Option<f64>,
    /// Log sizes (events) of the scale phases, comma-separated (default 100000,1000000; the issue's
    /// 5M: --scale 100000,5000000, about 10 more minutes on 2 cores).
    #[arg(long, value_delimiter = ',')]
    scale: Option<Vec<u64>>,
    /// A seconds-long smoke run with small N.
    #[arg(long)]
    quick: bool,
    /// Where to write the JSON report (default bench-results/latest.json; quick.json with --quick).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A markdown document whose <!-- bench:begin --> … <!-- bench:end --> region gets the figures.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Keep the benchmark databases (ptslog_bench_<ts>, ptslog_bench_<ts>_scale).
    #[arg(long)]
    keep_db: bool,
    /// Print EXPLAIN (ANALYZE, BUFFERS) of every hot-path statement (on the largest log).
    #[arg(long)]
    explain: bool,
    /// Also run projections verify on the main database at the end (always with --quick).
    #[arg(long)]
    verify: bool,
    /// The Postgres server to create the databases on (its maintenance database).
    #[arg(
        long,
        env = "PTSLOG_TEST_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    admin_url: String,
    /// Redis (unused while the send limit is off, but the server wants one).
    #[arg(
        long,
        env = "PTSLOG_TEST_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    redis_url: String,
    /// Do not run: re-render the markdown of a saved JSON report into --markdown.
    #[arg(long)]
    render: Option<PathBuf>,
    /// A folder with the JSON figures of ptslog-bench-push (push-in-process.json, push-kafka.json)
    /// and ptslog-bench-memory (memory.json) to include in the report; scripts/bench passes it.
    #[arg(long)]
    live_results: Option<PathBuf>,
    /// The server's Postgres pool size (PTSLOG_DB_MAX_CONNECTIONS; default 32, the server's default).
    #[arg(long)]
    db_max_connections: Option<u32>,
    /// Leave out the media phase (uploads, downloads, memory per download, photos).
    #[arg(long)]
    no_media: bool,
    /// Run the media phase alone (JSON to --out, default bench-results/media.json; figures into
    /// the <!-- media:begin --> region of --markdown).
    #[arg(long, conflicts_with = "no_media")]
    media_only: bool,
    /// The send rate (sends/s) of the open-loop phases instead of half the measured maximum:
    /// to compare two builds under the same load.
    #[arg(long)]
    open_loop_rate: Option<f64>,
}

/// The serving allocator (server/src/allocator.rs).
#[global_allocator]
static ALLOCATOR: ptslog_server::allocator::Serving = ptslog_server::allocator::Serving;

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(json) = &args.render {
        let Some(md) = &args.markdown else {
            eprintln!("ptslog-bench: --render needs --markdown");
            return ExitCode::FAILURE;
        };
        let rendered = std::fs::read_to_string(json)
            .map_err(anyhow::Error::from)
            .and_then(|t| Ok(serde_json::from_str::<ptslog_bench::report::Report>(&t)?))
            .and_then(|r| {
                r.write_markdown(md)?;
                match r.phase("media").map(|p| {
                    serde_json::from_value::<ptslog_bench::media::MediaFigures>(p.params.clone())
                }) {
                    Some(Ok(m)) => m.write_markdown(md, &r.started_at, r.quick),
                    _ => Ok(()),
                }
            });
        return match rendered {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ptslog-bench: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let mut opts = if args.quick {
        Options::quick()
    } else {
        Options::full()
    };
    if let Some(v) = args.users {
        opts.users = v;
    }
    if let Some(v) = args.concurrency {
        opts.concurrency = v.into_iter().filter(|c| *c > 0).collect();
    }
    if let Some(v) = args.duration_secs {
        opts.duration = Duration::from_secs_f64(v.max(0.1));
    }
    if let Some(mut v) = args.scale {
        v.sort_unstable();
        opts.scale = v;
    }
    if args.out.is_some() {
        opts.out = args.out;
    }
    opts.markdown = args.markdown;
    opts.keep_db = args.keep_db;
    opts.explain = args.explain;
    opts.verify_main |= args.verify;
    opts.live_results = args.live_results;
    opts.admin_url = args.admin_url;
    opts.redis_url = args.redis_url;
    if let Some(v) = args.db_max_connections {
        opts.db_max_connections = v;
    }
    opts.media = !args.no_media;
    opts.open_loop_rate = args.open_loop_rate.filter(|r| r.is_finite() && *r > 0.0);
    if args.media_only {
        if opts.out == Options::full().out || opts.out == Options::quick().out {
            opts.out = Some(PathBuf::from(if args.quick {
                "bench-results/media-quick.json"
            } else {
                "bench-results/media.json"
            }));
        }
        return match ptslog_bench::media::run_alone(&opts).await {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ptslog-bench: media: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    match run(opts).await {
        Ok(report) if report.correctness_ok => ExitCode::SUCCESS,
        Ok(_) => {
            eprintln!("ptslog-bench: correctness checks FAILED (see the report)");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("ptslog-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
