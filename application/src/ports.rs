//! The ports the handlers are written against. `infrastructure` implements them over Postgres and Redis.

use async_trait::async_trait;
use domain::events::{DialogFilterRules, PeerNotify, UserEvent};
use domain::history_window::HistoryWindow;
use domain::message::OwnerMessage;
use domain::peer::ChatPeer;
use domain::{AuthKeyId, BoxId, DomainError, MessageId, Pts, SessionId, UserId};
use thiserror::Error;

use crate::caller::Caller;

/// A storage failure: never the client's fault.
#[derive(Debug, Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(String),
    /// The database took too long: a statement cancelled by `statement_timeout`, a transaction
    /// ended for idling, or no connection free in time. Answered `503 TIMEOUT` (retry).
    #[error("database timed out: {0}")]
    Timeout(String),
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    #[error("the log of user {0} is full (pts or box id would overflow int4)")]
    Exhausted(UserId),
    #[error("bug: {0}")]
    Bug(String),
    /// The store refused what it was asked to write (an event over the payload cap); nothing was
    /// written. Answered as the domain error's TL error (400), not as a failure.
    #[error("refused: {0}")]
    Refused(domain::DomainError),
}

/// The device a change came from, recorded on each event so pushes can skip it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Origin {
    pub auth_key_id: AuthKeyId,
    pub session_id: SessionId,
}

impl From<&Caller> for Origin {
    fn from(c: &Caller) -> Self {
        Self {
            auth_key_id: c.auth_key_id,
            session_id: c.session_id,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRecord {
    pub id: UserId,
    pub phone: String,
    pub first_name: String,
    pub last_name: String,
    /// The current profile photo (the `profile_photos` read model), if any.
    pub photo: Option<UserPhoto>,
}

/// What a `user` object shows of its current profile photo (TL `userProfilePhoto`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserPhoto {
    pub id: domain::media::MediaId,
    /// The stripped thumbnail clients show before they download a size.
    pub stripped: Vec<u8>,
}

impl UserPhoto {
    pub fn of(photo: &domain::media::Photo) -> Self {
        Self {
            id: photo.id,
            stripped: photo.stripped.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DialogRecord {
    pub peer_id: UserId,
    pub folder_id: i16,
    pub top_message: i32,
    pub top_message_date: i32,
    pub read_inbox_max_id: i32,
    pub read_outbox_max_id: i32,
    pub unread_count: i32,
    pub unread_mark: bool,
    /// Pinned in its folder.
    pub pinned: bool,
    /// The owner's notification settings of the chat (`notify_settings`).
    pub notify: PeerNotify,
}

/// One of the owner's contacts, under the owner's names for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContactRecord {
    pub user_id: UserId,
    pub first_name: String,
    pub last_name: String,
    pub phone: String,
    pub imported: bool,
    pub date: i32,
}

/// The owner's custom dialog filters in their order, and whether folder tags are on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterSet {
    /// In the owner's order (filters missing from the stored order follow by id).
    pub filters: Vec<DialogFilterRules>,
    /// The stored order as set (may include 0, the "All chats" position).
    pub order: Vec<i32>,
    pub tags_enabled: bool,
}

/// Where a dialog page starts: strictly after this (date, message, peer) in list order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DialogCursor {
    pub top_message_date: i32,
    pub top_message: i32,
    pub peer_id: i64,
}

/// What `messages.search` narrows the text match by (0 dates = no bound).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SearchFilter {
    pub peer: Option<UserId>,
    pub from: Option<UserId>,
    pub min_date: i32,
    pub max_date: i32,
    /// Only messages whose media is of one of these classes (`inputMessagesFilterPhotos`, …).
    pub media: Option<&'static [domain::media::MediaClass]>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockRecord {
    pub peer_id: UserId,
    pub date: i32,
}

/// An event as read back from the log.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub user_id: UserId,
    pub pts: Pts,
    pub pts_count: i32,
    pub event: UserEvent,
    pub origin: Origin,
    /// Unix seconds.
    pub date: i32,
}

/// A log row this release cannot read (written behind the application's back, by a newer
/// release, or before a limit existed): where it stands in the log and why, never its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndecodableEvent {
    pub user_id: UserId,
    pub pts: Pts,
    pub pts_count: i32,
    pub kind: String,
    pub reason: String,
}

