//! [`Store`] over Postgres: reads outside any write transaction. Every query is an index seek on an
//! index of the schema (named beside each query); none pages with a large OFFSET.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use application::ports::{
    AccountState, BlockRecord, DialogCursor, DialogList, DialogRecord, HistoryPage, LogEntry,
    SearchFilter, SeenUser, Store, StoreError, UserRecord, WriteTx,
};
use async_trait::async_trait;
use domain::history_window::HistoryWindow;
use domain::media::Photo;
use domain::message::OwnerMessage;
use domain::{BoxId, Pts, UserId};
use sqlx::{Connection, PgPool};
use tokio::sync::OnceCell;

use crate::error::db_error;
use crate::postgres::hot_reads;
use crate::postgres::partitions::{self, Partition};
use crate::postgres::profile_photos;
use crate::postgres::queries::{like_contains, messages_by_ids_rows, messages_in_order};
use crate::postgres::read_pool::{ReadConn, ReadPool};
use crate::postgres::replica::Replica;
use crate::postgres::rows::{
    self, get, user, BoxColumns, DialogColumns, LogColumns, BOX_COLUMNS, DIALOG_COLUMNS,
    LOG_COLUMNS, USER_COLUMNS,
};
use crate::postgres::write_tx::PgWriteTx;

/// Write transactions run on `pool`; every read of this adapter on `read`, so that a read never
/// waits for a connection behind writers that hold theirs across a commit's fsync
/// (docs/performance.md, "Reads"). Both are the same pool unless built with [`PgStore::with_read_pool`].
///
/// The hot reads are addressed to the account's partition once the first read has checked the
/// catalog ([`partitions::verify`]); until then, and for good if the check fails, they read the
/// parents.
///
/// With a [`Replica`] ([`PgStore::with_replica`]) the reads go to it when it has replayed the
/// reading account's last write made here, and to `read` otherwise (replica.rs).
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
    read: ReadPool,
    replica: Option<Arc<Replica>>,
    addressing: Arc<OnceCell<bool>>,
}

impl PgStore {
    pub fn new(pool: PgPool) -> Self {
        Self::with_read_pool(pool.clone(), ReadPool::Shared(pool))
    }

    /// Writes on `write`, reads on `read` (connections of the same database).
    pub fn with_read_pool(write: PgPool, read: ReadPool) -> Self {
        Self {
            pool: write,
            read,
            replica: None,
            addressing: Arc::new(OnceCell::new()),
        }
    }

    /// Reads on `replica` where it has the reader's writes; commits mark the accounts they changed
    /// in its freshness.
    pub fn with_replica(mut self, replica: Arc<Replica>) -> Self {
        self.replica = Some(replica);
        self
    }

    /// A connection for a read of `owner`'s own data: the replica's once it has `owner`'s writes
    /// made here, else the primary's read pool.
    async fn read_of(&self, owner: UserId) -> Result<ReadConn, StoreError> {
        match &self.replica {
            Some(replica) => replica.connection(Some(owner), &self.read).await,
            None => self.read.get().await,
        }
    }

    /// A connection for a read of no one account's data (as fresh as the replica).
    async fn read_any(&self) -> Result<ReadConn, StoreError> {
        match &self.replica {
            Some(replica) => replica.connection(None, &self.read).await,
            None => self.read.get().await,
        }
    }

    /// Whether reads are addressed to partitions (checking the catalog on `conn` the first time).
    async fn addressed(&self, conn: &mut ReadConn) -> Result<bool, StoreError> {
        let on = *self
            .addressing
            .get_or_try_init(|| async move {
                let ok = partitions::verify(conn).await.map_err(|e| conn.failed(e))?;
                if !ok {
                    tracing::warn!(
                        "the per-account tables are not partitioned as the migrations made them; \
                         reads go through the parent tables"
                    );
                }
                Ok::<bool, StoreError>(ok)
            })
            .await?;
        Ok(on)
    }

    /// The partition to address `owner`'s reads to, or `None` for the parents.
    async fn partition(
        &self,
        conn: &mut ReadConn,
        owner: UserId,
    ) -> Result<Option<Partition>, StoreError> {
        Ok(self.addressed(conn).await?.then(|| Partition::of(owner)))
    }

    /// Opens every read connection and prepares and plans the hot reads on each, for every
    /// partition ([`hot_reads::warm`]), so that calls do not pay each statement's first use on
    /// each connection (docs/performance.md, "Statements addressed to the partition"). Answers
    /// how many connections it warmed.
    ///
    /// A warmed connection is held until the last is warmed, so that the next one taken is a new
    /// one; calls meanwhile use (and open) the others. Run it when the server starts.
    pub async fn warm_read_connections(&self) -> Result<usize, StoreError> {
        let mut held: Vec<ReadConn> = Vec::new();
        let pools = std::iter::once(&self.read).chain(self.replica.as_deref().map(Replica::pool));
        for pool in pools {
            for _ in 0..pool.max_size() {
                let mut conn = pool.get().await?;
                let addressed = self.addressed(&mut conn).await?;
                hot_reads::warm(&mut conn, addressed)
                    .await
                    .map_err(|e| conn.failed(e))?;
                held.push(conn);
            }
        }
        Ok(held.len())
    }

