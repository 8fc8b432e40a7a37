//! [`Store`] over Postgres: reads outside any write transaction. Every query is an index seek on an
//! index of the schema (named beside each query); none pages with a large OFFSET.

use std::collections::HashMap;

use application::ports::{
    BlockRecord, DialogCursor, DialogRecord, LogEntry, SearchFilter, Store, StoreError, UserRecord,
    WriteTx,
};
use async_trait::async_trait;
use domain::history_window::HistoryWindow;
use domain::message::OwnerMessage;
use domain::{BoxId, Pts, UserId};
use sqlx::PgPool;

use crate::error::db_error;
use crate::postgres::queries::{like_contains, messages_by_ids};
use crate::postgres::rows::{
    self, dialog, log_entry, owner_message, user, BOX_COLUMNS, DIALOG_COLUMNS, LOG_COLUMNS,
    USER_COLUMNS,
};
use crate::postgres::write_tx::PgWriteTx;

#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }

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
        let newest_older: Option<i32> = sqlx::query_scalar(
            "SELECT box_id FROM message_boxes \
             WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted AND date < $3 \
             ORDER BY date DESC, box_id DESC LIMIT 1",
        )
        .bind(owner.get())
        .bind(peer.get())
        .bind(offset_date)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
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

fn to_messages(rows: &[sqlx::postgres::PgRow]) -> Result<Vec<OwnerMessage>, StoreError> {
    rows.iter().map(owner_message).collect()
}

#[async_trait]
impl Store for PgStore {
    async fn begin(&self) -> Result<Box<dyn WriteTx>, StoreError> {
        Ok(Box::new(PgWriteTx::begin(&self.pool).await?))
    }

