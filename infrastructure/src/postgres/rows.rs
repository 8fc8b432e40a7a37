//! Decoding read-model and log rows into the ports' types. Anything that does not decode is corrupt
//! stored data, never a panic.

use application::ports::{
    DialogRecord, LogEntry, Origin, StoreError, StoredEvent, UndecodableEvent, UserPhoto,
    UserRecord,
};
use domain::events::{EventDecodeError, PeerNotify, UserEvent};
use domain::media::{MediaId, MessageMedia};
use domain::message::{ForwardHeader, OwnerMessage, ReplyHeader};
use domain::{AuthKeyId, BoxId, MessageId, Pts, SessionId, UserId};
use sqlx::postgres::PgRow;
use sqlx::Row;

/// The columns [`owner_message`] reads, in SELECT-list form.
pub(crate) const BOX_COLUMNS: &str =
    "box_id, message_id, peer_user_id, sender_user_id, outgoing, random_id, date, \
     text, entities, silent, noforwards, reply_to, fwd_from, media_unread, edit_date, media, grouped_id";

/// Read `FROM dialogs` (unaliased): the chat's notification settings come from their own read model,
/// one primary-key lookup per dialog.
pub(crate) const DIALOG_COLUMNS: &str =
    "peer_user_id, folder_id, top_message, top_message_date, read_inbox_max_id, read_outbox_max_id, unread_count, unread_mark, \
     pinned_order IS NOT NULL AS pinned, \
     (SELECT jsonb_build_object('show_previews', n.show_previews, 'silent', n.silent, 'mute_until', n.mute_until) \
      FROM notify_settings n WHERE n.owner_user_id = dialogs.user_id AND n.peer_user_id = dialogs.peer_user_id) AS notify";

/// Read `FROM users` (unaliased); the current profile photo by the `profile_photos_current` index.
pub(crate) const USER_COLUMNS: &str = "id, phone, first_name, last_name, \
     (SELECT jsonb_build_object('id', pp.photo_id, 'stripped', pp.photo->'stripped') \
      FROM profile_photos pp WHERE pp.owner_user_id = users.id \
      ORDER BY pp.set_pts DESC LIMIT 1) AS profile_photo";

pub(crate) const EVENT_COLUMNS: &str =
    "user_id, pts, pts_count, kind, payload_version, payload, auth_key_id, session_id, \
     floor(extract(epoch FROM committed_at))::bigint AS date";

pub(crate) fn get<'r, T>(row: &'r PgRow, column: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    row.try_get(column)
        .map_err(|e| StoreError::Corrupt(format!("column {column}: {e}")))
}

pub(crate) fn user_id(raw: i64, what: &str) -> Result<UserId, StoreError> {
    UserId::new(raw).map_err(|_| StoreError::Corrupt(format!("{what} {raw} is not a user id")))
}

pub(crate) fn box_id(raw: i32, what: &str) -> Result<BoxId, StoreError> {
    BoxId::new(raw).ok_or_else(|| StoreError::Corrupt(format!("{what} {raw} is not a box id")))
}

pub(crate) fn pts(raw: i32) -> Result<Pts, StoreError> {
    Pts::new(raw).ok_or_else(|| StoreError::Corrupt(format!("pts {raw} is negative")))
}

pub(crate) fn owner_message(row: &PgRow) -> Result<OwnerMessage, StoreError> {
    owner_message_at(row, "")
}

/// [`BOX_COLUMNS`] of `alias`, each renamed `<prefix><column>`: a message read beside other rows
/// whose column names it would clash with (a dialog and its top message in one row).
pub(crate) fn box_columns_as(alias: &str, prefix: &str) -> String {
    BOX_COLUMNS
        .split(',')
        .map(str::trim)
        .map(|c| format!("{alias}.{c} AS {prefix}{c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An [`owner_message`] whose columns carry `prefix` ([`box_columns_as`]).
pub(crate) fn owner_message_at(row: &PgRow, prefix: &str) -> Result<OwnerMessage, StoreError> {
    let col = |c: &str| format!("{prefix}{c}");
    // Read like an event payload's entities: one today's type cannot read is left out.
    let entities =
        domain::entities::stored_entities(get::<serde_json::Value>(row, &col("entities"))?)
            .map_err(|e| StoreError::Corrupt(format!("entities: {e}")))?;
    let reply_to = get::<Option<serde_json::Value>>(row, &col("reply_to"))?
        .map(serde_json::from_value::<ReplyHeader>)
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("reply_to: {e}")))?;
    let fwd_from = get::<Option<serde_json::Value>>(row, &col("fwd_from"))?
        .map(serde_json::from_value::<ForwardHeader>)
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("fwd_from: {e}")))?;
    let media = get::<Option<serde_json::Value>>(row, &col("media"))?
        .map(serde_json::from_value::<MessageMedia>)
        .transpose()
        .map_err(|e| StoreError::Corrupt(format!("media: {e}")))?;
    Ok(OwnerMessage {
        id: box_id(get(row, &col("box_id"))?, "box_id")?,
        message_id: MessageId(get(row, &col("message_id"))?),
        peer_id: user_id(get(row, &col("peer_user_id"))?, "peer_user_id")?,
        from_id: user_id(get(row, &col("sender_user_id"))?, "sender_user_id")?,
        out: get(row, &col("outgoing"))?,
        date: get(row, &col("date"))?,
        text: get(row, &col("text"))?,
        entities,
        silent: get(row, &col("silent"))?,
        noforwards: get(row, &col("noforwards"))?,
        reply_to,
        fwd_from,
        media_unread: get(row, &col("media_unread"))?,
        random_id: get(row, &col("random_id"))?,
        edit_date: get(row, &col("edit_date"))?,
        media,
        grouped_id: get(row, &col("grouped_id"))?,
    })
}