/// One row of the log as read for a client: the event, or why it cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub enum LogEntry {
    Event(StoredEvent),
    Undecodable(UndecodableEvent),
}

impl LogEntry {
    pub fn pts(&self) -> Pts {
        match self {
            LogEntry::Event(e) => e.pts,
            LogEntry::Undecodable(u) => u.pts,
        }
    }
}

/// A getHistory page with what its answer needs besides the messages, read in one round trip.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPage {
    /// Whether the peer's account exists (always true for Saved Messages).
    pub peer_exists: bool,
    /// The chat's visible messages (`dialogs.message_count`; 0 without a dialog).
    pub count: i64,
    /// Visible messages of the window, newest first.
    pub messages: Vec<OwnerMessage>,
}

/// A user as one viewer sees it: the record, the viewer's own contact entry for it, and whether
/// it has the viewer among its contacts (`users` and `contact_links` in one round trip).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenUser {
    pub record: UserRecord,
    pub contact: Option<ContactRecord>,
    pub has_viewer: bool,
}

/// The account's committed pts and total unread count, read together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountState {
    pub pts: Pts,
    pub unread_total: i64,
}

/// A folder's first dialog page for getDialogs, read in one round trip: the pinned dialogs (in
/// pinned order), the page after `cursor` (pinned ones included: the caller leaves them out), the
/// folder's number of dialogs and the page's and pins' top messages.
#[derive(Debug, Clone, PartialEq)]
pub struct DialogList {
    pub pinned: Vec<DialogRecord>,
    pub page: Vec<DialogRecord>,
    pub count: i64,
    pub top_messages: Vec<OwnerMessage>,
}

/// Reads, outside any write transaction.
#[async_trait]
pub trait Store: Send + Sync {
    async fn begin(&self) -> Result<Box<dyn WriteTx>, StoreError>;

    /// `users` of `ids` with the viewer's contact links to them (unknown ids left out).
    async fn users_seen_by(
        &self,
        viewer: UserId,
        ids: &[UserId],
    ) -> Result<Vec<SeenUser>, StoreError>;
    /// The window of the chat, whether the peer exists and the chat's message count.
    async fn history_page(
        &self,
        owner: UserId,
        peer: UserId,
        window: &HistoryWindow,
    ) -> Result<HistoryPage, StoreError>;
    /// `pts` and `unread_total` in one statement (one snapshot).
    async fn account_state(&self, owner: UserId) -> Result<AccountState, StoreError>;
    /// The account's state and, when `after` is below its pts, the log entries after `after` (at
    /// most `limit`), from one snapshot.
    async fn difference(
        &self,
        owner: UserId,
        after: Pts,
        limit: i64,
    ) -> Result<(AccountState, Vec<LogEntry>), StoreError>;
    /// See [`DialogList`]; the page holds up to `limit` dialogs, plus as many as the folder has
    /// pins when `extra_for_pins` (so that leaving the pinned ones out still fills it).
    async fn dialog_list(
        &self,
        owner: UserId,
        folder_id: i16,
        cursor: Option<DialogCursor>,
        limit: i32,
        extra_for_pins: bool,
    ) -> Result<DialogList, StoreError>;

    async fn users(&self, ids: &[UserId]) -> Result<Vec<UserRecord>, StoreError>;
    /// The owner's profile photos, current first, then newest set first.
    async fn profile_photos(&self, owner: UserId) -> Result<Vec<domain::media::Photo>, StoreError>;
    /// Accounts that show `owner` and learn of its profile photo changes (at most `limit`): the
    /// peers of the owner's dialogs and the accounts that have the owner as a contact.
    async fn profile_watchers(&self, owner: UserId, limit: i64) -> Result<Vec<UserId>, StoreError>;
    async fn user_by_phone(&self, phone: &str) -> Result<Option<UserRecord>, StoreError>;

    /// The newest `limit` dialogs of a folder after `cursor`, in list order.
    async fn dialogs_page(
        &self,
        owner: UserId,
        folder_id: i16,
        cursor: Option<DialogCursor>,
        limit: i32,
    ) -> Result<Vec<DialogRecord>, StoreError>;
    async fn dialogs_count(&self, owner: UserId, folder_id: i16) -> Result<i64, StoreError>;
    /// (peer, top_message) of every dialog in the folder, for the `hash`.
    async fn dialogs_hash_input(
        &self,
        owner: UserId,
        folder_id: i16,
    ) -> Result<Vec<(i64, i32, i32)>, StoreError>;
    async fn dialogs_of_peers(
        &self,
        owner: UserId,
        peers: &[UserId],
    ) -> Result<Vec<DialogRecord>, StoreError>;

