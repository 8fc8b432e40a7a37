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
use sqlx::{Column, Row};

/// The columns [`owner_message`] reads, in SELECT-list form (migration 0021's
/// `ptslog_send_preflight` answers them too: a column added here is added there by a migration).
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
    BoxColumns::find(row, "")?.read(row)
}

/// Every row of a result of [`BOX_COLUMNS`], in order.
pub(crate) fn owner_messages(rows: &[PgRow]) -> Result<Vec<OwnerMessage>, StoreError> {
    read_all(rows, BoxColumns::find, BoxColumns::read)
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

/// The position of a result's column, found by name.
fn position(row: &PgRow, name: &str) -> Result<usize, StoreError> {
    row.columns()
        .iter()
        .position(|c| c.name() == name)
        .ok_or_else(|| StoreError::Corrupt(format!("no column {name}")))
}

/// The value at position `i` (from a `find` of [`column_positions!`], which checked the column's
/// type once for the whole result); the error names the column. Release builds do not check the
/// type again for every value: that check (a type clone and a comparison chain) was about a tenth
/// of a getDifference's server instructions. Debug builds, so every test, still check each value.
fn get_at<'r, T>(row: &'r PgRow, i: usize) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    #[cfg(debug_assertions)]
    let value = row.try_get(i);
    #[cfg(not(debug_assertions))]
    let value = row.try_get_unchecked(i);
    value.map_err(|e| {
        let name = row.columns().get(i).map_or("?", |c| c.name());
        StoreError::Corrupt(format!("column {name}: {e}"))
    })
}

/// A JSONB column read straight into its type (no JSON tree in between).
fn json_at<T: serde::de::DeserializeOwned>(row: &PgRow, i: usize) -> Result<Option<T>, StoreError> {
    Ok(get_at::<Option<sqlx::types::Json<T>>>(row, i)?.map(|j| j.0))
}

/// The position of a result's column of SQL type `T`, found by name: a column of another type
/// is corrupt, as a value of it would be.
fn typed_position<T>(row: &PgRow, name: &str) -> Result<usize, StoreError>
where
    T: sqlx::Type<sqlx::Postgres> + ?Sized,
{
    let i = position(row, name)?;
    let found = row.columns()[i].type_info();
    if !T::compatible(found) {
        return Err(StoreError::Corrupt(format!(
            "column {name} is {found}, not {}",
            T::type_info()
        )));
    }
    Ok(i)
}

/// A JSON or JSONB column, whatever type it is read into.
type JsonColumn = sqlx::types::Json<serde::de::IgnoredAny>;

/// Declares a struct of column positions, one `usize` field per column, and its `find`: the
/// positions in `row`'s result of the columns named `<prefix><field>`, each checked to be of its
/// SQL type, looked up once per result so that every row is then read by position.
macro_rules! column_positions {
    ($(#[$doc:meta])* $name:ident { $($field:ident: $ty:ty),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub(crate) struct $name {
            $($field: usize,)+
        }

        impl $name {
            pub(crate) fn find(row: &PgRow, prefix: &str) -> Result<Self, StoreError> {
                Ok(Self {
                    $($field: typed_position::<$ty>(
                        row,
                        &format!("{prefix}{}", stringify!($field)),
                    )?,)+
                })
            }
        }
    };
}

/// Every row of a result, read by the column positions `find` takes from its first row.
fn read_all<C, T>(
    rows: &[PgRow],
    find: impl Fn(&PgRow, &str) -> Result<C, StoreError>,
    read: impl Fn(&C, &PgRow) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let Some(first) = rows.first() else {
        return Ok(Vec::new());
    };
    let at = find(first, "")?;
    rows.iter().map(|row| read(&at, row)).collect()
}

/// Stored entities as [`domain::entities::stored_entities`] reads them (one today's type cannot
/// read is left out, as in an event's payload).
#[derive(serde::Deserialize)]
struct StoredEntities(
    #[serde(deserialize_with = "domain::entities::stored_entities")]
    Vec<domain::message_entity::MessageEntity>,
);

column_positions! {
    /// Where a result's [`BOX_COLUMNS`] are: looked up by name once per result, then read by
    /// position for every row (by name, a 50-message page looked 850 names up in a hash map).
    BoxColumns {
        box_id: i32, message_id: i64, peer_user_id: i64, sender_user_id: i64, outgoing: bool,
        random_id: i64, date: i32, text: str, entities: JsonColumn, silent: bool,
        noforwards: bool, reply_to: JsonColumn, fwd_from: JsonColumn, media_unread: bool,
        edit_date: i32, media: JsonColumn, grouped_id: i64,
    }
}

impl BoxColumns {
    /// Whether `row` holds a message (a LEFT JOIN leaves the columns NULL where it has none).
    pub(crate) fn present(&self, row: &PgRow) -> Result<bool, StoreError> {
        Ok(get_at::<Option<i32>>(row, self.box_id)?.is_some())
    }