pub(crate) fn dialog(row: &PgRow) -> Result<DialogRecord, StoreError> {
    Ok(DialogRecord {
        peer_id: user_id(get(row, "peer_user_id")?, "peer_user_id")?,
        folder_id: get(row, "folder_id")?,
        top_message: get(row, "top_message")?,
        top_message_date: get(row, "top_message_date")?,
        read_inbox_max_id: get(row, "read_inbox_max_id")?,
        read_outbox_max_id: get(row, "read_outbox_max_id")?,
        unread_count: get(row, "unread_count")?,
        unread_mark: get(row, "unread_mark")?,
        pinned: get(row, "pinned")?,
        notify: match get::<Option<serde_json::Value>>(row, "notify")? {
            None => PeerNotify::default(),
            Some(v) => serde_json::from_value(v)
                .map_err(|e| StoreError::Corrupt(format!("notify settings: {e}")))?,
        },
    })
}

pub(crate) fn user(row: &PgRow) -> Result<UserRecord, StoreError> {
    Ok(UserRecord {
        id: user_id(get(row, "id")?, "users.id")?,
        phone: get(row, "phone")?,
        first_name: get(row, "first_name")?,
        last_name: get(row, "last_name")?,
        photo: user_photo(get(row, "profile_photo")?)?,
    })
}

/// The `profile_photo` column of a user read: `{"id": …, "stripped": "<hex>"}` or NULL.
pub(crate) fn user_photo(raw: Option<serde_json::Value>) -> Result<Option<UserPhoto>, StoreError> {
    let Some(v) = raw else {
        return Ok(None);
    };
    let corrupt = |what: &str| StoreError::Corrupt(format!("profile photo: {what}"));
    let id = v["id"]
        .as_i64()
        .and_then(MediaId::new)
        .ok_or_else(|| corrupt("no id"))?;
    let stripped = match v["stripped"].as_str() {
        None => Vec::new(),
        Some(hex_text) => hex::decode(hex_text).map_err(|_| corrupt("stripped is not hex"))?,
    };
    Ok(Some(UserPhoto { id, stripped }))
}

/// [`EVENT_COLUMNS`] with the payload as text: a payload serde_json cannot read (too deep) then
/// fails only its own row, in [`log_entry`], not the driver's decoding of the result.
pub(crate) const LOG_COLUMNS: &str =
    "user_id, pts, pts_count, kind, payload_version, payload::text AS payload_text, auth_key_id, \
     session_id, floor(extract(epoch FROM committed_at))::bigint AS date";

/// One row of [`LOG_COLUMNS`]: the event, or why it cannot be read. Only a row whose position
/// itself is unreadable fails.
pub(crate) fn log_entry(row: &PgRow) -> Result<LogEntry, StoreError> {
    let user = user_id(get(row, "user_id")?, "user_update_events.user_id")?;
    let at = pts(get(row, "pts")?)?;
    let pts_count: i32 = get(row, "pts_count")?;
    let kind: String = get(row, "kind")?;
    let version: i16 = get(row, "payload_version")?;
    let text: String = get(row, "payload_text")?;
    let undecodable = |reason: String| {
        LogEntry::Undecodable(UndecodableEvent {
            user_id: user,
            pts: at,
            pts_count,
            kind: kind.clone(),
            reason,
        })
    };
    // Read straight from the text into the event's type (no JSON tree per event of a page).
    let event = match UserEvent::decode_text(&kind, version, &text) {
        Ok(event) => event,
        Err(EventDecodeError::Payload { source, .. }) if source.is_syntax() || source.is_eof() => {
            return Ok(undecodable(format!(
                "payload is not readable JSON: {source}"
            )))
        }
        Err(e) => return Ok(undecodable(e.to_string())),
    };
    let date: i64 = get(row, "date")?;
    Ok(LogEntry::Event(StoredEvent {
        user_id: user,
        pts: at,
        pts_count,
        event,
        origin: Origin {
            auth_key_id: AuthKeyId(get(row, "auth_key_id")?),
            session_id: SessionId(get(row, "session_id")?),
        },
        date: i32::try_from(date).unwrap_or(i32::MAX),
    }))
}

pub(crate) fn stored_event(row: &PgRow) -> Result<StoredEvent, StoreError> {
    let user = user_id(get(row, "user_id")?, "user_update_events.user_id")?;
    let at = pts(get(row, "pts")?)?;
    let kind: String = get(row, "kind")?;
    let version: i16 = get(row, "payload_version")?;
    let event = UserEvent::decode(&kind, version, get(row, "payload")?)
        .map_err(|e| StoreError::Corrupt(format!("event pts {} of user {user}: {e}", at.get())))?;
    let date: i64 = get(row, "date")?;
    Ok(StoredEvent {
        user_id: user,
        pts: at,
        pts_count: get(row, "pts_count")?,
        event,
        origin: Origin {
            auth_key_id: AuthKeyId(get(row, "auth_key_id")?),
            session_id: SessionId(get(row, "session_id")?),
        },
        date: i32::try_from(date).unwrap_or(i32::MAX),
    })
}
