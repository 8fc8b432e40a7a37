//! `dialogs`: the dialog list. Depends on `message_boxes`: after a deletion or a read it recomputes
//! the top message and the unread count from the owner's visible boxes, so `message_boxes` must have
//! applied the same event first. Also the owner's organization of the list: the folder (main list
//! or archive), the pinned position within it and the manual unread mark. And the chat's number of
//! visible messages (`message_count`, version 3), which getHistory answers without counting: one
//! more per new message, recounted from the boxes after a deletion.

use domain::events::{DeleteMessages, UserEvent};
use domain::{Pts, UserId};
use std::sync::LazyLock;

use sqlx::PgConnection;

use crate::{box_ids, NewMessageAt, ProjectionError};

pub const NAME: &str = "dialogs";
pub const VERSION: i32 = 3;

pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    _pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    match event {
        UserEvent::NewMessage(e) => {
            new_messages(
                conn,
                &[NewMessageAt {
                    owner,
                    pts: _pts,
                    message: &e.message,
                }],
            )
            .await
        }
        UserEvent::DeleteMessages(e) => delete_messages(conn, owner, e).await,
        UserEvent::ReadHistoryInbox(e) => {
            sqlx::query(
                "UPDATE dialogs d SET \
                   read_inbox_max_id = GREATEST(d.read_inbox_max_id, $3), \
                   unread_count = (SELECT count(*)::int FROM message_boxes m \
                                   WHERE m.owner_user_id = $1 AND m.peer_user_id = $2 AND NOT m.deleted \
                                     AND NOT m.outgoing AND m.box_id > GREATEST(d.read_inbox_max_id, $3)), \
                   unread_mark = false \
                 WHERE d.user_id = $1 AND d.peer_user_id = $2",
            )
            .bind(owner.get())
            .bind(e.peer_id.get())
            .bind(e.max_id.get())
            .execute(conn)
            .await?;
            Ok(())
        }
        UserEvent::ReadHistoryOutbox(e) => {
            sqlx::query(
                "UPDATE dialogs SET read_outbox_max_id = GREATEST(read_outbox_max_id, $3) \
                 WHERE user_id = $1 AND peer_user_id = $2",
            )
            .bind(owner.get())
            .bind(e.peer_id.get())
            .bind(e.max_id.get())
            .execute(conn)
            .await?;
            Ok(())
        }
        UserEvent::DialogPinned(e) => {
            // A new pin goes on top: one less than the smallest position of the folder's pins.
            sqlx::query(
                "UPDATE dialogs SET pinned_order = CASE WHEN $4 THEN \
                   (SELECT COALESCE(min(p.pinned_order), 1) - 1 FROM dialogs p \
                    WHERE p.user_id = $1 AND p.folder_id = $3 AND p.pinned_order IS NOT NULL) ELSE NULL END \
                 WHERE user_id = $1 AND peer_user_id = $2 AND folder_id = $3",
            )
            .bind(owner.get())
            .bind(e.peer_id.get())
            .bind(e.folder_id)
            .bind(e.pinned)
            .execute(conn)
            .await?;
            Ok(())
        }
        UserEvent::PinnedDialogs(e) => {
            sqlx::query(
                "UPDATE dialogs SET pinned_order = NULL \
                 WHERE user_id = $1 AND folder_id = $2 AND pinned_order IS NOT NULL",
            )
            .bind(owner.get())
            .bind(e.folder_id)
            .execute(&mut *conn)
            .await?;
            let order: Vec<i64> = e.order.iter().map(|p| p.get()).collect();
            sqlx::query(
                "UPDATE dialogs d SET pinned_order = o.position::int \
                 FROM unnest($3::bigint[]) WITH ORDINALITY AS o(peer, position) \
                 WHERE d.user_id = $1 AND d.folder_id = $2 AND d.peer_user_id = o.peer",
            )
            .bind(owner.get())
            .bind(e.folder_id)
            .bind(&order)
            .execute(&mut *conn)
            .await?;
            Ok(())
        }
        UserEvent::DialogUnreadMark(e) => {
            sqlx::query(
                "UPDATE dialogs SET unread_mark = $3 WHERE user_id = $1 AND peer_user_id = $2",
            )
            .bind(owner.get())
            .bind(e.peer_id.get())
            .bind(e.unread)
            .execute(conn)
            .await?;
            Ok(())
        }
        UserEvent::FolderPeers(e) => {
            // A dialog that changes folder leaves the old folder's pinned list.
            let peers: Vec<i64> = e.folder_peers.iter().map(|f| f.peer_id.get()).collect();
            let folders: Vec<i16> = e.folder_peers.iter().map(|f| f.folder_id).collect();
            sqlx::query(
                "UPDATE dialogs d SET folder_id = v.folder_id, pinned_order = NULL \
                 FROM unnest($2::bigint[], $3::smallint[]) AS v(peer, folder_id) \
                 WHERE d.user_id = $1 AND d.peer_user_id = v.peer AND d.folder_id <> v.folder_id",
            )
            .bind(owner.get())
            .bind(&peers)
            .bind(&folders)
            .execute(conn)
            .await?;
            Ok(())
        }
        UserEvent::EditMessage(_)
        | UserEvent::ReadMessageContents(_)
        | UserEvent::PeerBlocked(_)
        | UserEvent::DialogFilter(_)
        | UserEvent::DialogFilterOrder(_)
        | UserEvent::DialogFilterTags(_)
        | UserEvent::ContactSaved(_)
        | UserEvent::ContactDeleted(_)
        | UserEvent::ContactsReset(_)
        | UserEvent::PeerSettings(_)
        | UserEvent::NotifySettings(_)
        | UserEvent::ProfilePhotoChanged(_) => Ok(()),
    }
}

