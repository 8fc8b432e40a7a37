//! [`WriteTx`] over one Postgres transaction.
//!
//! `lock_users` locks the accounts' `user_sequences` rows in ascending id order and keeps their
//! counters in memory; `next_box_id` and `append` advance them there. `append` runs the projectors
//! on the transaction's connection, so later reads in the same transaction see the event's effect:
//! at once for most events, while new messages wait and are projected together, with one
//! statement per table (`projections::apply_new_messages`), before the next read of an owner
//! with a message waiting and before any other event of such an owner is projected. The events
//! themselves are buffered and written with the counters by `flush` or at commit, in one
//! statement that also projects the new messages still waiting (`projections::inline`): a batch
//! of sends writes its boxes, dialogs, counters and events in one round trip. Dropping the
//! transaction without committing rolls everything back.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock};

use application::ports::{
    DialogRecord, Origin, PreflightKey, ReadProgress, SendChecks, SendPreflight, StoreError,
    StoredEvent, WriteTx,
};
use async_trait::async_trait;
use domain::events::UserEvent;
use domain::media::Photo;
use domain::message::OwnerMessage;
use domain::{BoxId, MessageId, Pts, UserId};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use crate::error::{db_error, projection_error};
use crate::postgres::queries::{archived_unmuted_sql, messages_by_ids_rows, messages_in_order};
use crate::postgres::read_pool::ReadPool;
use crate::postgres::replica::Freshness;
use crate::postgres::rows::{
    self, dialog, owner_message, BOX_COLUMNS, DIALOG_COLUMNS, EVENT_COLUMNS,
};

/// One locked account's counters: as last written to `user_sequences` (when locked, or by the
/// last `write_out`), and as advanced by this transaction.
#[derive(Debug, Clone, Copy)]
struct Counters {
    stored_pts: i32,
    stored_box_id: i32,
    pts: i32,
    box_id: i32,
}

/// An appended event waiting for commit.
#[derive(Debug)]
struct PendingEvent {
    user_id: i64,
    pts: i32,
    pts_count: i32,
    kind: &'static str,
    version: i16,
    /// Compact JSON, as `UserEvent::checked_payload` made it.
    payload: String,
    auth_key_id: i64,
    session_id: i64,
}

pub struct PgWriteTx {
    tx: Transaction<'static, Postgres>,
    /// The ids `lock_users` was asked for (None before it ran).
    requested: Option<HashSet<UserId>>,
    counters: HashMap<UserId, Counters>,
    /// Appended and not yet written (`write_out`).
    events: Vec<PendingEvent>,
    /// How many events this transaction appended in all (written or not).
    appended: usize,
    /// New messages appended but not yet projected (see the module's documentation).
    unprojected: Vec<(UserId, Pts, UserEvent)>,
    /// A message id `send_preflight` fetched with its reads, for the send's `next_message_id`.
    prefetched_message_id: Option<MessageId>,
    /// The answers of `prefetch_send_preflights` not yet used, each dropped as soon as an event
    /// appended since may have changed it.
    prefetched_preflights: HashMap<PreflightKey, Preflight>,
    /// What the in-memory state was at the last `mark` (None: no mark set).
    mark: Option<Mark>,
    /// With a read replica: where the accounts this transaction changed are marked once it
    /// committed, and the primary's read pool to ask for the WAL position on (replica.rs); not
    /// the write pool, where the answer would queue behind other batches' commits.
    noting: Option<(Arc<Freshness>, ReadPool)>,
}

/// What a send's preflight row says (`send_preflight`, `prefetch_send_preflights`).
#[derive(Debug)]
enum Preflight {
    /// A new send: its checks and its message id.
    New(SendChecks, MessageId),
    /// This random_id was used: the box as it is now, unedited, and its pts.
    Retry(OwnerMessage, Pts),
    /// This random_id was used and its box edited since: the first text comes from the log.
    RetryEdited,
}

