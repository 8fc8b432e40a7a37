//! A big document through a real, unpatched Kurigram (tests/mtproto/kurigram_media.py): over
//! 10 MiB, so Kurigram uploads it with upload.saveBigFilePart from four workers over its media
//! session (a second connection on the same auth key); the recipient downloads it byte for byte.

use std::time::Duration;

use super::{telethon_python, Setup};

/// Over the 10 MiB of a small file, not a multiple of the 512 KiB part.
const SIZE: usize = 12 * 1024 * 1024 + 12_345;

const CHECKS: &[&str] = &[
    "big_document_sent",
    "media_session_used",
    "big_document_received",
    "big_document_downloaded",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kurigram_sends_a_big_document_in_parallel_parts_and_it_downloads() {
    let python = tokio::task::spawn_blocking(telethon_python)
        .await
        .expect("installer thread")
        .unwrap_or_else(|e| panic!("Kurigram from PyPI is needed for this test: {e}"));
    let setup = Setup::fresh("kmedia").await;
    let mut server = setup.spawn();
    setup.wait_ready(&mut server).await;
    let size = SIZE.to_string();
    let out = tokio::task::block_in_place(|| {
        setup.run_script(&python, "kurigram_media.py", &["1555710", &size])
    });
    for check in CHECKS {
        assert!(
            out.lines().any(|l| l == format!("CHECK {check}")),
            "check {check} missing:\n{out}"
        );
    }
    assert!(out.lines().any(|l| l == "KURIGRAM MEDIA OK"), "{out}");
    drop(server);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