    /// Visible messages of one private chat in the window, newest first.
    async fn history(
        &self,
        owner: UserId,
        peer: UserId,
        window: &HistoryWindow,
    ) -> Result<Vec<OwnerMessage>, StoreError>;
    async fn history_count(&self, owner: UserId, peer: UserId) -> Result<i64, StoreError>;
    /// Visible messages by the owner's box ids.
    async fn messages(&self, owner: UserId, ids: &[BoxId])
        -> Result<Vec<OwnerMessage>, StoreError>;
    /// Visible messages whose text contains `query` and that match the filter, in the window, newest
    /// first, with the number of all matches.
    async fn search(
        &self,
        owner: UserId,
        filter: &SearchFilter,
        query: &str,
        window: &HistoryWindow,
    ) -> Result<(Vec<OwnerMessage>, i64), StoreError>;

    /// The owner's committed pts (every event up to it is readable).
    async fn pts(&self, owner: UserId) -> Result<Pts, StoreError>;
    /// Total unread incoming messages over all dialogs.
    async fn unread_total(&self, owner: UserId) -> Result<i64, StoreError>;
    /// The log entries with pts greater than `after`, in pts order, at most `limit`; a row that
    /// cannot be decoded is answered as [`LogEntry::Undecodable`] instead of failing the whole
    /// read (getDifference skips it).
    async fn log_after(
        &self,
        owner: UserId,
        after: Pts,
        limit: i64,
    ) -> Result<Vec<LogEntry>, StoreError>;
    /// When `peer` first read the owner's outgoing message `msg_id`.
    async fn outbox_read_date(
        &self,
        owner: UserId,
        peer: UserId,
        msg_id: BoxId,
    ) -> Result<Option<i32>, StoreError>;

    async fn blocked(
        &self,
        owner: UserId,
        offset: i32,
        limit: i32,
    ) -> Result<(Vec<BlockRecord>, i64), StoreError>;

    /// The pinned dialogs of a folder, in pinned order.
    async fn pinned_dialogs(
        &self,
        owner: UserId,
        folder_id: i16,
    ) -> Result<Vec<DialogRecord>, StoreError>;
    /// Every dialog of the owner (both folders), in list order (newest top message first).
    async fn all_dialogs(&self, owner: UserId) -> Result<Vec<DialogRecord>, StoreError>;
    /// Peers of the dialogs with a manual unread mark.
    async fn unread_marked(&self, owner: UserId) -> Result<Vec<UserId>, StoreError>;
    async fn dialog_filters(&self, owner: UserId) -> Result<FilterSet, StoreError>;
    /// The owner's contacts, by user id.
    async fn contacts(&self, owner: UserId) -> Result<Vec<ContactRecord>, StoreError>;
    /// Of `ids`: the viewer's contacts among them, and those who have the viewer as a contact.
    async fn contact_links(
        &self,
        viewer: UserId,
        ids: &[UserId],
    ) -> Result<(Vec<ContactRecord>, Vec<UserId>), StoreError>;
    /// Whether the owner hid the action bar of the chat with `peer`.
    async fn peer_bar_hidden(&self, owner: UserId, peer: UserId) -> Result<bool, StoreError>;
    /// The owner's notification settings of the chat with `peer` (default when never set).
    async fn notify_settings(&self, owner: UserId, peer: UserId) -> Result<PeerNotify, StoreError>;
}

/// What a send learns under its locks before it appends anything ([`WriteTx::send_preflight`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SendPreflight {
    /// A send with this random_id already committed: its message as first sent, and its pts.
    Retry(OwnerMessage, Pts),
    /// A new send, with what its accounts say about it.
    New(SendChecks),
}

/// Which send a [`WriteTx::prefetch_send_preflights`] answer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PreflightKey {
    pub sender: UserId,
    pub peer: UserId,
    pub random_id: i64,
}