impl Preflight {
    fn of_row(row: &sqlx::postgres::PgRow, self_chat: bool) -> Result<Self, StoreError> {
        if rows::get::<Option<i32>>(row, "box_id")?.is_some() {
            let found = owner_message(row)?;
            if found.edit_date.is_some() {
                return Ok(Preflight::RetryEdited);
            }
            return Ok(Preflight::Retry(found, rows::pts(rows::get(row, "pts")?)?));
        }
        Ok(Preflight::New(
            SendChecks {
                sender_blocked_peer: !self_chat && rows::get::<bool>(row, "sender_blocked_peer")?,
                peer_blocked_sender: !self_chat && rows::get::<bool>(row, "peer_blocked_sender")?,
                peer_archived_unmuted: !self_chat
                    && rows::get::<bool>(row, "peer_archived_unmuted")?,
            },
            MessageId(rows::get(row, "next_message_id")?),
        ))
    }
}

/// The in-memory state before one send of a batch (`WriteTx::mark`).
#[derive(Debug)]
struct Mark {
    counters: HashMap<UserId, Counters>,
    appended: usize,
}

impl PgWriteTx {
    /// A send's preflight answer as `send_preflight` gives it; a new send's message id is kept
    /// for its `next_message_id`.
    async fn answer_preflight(
        &mut self,
        answer: Preflight,
        sender: UserId,
        random_id: i64,
    ) -> Result<SendPreflight, StoreError> {
        match answer {
            Preflight::New(checks, id) => {
                self.prefetched_message_id = Some(id);
                Ok(SendPreflight::New(checks))
            }
            Preflight::Retry(found, pts) => Ok(SendPreflight::Retry(found, pts)),
            // Edited since: the message as first sent comes from its event (rare; a second trip).
            Preflight::RetryEdited => match self.find_by_random_id(sender, random_id).await? {
                Some((first, pts)) => Ok(SendPreflight::Retry(first, pts)),
                None => Err(StoreError::Bug(format!(
                    "the box of random_id {random_id} of user {sender} vanished"
                ))),
            },
        }
    }

    /// Drops the prefetched preflights `event`, appended to `owner`'s log, may have changed: a new
    /// message changes only the answer of a send of the same owner and random_id (a retry within
    /// the batch); any other event (a move out of the archive, say) every answer about its owner.
    fn forget_preflights_changed_by(&mut self, owner: UserId, event: &UserEvent) {
        if self.prefetched_preflights.is_empty() {
            return;
        }
        match event {
            UserEvent::NewMessage(e) => self
                .prefetched_preflights
                .retain(|k, _| !(k.sender == owner && e.message.random_id == Some(k.random_id))),
            _ => self
                .prefetched_preflights
                .retain(|k, _| k.sender != owner && k.peer != owner),
        }
    }

    pub async fn begin(pool: &PgPool) -> Result<Self, StoreError> {
        let tx = pool.begin().await.map_err(db_error)?;
        Ok(Self {
            tx,
            requested: None,
            counters: HashMap::new(),
            events: Vec::new(),
            appended: 0,
            unprojected: Vec::new(),
            prefetched_message_id: None,
            prefetched_preflights: HashMap::new(),
            mark: None,
            noting: None,
        })
    }

    /// Once committed, the accounts this transaction changed are marked in `freshness`, so that
    /// their reads on a replica wait for it (replica.rs).
    pub fn noting_commits(mut self, freshness: Arc<Freshness>, primary: ReadPool) -> Self {
        self.noting = Some((freshness, primary));
        self
    }