    /// The write pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The box id a history page with `offset_date` starts below: one past the newest visible box
    /// older than the date (message_boxes_history_date), or 1 when every box is at or after it.
    async fn anchor_for_date(
        &self,
        owner: UserId,
        peer: UserId,
        offset_date: i32,
    ) -> Result<i64, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let newest_older: Option<i32> = sqlx::query_scalar(
            "SELECT box_id FROM message_boxes \
             WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted AND date < $3 \
             ORDER BY date DESC, box_id DESC LIMIT 1",
        )
        .bind(owner.get())
        .bind(peer.get())
        .bind(offset_date)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        Ok(newest_older.map_or(1, |b| i64::from(b) + 1))
    }
}

/// The bounds of a window as bigint parameters: an absent upper bound is above every int4 box id.
struct Bounds {
    /// The page's older part is below this, its newer part at or above it.
    anchor: Option<i64>,
    max_exclusive: i64,
    min_exclusive: i64,
}

impl Bounds {
    fn new(anchor: Option<i64>, w: &HistoryWindow) -> Self {
        Self {
            anchor,
            max_exclusive: if w.max_id > 0 {
                i64::from(w.max_id)
            } else {
                i64::MAX
            },
            min_exclusive: i64::from(w.min_id),
        }
    }
    fn older_below(&self) -> i64 {
        self.anchor.unwrap_or(i64::MAX).min(self.max_exclusive)
    }
}

/// The head of a getHistory answer as SQL over `$1` (owner) and `$2` (peer): whether the peer's
/// account exists (users primary key) and the chat's message count (dialogs primary key).
const HISTORY_HEAD: &str = "SELECT ($2 = $1 OR EXISTS (SELECT 1 FROM users WHERE id = $2)) AS peer_exists, \
     COALESCE((SELECT message_count FROM dialogs WHERE user_id = $1 AND peer_user_id = $2), 0)::bigint AS total";

/// The account's state as SQL over `$1`: user_sequences primary key, the owner's dialogs partition.
const STATE_HEAD: &str = "SELECT COALESCE((SELECT pts FROM user_sequences WHERE user_id = $1), 0) AS head_pts, \
     COALESCE((SELECT sum(unread_count) FROM dialogs WHERE user_id = $1), 0)::bigint AS head_unread";

/// The statements of the hot reads, public so that the bench's pgbench baseline
/// (bench/src/readsql.rs) runs exactly the text the server runs. Each is given for the account's
/// partition ([`Partition`]), or for the parents with `None`: every row each one reads from a
/// partitioned table is `$1`'s.
pub mod statements {
    use std::sync::LazyLock;

    use super::{HISTORY_HEAD, STATE_HEAD};
    use crate::postgres::partitions::{Addressed, Partition};
    use crate::postgres::rows::{box_columns_as, BOX_COLUMNS, DIALOG_COLUMNS, LOG_COLUMNS};

