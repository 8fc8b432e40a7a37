//! Reads shared by the store (on the pool) and the write transaction (on its connection).

use std::collections::HashMap;

use application::ports::StoreError;
use domain::message::OwnerMessage;
use domain::{BoxId, UserId};
use sqlx::PgExecutor;

use crate::error::db_error;
use crate::postgres::rows::{owner_message, BOX_COLUMNS};

/// Visible boxes of `owner` by id, in the order of `ids`; missing ones and repeats are left out.
pub(crate) async fn messages_by_ids<'e>(
    ex: impl PgExecutor<'e>,
    owner: UserId,
    ids: &[BoxId],
) -> Result<Vec<OwnerMessage>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let raw: Vec<i32> = ids.iter().map(|id| id.get()).collect();
    let rows = sqlx::query(&format!(
        "SELECT {BOX_COLUMNS} FROM message_boxes WHERE owner_user_id = $1 AND box_id = ANY($2) AND NOT deleted"
    ))
    .bind(owner.get())
    .bind(&raw)
    .fetch_all(ex)
    .await
    .map_err(db_error)?;
    let mut found: HashMap<BoxId, OwnerMessage> = HashMap::with_capacity(rows.len());
    for row in &rows {
        let m = owner_message(row)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_metacharacters_are_escaped() {
        assert_eq!(like_contains("50%_a\\b"), "%50\\%\\_a\\\\b%");
        assert_eq!(like_contains(""), "%%");
    }
}