    /// Writes what is pending in one statement (a data-modifying CTE): the new messages'
    /// projections, the counters changed since they were last written and the buffered events.
    /// A send batch thus writes all of its sends in one round trip, at its flush before COMMIT.
    async fn write_out(&mut self) -> Result<(), StoreError> {
        if !projections::inline::fits(self.unprojected.len()) {
            self.project_new_messages().await?;
        }
        // What is left to project (all of it or nothing) goes into this statement.
        let run = new_messages_run(&self.unprojected);
        let changed: Vec<(&UserId, &Counters)> = self
            .counters
            .iter()
            .filter(|(_, c)| c.pts != c.stored_pts || c.box_id != c.stored_box_id)
            .collect();
        if changed.is_empty() && self.events.is_empty() && run.is_empty() {
            return Ok(());
        }
        let users: Vec<i64> = changed.iter().map(|(u, _)| u.get()).collect();
        let seq_pts: Vec<i32> = changed.iter().map(|(_, c)| c.pts).collect();
        let box_ids: Vec<i32> = changed.iter().map(|(_, c)| c.box_id).collect();
        let n = self.events.len();
        let mut user_ids = Vec::with_capacity(n);
        let mut pts = Vec::with_capacity(n);
        let mut counts = Vec::with_capacity(n);
        let mut kinds = Vec::with_capacity(n);
        let mut versions = Vec::with_capacity(n);
        let mut payloads = Vec::with_capacity(n);
        let mut auth_key_ids = Vec::with_capacity(n);
        let mut session_ids = Vec::with_capacity(n);
        for e in &self.events {
            user_ids.push(e.user_id);
            pts.push(e.pts);
            counts.push(e.pts_count);
            kinds.push(e.kind);
            versions.push(e.version);
            payloads.push(e.payload.as_str());
            auth_key_ids.push(e.auth_key_id);
            session_ids.push(e.session_id);
        }
        let q = if run.is_empty() {
            sqlx::query(write_out_sql(false))
        } else {
            // The batch's boxes and dialogs in the same statement: one round trip, not three.
            projections::inline::bind_new_messages(sqlx::query(write_out_sql(true)), &run)
                .map_err(projection_error)?
        };
        q.bind(&users)
            .bind(&seq_pts)
            .bind(&box_ids)
            .bind(&user_ids)
            .bind(&pts)
            .bind(&counts)
            .bind(&kinds)
            .bind(&versions)
            .bind(&payloads)
            .bind(&auth_key_ids)
            .bind(&session_ids)
            .execute(&mut *self.tx)
            .await
            .map_err(db_error)?;
        drop(run);
        self.unprojected.clear();
        self.events.clear();
        for c in self.counters.values_mut() {
            c.stored_pts = c.pts;
            c.stored_box_id = c.box_id;
        }
        Ok(())
    }

    /// Projects the new messages appended since the last flush, one statement per table.
    async fn project_new_messages(&mut self) -> Result<(), StoreError> {
        if self.unprojected.is_empty() {
            return Ok(());
        }
        let run = new_messages_run(&self.unprojected);
        projections::apply_new_messages(&mut self.tx, &projections::Projection::ALL, &run)
            .await
            .map_err(projection_error)?;
        self.unprojected.clear();
        Ok(())
    }

    /// Whether a new message of one of `owners` waits to be projected.
    fn unprojected_of(&self, owners: &[UserId]) -> bool {
        self.unprojected.iter().any(|(o, _, _)| owners.contains(o))
    }

    /// The connection for a read of `owners`' read models. Each row of a read model belongs to
    /// one owner and only that owner's events change it (every projector's statements are keyed
    /// by the event's owner), so the new messages waiting are projected first only if one of them
    /// is one of `owners`': a batch's mark-read between two other accounts' sends does not cut
    /// their projection in two.
    async fn reader(&mut self, owners: &[UserId]) -> Result<&mut PgConnection, StoreError> {
        if self.unprojected_of(owners) {
            self.project_new_messages().await?;
        }
        Ok(&mut *self.tx)
    }

    /// Locks the accounts' sequence rows in one ascending statement (skipping rows other
    /// transactions hold when `skip_locked`) and keeps their counters.
    async fn lock(
        &mut self,
        users: &[UserId],
        skip_locked: bool,
    ) -> Result<Vec<UserId>, StoreError> {
        self.requested = Some(users.iter().copied().collect());
        let raw: Vec<i64> = users.iter().map(|u| u.get()).collect();
        let sql = if skip_locked {
            "SELECT user_id, pts, box_id FROM user_sequences WHERE user_id = ANY($1) ORDER BY user_id FOR UPDATE SKIP LOCKED"
        } else {
            "SELECT user_id, pts, box_id FROM user_sequences WHERE user_id = ANY($1) ORDER BY user_id FOR UPDATE"
        };
        let locked: Vec<(i64, i32, i32)> = sqlx::query_as(sql)
            .bind(&raw)
            .fetch_all(&mut *self.tx)
            .await
            .map_err(db_error)?;
        for (user, pts, box_id) in locked {
            let user = rows::user_id(user, "user_sequences.user_id")?;
            self.counters.insert(
                user,
                Counters {
                    stored_pts: pts,
                    stored_box_id: box_id,
                    pts,
                    box_id,
                },
            );
        }
        Ok(self.locked_ids())
    }

