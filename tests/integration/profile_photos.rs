//! Profile photos (issue 12), the log half: `profile_photo_changed` events fold into the
//! `profile_photos` read model (set, revert on delete, none), replay through a rebuild and show in
//! getDifference as `updateUser` with the owner among the users. The photos.* methods that append
//! these events are not written yet, so the events are appended the way a command's `append` stores
//! them (the pts counter moves with each).

use ptslog_tests::TestServer;
use serde_json::{json, Value};

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