    pub(crate) fn read(&self, row: &PgRow) -> Result<OwnerMessage, StoreError> {
        let sqlx::types::Json(StoredEntities(entities)) = get_at(row, self.entities)?;
        Ok(OwnerMessage {
            id: box_id(get_at(row, self.box_id)?, "box_id")?,
            message_id: MessageId(get_at(row, self.message_id)?),
            peer_id: user_id(get_at(row, self.peer_user_id)?, "peer_user_id")?,
            from_id: user_id(get_at(row, self.sender_user_id)?, "sender_user_id")?,
            out: get_at(row, self.outgoing)?,
            date: get_at(row, self.date)?,
            text: get_at(row, self.text)?,
            entities,
            silent: get_at(row, self.silent)?,
            noforwards: get_at(row, self.noforwards)?,
            reply_to: json_at::<ReplyHeader>(row, self.reply_to)?,
            fwd_from: json_at::<ForwardHeader>(row, self.fwd_from)?,
            media_unread: get_at(row, self.media_unread)?,
            random_id: get_at(row, self.random_id)?,
            edit_date: get_at(row, self.edit_date)?,
            media: json_at::<Box<MessageMedia>>(row, self.media)?,
            grouped_id: get_at(row, self.grouped_id)?,
        })
    }
}

pub(crate) fn dialog(row: &PgRow) -> Result<DialogRecord, StoreError> {
    DialogColumns::find(row, "")?.read(row)
}

/// Every row of a result of [`DIALOG_COLUMNS`], in order.
pub(crate) fn dialogs(rows: &[PgRow]) -> Result<Vec<DialogRecord>, StoreError> {
    read_all(rows, DialogColumns::find, DialogColumns::read)
}

column_positions! {
    /// Where a result's [`DIALOG_COLUMNS`] are.
    DialogColumns {
        peer_user_id: i64, folder_id: i16, top_message: i32, top_message_date: i32,
        read_inbox_max_id: i32, read_outbox_max_id: i32, unread_count: i32, unread_mark: bool,
        pinned: bool, notify: JsonColumn,
    }
}

impl DialogColumns {
    pub(crate) fn read(&self, row: &PgRow) -> Result<DialogRecord, StoreError> {
        Ok(DialogRecord {
            peer_id: user_id(get_at(row, self.peer_user_id)?, "peer_user_id")?,
            folder_id: get_at(row, self.folder_id)?,
            top_message: get_at(row, self.top_message)?,
            top_message_date: get_at(row, self.top_message_date)?,
            read_inbox_max_id: get_at(row, self.read_inbox_max_id)?,
            read_outbox_max_id: get_at(row, self.read_outbox_max_id)?,
            unread_count: get_at(row, self.unread_count)?,
            unread_mark: get_at(row, self.unread_mark)?,
            pinned: get_at(row, self.pinned)?,
            notify: json_at::<PeerNotify>(row, self.notify)?.unwrap_or_default(),
        })
    }
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

column_positions! {
    /// Where a result's [`LOG_COLUMNS`] are.
    LogColumns {
        user_id: i64, pts: i32, pts_count: i32, kind: str, payload_version: i16,
        payload_text: str, auth_key_id: i64, session_id: i64, date: i64,
    }
}

impl LogColumns {
    /// Whether `row` holds an event (a LEFT JOIN leaves the columns NULL where it has none).
    pub(crate) fn present(&self, row: &PgRow) -> Result<bool, StoreError> {
        Ok(get_at::<Option<i32>>(row, self.pts)?.is_some())
    }

    /// The row's event, or why it cannot be read. Only a row whose position itself is
    /// unreadable fails.
    pub(crate) fn read(&self, row: &PgRow) -> Result<LogEntry, StoreError> {
        let user = user_id(get_at(row, self.user_id)?, "user_update_events.user_id")?;
        let at = pts(get_at(row, self.pts)?)?;
        let pts_count: i32 = get_at(row, self.pts_count)?;
        let kind: &str = get_at(row, self.kind)?;
        let version: i16 = get_at(row, self.payload_version)?;
        let text: &str = get_at(row, self.payload_text)?;
        let undecodable = |reason: String| {
            LogEntry::Undecodable(UndecodableEvent {
                user_id: user,
                pts: at,
                pts_count,
                kind: kind.to_string(),
                reason,
            })
        };
        // Read straight from the text into the event's type (no JSON tree per event of a page).
        let event = match UserEvent::decode_text(kind, version, text) {
            Ok(event) => event,
            Err(EventDecodeError::Payload { source, .. })
                if source.is_syntax() || source.is_eof() =>
            {
                return Ok(undecodable(format!(
                    "payload is not readable JSON: {source}"
                )))
            }
            Err(e) => return Ok(undecodable(e.to_string())),
        };
        let date: i64 = get_at(row, self.date)?;
        Ok(LogEntry::Event(StoredEvent {
            user_id: user,
            pts: at,
            pts_count,
            event,
            origin: Origin {
                auth_key_id: AuthKeyId(get_at(row, self.auth_key_id)?),
                session_id: SessionId(get_at(row, self.session_id)?),
            },
            date: i32::try_from(date).unwrap_or(i32::MAX),
        }))
    }
}

/// [`EVENT_COLUMNS`] with the payload as text: a payload serde_json cannot read (too deep) then
/// fails only its own row, in [`LogColumns::read`], not the driver's decoding of the result.
pub(crate) const LOG_COLUMNS: &str =
    "user_id, pts, pts_count, kind, payload_version, payload::text AS payload_text, auth_key_id, \
     session_id, floor(extract(epoch FROM committed_at))::bigint AS date";

/// Every row of a result of [`LOG_COLUMNS`], in order.
pub(crate) fn log_entries(rows: &[PgRow]) -> Result<Vec<LogEntry>, StoreError> {
    read_all(rows, LogColumns::find, LogColumns::read)
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