    fn counters(&mut self, owner: UserId) -> Result<&mut Counters, StoreError> {
        self.counters.get_mut(&owner).ok_or_else(|| {
            StoreError::Bug(format!("user {owner} was not locked in this transaction"))
        })
    }

    fn locked_ids(&self) -> Vec<UserId> {
        let mut ids: Vec<UserId> = self.counters.keys().copied().collect();
        ids.sort();
        ids
    }
}

#[async_trait]
impl WriteTx for PgWriteTx {
    async fn lock_users(&mut self, users: &[UserId]) -> Result<Vec<UserId>, StoreError> {
        if let Some(requested) = &self.requested {
            // Locking more later could wait on a lower id while holding a higher one: a deadlock
            // cycle. Asking again for ids already asked for is harmless.
            if users.iter().all(|u| requested.contains(u)) {
                let wanted: HashSet<UserId> = users.iter().copied().collect();
                return Ok(self
                    .locked_ids()
                    .into_iter()
                    .filter(|u| wanted.contains(u))
                    .collect());
            }
            return Err(StoreError::Bug(
                "lock_users called again with new accounts".into(),
            ));
        }
        self.lock(users, false).await
    }

    async fn try_lock_users(&mut self, users: &[UserId]) -> Result<Vec<UserId>, StoreError> {
        if self.requested.is_some() {
            return Err(StoreError::Bug(
                "try_lock_users called after accounts were locked".into(),
            ));
        }
        self.lock(users, true).await
    }

