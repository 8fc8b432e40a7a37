//! `DATABASE_READ_URL`: the server's reads on a real streaming replica, each account still
//! reading its own writes at once (`PTSLOG_TEST_PAIR_PRIMARY_URL` / `_REPLICA_URL`, a primary
//! and its standby of their own, started by scripts/test).

use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::{Connection, Executor, PgConnection};

use ptslog_tests::{test_config, TestServer};

fn with_db(url: &str, db: &str) -> String {
    match url.rsplit_once('/') {
        Some((server, _)) => format!("{server}/{db}"),
        None => panic!("a database URL with a path"),
    }
}

#[tokio::test]
async fn a_server_reads_on_its_replica_and_a_sender_reads_its_send_back_at_once() {
    let (Ok(primary), Ok(replica)) = (
        std::env::var("PTSLOG_TEST_PAIR_PRIMARY_URL"),
        std::env::var("PTSLOG_TEST_PAIR_REPLICA_URL"),
    ) else {
        eprintln!("PTSLOG_TEST_PAIR_*_URL unset: skipping (scripts/test sets them)");
        return;
    };
    let db = format!("ptslog_t_rep_{:012x}", rand::random::<u64>() >> 16);
    let mut admin = PgConnection::connect(&primary)
        .await
        .expect("the pair's primary");
    admin
        .execute(format!("CREATE DATABASE {db}").as_str())
        .await
        .expect("create database");
    let _ = admin.close().await;
    // The replica must have the database before the server connects to it.
    let start = Instant::now();
    while PgConnection::connect(&with_db(&replica, &db))
        .await
        .is_err()
    {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the replica never had {db}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A replica of another cluster is refused at start.
    let mut config = test_config(&db);
    config.database_url = with_db(&primary, &db);
    config.database_read_url = Some(ptslog_tests::admin_url());
    let refused = ptslog_server::start(&config).await.err().expect("refused");
    assert!(
        format!("{refused:#}").contains("not a streaming replica"),
        "{refused:#}"
    );

    config.database_read_url = Some(with_db(&replica, &db));
    config.db_read_max_connections = 2;
    let s = TestServer::start_on(db.clone(), &config).await;
    let alice = s.login("+15557180001", "Alice").await;
    let bob = s.login("+15557180002", "Bob").await;
    let to_bob = alice.peer_of("+15557180002").await;
    for i in 0..10 {
        let text = format!("replicated {i}");
        alice.send(&to_bob, &text).await;
        let history = alice
            .rpc("messages.getHistory", json!({"peer": to_bob, "limit": 1}))
            .await;
        assert_eq!(history["messages"][0]["message"], text, "{history}");
        let diff = bob
            .rpc(
                "updates.getDifference",
                json!({"pts": 0, "date": 0, "qts": 0}),
            )
            .await;
        assert_eq!(
            diff["new_messages"].as_array().map(Vec::len),
            Some(i + 1),
            "{diff}"
        );
    }
    let on_replica = s.metric("ptslog_replica_reads_total").await;
    assert!(on_replica > 0.0, "no read on the replica");
    // The suite's server has no such database; the pair's primary has.
    s.stop().await;
    drop_database_on(&primary, &db).await;
}

async fn drop_database_on(admin: &str, db: &str) {
    if let Ok(mut conn) = PgConnection::connect(admin).await {
        let _ = conn
            .execute(format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)").as_str())
            .await;
    }
}
