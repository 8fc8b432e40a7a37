//! Media through a real, unpatched Telethon (tests/mtproto/telethon_media.py): send_file of a 300
//! KB document, a 12 MB one (upload.saveBigFilePart), a JPEG photo and an album; the recipient
//! downloads each byte for byte; an offline device's getDifference carries them; a third account
//! that learned the ids cannot download them; a profile photo uploaded with
//! photos.uploadProfilePhoto shows on the user and downloads with download_profile_photo.

use std::time::Duration;

use super::{telethon_python, Setup};

const CHECKS: &[&str] = &[
    "document_sent",
    "document_dc",
    "document_received",
    "document_downloaded",
    "big_document_uploaded_in_big_parts",
    "big_document_sent",
    "big_document_downloaded",
    "photo_sent",
    "photo_downloaded",
    "photo_thumb",
    "album_sent",
    "album_received",
    "album_item_downloaded",
    "third_account_refused_document",
    "third_account_refused_photo",
    "offline_device_difference",
    "offline_device_downloaded",
    "profile_photo_uploaded",
    "profile_photo_on_self",
    "profile_photo_seen",
    "profile_photo_downloaded",
    "profile_photos_listed",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telethon_sends_downloads_and_catches_up_on_media() {
    let python = tokio::task::spawn_blocking(telethon_python)
        .await
        .expect("installer thread")
        .unwrap_or_else(|e| panic!("Telethon from PyPI is needed for this test: {e}"));
    let setup = Setup::fresh("media").await;
    let mut server = setup.spawn();
    setup.wait_ready(&mut server).await;
    // Four real JPEGs of different sizes, made with the image crate.
    std::fs::create_dir_all(&setup.data_dir).expect("data folder");
    let mut jpegs = Vec::new();
    for (i, (w, h)) in [(1600, 1000), (640, 480), (500, 700), (320, 320)]
        .iter()
        .enumerate()
    {
        let path = setup.data_dir.join(format!("photo{i}.jpg"));
        std::fs::write(&path, crate::media::jpeg(*w, *h)).expect("write jpeg");
        jpegs.push(path.to_string_lossy().into_owned());
    }
    let mut args = vec!["1555700"];
    args.extend(jpegs.iter().map(String::as_str));
    let out = tokio::task::block_in_place(|| setup.run_script(&python, "telethon_media.py", &args));
    for check in CHECKS {
        assert!(
            out.lines().any(|l| l == format!("CHECK {check}")),
            "check {check} missing:\n{out}"
        );
    }
    assert!(out.lines().any(|l| l == "MEDIA OK"), "{out}");
    drop(server);
    tokio::time::sleep(Duration::from_millis(10)).await;
}
