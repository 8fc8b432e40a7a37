//! A photo through a real, unpatched GramJS (tests/mtproto/gramjs_media.js): sendFile of a JPEG;
//! the recipient gets it live and downloads the largest size (a whole JPEG of the announced size,
//! the same bytes the sender downloads).

use std::time::Duration;

use super::{gramjs_modules, Setup};

const CHECKS: &[&str] = &[
    "photo_sent",
    "photo_received",
    "photo_downloaded",
    "photo_same_for_sender",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gramjs_sends_a_photo_and_it_downloads() {
    let modules = tokio::task::spawn_blocking(gramjs_modules)
        .await
        .expect("installer thread")
        .unwrap_or_else(|e| panic!("GramJS from npm is needed for this test: {e}"));
    let setup = Setup::fresh("gmedia").await;
    let mut server = setup.spawn();
    setup.wait_ready(&mut server).await;
    std::fs::create_dir_all(&setup.data_dir).expect("data folder");
    let jpeg = setup.data_dir.join("photo.jpg");
    std::fs::write(&jpeg, crate::media::jpeg(1280, 800)).expect("write jpeg");
    let jpeg = jpeg.to_string_lossy().into_owned();
    let out = setup.run_gramjs(&modules, "gramjs_media.js", ["155720", "155721"], &[&jpeg]);
    for check in CHECKS {
        assert!(
            out.lines().any(|l| l == format!("CHECK {check}")),
            "check {check} missing:\n{out}"
        );
    }
    assert!(out.lines().any(|l| l == "GRAMJS MEDIA OK"), "{out}");
    drop(server);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