    async fn users(&self, ids: &[UserId]) -> Result<Vec<UserRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let raw: Vec<i64> = ids.iter().map(|u| u.get()).collect();
        let rows = sqlx::query(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE id = ANY($1)"
        ))
        .bind(&raw)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(user).collect()
    }

    async fn user_by_phone(&self, phone: &str) -> Result<Option<UserRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE phone = $1"
        ))
        .bind(phone)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
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
        let rows = match cursor {
            None => sqlx::query(&format!(
                "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND folder_id = $2 \
                 ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC LIMIT $3"
            ))
            .bind(owner.get())
            .bind(folder_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?,
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
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?,
        };
        rows.iter().map(dialog).collect()
    }

    async fn dialogs_count(&self, owner: UserId, folder_id: i16) -> Result<i64, StoreError> {
        sqlx::query_scalar("SELECT count(*) FROM dialogs WHERE user_id = $1 AND folder_id = $2")
            .bind(owner.get())
            .bind(folder_id)
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)
    }

    /// (peer, top_message, top_message_date) of every dialog in the folder, in list order.
    async fn dialogs_hash_input(
        &self,
        owner: UserId,
        folder_id: i16,
    ) -> Result<Vec<(i64, i32, i32)>, StoreError> {
        sqlx::query_as(
            "SELECT peer_user_id, top_message, top_message_date FROM dialogs WHERE user_id = $1 AND folder_id = $2 \
             ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC",
        )
        .bind(owner.get())
        .bind(folder_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)
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
        let rows = sqlx::query(&format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND peer_user_id = ANY($2)"
        ))
        .bind(owner.get())
        .bind(&raw)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        let mut found: HashMap<UserId, DialogRecord> = HashMap::with_capacity(rows.len());
        for row in &rows {
            let d = dialog(row)?;
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
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
            page = to_messages(&rows)?;
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
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
            page.extend(to_messages(&rows)?);
        }
        Ok(page)
    }

    async fn history_count(&self, owner: UserId, peer: UserId) -> Result<i64, StoreError> {
        sqlx::query_scalar(
            "SELECT count(*) FROM message_boxes WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted",
        )
        .bind(owner.get())
        .bind(peer.get())
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)
    }

    /// Visible boxes in the order of `ids` (missing ones and repeats left out).
    async fn messages(
        &self,
        owner: UserId,
        ids: &[BoxId],
    ) -> Result<Vec<OwnerMessage>, StoreError> {
        messages_by_ids(&self.pool, owner, ids).await
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
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
            page = to_messages(&rows)?;
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
            .fetch_all(&self.pool)
            .await
            .map_err(db_error)?;
            page.extend(to_messages(&rows)?);
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
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        Ok((page, count))
    }

    async fn pts(&self, owner: UserId) -> Result<Pts, StoreError> {
        let raw: Option<i32> =
            sqlx::query_scalar("SELECT pts FROM user_sequences WHERE user_id = $1")
                .bind(owner.get())
                .fetch_optional(&self.pool)
                .await
                .map_err(db_error)?;
        raw.map_or(Ok(Pts::ZERO), rows::pts)
    }

    async fn unread_total(&self, owner: UserId) -> Result<i64, StoreError> {
        sqlx::query_scalar(
            "SELECT COALESCE(sum(unread_count), 0)::bigint FROM dialogs WHERE user_id = $1",
        )
        .bind(owner.get())
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)
    }

    // The log's primary key (user_id, pts).
    async fn log_after(
        &self,
        owner: UserId,
        after: Pts,
        limit: i64,
    ) -> Result<Vec<LogEntry>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {LOG_COLUMNS} FROM user_update_events WHERE user_id = $1 AND pts > $2 ORDER BY pts LIMIT $3"
        ))
        .bind(owner.get())
        .bind(after.get())
        .bind(limit.max(0))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(log_entry).collect()
    }

    // user_update_events_outbox_read: the expressions must stay exactly those of the partial index.
    async fn outbox_read_date(
        &self,
        owner: UserId,
        peer: UserId,
        msg_id: BoxId,
    ) -> Result<Option<i32>, StoreError> {
        sqlx::query_scalar(
            "SELECT min((payload ->> 'date')::integer) FROM user_update_events \
             WHERE user_id = $1 AND kind = 'read_history_outbox' \
               AND ((payload ->> 'peer_id')::bigint) = $2 AND ((payload ->> 'max_id')::integer) >= $3",
        )
        .bind(owner.get())
        .bind(peer.get())
        .bind(msg_id.get())
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)
    }

    // contact_blocks_order: (owner_user_id, date DESC, blocked_user_id DESC); pages are at most 100.
    async fn blocked(
        &self,
        owner: UserId,
        offset: i32,
        limit: i32,
    ) -> Result<(Vec<BlockRecord>, i64), StoreError> {
        let rows: Vec<(i64, i32)> = sqlx::query_as(
            "SELECT blocked_user_id, date FROM contact_blocks WHERE owner_user_id = $1 \
             ORDER BY date DESC, blocked_user_id DESC OFFSET $2 LIMIT $3",
        )
        .bind(owner.get())
        .bind(i64::from(offset.max(0)))
        .bind(i64::from(limit.max(0)))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        let count: i64 =
            sqlx::query_scalar("SELECT count(*) FROM contact_blocks WHERE owner_user_id = $1")
                .bind(owner.get())
                .fetch_one(&self.pool)
                .await
                .map_err(db_error)?;
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
        let rows = sqlx::query(&format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND folder_id = $2 AND pinned_order IS NOT NULL \
             ORDER BY pinned_order, peer_user_id"
        ))
        .bind(owner.get())
        .bind(folder_id)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(dialog).collect()
    }

    // The owner's partition of dialogs; a dialog filter is applied to the whole list.
    async fn all_dialogs(&self, owner: UserId) -> Result<Vec<DialogRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 \
             ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC"
        ))
        .bind(owner.get())
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(dialog).collect()
    }

    // dialogs_unread_mark: (user_id) WHERE unread_mark.
    async fn unread_marked(&self, owner: UserId) -> Result<Vec<UserId>, StoreError> {
        let raw: Vec<i64> = sqlx::query_scalar(
            "SELECT peer_user_id FROM dialogs WHERE user_id = $1 AND unread_mark \
             ORDER BY top_message_date DESC, top_message DESC, peer_user_id DESC",
        )
        .bind(owner.get())
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        raw.into_iter()
            .map(|p| rows::user_id(p, "peer_user_id"))
            .collect()
    }

    async fn dialog_filters(
        &self,
        owner: UserId,
    ) -> Result<application::ports::FilterSet, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db_error)?;
        crate::postgres::queries::dialog_filters(&mut conn, owner).await
    }

    async fn contacts(
        &self,
        owner: UserId,
    ) -> Result<Vec<application::ports::ContactRecord>, StoreError> {
        use crate::postgres::queries::{contact, CONTACT_COLUMNS};
        let rows = sqlx::query(&format!(
            "SELECT {CONTACT_COLUMNS} FROM contacts WHERE owner_user_id = $1 ORDER BY contact_user_id"
        ))
        .bind(owner.get())
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.iter().map(contact).collect()
    }

    // The primary key for the viewer's own contacts; contacts_reverse for who has the viewer.
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
        let rows = sqlx::query(&format!(
            "SELECT {CONTACT_COLUMNS} FROM contacts WHERE owner_user_id = $1 AND contact_user_id = ANY($2)"
        ))
        .bind(viewer.get())
        .bind(&raw)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        let mine = rows.iter().map(contact).collect::<Result<Vec<_>, _>>()?;
        let theirs: Vec<i64> = sqlx::query_scalar(
            "SELECT owner_user_id FROM contacts WHERE contact_user_id = $1 AND owner_user_id = ANY($2)",
        )
        .bind(viewer.get())
        .bind(&raw)
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        let theirs = theirs
            .into_iter()
            .map(|u| rows::user_id(u, "owner_user_id"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((mine, theirs))
    }

    async fn peer_bar_hidden(&self, owner: UserId, peer: UserId) -> Result<bool, StoreError> {
        crate::postgres::queries::bar_hidden(&self.pool, owner, peer).await
    }

    async fn notify_settings(
        &self,
        owner: UserId,
        peer: UserId,
    ) -> Result<domain::events::PeerNotify, StoreError> {
        crate::postgres::queries::notify_settings(&self.pool, owner, peer).await
    }
}