    async fn find_by_random_id(
        &mut self,
        owner: UserId,
        random_id: i64,
    ) -> Result<Option<(OwnerMessage, Pts)>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {BOX_COLUMNS}, pts FROM message_boxes WHERE owner_user_id = $1 AND random_id = $2"
        ))
        .bind(owner.get())
        .bind(random_id)
        .fetch_optional(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)?;
        let Some(row) = row else { return Ok(None) };
        let (found, pts) = (owner_message(&row)?, rows::pts(rows::get(&row, "pts")?)?);
        if found.edit_date.is_none() {
            return Ok(Some((found, pts)));
        }
        // Edited since (always in a later, committed transaction): a retry is compared with the
        // message as it was sent, which its new_message event keeps.
        let row = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM user_update_events WHERE user_id = $1 AND pts = $2"
        ))
        .bind(owner.get())
        .bind(pts.get())
        .fetch_optional(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)?;
        match row.as_ref().map(rows::stored_event).transpose()? {
            Some(StoredEvent { event: UserEvent::NewMessage(e), .. }) if e.message.id == found.id => Ok(Some((e.message, pts))),
            _ => Err(StoreError::Corrupt(format!(
                "box {} of user {owner} (random_id {random_id}) was not created by a new_message event at pts {}",
                found.id.get(),
                pts.get()
            ))),
        }
    }

    async fn messages(
        &mut self,
        owner: UserId,
        ids: &[BoxId],
    ) -> Result<Vec<OwnerMessage>, StoreError> {
        let rows = messages_by_ids_rows(self.reader(&[owner]).await?, owner, ids, None)
            .await
            .map_err(db_error)?;
        messages_in_order(&rows, ids)
    }

    async fn message_by_shared_id(
        &mut self,
        owner: UserId,
        message_id: MessageId,
    ) -> Result<Option<OwnerMessage>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {BOX_COLUMNS} FROM message_boxes WHERE owner_user_id = $1 AND message_id = $2 AND NOT deleted \
             ORDER BY box_id LIMIT 1"
        ))
        .bind(owner.get())
        .bind(message_id.0)
        .fetch_optional(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)?;
        row.as_ref().map(owner_message).transpose()
    }

    async fn profile_photos(&mut self, owner: UserId) -> Result<Vec<Photo>, StoreError> {
        crate::postgres::profile_photos::of_owner(self.reader(&[owner]).await?, owner).await
    }

    async fn is_blocked(&mut self, owner: UserId, peer: UserId) -> Result<bool, StoreError> {
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM contact_blocks WHERE owner_user_id = $1 AND blocked_user_id = $2)",
        )
        .bind(owner.get())
        .bind(peer.get())
        .fetch_one(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)
    }

    /// One round trip (`ptslog_send_preflight`): the random_id lookup (message_boxes_random_id),
    /// both block checks (the contact_blocks primary key), the archive check and the send's
    /// message id; or none, when a batch's `prefetch_send_preflights` has the answer. The id is
    /// wasted when the send stops here (a retry, a block); message ids only need to be unique.
    ///
    /// The new messages not yet projected are written first only if one of them is the sender's
    /// with this random_id (a retry within the same batch), which the lookup must find: nothing
    /// else this reads is changed by a new message (blocks are other events; a new message leaves
    /// a dialog's folder as it is and creates a missing one in the main list). So the sends of a
    /// batch are checked before any of them runs while their boxes wait to be written together;
    /// `append` drops the prefetched answers an event may have changed.
    async fn send_preflight(
        &mut self,
        sender: UserId,
        peer: UserId,
        random_id: i64,
        now: i32,
    ) -> Result<SendPreflight, StoreError> {
        let retried_here = self.unprojected.iter().any(|(owner, _, event)| {
            *owner == sender
                && matches!(event, UserEvent::NewMessage(e) if e.message.random_id == Some(random_id))
        });
        if retried_here {
            self.project_new_messages().await?;
        }
        // Alone, or asked again within a batch: the batch's statement with this send only.
        let key = PreflightKey {
            sender,
            peer,
            random_id,
        };
        if !self.prefetched_preflights.contains_key(&key) {
            self.prefetch_send_preflights(&[key], now).await?;
        }
        let answer = self
            .prefetched_preflights
            .remove(&key)
            .ok_or_else(|| StoreError::Bug(format!("no preflight of random_id {random_id}")))?;
        self.answer_preflight(answer, sender, random_id).await
    }

    /// One round trip for a batch's sends, each row as `send_preflight`'s (same columns, so the
    /// same reader), in the order asked.
    async fn prefetch_send_preflights(
        &mut self,
        sends: &[PreflightKey],
        now: i32,
    ) -> Result<(), StoreError> {
        let mut keys: Vec<PreflightKey> = Vec::with_capacity(sends.len());
        for k in sends {
            if !keys.contains(k) && !self.prefetched_preflights.contains_key(k) {
                keys.push(*k);
            }
        }
        if keys.is_empty() {
            return Ok(());
        }
        // ptslog_send_preflight (migration 0021) per send, in the order asked: its box's
        // BOX_COLUMNS and pts (all null if none), the checks and a message id.
        const SQL: &str = "SELECT p.* \
             FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS k(sender, random_id, peer, ord) \
             CROSS JOIN LATERAL ptslog_send_preflight(k.sender, k.random_id, k.peer, $4) p \
             ORDER BY k.ord";
        let senders: Vec<i64> = keys.iter().map(|k| k.sender.get()).collect();
        let random_ids: Vec<i64> = keys.iter().map(|k| k.random_id).collect();
        let peers: Vec<i64> = keys.iter().map(|k| k.peer.get()).collect();
        let rows = sqlx::query(SQL)
            .bind(&senders)
            .bind(&random_ids)
            .bind(&peers)
            .bind(now)
            .fetch_all(&mut *self.tx)
            .await
            .map_err(db_error)?;
        if rows.len() != keys.len() {
            return Err(StoreError::Bug(format!(
                "{} preflight rows for {} sends",
                rows.len(),
                keys.len()
            )));
        }
        for (k, row) in keys.into_iter().zip(&rows) {
            let answer = Preflight::of_row(row, k.sender == k.peer)?;
            self.prefetched_preflights.insert(k, answer);
        }
        Ok(())
    }

    async fn dialog(
        &mut self,
        owner: UserId,
        peer: UserId,
    ) -> Result<Option<DialogRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {DIALOG_COLUMNS} FROM dialogs WHERE user_id = $1 AND peer_user_id = $2"
        ))
        .bind(owner.get())
        .bind(peer.get())
        .fetch_optional(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)?;
        row.as_ref().map(dialog).transpose()
    }

    async fn newest_ids(
        &mut self,
        owner: UserId,
        peer: UserId,
        max_id: i32,
        limit: i64,
    ) -> Result<Vec<BoxId>, StoreError> {
        let below = if max_id > 0 {
            i64::from(max_id)
        } else {
            i64::MAX
        };
        let raw: Vec<i32> = sqlx::query_scalar(
            "SELECT box_id FROM message_boxes \
             WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted AND box_id < $3 \
             ORDER BY box_id DESC LIMIT $4",
        )
        .bind(owner.get())
        .bind(peer.get())
        .bind(below)
        .bind(limit.max(0))
        .fetch_all(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)?;
        raw.into_iter().map(|b| rows::box_id(b, "box_id")).collect()
    }

    async fn has_messages_besides(
        &mut self,
        owner: UserId,
        peer: UserId,
        except: &[BoxId],
    ) -> Result<bool, StoreError> {
        let raw: Vec<i32> = except.iter().map(|b| b.get()).collect();
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM message_boxes \
               WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted AND box_id <> ALL($3))",
        )
        .bind(owner.get())
        .bind(peer.get())
        .bind(&raw)
        .fetch_one(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)
    }

    /// Three scalar subqueries, each an index seek: the count (message_boxes_history), the newest
    /// incoming message at or below the mark and the peer's box of it (message_boxes_message), the
    /// peer's dialog (its primary key).
    async fn read_progress(
        &mut self,
        reader: UserId,
        peer: UserId,
        max_id: i32,
    ) -> Result<ReadProgress, StoreError> {
        let (still_unread, senders_box, senders_read_outbox_max_id): (i64, Option<i32>, Option<i32>) =
            sqlx::query_as(
                "SELECT \
                   (SELECT count(*) FROM message_boxes \
                     WHERE owner_user_id = $1 AND peer_user_id = $2 AND NOT deleted AND NOT outgoing AND box_id > $3), \
                   (SELECT s.box_id FROM message_boxes s \
                     WHERE s.owner_user_id = $2 AND s.message_id = \
                       (SELECT r.message_id FROM message_boxes r \
                         WHERE r.owner_user_id = $1 AND r.peer_user_id = $2 AND NOT r.deleted AND NOT r.outgoing \
                           AND r.box_id <= $3 \
                         ORDER BY r.box_id DESC LIMIT 1) \
                     ORDER BY s.box_id LIMIT 1), \
                   (SELECT read_outbox_max_id FROM dialogs WHERE user_id = $2 AND peer_user_id = $1)",
            )
            .bind(reader.get())
            .bind(peer.get())
            .bind(max_id)
            .fetch_one(self.reader(&[reader, peer]).await?)
            .await
            .map_err(db_error)?;
        Ok(ReadProgress {
            still_unread: i32::try_from(still_unread).unwrap_or(i32::MAX),
            senders_box: senders_box
                .map(|b| rows::box_id(b, "message_boxes.box_id"))
                .transpose()?,
            senders_read_outbox_max_id,
        })
    }

    /// In the order of `ids`, repeats left out.
    async fn content_unread(
        &mut self,
        owner: UserId,
        ids: &[BoxId],
    ) -> Result<Vec<BoxId>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let raw: Vec<i32> = ids.iter().map(|b| b.get()).collect();
        let unread: Vec<i32> = sqlx::query_scalar(
            "SELECT box_id FROM message_boxes \
             WHERE owner_user_id = $1 AND box_id = ANY($2) AND NOT deleted AND media_unread",
        )
        .bind(owner.get())
        .bind(&raw)
        .fetch_all(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)?;
        let mut unread: HashSet<i32> = unread.into_iter().collect();
        Ok(ids
            .iter()
            .copied()
            .filter(|id| unread.remove(&id.get()))
            .collect())
    }

    async fn pinned_peers(
        &mut self,
        owner: UserId,
        folder_id: i16,
    ) -> Result<Vec<UserId>, StoreError> {
        crate::postgres::queries::pinned_peers(self.reader(&[owner]).await?, owner, folder_id).await
    }

    async fn dialog_filters(
        &mut self,
        owner: UserId,
    ) -> Result<application::ports::FilterSet, StoreError> {
        crate::postgres::queries::dialog_filters(self.reader(&[owner]).await?, owner).await
    }

    async fn contact(
        &mut self,
        owner: UserId,
        peer: UserId,
    ) -> Result<Option<application::ports::ContactRecord>, StoreError> {
        use crate::postgres::queries::{contact, CONTACT_COLUMNS};
        let row = sqlx::query(&format!(
            "SELECT {CONTACT_COLUMNS} FROM contacts WHERE owner_user_id = $1 AND contact_user_id = $2"
        ))
        .bind(owner.get())
        .bind(peer.get())
        .fetch_optional(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)?;
        row.as_ref().map(contact).transpose()
    }

    async fn peer_bar_hidden(&mut self, owner: UserId, peer: UserId) -> Result<bool, StoreError> {
        crate::postgres::queries::bar_hidden(self.reader(&[owner]).await?, owner, peer)
            .await
            .map_err(db_error)
    }

    async fn archived_unmuted(
        &mut self,
        owner: UserId,
        peer: UserId,
        now: i32,
    ) -> Result<bool, StoreError> {
        sqlx::query_scalar(&format!(
            "SELECT {}",
            archived_unmuted_sql("$1", "$2", "$3")
        ))
        .bind(owner.get())
        .bind(peer.get())
        .bind(now)
        .fetch_one(self.reader(&[owner]).await?)
        .await
        .map_err(db_error)
    }

    async fn notify_settings(
        &mut self,
        owner: UserId,
        peer: UserId,
    ) -> Result<domain::events::PeerNotify, StoreError> {
        crate::postgres::queries::notify_settings(self.reader(&[owner]).await?, owner, peer)
            .await
            .map_err(db_error)
    }

    async fn next_message_id(&mut self) -> Result<MessageId, StoreError> {
        if let Some(id) = self.prefetched_message_id.take() {
            return Ok(id);
        }
        let id: i64 = sqlx::query_scalar("SELECT nextval('private_message_ids')")
            .fetch_one(&mut *self.tx)
            .await
            .map_err(db_error)?;
        Ok(MessageId(id))
    }

    fn next_box_id(&mut self, owner: UserId) -> Result<BoxId, StoreError> {
        let c = self.counters(owner)?;
        let next = c
            .box_id
            .checked_add(1)
            .ok_or(StoreError::Exhausted(owner))?;
        let id = BoxId::new(next)
            .ok_or_else(|| StoreError::Bug(format!("box id {next} of user {owner}")))?;
        c.box_id = next;
        Ok(id)
    }

    async fn append(
        &mut self,
        owner: UserId,
        event: UserEvent,
        origin: Origin,
    ) -> Result<Pts, StoreError> {
        let pts_count = event.pts_count();
        // Before anything is projected: a refused event leaves the transaction as it was.
        let payload = event.checked_payload().map_err(StoreError::Refused)?;
        let c = *self.counters(owner)?;
        let next = c
            .pts
            .checked_add(pts_count)
            .ok_or(StoreError::Exhausted(owner))?;
        let pts =
            Pts::new(next).ok_or_else(|| StoreError::Bug(format!("pts {next} of user {owner}")))?;
        if let UserEvent::NewMessage(e) = &event {
            // A box id that next_box_id never handed out would leave a gap or a collision.
            if e.message.id.get() > c.box_id {
                return Err(StoreError::Bug(format!(
                    "box id {} of user {owner} was not allocated in this transaction",
                    e.message.id.get()
                )));
            }
        }
        let (kind, version) = (event.kind(), event.version());
        self.forget_preflights_changed_by(owner, &event);
        if matches!(event, UserEvent::NewMessage(_)) {
            // Projected with the others before the next read or other event of an owner with
            // one waiting, or at commit.
            self.unprojected.push((owner, pts, event));
        } else {
            // Each owner's events are projected in its log's order: its new messages before
            // this one first (another owner's rows do not depend on them; see `reader`).
            if self.unprojected_of(&[owner]) {
                self.project_new_messages().await?;
            }
            projections::apply(&mut self.tx, owner, pts, &event)
                .await
                .map_err(projection_error)?;
        }
        self.counters(owner)?.pts = next;
        self.appended += 1;
        self.events.push(PendingEvent {
            user_id: owner.get(),
            pts: next,
            pts_count,
            kind,
            version,
            payload,
            auth_key_id: origin.auth_key_id.0,
            session_id: origin.session_id.0,
        });
        Ok(pts)
    }

    fn current_pts(&self, owner: UserId) -> Result<Pts, StoreError> {
        let c = self.counters.get(&owner).ok_or_else(|| {
            StoreError::Bug(format!("user {owner} was not locked in this transaction"))
        })?;
        rows::pts(c.pts)
    }

    fn holds(&self, user: UserId) -> bool {
        self.counters.contains_key(&user)
    }

    fn mark(&mut self) {
        self.mark = Some(Mark {
            counters: self.counters.clone(),
            appended: self.appended,
        });
    }

    fn undo_to_mark(&mut self) -> bool {
        match self.mark.take() {
            Some(mark) if mark.appended == self.appended => {
                // A box id taken in memory by the failed send is given back, so boxes stay dense.
                self.counters = mark.counters;
                // A message id fetched for the failed send stays unused (ids only need to be
                // unique).
                self.prefetched_message_id = None;
                true
            }
            _ => false,
        }
    }

    async fn rollback(self: Box<Self>) -> Result<(), StoreError> {
        self.tx.rollback().await.map_err(db_error)
    }

    async fn flush(&mut self) -> Result<(), StoreError> {
        self.write_out().await
    }

    /// Whatever is still pending (see `write_out`), then COMMIT.
    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        let mut this = *self;
        this.write_out().await?;
        this.tx.commit().await.map_err(db_error)?;
        if let Some((freshness, primary)) = &this.noting {
            // The accounts it locked: every account it appended events for, each caller among them.
            let accounts: Vec<UserId> = this.counters.keys().copied().collect();
            match primary.get().await {
                Ok(mut conn) => freshness.note_commit(&mut *conn, &accounts).await,
                Err(e) => {
                    tracing::warn!(error = %e, "no connection to ask the WAL position after a commit");
                    freshness.lost_track();
                }
            }
        }
        Ok(())
    }
}

