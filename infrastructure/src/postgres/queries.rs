//! Reads shared by the store (on the pool) and the write transaction (on its connection).

use std::collections::HashMap;
use std::sync::LazyLock;

use application::ports::StoreError;
use domain::message::OwnerMessage;
use domain::{BoxId, UserId};
use sqlx::postgres::PgRow;
use sqlx::PgExecutor;

use crate::error::db_error;
use crate::postgres::partitions::{Addressed, Partition};
use crate::postgres::rows::{owner_messages, BOX_COLUMNS};

/// Visible boxes of `owner` by id, in the order of `ids`; missing ones and repeats are left out.
/// `$1` owner, `$2` box ids: the visible ones (message_boxes primary key), in the owner's
/// partition or through the parent (`None`).
pub(crate) fn messages_by_ids_sql(p: Option<Partition>) -> &'static str {
    static SQL: LazyLock<Addressed> = LazyLock::new(|| {
        Addressed::new(
            &format!(
                "SELECT {BOX_COLUMNS} FROM message_boxes WHERE owner_user_id = $1 AND box_id = ANY($2) AND NOT deleted"
            ),
            &["message_boxes"],
        )
    });
    SQL.get(p)
}

/// The rows of [`messages_by_ids_sql`]; the statement's own error, so that a read connection it
/// broke can be let go ([`super::read_pool::ReadConn::failed`]).
pub(crate) async fn messages_by_ids_rows<'e>(
    ex: impl PgExecutor<'e>,
    owner: UserId,
    ids: &[BoxId],
    p: Option<Partition>,
) -> Result<Vec<PgRow>, sqlx::Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let raw: Vec<i32> = ids.iter().map(|id| id.get()).collect();
    sqlx::query(messages_by_ids_sql(p))
        .bind(owner.get())
        .bind(&raw)
        .fetch_all(ex)
        .await
}

