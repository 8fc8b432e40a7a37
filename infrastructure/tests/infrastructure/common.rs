//! A fresh database per test, and commands written the way the application's handlers write them.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::str::FromStr;

use application::ports::{Accounts, Origin, Store};
use domain::events::{
    ClearHistory, DeleteMessages, EditMessage, NewMessage, PeerBlocked, ReadHistoryInbox,
    ReadHistoryOutbox, ReadMessageContents, UserEvent,
};
use domain::message::OwnerMessage;
use domain::{BoxId, MessageId, UserId};
use infrastructure::{PgAccounts, PgStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool};

pub fn database_url() -> String {
    std::env::var("PTSLOG_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

pub fn redis_url() -> String {
    std::env::var("PTSLOG_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

pub struct TestDb {
    pub pool: PgPool,
    pub store: PgStore,
    pub accounts: PgAccounts,
    pub name: String,
    admin: PgConnectOptions,
}

impl TestDb {
    /// A new, migrated database: a copy of the migrated template (creating the 64 partitions
    /// anew for every test would dominate the suite's time), on which migrating finds nothing to do.
    pub async fn new() -> TestDb {
        let template = template().await;
        let db = Self::create(&format!("TEMPLATE {template}")).await;
        infrastructure::migrate(&db.pool).await.expect("migrate");
        db
    }

    /// A new database without migrations.
    pub async fn empty() -> TestDb {
        Self::create("").await
    }

    async fn create(clause: &str) -> TestDb {
        let admin = PgConnectOptions::from_str(&database_url()).expect("database url");
        let mut conn = PgConnection::connect_with(&admin)
            .await
            .expect("connect to the test server");
        let name = format!("ptslog_it_{:016x}", rand::random::<u64>());
        conn.execute(format!("CREATE DATABASE {name} {clause}").as_str())
            .await
            .expect("create database");
        let _ = conn.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(12)
            .connect_with(Self::options(&admin, &name))
            .await
            .expect("connect to the test database");
        let store = PgStore::new(pool.clone());
        let accounts = PgAccounts::new(pool.clone());
        TestDb {
            pool,
            store,
            accounts,
            name,
            admin,
        }
    }

    pub async fn another_pool(&self) -> PgPool {
        PgPoolOptions::new()
            .max_connections(2)
            .connect_with(Self::options(&self.admin, &self.name))
            .await
            .expect("pool")
    }

    /// A throwaway database need not wait for its commits to reach the disk.
    fn options(admin: &PgConnectOptions, name: &str) -> PgConnectOptions {
        admin
            .clone()
            .database(name)
            .options([("synchronous_commit", "off")])
    }

    /// Best effort: a failed test leaves its database behind (ptslog_it_*, safe to drop).
    pub async fn drop(self) {
        self.pool.close().await;
        let dropped = async {
            let mut conn = PgConnection::connect_with(&self.admin).await?;
            conn.execute(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name).as_str())
                .await?;
            conn.close().await
        };
        if let Err(e) = dropped.await {
            eprintln!("leaving database {} behind: {e}", self.name);
        }
    }

    pub async fn user(&self, phone: &str) -> UserId {
        self.accounts
            .login(phone, "Test", phone)
            .await
            .expect("login")
            .0
            .id
    }

    /// Every row of a table, as JSON text, in key order.
    pub async fn snapshot(&self, table: &str, order: &str) -> Vec<String> {
        sqlx::query_scalar(&format!(
            "SELECT to_jsonb(t)::text FROM {table} t ORDER BY {order}"
        ))
        .fetch_all(&self.pool)
        .await
        .expect("snapshot")
    }

    pub async fn snapshot_all(&self) -> Vec<Vec<String>> {
        vec![
            self.snapshot("message_boxes", "owner_user_id, box_id")
                .await,
            self.snapshot("dialogs", "user_id, peer_user_id").await,
            self.snapshot("contact_blocks", "owner_user_id, blocked_user_id")
                .await,
        ]
    }
}

/// The migrated template database, named by a hash of the migrations so a changed schema gets a
/// new one. The workspace's `tests` crate makes the same one (same name, same advisory lock), so
/// either suite may create it and both share it.
async fn template() -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../migrations");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("migrations dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut h = DefaultHasher::new();
    for f in &files {
        std::fs::read(f).expect("migration file").hash(&mut h);
    }
    let name = format!("ptslog_tpl_{:016x}", h.finish());
    let admin = PgConnectOptions::from_str(&database_url()).expect("database url");
    let mut conn = PgConnection::connect_with(&admin)
        .await
        .expect("connect to the test server");
    sqlx::query("SELECT pg_advisory_lock(8675309)")
        .execute(&mut conn)
        .await
        .expect("template lock");
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
            .bind(&name)
            .fetch_one(&mut conn)
            .await
            .expect("look for the template");
    if !exists {
        conn.execute(format!("CREATE DATABASE {name}").as_str())
            .await
            .expect("create the template");
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(admin.clone().database(&name))
            .await
            .expect("pool");
        let migrated = infrastructure::migrate(&pool).await;
        pool.close().await;
        if let Err(e) = migrated {
            let _ = conn.execute(format!("DROP DATABASE {name}").as_str()).await;
            panic!("migrating the template: {e}");
        }
    }
    let _ = conn.close().await; // ends the session, so the advisory lock too
    name
}

pub fn bx(id: i32) -> BoxId {
    BoxId::new(id).expect("box id")
}

pub fn message(
    id: BoxId,
    message_id: MessageId,
    peer: UserId,
    from: UserId,
    out: bool,
    date: i32,
    text: &str,
) -> OwnerMessage {
    OwnerMessage {
        id,
        message_id,
        peer_id: peer,
        from_id: from,
        out,
        date,
        text: text.into(),
        entities: vec![],
        silent: false,
        noforwards: false,
        reply_to: None,
        fwd_from: None,
        media_unread: false,
        random_id: None,
        edit_date: None,
        media: None,
        grouped_id: None,
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Sent {
    pub message_id: MessageId,
    pub sender_box: BoxId,
    pub recipient_box: BoxId,
}

/// A send as the handler writes it: both boxes and both events in one transaction.
pub async fn send(store: &PgStore, from: UserId, to: UserId, text: &str, date: i32) -> Sent {
    send_with(store, from, to, text, date, |_| {}).await
}

pub async fn send_with(
    store: &PgStore,
    from: UserId,
    to: UserId,
    text: &str,
    date: i32,
    edit: impl Fn(&mut OwnerMessage),
) -> Sent {
    let mut tx = store.begin().await.expect("begin");
    tx.lock_users(&[from, to]).await.expect("lock");
    let message_id = tx.next_message_id().await.expect("message id");
    let sender_box = tx.next_box_id(from).expect("box");
    let mut mine = message(sender_box, message_id, to, from, true, date, text);
    mine.random_id = Some(rand::random::<i64>() | 1);
    edit(&mut mine);
    tx.append(
        from,
        UserEvent::NewMessage(NewMessage { message: mine }),
        Origin::default(),
    )
    .await
    .expect("append");
    let recipient_box = if from == to {
        sender_box
    } else {
        let b = tx.next_box_id(to).expect("box");
        let mut theirs = message(b, message_id, from, from, false, date, text);
        edit(&mut theirs);
        tx.append(
            to,
            UserEvent::NewMessage(NewMessage { message: theirs }),
            Origin::default(),
        )
        .await
        .expect("append");
        b
    };
    tx.commit().await.expect("commit");
    Sent {
        message_id,
        sender_box,
        recipient_box,
    }
}

/// Edits every box of a shared message (sender's and recipient's).
pub async fn edit(
    store: &PgStore,
    users: [UserId; 2],
    message_id: MessageId,
    text: &str,
    date: i32,
) {
    let mut tx = store.begin().await.expect("begin");
    tx.lock_users(&users).await.expect("lock");
    let mut owners = users.to_vec();
    owners.dedup();
    for owner in owners {
        if let Some(mut m) = tx
            .message_by_shared_id(owner, message_id)
            .await
            .expect("read")
        {
            m.text = text.into();
            m.edit_date = Some(date);
            tx.append(
                owner,
                UserEvent::EditMessage(EditMessage { message: m }),
                Origin::default(),
            )
            .await
            .expect("append");
        }
    }
    tx.commit().await.expect("commit");
}

pub async fn delete(
    store: &PgStore,
    owner: UserId,
    ids: Vec<BoxId>,
    clear_history: Option<ClearHistory>,
) {
    let mut tx = store.begin().await.expect("begin");
    tx.lock_users(&[owner]).await.expect("lock");
    tx.append(
        owner,
        UserEvent::DeleteMessages(DeleteMessages { ids, clear_history }),
        Origin::default(),
    )
    .await
    .expect("append");
    tx.commit().await.expect("commit");
}

/// `reader` reads its chat with `peer` up to `max_id`; the peer's outbox learns of it.
pub async fn read_history(store: &PgStore, reader: UserId, peer: UserId, max_id: BoxId, date: i32) {
    let mut tx = store.begin().await.expect("begin");
    tx.lock_users(&[reader, peer]).await.expect("lock");
    let progress = tx
        .read_progress(reader, peer, max_id.get())
        .await
        .expect("read");
    tx.append(
        reader,
        UserEvent::ReadHistoryInbox(ReadHistoryInbox {
            peer_id: peer,
            max_id,
            still_unread_count: progress.still_unread,
        }),
        Origin::default(),
    )
    .await
    .expect("append");
    if let Some(theirs) = progress.senders_box {
        tx.append(
            peer,
            UserEvent::ReadHistoryOutbox(ReadHistoryOutbox {
                peer_id: reader,
                max_id: theirs,
                date,
            }),
            Origin::default(),
        )
        .await
        .expect("append");
    }
    tx.commit().await.expect("commit");
}

pub async fn read_contents(store: &PgStore, owner: UserId, ids: Vec<BoxId>, date: i32) {
    let mut tx = store.begin().await.expect("begin");
    tx.lock_users(&[owner]).await.expect("lock");
    tx.append(
        owner,
        UserEvent::ReadMessageContents(ReadMessageContents { ids, date }),
        Origin::default(),
    )
    .await
    .expect("append");
    tx.commit().await.expect("commit");
}

pub async fn block(store: &PgStore, owner: UserId, peer: UserId, blocked: bool, date: i32) {
    let mut tx = store.begin().await.expect("begin");
    tx.lock_users(&[owner]).await.expect("lock");
    tx.append(
        owner,
        UserEvent::PeerBlocked(PeerBlocked {
            peer_id: peer,
            blocked,
            my_stories_from: false,
            date,
        }),
        Origin::default(),
    )
    .await
    .expect("append");
    tx.commit().await.expect("commit");
}

pub async fn dialog(
    store: &PgStore,
    owner: UserId,
    peer: UserId,
) -> Option<application::ports::DialogRecord> {
    store
        .dialogs_of_peers(owner, &[peer])
        .await
        .expect("dialogs")
        .into_iter()
        .next()
}