/// What a mark-read finds in the chat (`WriteTx::read_progress`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadProgress {
    /// The reader's incoming visible messages after the mark: still unread.
    pub still_unread: i32,
    /// The newest incoming visible message at or below the mark, as the peer's box id, deleted
    /// by the peer for itself or not (a read watermark points there all the same); none if there
    /// is no such message or the peer has no box of it.
    pub senders_box: Option<BoxId>,
    /// The peer's outbox watermark in its dialog with the reader (none: it has no such dialog).
    pub senders_read_outbox_max_id: Option<i32>,
}

/// The blocks both ways between a sender and its peer (both false for Saved Messages), and
/// whether the peer has the chat archived and not muted at the send's date (so a message it
/// receives moves the chat back to its main list).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendChecks {
    pub sender_blocked_peer: bool,
    pub peer_blocked_sender: bool,
    pub peer_archived_unmuted: bool,
}

impl SendChecks {
    /// Whether the recipient gets a copy: never in Saved Messages, not when it blocked the sender
    /// (the sender is not told); a sender that blocked its peer cannot write to it.
    pub fn recipient_gets_it(&self, peer: ChatPeer) -> Result<bool, DomainError> {
        match peer {
            ChatPeer::SelfChat => Ok(false),
            ChatPeer::User(_) if self.sender_blocked_peer => Err(DomainError::YouBlockedUser),
            ChatPeer::User(_) => Ok(!self.peer_blocked_sender),
        }
    }

    /// Whether a copy delivered moves the recipient's chat out of its archive.
    pub fn unarchives(&self, recipient_gets_it: bool) -> bool {
        recipient_gets_it && self.peer_archived_unmuted
    }
}

/// One write transaction. A command first locks every account it will touch, then reads under those
/// locks, then appends events (which also runs the projectors inline), then commits.
#[async_trait]
pub trait WriteTx: Send {
    /// Locks the sequence rows of these accounts (in ascending id order, whatever the order given).
    /// Answers the ids that exist; only locked accounts may be appended to. Call once, first.
    async fn lock_users(&mut self, users: &[UserId]) -> Result<Vec<UserId>, StoreError>;

    /// The owner's message that was created with this random_id, as it was created (edits since left
    /// out: a retry is compared with the send as first made; deleted boxes count too), and its pts.
    async fn find_by_random_id(
        &mut self,
        owner: UserId,
        random_id: i64,
    ) -> Result<Option<(OwnerMessage, Pts)>, StoreError>;
    /// Visible boxes of the owner by id, in the order of `ids` (missing ones left out).
    async fn messages(
        &mut self,
        owner: UserId,
        ids: &[BoxId],
    ) -> Result<Vec<OwnerMessage>, StoreError>;
    /// The owner's visible box of a shared message.
    async fn message_by_shared_id(
        &mut self,
        owner: UserId,
        message_id: MessageId,
    ) -> Result<Option<OwnerMessage>, StoreError>;
    /// The owner's profile photos, current first, then newest set first (as
    /// [`Store::profile_photos`], inside the transaction).
    async fn profile_photos(
        &mut self,
        owner: UserId,
    ) -> Result<Vec<domain::media::Photo>, StoreError>;
    /// Whether `owner` has blocked `peer`.
    async fn is_blocked(&mut self, owner: UserId, peer: UserId) -> Result<bool, StoreError>;
    /// The reads of a send, once its accounts are locked: the send's first result if this random_id
    /// was used before (as [`WriteTx::find_by_random_id`]), otherwise the blocks both ways. An
    /// adapter may answer it in one round trip (and have the send's [`WriteTx::next_message_id`]
    /// ready with it); this default asks the questions one by one.
    async fn send_preflight(
        &mut self,
        sender: UserId,
        peer: UserId,
        random_id: i64,
        now: i32,
    ) -> Result<SendPreflight, StoreError> {
        if let Some((first, pts)) = self.find_by_random_id(sender, random_id).await? {
            return Ok(SendPreflight::Retry(first, pts));
        }
        if sender == peer {
            return Ok(SendPreflight::New(SendChecks::default()));
        }
        Ok(SendPreflight::New(SendChecks {
            sender_blocked_peer: self.is_blocked(sender, peer).await?,
            peer_blocked_sender: self.is_blocked(peer, sender).await?,
            peer_archived_unmuted: self.archived_unmuted(peer, sender, now).await?,
        }))
    }
    /// Asks the reads of several sends' [`WriteTx::send_preflight`] at once, after their accounts
    /// are locked and before they run: group commit's one round trip for a whole batch instead of
    /// one per send. A later `send_preflight` of one of these sends is answered from it, unless
    /// an event appended since to one of that send's accounts may have changed the answer (an
    /// earlier send of the batch with the same random_id, or one that moved the chat out of the
    /// archive): that one asks again. This default prefetches nothing.
    async fn prefetch_send_preflights(
        &mut self,
        _sends: &[PreflightKey],
        _now: i32,
    ) -> Result<(), StoreError> {
        Ok(())
    }
    /// Whether the owner's dialog with `peer` is in the archive and not muted at `now`.
    async fn archived_unmuted(
        &mut self,
        owner: UserId,
        peer: UserId,
        now: i32,
    ) -> Result<bool, StoreError>;
    /// The owner's notification settings of the chat with `peer` (default when never set).
    async fn notify_settings(
        &mut self,
        owner: UserId,
        peer: UserId,
    ) -> Result<PeerNotify, StoreError>;
    async fn dialog(
        &mut self,
        owner: UserId,
        peer: UserId,
    ) -> Result<Option<DialogRecord>, StoreError>;
    /// The newest visible box ids of a chat, below `max_id` (0 = no bound), newest first.
    async fn newest_ids(
        &mut self,
        owner: UserId,
        peer: UserId,
        max_id: i32,
        limit: i64,
    ) -> Result<Vec<BoxId>, StoreError>;
    /// Whether the chat has visible messages besides `except`.
    async fn has_messages_besides(
        &mut self,
        owner: UserId,
        peer: UserId,
        except: &[BoxId],
    ) -> Result<bool, StoreError>;
    /// What `reader` reading its chat with `peer` up to its box `max_id` finds, in one read.
    async fn read_progress(
        &mut self,
        reader: UserId,
        peer: UserId,
        max_id: i32,
    ) -> Result<ReadProgress, StoreError>;
    /// Boxes among `ids` whose contents are unread (media or reactions).
    async fn content_unread(
        &mut self,
        owner: UserId,
        ids: &[BoxId],
    ) -> Result<Vec<BoxId>, StoreError>;

