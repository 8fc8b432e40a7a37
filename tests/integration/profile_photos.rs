//! Profile photos (issue 12). First the log half: `profile_photo_changed` events fold into the
//! `profile_photos` read model (set, revert on delete, none), replay through a rebuild and show in
//! getDifference as `updateUser` with the owner among the users (these events are appended the way
//! a command's `append` stores them). Then the photos.* methods over the JSON API: upload, make
//! current, list, delete, owner scoping and the limits at their boundaries; users showing
//! `userProfilePhoto` everywhere; downloads by `inputPeerPhotoFileLocation`; the live push of
//! `updateUser` to the owner's other device and to a contact.

use std::time::Duration;

// Shared with `push`; not every helper is used here.
#[allow(dead_code)]
#[path = "push/client.rs"]
mod client;

use domain::media::limits::{MAX_DELETE_PHOTOS, MAX_USER_PHOTOS_LIMIT};
use ptslog_tests::{Device, TestServer};
use serde_json::{json, Value};

use super::media::{download, jpeg, upload};
use super::send::{three, ALICE};

const BLOB: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn photo(id: i64) -> Value {
    json!({"id": id, "access_hash": id * 7, "date": 1764489600,
        "sizes": [{"kind": "a", "w": 160, "h": 160, "size": 5000, "blob": BLOB}],
        "stripped": "0128"})
}

async fn append_change(s: &TestServer, owner: i64, payload: Value) -> i32 {
    sqlx::query_scalar(
        "WITH s AS (UPDATE user_sequences SET pts = pts + 1 WHERE user_id = $1 RETURNING pts) \
         INSERT INTO user_update_events \
           (user_id, pts, pts_count, kind, payload_version, payload, auth_key_id, session_id) \
         SELECT $1, s.pts, 1, 'profile_photo_changed', 1, $2, 0, 0 FROM s RETURNING pts",
    )
    .bind(owner)
    .bind(payload)
    .fetch_one(&s.pool)
    .await
    .expect("append")
}

/// (photo_id, set_pts) of the owner's rows, current first.
async fn rows(s: &TestServer, owner: i64) -> Vec<(i64, i32)> {
    sqlx::query_as(
        "SELECT photo_id, set_pts FROM profile_photos WHERE owner_user_id = $1 \
         ORDER BY set_pts DESC",
    )
    .bind(owner)
    .fetch_all(&s.pool)
    .await
    .expect("rows")
}