/// The messages of [`messages_by_ids_rows`] in the order of `ids`; repeats are left out.
pub(crate) fn messages_in_order(
    rows: &[PgRow],
    ids: &[BoxId],
) -> Result<Vec<OwnerMessage>, StoreError> {
    let mut found: HashMap<BoxId, OwnerMessage> = HashMap::with_capacity(rows.len());
    for m in owner_messages(rows)? {
        found.insert(m.id, m);
    }
    // Removing on the way out keeps the order of `ids` and drops repeats.
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// `%`, `_` and `\` are LIKE metacharacters; a search for them means the characters themselves.
pub(crate) fn like_contains(query: &str) -> String {
    let mut pattern = String::with_capacity(query.len() + 2);
    pattern.push('%');
    for c in query.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

/// The pinned peers of a folder, in pinned order (dialogs_pinned).
pub(crate) async fn pinned_peers<'e>(
    ex: impl PgExecutor<'e>,
    owner: UserId,
    folder_id: i16,
) -> Result<Vec<UserId>, StoreError> {
    let raw: Vec<i64> = sqlx::query_scalar(
        "SELECT peer_user_id FROM dialogs WHERE user_id = $1 AND folder_id = $2 AND pinned_order IS NOT NULL \
         ORDER BY pinned_order, peer_user_id",
    )
    .bind(owner.get())
    .bind(folder_id)
    .fetch_all(ex)
    .await
    .map_err(db_error)?;
    raw.into_iter()
        .map(|p| crate::postgres::rows::user_id(p, "peer_user_id"))
        .collect()
}

/// The owner's filters (in their order) and filter settings, on one connection.
pub(crate) async fn dialog_filters(
    conn: &mut sqlx::PgConnection,
    owner: UserId,
) -> Result<application::ports::FilterSet, StoreError> {
    use domain::events::DialogFilterRules;
    let rows: Vec<(i32, serde_json::Value)> = sqlx::query_as(
        "SELECT filter_id, filter FROM dialog_filters WHERE user_id = $1 ORDER BY filter_id",
    )
    .bind(owner.get())
    .fetch_all(&mut *conn)
    .await
    .map_err(db_error)?;
    let settings: Option<(Vec<i32>, bool)> = sqlx::query_as(
        "SELECT filter_order, tags_enabled FROM dialog_filter_settings WHERE user_id = $1",
    )
    .bind(owner.get())
    .fetch_optional(&mut *conn)
    .await
    .map_err(db_error)?;
    let (order, tags_enabled) = settings.unwrap_or_default();
    let mut by_id: Vec<DialogFilterRules> = Vec::with_capacity(rows.len());
    for (id, json) in rows {
        let f: DialogFilterRules = serde_json::from_value(json)
            .map_err(|e| StoreError::Corrupt(format!("dialog filter {id} of user {owner}: {e}")))?;
        by_id.push(f);
    }
    let mut filters = Vec::with_capacity(by_id.len());
    for id in &order {
        if let Some(i) = by_id.iter().position(|f| f.id == *id) {
            filters.push(by_id.remove(i));
        }
    }
    filters.extend(by_id);
    Ok(application::ports::FilterSet {
        filters,
        order,
        tags_enabled,
    })
}

pub(crate) const CONTACT_COLUMNS: &str =
    "contact_user_id, first_name, last_name, phone, imported, date";

pub(crate) fn contact(
    row: &sqlx::postgres::PgRow,
) -> Result<application::ports::ContactRecord, StoreError> {
    use crate::postgres::rows::{get, user_id};
    Ok(application::ports::ContactRecord {
        user_id: user_id(get(row, "contact_user_id")?, "contact_user_id")?,
        first_name: get(row, "first_name")?,
        last_name: get(row, "last_name")?,
        phone: get(row, "phone")?,
        imported: get(row, "imported")?,
        date: get(row, "date")?,
    })
}

/// Whether the owner hid the chat's action bar (peer_settings primary key); the statement's own
/// error, as [`messages_by_ids_rows`].
pub(crate) async fn bar_hidden<'e>(
    ex: impl PgExecutor<'e>,
    owner: UserId,
    peer: UserId,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT COALESCE((SELECT bar_hidden FROM peer_settings WHERE owner_user_id = $1 AND peer_user_id = $2), false)",
    )
    .bind(owner.get())
    .bind(peer.get())
    .fetch_one(ex)
    .await
}

/// The owner's notification settings of one chat (notify_settings primary key); the statement's
/// own error, as [`messages_by_ids_rows`].
pub(crate) async fn notify_settings<'e>(
    ex: impl PgExecutor<'e>,
    owner: UserId,
    peer: UserId,
) -> Result<domain::events::PeerNotify, sqlx::Error> {
    let row: Option<(Option<bool>, Option<bool>, Option<i32>)> = sqlx::query_as(
        "SELECT show_previews, silent, mute_until FROM notify_settings WHERE owner_user_id = $1 AND peer_user_id = $2",
    )
    .bind(owner.get())
    .bind(peer.get())
    .fetch_optional(ex)
    .await?;
    Ok(row
        .map(
            |(show_previews, silent, mute_until)| domain::events::PeerNotify {
                show_previews,
                silent,
                mute_until,
            },
        )
        .unwrap_or_default())
}

/// The condition "the owner ($owner) has its dialog with $peer archived and not muted at $now", as
/// SQL over three placeholders (dialogs primary key, notify_settings primary key).
pub(crate) fn archived_unmuted_sql(owner: &str, peer: &str, now: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM dialogs d WHERE d.user_id = {owner} AND d.peer_user_id = {peer} AND d.folder_id = 1 \
           AND NOT EXISTS (SELECT 1 FROM notify_settings n WHERE n.owner_user_id = {owner} \
                           AND n.peer_user_id = {peer} AND n.mute_until > {now}))"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_metacharacters_are_escaped() {
        assert_eq!(like_contains("50%_a\\b"), "%50\\%\\_a\\\\b%");
        assert_eq!(like_contains(""), "%%");
    }
}