/// The new messages waiting to be projected, as the projectors take them.
fn new_messages_run(
    unprojected: &[(UserId, Pts, UserEvent)],
) -> Vec<projections::NewMessageAt<'_>> {
    unprojected
        .iter()
        .filter_map(|(owner, pts, event)| match event {
            UserEvent::NewMessage(e) => Some(projections::NewMessageAt {
                owner: *owner,
                pts: *pts,
                message: &e.message,
            }),
            _ => None,
        })
        .collect()
}

/// `write_out`'s statement: the counters and the events (`with_messages`: after the new messages'
/// boxes and dialogs, whose parameters come first). Every part of a data-modifying WITH runs,
/// referenced or not; empty arrays are no-ops.
fn write_out_sql(with_messages: bool) -> &'static str {
    fn sql(first: usize, with: &str) -> String {
        let p = |i: usize| format!("${}", first + i);
        format!(
            "WITH {with}counters AS ( \
               UPDATE user_sequences s SET pts = v.pts, box_id = v.box_id \
               FROM unnest({}::bigint[], {}::int[], {}::int[]) AS v(user_id, pts, box_id) \
               WHERE s.user_id = v.user_id) \
             INSERT INTO user_update_events \
               (user_id, pts, pts_count, kind, payload_version, payload, auth_key_id, session_id) \
             SELECT u, p, c, k, v, t::json, a, s \
             FROM unnest({}::bigint[], {}::int[], {}::int[], {}::text[], {}::smallint[], \
                         {}::text[], {}::bigint[], {}::bigint[]) AS e(u, p, c, k, v, t, a, s)",
            p(0),
            p(1),
            p(2),
            p(3),
            p(4),
            p(5),
            p(6),
            p(7),
            p(8),
            p(9),
            p(10)
        )
    }
    static ALONE: LazyLock<String> = LazyLock::new(|| sql(1, ""));
    static WITH_MESSAGES: LazyLock<String> = LazyLock::new(|| {
        sql(
            projections::inline::NEW_MESSAGES_PARAMS + 1,
            &format!("{}, ", projections::inline::new_messages_with()),
        )
    });
    if with_messages {
        &WITH_MESSAGES
    } else {
        &ALONE
    }
}
