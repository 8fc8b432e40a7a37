//! The media phase's smoke run (quick sizes, seconds): every figure is measured and every byte
//! moved is checked (the phase fails on any difference), against the test Postgres and, when the
//! scripts export it, the test S3 server.

use ptslog_bench::media::{self, MediaOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_media_phase_measures_every_figure_and_moves_every_byte() {
    let admin = std::env::var("PTSLOG_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let redis =
        std::env::var("PTSLOG_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    let dir = std::env::temp_dir().join(format!("ptslog-media-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("work dir");
    let mut opts = MediaOptions::quick(&admin, &redis, &dir);
    opts.verbose = false;
    let db = format!(
        "ptslog_bench_media_smoke_{}_{:04x}",
        std::process::id(),
        rand::random::<u16>()
    );
    let f = media::run(&opts, &db)
        .await
        .expect("the media phase runs and every download equals its upload");
    let _ = std::fs::remove_dir_all(&dir);

    let s3 = std::env::var("PTSLOG_TEST_S3_ENDPOINT").is_ok_and(|v| !v.is_empty());
    let stores: &[&str] = if s3 { &["fs", "s3"] } else { &["fs"] };
    assert_eq!(f.transfers.len(), 4 * stores.len(), "{:?}", f.transfers);
    let bytes = (opts.concurrency * opts.files_per_worker * opts.file_bytes) as u64;
    for store in stores {
        for direction in ["upload", "download"] {
            for front in ["http", "mtproto"] {
                let t = f
                    .transfers
                    .iter()
                    .find(|t| t.store == *store && t.direction == direction && t.front == front)
                    .unwrap_or_else(|| panic!("no {store} {direction} {front}: {:?}", f.transfers));
                assert_eq!(t.bytes, bytes);
                assert!(
                    t.mb_per_s > 0.0 && t.raw_mb_per_s > 0.0 && t.seconds > 0.0,
                    "{t:?}"
                );
                assert!(
                    (t.ratio - t.mb_per_s / t.raw_mb_per_s).abs() < 0.01,
                    "{t:?}"
                );
            }
        }
    }
    assert_eq!(f.memory.len(), 2);
    for m in &f.memory {
        assert_eq!(m.downloads, opts.slow_downloads);
        assert!(m.rss_idle_mib > 0.0 && m.rss_loaded_mib > 0.0, "{m:?}");
    }
    let p = f.photos.as_ref().expect("photo figures");
    assert_eq!(p.photos, opts.photos);
    assert!(p.send_media_per_s > 0.0 && p.direct_per_s > 0.0, "{p:?}");

    // What the reports show.
    assert_eq!(f.ratios().len(), f.transfers.len() + 1);
    let md = f.markdown("now", true);
    assert!(md.contains("| fs | upload | mtproto |"), "{md}");
    assert!(md.contains("sendMedia photos/s"), "{md}");
    let phase = f.phase();
    assert_eq!(phase.status, "ok");
    let back: media::MediaFigures = serde_json::from_value(phase.params).expect("figures");
    assert_eq!(back.transfers.len(), f.transfers.len());
}