    /// The pinned peers of a folder, in pinned order.
    async fn pinned_peers(
        &mut self,
        owner: UserId,
        folder_id: i16,
    ) -> Result<Vec<UserId>, StoreError>;
    async fn dialog_filters(&mut self, owner: UserId) -> Result<FilterSet, StoreError>;
    async fn contact(
        &mut self,
        owner: UserId,
        peer: UserId,
    ) -> Result<Option<ContactRecord>, StoreError>;
    async fn peer_bar_hidden(&mut self, owner: UserId, peer: UserId) -> Result<bool, StoreError>;

    /// A new shared message identity.
    async fn next_message_id(&mut self) -> Result<MessageId, StoreError>;
    /// The owner's next box id (the account must be locked).
    fn next_box_id(&mut self, owner: UserId) -> Result<BoxId, StoreError>;
    /// Appends one event to the owner's log (the account must be locked) and projects it: every
    /// later read of the transaction sees its effect. An adapter may defer the projection until
    /// that read, [`WriteTx::flush`] or the commit (and then fail there).
    async fn append(
        &mut self,
        owner: UserId,
        event: UserEvent,
        origin: Origin,
    ) -> Result<Pts, StoreError>;
    /// The owner's pts as of now in this transaction.
    fn current_pts(&self, owner: UserId) -> Result<Pts, StoreError>;
    /// Whether this transaction holds the account's lock (so events may be appended to it).
    fn holds(&self, user: UserId) -> bool;

    /// [`WriteTx::lock_users`] without waiting: locks those of the accounts no other transaction
    /// holds (`SKIP LOCKED`) and answers them; the others (held elsewhere, or missing) are left out
    /// and may not be appended to. Call once, first, instead of `lock_users`.
    async fn try_lock_users(&mut self, users: &[UserId]) -> Result<Vec<UserId>, StoreError>;