/// Creates each chat's dialog (again, in folder 0, if it had been removed) or moves its top
/// message up, for any number of new messages in one statement, with exactly the effect of one
/// upsert per message in order: grouped per dialog (one statement may not upsert a row twice),
/// the top message is the greater of the row's and the group's newest, the count grows by the
/// group's size and the unread count by its incoming messages above the read mark (which new
/// messages do not move). Every SET expression sees the row as it was.
pub(crate) async fn new_messages(
    conn: &mut PgConnection,
    messages: &[NewMessageAt<'_>],
) -> Result<(), ProjectionError> {
    if messages.is_empty() {
        return Ok(());
    }
    let n = messages.len();
    let (mut owner, mut peer, mut box_id, mut date, mut out) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for m in messages {
        owner.push(m.owner.get());
        peer.push(m.message.peer_id.get());
        box_id.push(m.message.id.get());
        date.push(m.message.date);
        out.push(m.message.out);
    }
    static UPSERT_ALONE: LazyLock<String> =
        LazyLock::new(|| upsert_sql(["$1", "$2", "$3", "$4", "$5"]));
    sqlx::query(&UPSERT_ALONE)
        .bind(&owner)
        .bind(&peer)
        .bind(&box_id)
        .bind(&date)
        .bind(&out)
        .execute(conn)
        .await?;
    Ok(())
}

/// The upsert of [`new_messages`] over five arrays given as parameters: the owners (bigint[]),
/// peers (bigint[]), box ids (int[]), dates (int[]) and whether outgoing (bool[]), in that order.
/// Alone they are `$1`..`$5`; as a `WITH` entry beside `message_boxes`' insert (`crate::inline`)
/// they are that insert's own parameters.
pub(crate) fn upsert_sql([owner, peer, box_id, date, out]: [&str; 5]) -> String {
    format!(
        "INSERT INTO dialogs AS d (user_id, peer_user_id, top_message, top_message_date, unread_count, message_count) \
         SELECT m.owner, m.peer, max(m.box_id), (array_agg(m.date ORDER BY m.box_id DESC))[1], \
                (count(*) FILTER (WHERE NOT m.out))::int, count(*)::int \
         FROM unnest({owner}::bigint[], {peer}::bigint[], {box_id}::int[], {date}::int[], {out}::bool[]) AS m(owner, peer, box_id, date, out) \
         GROUP BY m.owner, m.peer \
         ON CONFLICT (user_id, peer_user_id) DO UPDATE SET \
           message_count = d.message_count + EXCLUDED.message_count, \
           top_message = GREATEST(d.top_message, EXCLUDED.top_message), \
           top_message_date = CASE WHEN EXCLUDED.top_message > d.top_message \
                                   THEN EXCLUDED.top_message_date ELSE d.top_message_date END, \
           unread_count = d.unread_count + \
             (SELECT count(*)::int FROM unnest({owner}::bigint[], {peer}::bigint[], {box_id}::int[], {out}::bool[]) AS i(owner, peer, box_id, out) \
              WHERE i.owner = d.user_id AND i.peer = d.peer_user_id AND NOT i.out AND i.box_id > d.read_inbox_max_id)"
    )
}

async fn delete_messages(
    conn: &mut PgConnection,
    owner: UserId,
    e: &DeleteMessages,
) -> Result<(), ProjectionError> {
    // The boxes are already marked deleted (message_boxes ran first) but still say which chat they
    // were in.
    let mut peers: Vec<i64> = sqlx::query_scalar(
        "SELECT DISTINCT peer_user_id FROM message_boxes WHERE owner_user_id = $1 AND box_id = ANY($2)",
    )
    .bind(owner.get())
    .bind(box_ids(&e.ids))
    .fetch_all(&mut *conn)
    .await?;
    if let Some(clear) = &e.clear_history {
        if !peers.contains(&clear.peer_id.get()) {
            peers.push(clear.peer_id.get());
        }
    }
    if peers.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE dialogs d SET \
           top_message = COALESCE((SELECT m.box_id FROM message_boxes m \
                                   WHERE m.owner_user_id = $1 AND m.peer_user_id = d.peer_user_id AND NOT m.deleted \
                                   ORDER BY m.box_id DESC LIMIT 1), 0), \
           top_message_date = COALESCE((SELECT m.date FROM message_boxes m \
                                        WHERE m.owner_user_id = $1 AND m.peer_user_id = d.peer_user_id AND NOT m.deleted \
                                        ORDER BY m.box_id DESC LIMIT 1), 0), \
           unread_count = (SELECT count(*)::int FROM message_boxes m \
                           WHERE m.owner_user_id = $1 AND m.peer_user_id = d.peer_user_id AND NOT m.deleted \
                             AND NOT m.outgoing AND m.box_id > d.read_inbox_max_id), \
           message_count = (SELECT count(*)::int FROM message_boxes m \
                            WHERE m.owner_user_id = $1 AND m.peer_user_id = d.peer_user_id AND NOT m.deleted) \
         WHERE d.user_id = $1 AND d.peer_user_id = ANY($2)",
    )
    .bind(owner.get())
    .bind(&peers)
    .execute(&mut *conn)
    .await?;
    if let Some(clear) = e.clear_history.as_ref().filter(|c| !c.just_clear) {
        sqlx::query(
            "DELETE FROM dialogs WHERE user_id = $1 AND peer_user_id = $2 AND NOT EXISTS \
             (SELECT 1 FROM message_boxes m WHERE m.owner_user_id = $1 AND m.peer_user_id = $2 AND NOT m.deleted)",
        )
        .bind(owner.get())
        .bind(clear.peer_id.get())
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
