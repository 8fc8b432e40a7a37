//! The hot reads' statements with their arguments bound, on a given connection: the store runs
//! them for its calls, and [`warm`] runs the same ones (the same text and parameter types, so
//! the same prepared statements) on a new read connection before calls need them.

use application::ports::DialogCursor;
use domain::UserId;
use sqlx::postgres::PgRow;
use sqlx::PgConnection;

use crate::postgres::partitions::Partition;
use crate::postgres::queries::messages_by_ids_rows;
use crate::postgres::store::statements;

/// `viewer`'s view of the accounts `ids`.
pub(crate) async fn users_seen_by(
    conn: &mut PgConnection,
    p: Option<Partition>,
    viewer: UserId,
    ids: &[i64],
) -> Result<Vec<PgRow>, sqlx::Error> {
    sqlx::query(statements::users_seen_by(p))
        .bind(viewer.get())
        .bind(ids)
        .fetch_all(conn)
        .await
}

/// The page's bounds as [`statements::history_page`] takes them.
pub(crate) struct PageArgs {
    pub below: i64,
    pub above: i64,
    pub skip: i64,
    pub limit: i64,
}

pub(crate) async fn history_page(
    conn: &mut PgConnection,
    p: Option<Partition>,
    owner: UserId,
    peer: UserId,
    a: &PageArgs,
) -> Result<Vec<PgRow>, sqlx::Error> {
    sqlx::query(statements::history_page(p))
        .bind(owner.get())
        .bind(peer.get())
        .bind(a.below)
        .bind(a.above)
        .bind(a.skip)
        .bind(a.limit)
        .fetch_all(conn)
        .await
}

pub(crate) async fn state_head(
    conn: &mut PgConnection,
    p: Option<Partition>,
    owner: UserId,
) -> Result<PgRow, sqlx::Error> {
    sqlx::query(statements::state_head(p))
        .bind(owner.get())
        .fetch_one(conn)
        .await
}

pub(crate) async fn difference(
    conn: &mut PgConnection,
    p: Option<Partition>,
    owner: UserId,
    after: i32,
    limit: i64,
) -> Result<Vec<PgRow>, sqlx::Error> {
    sqlx::query(statements::difference(p))
        .bind(owner.get())
        .bind(after)
        .bind(limit.max(0))
        .fetch_all(conn)
        .await
}

pub(crate) async fn dialog_list(
    conn: &mut PgConnection,
    p: Option<Partition>,
    owner: UserId,
    folder_id: i16,
    cursor: Option<DialogCursor>,
    limit: i64,
    extra_for_pins: bool,
) -> Result<Vec<PgRow>, sqlx::Error> {
    let c = cursor.unwrap_or(DialogCursor {
        top_message_date: 0,
        top_message: 0,
        peer_id: 0,
    });
    sqlx::query(statements::dialog_list(cursor.is_some(), p))
        .bind(owner.get())
        .bind(folder_id)
        .bind(limit.max(0))
        .bind(extra_for_pins)
        .bind(c.top_message_date)
        .bind(c.top_message)
        .bind(c.peer_id)
        .fetch_all(conn)
        .await
}

/// An account id in `p` that no account has: the largest such id (ids come from a sequence
/// counting up from 1).
fn stand_in(p: Option<Partition>) -> UserId {
    let mut id = i64::MAX;
    while let Some(want) = p {
        let user = UserId::new(id).expect("positive");
        if Partition::of(user) == want {
            break;
        }
        id -= 1;
    }
    UserId::new(id).expect("positive")
}

/// How many statements [`warm`] prepares and plans for each partition.
pub const WARMED_PER_PARTITION: usize = 7;

/// Runs every hot read once on `conn` for each partition (for the parents only, `addressed`
/// false), for accounts nobody has: each statement is then prepared and its generic plan made
/// on this connection, which a call would otherwise pay at its first use (about a millisecond a
/// statement on a quiet machine). Answers how many statements ran.
pub async fn warm(conn: &mut PgConnection, addressed: bool) -> Result<usize, sqlx::Error> {
    let targets: Vec<Option<Partition>> = if addressed {
        Partition::all().map(Some).collect()
    } else {
        vec![None]
    };
    let page = PageArgs {
        below: i64::MAX,
        above: 0,
        skip: 0,
        limit: 1,
    };
    let cursor = DialogCursor {
        top_message_date: 0,
        top_message: 0,
        peer_id: 0,
    };
    let mut ran = 0;
    for p in targets {
        let nobody = stand_in(p);
        users_seen_by(conn, p, nobody, &[nobody.get()]).await?;
        history_page(conn, p, nobody, nobody, &page).await?;
        state_head(conn, p, nobody).await?;
        difference(conn, p, nobody, 0, 1).await?;
        dialog_list(conn, p, nobody, 0, None, 1, false).await?;
        dialog_list(conn, p, nobody, 0, Some(cursor), 1, false).await?;
        messages_by_ids_rows(&mut *conn, nobody, &[domain::BoxId::new(1).expect("1")], p).await?;
        ran += WARMED_PER_PARTITION;
    }
    Ok(ran)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_in_their_partitions_and_far_from_real_ids() {
        for p in Partition::all() {
            let id = stand_in(Some(p));
            assert_eq!(Partition::of(id), p);
            assert!(id.get() > i64::MAX - 10_000);
        }
        assert_eq!(stand_in(None).get(), i64::MAX);
    }
}