    /// Remembers the in-memory state (the counters, the buffered events) before one send of a
    /// batch, without a round trip: group commit runs each send after one, instead of a savepoint
    /// per send (the previous mark is dropped: marks do not nest).
    fn mark(&mut self);
    /// After a send that failed: if it wrote nothing since the [`WriteTx::mark`] (appended no
    /// event; every write of a send is an append and its projections), puts the counters back as
    /// they were at the mark and answers true, and the transaction goes on. False when something
    /// was written: only rolling the whole transaction back undoes it.
    fn undo_to_mark(&mut self) -> bool;

    /// Writes now whatever [`WriteTx::append`] deferred (the events, their counters and the
    /// projections held back), so a failure of those writes shows here, not at commit (group
    /// commit calls it before committing, and after each send to learn which one failed).
    async fn flush(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError>;
    /// Rolls back now, releasing the locks before it returns (dropping a transaction rolls it
    /// back too, but only when its connection is next used).
    async fn rollback(self: Box<Self>) -> Result<(), StoreError>;
}

/// Accounts and devices.
#[async_trait]
pub trait Accounts: Send + Sync {
    /// The account with this phone (created with these names if new) and a new device token for it.
    async fn login(
        &self,
        phone: &str,
        first_name: &str,
        last_name: &str,
    ) -> Result<(UserRecord, String), StoreError>;
    /// The caller a bearer token stands for.
    async fn authenticate(&self, token: &str) -> Result<Option<Caller>, StoreError>;
    /// [`Accounts::authenticate`] with how long the token has left (zero: do not cache it).
    async fn authenticate_until(
        &self,
        token: &str,
    ) -> Result<Option<(Caller, std::time::Duration)>, StoreError> {
        Ok(self
            .authenticate(token)
            .await?
            .map(|c| (c, std::time::Duration::ZERO)))
    }
    /// The account's live (unexpired) devices, oldest first.
    async fn authorizations(
        &self,
        user: UserId,
    ) -> Result<Vec<crate::devices::Authorization>, StoreError>;
    /// Records what the device said about itself and marks it active now.
    async fn record_device(
        &self,
        authorization: AuthKeyId,
        device: &crate::devices::DeviceInfo,
    ) -> Result<(), StoreError>;
    /// Ends these devices of the account: their tokens stop working and their MTProto keys are
    /// signed out in the same transaction, and every server instance is told (so each closes the
    /// devices' live connections). Answers the devices ended.
    async fn end_authorizations(
        &self,
        user: UserId,
        ending: crate::devices::Ending,
    ) -> Result<Vec<AuthKeyId>, StoreError>;
}

/// The per-user send-rate limit, shared by every instance.
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Counts `sends` more sends for the user; `Err(seconds)` when the window is full.
    async fn check_send(&self, user: UserId, sends: u32) -> Result<(), u32>;
    /// Counts the distinct phone numbers (normalized, no duplicates in `phones`) the user looks up
    /// by `contacts.resolvePhone` or `contacts.importContacts`. Answers, per phone, whether it may be
    /// looked up: numbers already counted in the window are free, new ones are allowed while the
    /// window has room. `Err(seconds until the window ends)` when none of them may.
    async fn check_phone_lookups(&self, user: UserId, phones: &[String]) -> Result<Vec<bool>, u32>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checks(sender_blocked_peer: bool, peer_blocked_sender: bool) -> SendChecks {
        SendChecks {
            sender_blocked_peer,
            peer_blocked_sender,
            peer_archived_unmuted: true,
        }
    }

    #[test]
    fn who_gets_a_copy() {
        let peer = ChatPeer::User(UserId::new(7).unwrap());
        assert_eq!(checks(false, false).recipient_gets_it(peer), Ok(true));
        // The sender is not told that it is blocked.
        assert_eq!(checks(false, true).recipient_gets_it(peer), Ok(false));
        assert_eq!(
            checks(true, false).recipient_gets_it(peer),
            Err(DomainError::YouBlockedUser)
        );
        assert_eq!(
            checks(true, true).recipient_gets_it(peer),
            Err(DomainError::YouBlockedUser)
        );
        // Saved Messages has no recipient, whatever the row says.
        assert_eq!(
            checks(true, true).recipient_gets_it(ChatPeer::SelfChat),
            Ok(false)
        );
    }

    #[test]
    fn only_a_delivered_copy_unarchives() {
        assert!(checks(false, false).unarchives(true));
        assert!(!checks(false, false).unarchives(false));
        assert!(!SendChecks::default().unarchives(true));
    }
}