#[tokio::test]
async fn profile_photo_changes_fold_into_the_read_model_and_reach_get_difference() {
    let s = TestServer::start().await;
    let alice = s.login("+15558200001", "Alice").await;
    let bob = s.login("+15558200002", "Bob").await;
    let p0 = alice.state().await["pts"].as_i64().unwrap();

    append_change(&s, alice.user_id, json!({"photo": photo(101), "date": 1})).await;
    append_change(&s, alice.user_id, json!({"photo": photo(102), "date": 2})).await;
    // Deleting the current one reverts to the previous.
    let revert = append_change(
        &s,
        alice.user_id,
        json!({"photo": photo(101), "removed": [102], "date": 3}),
    )
    .await;
    append_change(&s, bob.user_id, json!({"photo": photo(201), "date": 4})).await;

    projections::rebuild::rebuild_all(&s.pool)
        .await
        .expect("rebuild");
    assert_eq!(rows(&s, alice.user_id).await, vec![(101, revert)]);
    assert_eq!(
        rows(&s, bob.user_id).await.len(),
        1,
        "each owner's own rows"
    );
    let report = projections::verify(&s.pool).await.expect("verify");
    assert!(report.is_clean(), "{report:?}");

    // Deleting the last one leaves none.
    append_change(
        &s,
        alice.user_id,
        json!({"photo": null, "removed": [101], "date": 5}),
    )
    .await;
    projections::rebuild::rebuild_all(&s.pool)
        .await
        .expect("rebuild");
    assert_eq!(rows(&s, alice.user_id).await, vec![]);

    let diff = alice
        .rpc(
            "updates.getDifference",
            json!({"pts": p0, "date": 0, "qts": 0}),
        )
        .await;
    let changes: Vec<&Value> = diff["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["_"] == "updateUser")
        .collect();
    assert_eq!(changes.len(), 4, "{diff}");
    assert!(changes.iter().all(|u| u["user_id"] == alice.user_id));
    assert!(
        diff["users"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["id"] == alice.user_id && u["self"] == true),
        "{diff}"
    );
    assert_eq!(diff["state"]["pts"], p0 + 4);
}

/// Uploads a JPEG of `w`×`h` as the caller's profile photo; answers the `photos.photo`.
async fn upload_photo(d: &Device, w: u32, h: u32) -> Value {
    let file = upload(d, &jpeg(w, h), "me.jpg").await;
    let r = d
        .rpc("photos.uploadProfilePhoto", json!({"file": file}))
        .await;
    assert_eq!(r["_"], "photos.photo", "{r}");
    r
}

fn input_photo(photo: &Value) -> Value {
    json!({"_": "inputPhoto", "id": photo["id"], "access_hash": photo["access_hash"],
        "file_reference": photo["file_reference"]})
}

/// The ids of a photos.getUserPhotos answer, in order.
fn ids(page: &Value) -> Vec<i64> {
    page["photos"]
        .as_array()
        .expect("photos")
        .iter()
        .map(|p| p["id"].as_i64().expect("id"))
        .collect()
}

async fn user_photos(d: &Device, user: &Value, offset: i32, max_id: i64, limit: i32) -> Value {
    d.rpc(
        "photos.getUserPhotos",
        json!({"user_id": user, "offset": offset, "max_id": max_id, "limit": limit}),
    )
    .await
}

fn input_user_of(peer: &Value) -> Value {
    json!({"_": "inputUser", "user_id": peer["user_id"], "access_hash": peer["access_hash"]})
}

/// `users.getUsers` of one user: its `photo` field (Null when it has none).
async fn shown_photo(d: &Device, user: &Value) -> Value {
    let r = d.rpc("users.getUsers", json!({"id": [user]})).await;
    r[0]["photo"].clone()
}

#[tokio::test]
async fn profile_photos_are_uploaded_listed_made_current_and_deleted_by_their_owner_only() {
    let s = TestServer::start().await;
    let (alice, bob, carol, _, _) = three(&s).await;
    let bob_sees_alice = bob.peer_of(ALICE).await;
    let carol_sees_alice = carol.peer_of(ALICE).await;
    let alice_for_bob = input_user_of(&bob_sees_alice);
    let me = json!({"_": "inputUserSelf"});
    let p0 = alice.state().await["pts"].as_i64().unwrap();

    // Nothing yet: no photo field, an empty list.
    assert_eq!(shown_photo(&bob, &alice_for_bob).await, Value::Null);
    let none = user_photos(&bob, &alice_for_bob, 0, 0, 10).await;
    assert_eq!((&none["_"], ids(&none).len()), (&json!("photos.photos"), 0));

    // The upload is cut into sizes; the answer's user (self) shows it.
    let first = upload_photo(&alice, 640, 640).await;
    let photo1 = first["photo"].clone();
    assert_eq!(photo1["_"], "photo");
    assert_eq!(photo1["dc_id"], 2);
    let sizes = photo1["sizes"].as_array().unwrap();
    assert!(
        sizes.iter().any(|s| s["_"] == "photoStrippedSize"),
        "{photo1}"
    );
    assert!(
        sizes.iter().filter(|s| s["_"] == "photoSize").count() >= 2,
        "{photo1}"
    );
    let me_shown = &first["users"][0];
    assert_eq!(me_shown["self"], true);
    assert_eq!(me_shown["photo"]["_"], "userProfilePhoto");
    assert_eq!(me_shown["photo"]["photo_id"], photo1["id"]);
    assert_eq!(me_shown["photo"]["dc_id"], 2);
    assert!(me_shown["photo"]["stripped_thumb"]
        .as_str()
        .is_some_and(|t| !t.is_empty()));

    let second = upload_photo(&alice, 300, 200).await;
    let photo2 = second["photo"].clone();
    let third = upload_photo(&alice, 200, 300).await;
    let photo3 = third["photo"].clone();

    // Everywhere users are shown: getUsers, getFullUser (with the whole photo), resolvePhone,
    // history, getDialogs.
    assert_eq!(
        shown_photo(&bob, &alice_for_bob).await["photo_id"],
        photo3["id"]
    );
    let full = bob
        .rpc("users.getFullUser", json!({"id": alice_for_bob}))
        .await;
    assert_eq!(
        full["full_user"]["profile_photo"]["id"], photo3["id"],
        "{full}"
    );
    assert_eq!(full["users"][0]["photo"]["photo_id"], photo3["id"]);
    let resolved = carol
        .rpc("contacts.resolvePhone", json!({"phone": ALICE}))
        .await;
    assert_eq!(resolved["users"][0]["photo"]["photo_id"], photo3["id"]);
    alice
        .send(&alice.peer_of(super::send::BOB).await, "hi")
        .await;
    let dialogs = bob
        .rpc(
            "messages.getDialogs",
            json!({"offset_date": 0, "offset_id": 0, "offset_peer": {"_": "inputPeerEmpty"},
                "limit": 10, "hash": 0}),
        )
        .await;
    let alice_in_dialogs = dialogs["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["id"] == alice.user_id)
        .expect("alice among the dialogs' users")
        .clone();
    assert_eq!(alice_in_dialogs["photo"]["photo_id"], photo3["id"]);

    // The list: newest first, pages per Telegram's offset / max_id / limit.
    let all = user_photos(&bob, &alice_for_bob, 0, 0, 10).await;
    assert_eq!(all["_"], "photos.photos");
    let order = vec![
        photo3["id"].as_i64().unwrap(),
        photo2["id"].as_i64().unwrap(),
        photo1["id"].as_i64().unwrap(),
    ];
    assert_eq!(ids(&all), order);
    let page = user_photos(&bob, &alice_for_bob, 0, 0, 2).await;
    assert_eq!(
        (&page["_"], &page["count"]),
        (&json!("photos.photosSlice"), &json!(3))
    );
    assert_eq!(ids(&page), order[..2]);
    let after = user_photos(&bob, &alice_for_bob, 0, order[1], 10).await;
    assert_eq!(ids(&after), order[2..]);
    let one = user_photos(&bob, &alice_for_bob, -1, order[1], 1).await;
    assert_eq!(ids(&one), order[1..2]);
    // The limit is cut at its maximum, never refused.
    let over = user_photos(&alice, &me, 0, 0, MAX_USER_PHOTOS_LIMIT + 1).await;
    assert_eq!(ids(&over), order);

    // Making an older photo current: the owner's own only.
    let back = alice
        .rpc(
            "photos.updateProfilePhoto",
            json!({"id": input_photo(&photo1)}),
        )
        .await;
    assert_eq!(back["photo"]["id"], photo1["id"]);
    assert_eq!(back["users"][0]["photo"]["photo_id"], photo1["id"]);
    assert_eq!(
        shown_photo(&carol, &input_user_of(&carol_sees_alice)).await["photo_id"],
        photo1["id"]
    );
    let bobs = upload_photo(&bob, 100, 100).await["photo"].clone();
    for foreign in [
        input_photo(&bobs),
        json!({"_": "inputPhoto", "id": photo2["id"], "access_hash": 1, "file_reference": ""}),
    ] {
        let (status, e) = alice
            .rpc_err("photos.updateProfilePhoto", json!({"id": foreign}))
            .await;
        assert_eq!((status, e.as_str()), (400, "PHOTO_INVALID"));
    }
    let (_, e) = bob
        .rpc_err(
            "photos.updateProfilePhoto",
            json!({"id": input_photo(&photo2)}),
        )
        .await;
    assert_eq!(e, "PHOTO_INVALID", "Alice's photo is not Bob's to set");
    let (_, e) = alice.rpc_err("photos.uploadProfilePhoto", json!({})).await;
    assert_eq!(e, "PHOTO_FILE_MISSING");
    let junk = upload(&alice, b"not an image at all", "x.jpg").await;
    let (_, e) = alice
        .rpc_err("photos.uploadProfilePhoto", json!({"file": junk}))
        .await;
    assert_eq!(e, "IMAGE_PROCESS_FAILED");

    // deletePhotos: the cap at its boundary, others' ids left out of the answer.
    let too_many: Vec<Value> = (0..=MAX_DELETE_PHOTOS)
        .map(|_| input_photo(&photo2))
        .collect();
    let (status, e) = alice
        .rpc_err("photos.deletePhotos", json!({"id": too_many}))
        .await;
    assert_eq!((status, e.as_str()), (400, "LIMIT_INVALID"));
    let mut at_cap: Vec<Value> = (1..MAX_DELETE_PHOTOS).map(|_| input_photo(&bobs)).collect();
    at_cap.push(input_photo(&photo2));
    let deleted = alice
        .rpc("photos.deletePhotos", json!({"id": at_cap}))
        .await;
    assert_eq!(deleted, json!([photo2["id"]]), "only Alice's own photo");
    assert_eq!(
        ids(&user_photos(&bob, &alice_for_bob, 0, 0, 10).await),
        vec![order[2], order[0]]
    );
    let nothing = bob
        .rpc("photos.deletePhotos", json!({"id": [input_photo(&photo1)]}))
        .await;
    assert_eq!(nothing, json!([]));

    // Deleting the current photo makes the one before it current; inputPhotoEmpty removes the
    // current one the same way, and with none left the user shows no photo.
    let d = alice
        .rpc("photos.deletePhotos", json!({"id": [input_photo(&photo1)]}))
        .await;
    assert_eq!(d, json!([photo1["id"]]));
    assert_eq!(
        shown_photo(&bob, &alice_for_bob).await["photo_id"],
        photo3["id"]
    );
    let removed = alice
        .rpc(
            "photos.updateProfilePhoto",
            json!({"id": {"_": "inputPhotoEmpty"}}),
        )
        .await;
    assert_eq!(removed["photo"]["_"], "photoEmpty", "{removed}");
    assert!(removed["users"][0].get("photo").is_none(), "{removed}");
    assert_eq!(shown_photo(&bob, &alice_for_bob).await, Value::Null);
    let full = bob
        .rpc("users.getFullUser", json!({"id": alice_for_bob}))
        .await;
    assert!(full["full_user"].get("profile_photo").is_none(), "{full}");

    // Each change is one event of Alice's log: getDifference shows updateUser for each.
    let diff = alice
        .rpc(
            "updates.getDifference",
            json!({"pts": p0, "date": 0, "qts": 0}),
        )
        .await;
    let changes = diff["other_updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["_"] == "updateUser" && u["user_id"] == alice.user_id)
        .count();
    // Three uploads, one made current, two deletes, one removal (refusals appended nothing).
    assert_eq!(changes, 7, "{diff}");
    let report = projections::verify(&s.pool).await.expect("verify");
    assert!(report.is_clean(), "{report:?}");
}

#[tokio::test]
async fn anyone_who_sees_the_user_downloads_its_profile_photo_by_peer_location() {
    let s = TestServer::start().await;
    let (alice, bob, carol, _, _) = three(&s).await;
    let photo = upload_photo(&alice, 900, 600).await["photo"].clone();
    let other = upload_photo(&bob, 120, 120).await["photo"].clone();
    // Carol has never talked to Alice: she found her by phone.
    let carol_sees_alice = carol.peer_of(ALICE).await;
    let location = |big: bool, id: &Value| {
        json!({"_": "inputPeerPhotoFileLocation", "big": big, "peer": carol_sees_alice,
            "photo_id": id})
    };
    let big = download(&carol, &location(true, &photo["id"]))
        .await
        .expect("big");
    let small = download(&carol, &location(false, &photo["id"]))
        .await
        .expect("small");
    // `big` is the size with the most pixels, the other the one with the fewest (not the most or
    // fewest bytes: JPEG sizes need not grow with the pixels).
    let mut sizes: Vec<(i64, i64)> = photo["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["_"] == "photoSize")
        .map(|s| {
            let pixels = s["w"].as_i64().unwrap() * s["h"].as_i64().unwrap();
            (pixels, s["size"].as_i64().unwrap())
        })
        .collect();
    sizes.sort_unstable();
    assert!(sizes.len() >= 2, "{photo}");
    assert_eq!(big.len() as i64, sizes.last().unwrap().1);
    assert_eq!(small.len() as i64, sizes[0].1);
    assert!(big.starts_with(&[0xff, 0xd8]), "a JPEG");
    // The same bytes as the photo's largest size by its own location (getUserPhotos' photo).
    let listed = carol
        .rpc(
            "photos.getUserPhotos",
            json!({"user_id": input_user_of(&carol_sees_alice), "offset": 0, "max_id": 0, "limit": 1}),
        )
        .await;
    let by_photo = download(
        &carol,
        &super::media::photo_location(&listed["photos"][0], ""),
    )
    .await
    .expect("a profile photo is open to whoever sees the user");
    assert_eq!(by_photo, big);

    // Another user's photo id, a wrong access hash: FILE_ID_INVALID.
    assert_eq!(
        download(&carol, &location(true, &other["id"])).await,
        Err("FILE_ID_INVALID".into())
    );
    let wrong_hash = json!({"_": "inputPeerPhotoFileLocation", "peer":
        {"_": "inputPeerUser", "user_id": alice.user_id, "access_hash": 12345}, "photo_id": photo["id"]});
    assert_eq!(
        download(&carol, &wrong_hash).await,
        Err("FILE_ID_INVALID".into())
    );
    // Deleted: gone for everyone.
    alice
        .rpc("photos.deletePhotos", json!({"id": [input_photo(&photo)]}))
        .await;
    assert_eq!(
        download(&carol, &location(true, &photo["id"])).await,
        Err("FILE_ID_INVALID".into())
    );
    // The owner downloads its own photo by the self peer.
    let own = upload_photo(&alice, 200, 200).await["photo"].clone();
    let mine = download(
        &alice,
        &json!({"_": "inputPeerPhotoFileLocation", "peer": {"_": "inputPeerSelf"}, "photo_id": own["id"]}),
    )
    .await;
    assert!(mine.is_ok_and(|b| !b.is_empty()));
}

/// The frames of `socket` with an `updateUser` of `user`.
fn user_changes(socket: &client::Socket, user: i64) -> Vec<Value> {
    socket
        .pushed()
        .into_iter()
        .filter(|p| p.update["_"] == "updateUser" && p.update["user_id"] == user)
        .map(|p| p.frame)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_photo_change_is_pushed_to_the_owners_devices_and_to_who_sees_the_owner() {
    const WAIT: Duration = Duration::from_secs(20);
    let db = ptslog_tests::fresh_database().await.expect("db");
    let running = ptslog_tests::start_with_pushes(&db).await;
    let base = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let login =
        |phone: &'static str, name: &'static str| ptslog_tests::login(&http, &base, phone, name);
    // Alice changes her photo on A1; A2 is her other device. Bob has her as a contact (no chat),
    // Carol has a chat with her, Dave has neither.
    let a1 = login("+15558210001", "Alice").await;
    let a2 = login("+15558210001", "Alice").await;
    let bob = login("+15558210002", "Bob").await;
    let carol = login("+15558210003", "Carol").await;
    let dave = login("+15558210004", "Dave").await;
    let bob_sees_alice = bob.peer_of("+15558210001").await;
    bob.rpc(
        "contacts.addContact",
        json!({"id": input_user_of(&bob_sees_alice), "first_name": "Ally", "last_name": ""}),
    )
    .await;
    a1.send(&a1.peer_of("+15558210003").await, "hello Carol")
        .await;
    let sockets = [
        client::Socket::connect(&base, &a2.token, true).await,
        client::Socket::connect(&base, &bob.token, true).await,
        client::Socket::connect(&base, &carol.token, true).await,
        client::Socket::connect(&base, &dave.token, true).await,
    ];
    ptslog_tests::wait_relay_streaming(&running.relay_status, Duration::from_secs(240)).await;

    let photo = upload_photo(&a1, 320, 320).await["photo"].clone();
    let alice = a1.user_id;
    for (socket, who) in sockets[..3].iter().zip(["A2", "Bob", "Carol"]) {
        let arrived = socket
            .wait_until(WAIT, |p| {
                p.iter()
                    .any(|p| p.update["_"] == "updateUser" && p.update["user_id"] == alice)
            })
            .await;
        assert!(
            arrived,
            "{who} was not pushed the change: {:?}",
            socket.raw()
        );
        let frames = user_changes(socket, alice);
        assert_eq!(frames.len(), 1, "{who}: {frames:?}");
        let shown = frames[0]["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["id"] == alice)
            .unwrap_or_else(|| panic!("{who}: Alice missing from {}", frames[0]))
            .clone();
        assert_eq!(shown["photo"]["photo_id"], photo["id"], "{who}: {shown}");
        match who {
            // Her own device: the event of her log, at its pts.
            "A2" => {
                assert_eq!(shown["self"], true);
                let pts = a1.state().await["pts"].as_i64().unwrap();
                assert_eq!(socket.pushed().last().unwrap().pts, pts);
            }
            // Bob sees her with his hash and his name for her.
            "Bob" => {
                assert_eq!(shown["access_hash"], bob_sees_alice["access_hash"]);
                assert_eq!(
                    (&shown["first_name"], &shown["contact"]),
                    (&json!("Ally"), &json!(true))
                );
            }
            _ => assert_eq!(shown["self"], false),
        }
    }
    // Deleting it reaches them too, showing no photo; Dave, who sees neither, got nothing.
    a1.rpc("photos.deletePhotos", json!({"id": [input_photo(&photo)]}))
        .await;
    let arrived = sockets[1]
        .wait_until(WAIT, |_| user_changes(&sockets[1], alice).len() == 2)
        .await;
    assert!(arrived, "{:?}", sockets[1].raw());
    let second = &user_changes(&sockets[1], alice)[1];
    assert!(second["users"][0].get("photo").is_none(), "{second}");
    assert!(
        user_changes(&sockets[3], alice).is_empty(),
        "{:?}",
        sockets[3].raw()
    );
    for s in sockets {
        s.close();
    }
    running.shutdown().await;
    ptslog_tests::drop_database(&db).await;
}
