//! A run of new messages projected inside the caller's own statement. The write path's commit
//! appends a batch's events with one statement; with this, the same statement also inserts the
//! batch's boxes and moves its dialogs, so a batch of sends commits in one round trip where it
//! took three. The rows are exactly those of [`crate::apply_new_messages`] with
//! [`crate::Projection::ALL`]: the same insert and upsert, as `WITH` entries. Neither reads the
//! other's table, so running both against the statement's one snapshot changes nothing.

use std::sync::LazyLock;

use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::Postgres;

use crate::{
    dialogs, message_boxes, NewMessageAt, ProjectionError, MAX_NEW_MESSAGES_PER_STATEMENT,
};

/// The `WITH` entries (without the `WITH`), named `new_boxes` and `new_dialog_tops`: the boxes'
/// insert over `$1`..`$21` and the dialogs' upsert over the same arrays.
pub fn new_messages_with() -> &'static str {
    static SQL: LazyLock<String> = LazyLock::new(|| {
        format!(
            "new_boxes AS ({}), new_dialog_tops AS ({})",
            message_boxes::INSERT,
            // owner, peer, box id, date, outgoing: the insert's $1, $3, $2, $8, $6.
            dialogs::upsert_sql(["$1", "$3", "$2", "$8", "$6"])
        )
    });
    &SQL
}

/// How many parameters [`new_messages_with`] takes: the caller's own start after them.
pub const NEW_MESSAGES_PARAMS: usize = message_boxes::INSERT_PARAMS;

/// Whether a run of `messages` new messages fits in one statement (and has any); a longer one
/// is projected by [`crate::apply_new_messages`], in statements of at most
/// [`MAX_NEW_MESSAGES_PER_STATEMENT`].
pub fn fits(messages: usize) -> bool {
    messages > 0 && messages <= MAX_NEW_MESSAGES_PER_STATEMENT
}

/// Binds the parameters of [`new_messages_with`] for `run` to `q`, which must have none yet.
pub fn bind_new_messages<'q>(
    q: Query<'q, Postgres, PgArguments>,
    run: &[NewMessageAt<'q>],
) -> Result<Query<'q, Postgres, PgArguments>, ProjectionError> {
    message_boxes::bind_insert(q, run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entries_use_only_the_inserts_parameters() {
        let sql = new_messages_with();
        for n in 1..=NEW_MESSAGES_PARAMS {
            assert!(sql.contains(&format!("${n}::")), "${n} unused");
        }
        assert!(!sql.contains(&format!("${}", NEW_MESSAGES_PARAMS + 1)));
        // The dialogs' arrays are the insert's columns of the same meaning and type.
        assert!(message_boxes::INSERT.contains("$1::bigint[], $2::int[], $3::bigint[]"));
        assert!(message_boxes::INSERT.contains("$6::bool[], $7::bigint[], $8::int[]"));
        assert!(
            sql.contains("unnest($1::bigint[], $3::bigint[], $2::int[], $8::int[], $6::bool[])")
        );
    }
}