    /// `$1` viewer, `$2` the ids (bigint[]); the viewer's contacts and who has the viewer as a
    /// contact are in the viewer's partitions (`users` and `profile_photos` are not partitioned).
    pub fn users_seen_by(p: Option<Partition>) -> &'static str {
        static SQL: LazyLock<Addressed> =
            LazyLock::new(|| Addressed::new(USERS_SEEN_BY, &["contacts", "reverse_contacts"]));
        SQL.get(p)
    }

    const USERS_SEEN_BY: &str =
        "SELECT u.id, u.phone AS user_phone, u.first_name AS user_first_name, u.last_name AS user_last_name, \
           c.contact_user_id, c.first_name, c.last_name, c.phone, c.imported, c.date, \
           EXISTS (SELECT 1 FROM reverse_contacts r WHERE r.contact_user_id = $1 AND r.owner_user_id = u.id) AS has_viewer, \
           (SELECT jsonb_build_object('id', pp.photo_id, 'stripped', pp.photo->'stripped') \
            FROM profile_photos pp WHERE pp.owner_user_id = u.id \
            ORDER BY pp.set_pts DESC LIMIT 1) AS profile_photo \
         FROM users u LEFT JOIN contacts c ON c.owner_user_id = $1 AND c.contact_user_id = u.id \
         WHERE u.id = ANY($2)";

    /// `$1` owner, `$2` peer, `$3` below this box id, `$4` above this one, `$5` skip, `$6` limit.
    pub fn history_page(p: Option<Partition>) -> &'static str {
        static SQL: LazyLock<Addressed> = LazyLock::new(|| {
            Addressed::new(
                &format!(
                    "SELECT h.peer_exists, h.total, b.* FROM ({HISTORY_HEAD}) h \
                     LEFT JOIN LATERAL (SELECT {BOX_COLUMNS} FROM message_boxes \
                       WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted AND box_id < $3 AND box_id > $4 \
                       ORDER BY box_id DESC OFFSET $5 LIMIT $6) b ON h.peer_exists"
                ),
                &["dialogs", "message_boxes"],
            )
        });
        SQL.get(p)
    }

    /// `$1` owner: its pts and unread total.
    pub fn state_head(p: Option<Partition>) -> &'static str {
        static SQL: LazyLock<Addressed> =
            LazyLock::new(|| Addressed::new(STATE_HEAD, &["dialogs"]));
        SQL.get(p)
    }

    /// `$1` owner, `$2` after this pts, `$3` limit.
    pub fn difference(p: Option<Partition>) -> &'static str {
        static SQL: LazyLock<Addressed> = LazyLock::new(|| {
            Addressed::new(
                &format!(
                    "SELECT h.head_pts, h.head_unread, e.* FROM ({STATE_HEAD}) h \
                     LEFT JOIN LATERAL (SELECT {LOG_COLUMNS} FROM user_update_events \
                       WHERE user_id = $1 AND pts > $2 ORDER BY pts LIMIT $3) e ON h.head_pts > $2"
                ),
                &["dialogs", "user_update_events"],
            )
        });
        SQL.get(p)
    }

    /// `$1` owner, `$2` folder, `$3` limit, `$4` room for the pins, `$5`..`$7` the cursor (used
    /// only when `cursor`).
    pub fn dialog_list(cursor: bool, p: Option<Partition>) -> &'static str {
        const TABLES: [&str; 3] = ["dialogs", "notify_settings", "message_boxes"];
        static AFTER: LazyLock<Addressed> =
            LazyLock::new(|| Addressed::new(&dialog_list_sql(true), &TABLES));
        static FIRST: LazyLock<Addressed> =
            LazyLock::new(|| Addressed::new(&dialog_list_sql(false), &TABLES));
        if cursor {
            AFTER.get(p)
        } else {
            FIRST.get(p)
        }
    }

    fn dialog_list_sql(cursor: bool) -> String {
        const ORDER: &str = "top_message_date DESC, top_message DESC, peer_user_id DESC";
        let after = if cursor {
            "AND (top_message_date, top_message, peer_user_id) < ($5, $6, $7)"
        } else {
            // The same placeholders, unused, so one statement text serves both.
            "AND ($5::int, $6::int, $7::bigint) IS NOT NULL"
        };
        let tops = box_columns_as("m", "top_");
        // The notification settings of DIALOG_COLUMNS are read by `dialogs.user_id`, which is $1.
        format!(
            "WITH pins AS ( \
               SELECT {DIALOG_COLUMNS}, row_number() OVER (ORDER BY pinned_order, peer_user_id) AS ord FROM dialogs \
               WHERE user_id = $1 AND folder_id = $2 AND pinned_order IS NOT NULL), \
             page AS ( \
               SELECT {DIALOG_COLUMNS}, row_number() OVER (ORDER BY {ORDER}) AS ord FROM dialogs \
               WHERE user_id = $1 AND folder_id = $2 {after} ORDER BY {ORDER} \
               LIMIT $3 + CASE WHEN $4 THEN (SELECT count(*) FROM pins) ELSE 0 END), \
             listed AS (SELECT 0 AS part, * FROM pins UNION ALL SELECT 1 AS part, * FROM page) \
             SELECT (SELECT count(*) FROM dialogs WHERE user_id = $1 AND folder_id = $2) AS total, l.*, {tops} \
             FROM (SELECT 1) AS one LEFT JOIN listed l ON true \
             LEFT JOIN message_boxes m ON m.owner_user_id = $1 AND m.box_id = l.top_message AND NOT m.deleted \
             ORDER BY l.part, l.ord"
        )
    }

    /// `$1` owner, `$2` box ids (int[]).
    pub fn messages_by_ids(p: Option<Partition>) -> &'static str {
        crate::postgres::queries::messages_by_ids_sql(p)
    }
}

fn account_state_of(row: &sqlx::postgres::PgRow) -> Result<AccountState, StoreError> {
    Ok(AccountState {
        pts: rows::pts(get(row, "head_pts")?)?,
        unread_total: get(row, "head_unread")?,
    })
}

/// Whether a difference's head (its first row) is at a pts older than `after`, the client's.
fn behind(rows: &[sqlx::postgres::PgRow], after: Pts) -> Result<bool, StoreError> {
    match rows.first() {
        Some(head) => Ok(account_state_of(head)?.pts < after),
        None => Ok(false),
    }
}

#[async_trait]
impl Store for PgStore {
    async fn begin(&self) -> Result<Box<dyn WriteTx>, StoreError> {
        let tx = PgWriteTx::begin(&self.pool).await?;
        Ok(Box::new(match &self.replica {
            Some(replica) => tx.noting_commits(replica.freshness().clone(), self.read.clone()),
            None => tx,
        }))
    }

    async fn users(&self, ids: &[UserId]) -> Result<Vec<UserRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let raw: Vec<i64> = ids.iter().map(|u| u.get()).collect();
        let mut conn = self.read_any().await?;
        let rows = sqlx::query(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE id = ANY($1)"
        ))
        .bind(&raw)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        rows.iter().map(user).collect()
    }

    // users primary key; the viewer's contacts by their primary key, who has the viewer by theirs.
    async fn users_seen_by(
        &self,
        viewer: UserId,
        ids: &[UserId],
    ) -> Result<Vec<SeenUser>, StoreError> {
        use crate::postgres::queries::contact;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let raw: Vec<i64> = ids.iter().map(|u| u.get()).collect();
        let mut conn = self.read_of(viewer).await?;
        let p = self.partition(&mut conn, viewer).await?;
        let rows = hot_reads::users_seen_by(&mut conn, p, viewer, &raw)
            .await
            .map_err(|e| conn.failed(e))?;
        rows.iter()
            .map(|row| {
                let contact = match get::<Option<i64>>(row, "contact_user_id")? {
                    Some(_) => Some(contact(row)?),
                    None => None,
                };
                Ok(SeenUser {
                    record: UserRecord {
                        id: rows::user_id(get(row, "id")?, "users.id")?,
                        phone: get(row, "user_phone")?,
                        first_name: get(row, "user_first_name")?,
                        last_name: get(row, "user_last_name")?,
                        photo: rows::user_photo(get(row, "profile_photo")?)?,
                    },
                    contact,
                    has_viewer: get(row, "has_viewer")?,
                })
            })
            .collect()
    }

    async fn history_page(
        &self,
        owner: UserId,
        peer: UserId,
        w: &HistoryWindow,
    ) -> Result<HistoryPage, StoreError> {
        if w.offset_date != 0 || (w.offset_id > 0 && w.newer_count() > 0) {
            // A page around a date or reaching above its anchor: the head, then the page.
            let (peer_exists, count): (bool, i64) = {
                let mut conn = self.read_of(owner).await?;
                sqlx::query_as(HISTORY_HEAD)
                    .bind(owner.get())
                    .bind(peer.get())
                    .fetch_one(&mut *conn)
                    .await
                    .map_err(|e| conn.failed(e))?
            };
            let messages = if peer_exists {
                self.history(owner, peer, w).await?
            } else {
                Vec::new()
            };
            return Ok(HistoryPage {
                peer_exists,
                count,
                messages,
            });
        }
        // The usual page (the newest, or older than an id): head and page in one statement,
        // message_boxes_history as in `history`.
        let b = Bounds::new((w.offset_id > 0).then(|| i64::from(w.offset_id)), w);
        let mut conn = self.read_of(owner).await?;
        let p = self.partition(&mut conn, owner).await?;
        let page = hot_reads::PageArgs {
            below: b.older_below(),
            above: b.min_exclusive,
            skip: i64::from(w.older_skip()),
            limit: i64::from(w.older_count()),
        };
        let rows = hot_reads::history_page(&mut conn, p, owner, peer, &page)
            .await
            .map_err(|e| conn.failed(e))?;
        let Some(first) = rows.first() else {
            return Err(StoreError::Bug("history head answered no row".into()));
        };
        let at = BoxColumns::find(first, "")?;
        let mut messages = Vec::with_capacity(rows.len());
        for row in &rows {
            if at.present(row)? {
                messages.push(at.read(row)?);
            }
        }
        Ok(HistoryPage {
            peer_exists: get(first, "peer_exists")?,
            count: get(first, "total")?,
            messages,
        })
    }

    async fn account_state(&self, owner: UserId) -> Result<AccountState, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let p = self.partition(&mut conn, owner).await?;
        let row = hot_reads::state_head(&mut conn, p, owner)
            .await
            .map_err(|e| conn.failed(e))?;
        account_state_of(&row)
    }

    // The state, then the log's primary key (user_id, pts), in one statement.
    async fn difference(
        &self,
        owner: UserId,
        after: Pts,
        limit: i64,
    ) -> Result<(AccountState, Vec<LogEntry>), StoreError> {
        let mut conn = self.read_of(owner).await?;
        let p = self.partition(&mut conn, owner).await?;
        let mut rows = hot_reads::difference(&mut conn, p, owner, after.get(), limit)
            .await
            .map_err(|e| conn.failed(e))?;
        if let Some(replica) = self.replica.as_deref() {
            if behind(&rows, after)? {
                // The client has seen a pts the replica has not replayed yet (written through
                // another instance): answered from the primary, never older than the client's.
                drop(conn);
                replica.counts.on_primary.fetch_add(1, Ordering::Relaxed);
                let mut conn = self.read.get().await?;
                rows = hot_reads::difference(&mut conn, p, owner, after.get(), limit)
                    .await
                    .map_err(|e| conn.failed(e))?;
            }
        }
        let Some(first) = rows.first() else {
            return Err(StoreError::Bug("state head answered no row".into()));
        };
        let state = account_state_of(first)?;
        let at = LogColumns::find(first, "")?;
        let mut entries = Vec::with_capacity(rows.len());
        for row in &rows {
            if at.present(row)? {
                entries.push(at.read(row)?);
            }
        }
        Ok((state, entries))
    }

    // dialogs_pinned for the pins, dialogs_order for the page, the dialogs partition for the count,
    // message_boxes' primary key for each top message: one statement.
    async fn dialog_list(
        &self,
        owner: UserId,
        folder_id: i16,
        cursor: Option<DialogCursor>,
        limit: i32,
        extra_for_pins: bool,
    ) -> Result<DialogList, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let p = self.partition(&mut conn, owner).await?;
        let limit = i64::from(limit.max(0));
        let rows = hot_reads::dialog_list(
            &mut conn,
            p,
            owner,
            folder_id,
            cursor,
            limit,
            extra_for_pins,
        )
        .await
        .map_err(|e| conn.failed(e))?;
        let mut list = DialogList {
            pinned: Vec::new(),
            page: Vec::new(),
            count: 0,
            top_messages: Vec::new(),
        };
        let Some(first) = rows.first() else {
            return Err(StoreError::Bug("dialog list answered no row".into()));
        };
        let (dialog_at, top_at) = (
            DialogColumns::find(first, "")?,
            BoxColumns::find(first, "top_")?,
        );
        for row in &rows {
            list.count = get(row, "total")?;
            let Some(part) = get::<Option<i32>>(row, "part")? else {
                continue;
            };
            let d = dialog_at.read(row)?;
            if top_at.present(row)?
                && !list
                    .top_messages
                    .iter()
                    .any(|m| m.id.get() == d.top_message)
            {
                list.top_messages.push(top_at.read(row)?);
            }
            if part == 0 {
                list.pinned.push(d);
            } else {
                list.page.push(d);
            }
        }
        Ok(list)
    }

    async fn profile_photos(&self, owner: UserId) -> Result<Vec<Photo>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        profile_photos::of_owner(&mut *conn, owner).await
    }

    // The owner's dialogs partition and its reverse_contacts partition.
    async fn profile_watchers(&self, owner: UserId, limit: i64) -> Result<Vec<UserId>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let raw: Vec<i64> = sqlx::query_scalar(
            "SELECT peer_user_id FROM dialogs WHERE user_id = $1 AND peer_user_id <> $1 \
             UNION SELECT owner_user_id FROM reverse_contacts WHERE contact_user_id = $1 AND owner_user_id <> $1 \
             LIMIT $2",
        )
        .bind(owner.get())
        .bind(limit)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        raw.into_iter()
            .map(|id| rows::user_id(id, "watcher"))
            .collect()
    }

    async fn user_by_phone(&self, phone: &str) -> Result<Option<UserRecord>, StoreError> {
        let mut conn = self.read.get().await?;
        let row = sqlx::query(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE phone = $1"
        ))
        .bind(phone)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        row.as_ref().map(user).transpose()
    }

    // dialogs_order: (user_id, folder_id, top_message_date DESC, top_message DESC, peer_user_id DESC).
    async fn dialogs_page(
        &self,
        owner: UserId,
        folder_id: i16,
        cursor: Option<DialogCursor>,
        limit: i32,
    ) -> Result<Vec<DialogRecord>, StoreError> {
        let limit = i64::from(limit.max(0));
        let mut conn = self.read_of(owner).await?;
        let rows = match cursor {
            None => sqlx::query(&format!(
                "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND folder_id = $2 \
                 ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC LIMIT $3"
            ))
            .bind(owner.get())
            .bind(folder_id)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| conn.failed(e))?,
            Some(c) => sqlx::query(&format!(
                "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND folder_id = $2 \
                   AND (top_message_date, top_message, peer_user_id) < ($3, $4, $5) \
                 ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC LIMIT $6"
            ))
            .bind(owner.get())
            .bind(folder_id)
            .bind(c.top_message_date)
            .bind(c.top_message)
            .bind(c.peer_id)
            .bind(limit)
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| conn.failed(e))?,
        };
        rows::dialogs(&rows)
    }

    async fn dialogs_count(&self, owner: UserId, folder_id: i16) -> Result<i64, StoreError> {
        let mut conn = self.read_of(owner).await?;
        sqlx::query_scalar("SELECT count(*) FROM dialogs WHERE user_id = $1 AND folder_id = $2")
            .bind(owner.get())
            .bind(folder_id)
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| conn.failed(e))
    }

    /// (peer, top_message, top_message_date) of every dialog in the folder, in list order.
    async fn dialogs_hash_input(
        &self,
        owner: UserId,
        folder_id: i16,
    ) -> Result<Vec<(i64, i32, i32)>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        sqlx::query_as(
            "SELECT peer_user_id, top_message, top_message_date FROM dialogs WHERE user_id = $1 AND folder_id = $2 \
             ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC",
        )
        .bind(owner.get())
        .bind(folder_id)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))
    }

    /// The dialogs with these peers that exist, in the order of `peers`.
    async fn dialogs_of_peers(
        &self,
        owner: UserId,
        peers: &[UserId],
    ) -> Result<Vec<DialogRecord>, StoreError> {
        if peers.is_empty() {
            return Ok(Vec::new());
        }
        let raw: Vec<i64> = peers.iter().map(|u| u.get()).collect();
        let mut conn = self.read_of(owner).await?;
        let rows = sqlx::query(&format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND peer_user_id = ANY($2)"
        ))
        .bind(owner.get())
        .bind(&raw)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        let mut found: HashMap<UserId, DialogRecord> = HashMap::with_capacity(rows.len());
        for d in rows::dialogs(&rows)? {
            found.insert(d.peer_id, d);
        }
        Ok(peers.iter().filter_map(|p| found.remove(p)).collect())
    }

    // message_boxes_history: (owner_user_id, peer_user_id, box_id) WHERE NOT deleted.
    async fn history(
        &self,
        owner: UserId,
        peer: UserId,
        w: &HistoryWindow,
    ) -> Result<Vec<OwnerMessage>, StoreError> {
        let anchor = if w.offset_id > 0 {
            Some(i64::from(w.offset_id))
        } else if w.offset_date > 0 {
            Some(self.anchor_for_date(owner, peer, w.offset_date).await?)
        } else {
            None
        };
        let b = Bounds::new(anchor, w);
        let mut page = Vec::with_capacity(usize::try_from(w.limit).unwrap_or(0));
        let mut conn = self.read_of(owner).await?;
        if let (Some(anchor), true) = (b.anchor, w.newer_count() > 0) {
            let rows = sqlx::query(&format!(
                "SELECT {BOX_COLUMNS} FROM message_boxes \
                 WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted \
                   AND box_id >= $3 AND box_id < $4 AND box_id > $5 \
                 ORDER BY box_id ASC LIMIT $6"
            ))
            .bind(owner.get())
            .bind(peer.get())
            .bind(anchor)
            .bind(b.max_exclusive)
            .bind(b.min_exclusive)
            .bind(i64::from(w.newer_count()))
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| conn.failed(e))?;
            page = rows::owner_messages(&rows)?;
            page.reverse();
        }
        if w.older_count() > 0 {
            // older_skip is at most 100 (add_offset is clamped), so this OFFSET stays on the seek.
            let rows = sqlx::query(&format!(
                "SELECT {BOX_COLUMNS} FROM message_boxes \
                 WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted AND box_id < $3 AND box_id > $4 \
                 ORDER BY box_id DESC OFFSET $5 LIMIT $6"
            ))
            .bind(owner.get())
            .bind(peer.get())
            .bind(b.older_below())
            .bind(b.min_exclusive)
            .bind(i64::from(w.older_skip()))
            .bind(i64::from(w.older_count()))
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| conn.failed(e))?;
            page.extend(rows::owner_messages(&rows)?);
        }
        Ok(page)
    }

    async fn history_count(&self, owner: UserId, peer: UserId) -> Result<i64, StoreError> {
        let mut conn = self.read_of(owner).await?;
        sqlx::query_scalar(
            "SELECT count(*) FROM message_boxes WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted",
        )
        .bind(owner.get())
        .bind(peer.get())
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))
    }

    /// Visible boxes in the order of `ids` (missing ones and repeats left out).
    async fn messages(
        &self,
        owner: UserId,
        ids: &[BoxId],
    ) -> Result<Vec<OwnerMessage>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let p = self.partition(&mut conn, owner).await?;
        let rows = messages_by_ids_rows(&mut *conn, owner, ids, p)
            .await
            .map_err(|e| conn.failed(e))?;
        messages_in_order(&rows, ids)
    }

    // message_boxes_search: gin (owner_user_id, text gin_trgm_ops) WHERE NOT deleted. The window is
    // the history window over the owner's box ids (one sequence across all chats); offset_date
    // bounds the older part by date directly, as there is no date index across chats. The count is
    // of every match of the query (and peer), whatever the window.
    async fn search(
        &self,
        owner: UserId,
        filter: &SearchFilter,
        query: &str,
        w: &HistoryWindow,
    ) -> Result<(Vec<OwnerMessage>, i64), StoreError> {
        let pattern = like_contains(query);
        let peer_raw = filter.peer.map(UserId::get);
        let from_raw = filter.from.map(UserId::get);
        let anchor = (w.offset_id > 0).then(|| i64::from(w.offset_id));
        let b = Bounds::new(anchor, w);
        // Sender and date bounds are part of the match, so pages are full and the count is exact.
        const BASE: &str = "owner_user_id = $1 AND NOT deleted AND text ILIKE $2 ESCAPE '\\' \
                             AND ($3::bigint IS NULL OR peer_user_id = $3) \
                             AND ($4::bigint IS NULL OR sender_user_id = $4) \
                             AND ($5::int = 0 OR date >= $5) AND ($6::int = 0 OR date <= $6)";
        // The classes are the domain's own names (never a client's text), so they are inlined.
        let media = match filter.media {
            None => String::new(),
            Some(classes) => format!(
                " AND media_class IN ({})",
                classes
                    .iter()
                    .map(|c| format!("'{}'", c.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let match_sql = format!("{BASE}{media}");
        let match_sql = match_sql.as_str();
        // Planned for its values: whether a trigram index beats the owner's boxes depends on the
        // pattern, and the optional filters fold away. The serving pools plan generically, which
        // suits the seeks everything else runs, not this (infrastructure::postgres::PlanCacheMode).
        let mut conn = self.read_of(owner).await?;
        let mut tx = conn.begin().await.map_err(db_error)?;
        sqlx::query("SET LOCAL plan_cache_mode = force_custom_plan")
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        let mut page = Vec::new();
        if let (Some(anchor), true) = (b.anchor, w.newer_count() > 0) {
            let rows = sqlx::query(&format!(
                "SELECT {BOX_COLUMNS} FROM message_boxes WHERE {match_sql} \
                   AND box_id >= $7 AND box_id < $8 AND box_id > $9 \
                 ORDER BY box_id ASC LIMIT $10"
            ))
            .bind(owner.get())
            .bind(&pattern)
            .bind(peer_raw)
            .bind(from_raw)
            .bind(filter.min_date)
            .bind(filter.max_date)
            .bind(anchor)
            .bind(b.max_exclusive)
            .bind(b.min_exclusive)
            .bind(i64::from(w.newer_count()))
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?;
            page = rows::owner_messages(&rows)?;
            page.reverse();
        }
        if w.older_count() > 0 {
            let rows = sqlx::query(&format!(
                "SELECT {BOX_COLUMNS} FROM message_boxes WHERE {match_sql} \
                   AND box_id < $7 AND box_id > $8 AND ($9 = 0 OR date < $9) \
                 ORDER BY box_id DESC OFFSET $10 LIMIT $11"
            ))
            .bind(owner.get())
            .bind(&pattern)
            .bind(peer_raw)
            .bind(from_raw)
            .bind(filter.min_date)
            .bind(filter.max_date)
            .bind(b.older_below())
            .bind(b.min_exclusive)
            .bind(w.offset_date)
            .bind(i64::from(w.older_skip()))
            .bind(i64::from(w.older_count()))
            .fetch_all(&mut *tx)
            .await
            .map_err(db_error)?;
            page.extend(rows::owner_messages(&rows)?);
        }
        let count: i64 = sqlx::query_scalar(&format!(
            "SELECT count(*) FROM message_boxes WHERE {match_sql}"
        ))
        .bind(owner.get())
        .bind(&pattern)
        .bind(peer_raw)
        .bind(from_raw)
        .bind(filter.min_date)
        .bind(filter.max_date)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok((page, count))
    }

    async fn pts(&self, owner: UserId) -> Result<Pts, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let raw: Option<i32> =
            sqlx::query_scalar("SELECT pts FROM user_sequences WHERE user_id = $1")
                .bind(owner.get())
                .fetch_optional(&mut *conn)
                .await
                .map_err(|e| conn.failed(e))?;
        raw.map_or(Ok(Pts::ZERO), rows::pts)
    }

    async fn unread_total(&self, owner: UserId) -> Result<i64, StoreError> {
        let mut conn = self.read_of(owner).await?;
        sqlx::query_scalar(
            "SELECT COALESCE(sum(unread_count), 0)::bigint FROM dialogs WHERE user_id = $1",
        )
        .bind(owner.get())
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))
    }

    // The log's primary key (user_id, pts).
    async fn log_after(
        &self,
        owner: UserId,
        after: Pts,
        limit: i64,
    ) -> Result<Vec<LogEntry>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let rows = sqlx::query(&format!(
            "SELECT {LOG_COLUMNS} FROM user_update_events WHERE user_id = $1 AND pts > $2 ORDER BY pts LIMIT $3"
        ))
        .bind(owner.get())
        .bind(after.get())
        .bind(limit.max(0))
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        rows::log_entries(&rows)
    }

    // user_update_events_outbox_read: the expressions must stay exactly those of the partial index.
    async fn outbox_read_date(
        &self,
        owner: UserId,
        peer: UserId,
        msg_id: BoxId,
    ) -> Result<Option<i32>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        sqlx::query_scalar(
            "SELECT min((payload ->> 'date')::integer) FROM user_update_events \
             WHERE user_id = $1 AND kind = 'read_history_outbox' \
               AND ((payload ->> 'peer_id')::bigint) = $2 AND ((payload ->> 'max_id')::integer) >= $3",
        )
        .bind(owner.get())
        .bind(peer.get())
        .bind(msg_id.get())
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))
    }

    // contact_blocks_order: (owner_user_id, date DESC, blocked_user_id DESC); pages are at most 100.
    async fn blocked(
        &self,
        owner: UserId,
        offset: i32,
        limit: i32,
    ) -> Result<(Vec<BlockRecord>, i64), StoreError> {
        let mut conn = self.read_of(owner).await?;
        let rows: Vec<(i64, i32)> = sqlx::query_as(
            "SELECT blocked_user_id, date FROM contact_blocks WHERE owner_user_id = $1 \
             ORDER BY date DESC, blocked_user_id DESC OFFSET $2 LIMIT $3",
        )
        .bind(owner.get())
        .bind(i64::from(offset.max(0)))
        .bind(i64::from(limit.max(0)))
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        let count: i64 =
            sqlx::query_scalar("SELECT count(*) FROM contact_blocks WHERE owner_user_id = $1")
                .bind(owner.get())
                .fetch_one(&mut *conn)
                .await
                .map_err(|e| conn.failed(e))?;
        let records = rows
            .into_iter()
            .map(|(peer, date)| {
                Ok(BlockRecord {
                    peer_id: rows::user_id(peer, "blocked_user_id")?,
                    date,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        Ok((records, count))
    }

    // dialogs_pinned: (user_id, folder_id, pinned_order) WHERE pinned_order IS NOT NULL.
    async fn pinned_dialogs(
        &self,
        owner: UserId,
        folder_id: i16,
    ) -> Result<Vec<DialogRecord>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let rows = sqlx::query(&format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND folder_id = $2 AND pinned_order IS NOT NULL \
             ORDER BY pinned_order, peer_user_id"
        ))
        .bind(owner.get())
        .bind(folder_id)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        rows::dialogs(&rows)
    }

    // The owner's partition of dialogs; a dialog filter is applied to the whole list.
    async fn all_dialogs(&self, owner: UserId) -> Result<Vec<DialogRecord>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let rows = sqlx::query(&format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 \
             ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC"
        ))
        .bind(owner.get())
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        rows::dialogs(&rows)
    }

    // dialogs_unread_mark: (user_id) WHERE unread_mark.
    async fn unread_marked(&self, owner: UserId) -> Result<Vec<UserId>, StoreError> {
        let mut conn = self.read_of(owner).await?;
        let raw: Vec<i64> = sqlx::query_scalar(
            "SELECT peer_user_id FROM dialogs WHERE user_id = $1 AND unread_mark \
             ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC",
        )
        .bind(owner.get())
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        raw.into_iter()
            .map(|p| rows::user_id(p, "peer_user_id"))
            .collect()
    }

    async fn dialog_filters(
        &self,
        owner: UserId,
    ) -> Result<application::ports::FilterSet, StoreError> {
        let mut conn = self.read_of(owner).await?;
        crate::postgres::queries::dialog_filters(&mut conn, owner).await
    }

    async fn contacts(
        &self,
        owner: UserId,
    ) -> Result<Vec<application::ports::ContactRecord>, StoreError> {
        use crate::postgres::queries::{contact, CONTACT_COLUMNS};
        let mut conn = self.read_of(owner).await?;
        let rows = sqlx::query(&format!(
            "SELECT {CONTACT_COLUMNS} FROM contacts WHERE owner_user_id = $1 ORDER BY contact_user_id"
        ))
        .bind(owner.get())
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        rows.iter().map(contact).collect()
    }

    // The primary key for the viewer's own contacts; reverse_contacts (one partition) for who
    // has the viewer.
    async fn contact_links(
        &self,
        viewer: UserId,
        ids: &[UserId],
    ) -> Result<(Vec<application::ports::ContactRecord>, Vec<UserId>), StoreError> {
        use crate::postgres::queries::{contact, CONTACT_COLUMNS};
        if ids.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let raw: Vec<i64> = ids.iter().map(|u| u.get()).collect();
        let mut conn = self.read_of(viewer).await?;
        let rows = sqlx::query(&format!(
            "SELECT {CONTACT_COLUMNS} FROM contacts WHERE owner_user_id = $1 AND contact_user_id = ANY($2)"
        ))
        .bind(viewer.get())
        .bind(&raw)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        let mine = rows.iter().map(contact).collect::<Result<Vec<_>, _>>()?;
        let theirs: Vec<i64> = sqlx::query_scalar(
            "SELECT owner_user_id FROM reverse_contacts WHERE contact_user_id = $1 AND owner_user_id = ANY($2)",
        )
        .bind(viewer.get())
        .bind(&raw)
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| conn.failed(e))?;
        let theirs = theirs
            .into_iter()
            .map(|u| rows::user_id(u, "owner_user_id"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((mine, theirs))
    }

    async fn peer_bar_hidden(&self, owner: UserId, peer: UserId) -> Result<bool, StoreError> {
        let mut conn = self.read_of(owner).await?;
        crate::postgres::queries::bar_hidden(&mut *conn, owner, peer)
            .await
            .map_err(|e| conn.failed(e))
    }

    async fn notify_settings(
        &self,
        owner: UserId,
        peer: UserId,
    ) -> Result<domain::events::PeerNotify, StoreError> {
        let mut conn = self.read_of(owner).await?;
        crate::postgres::queries::notify_settings(&mut *conn, owner, peer)
            .await
            .map_err(|e| conn.failed(e))
    }
}
