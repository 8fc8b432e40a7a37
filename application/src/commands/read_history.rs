//! `messages.readHistory`: moves the reader's inbox watermark, and the sender's outbox watermark
//! only when it really moves (so nothing is "read" the moment it is sent).

use domain::events::{ReadHistoryInbox, ReadHistoryOutbox, UserEvent};
use domain::{BoxId, UserId};
use serde::Deserialize;

use super::batched_write::Write;
use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::{Origin, WriteTx};
use crate::tl::{AffectedMessages, InputPeer};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct ReadHistory {
    pub peer: InputPeer,
    #[serde(default)]
    pub max_id: i32,
}

/// A mark-read waiting for its transaction.
#[derive(Debug, Clone)]
pub(crate) struct PreparedReadHistory {
    pub reader: UserId,
    pub peer: UserId,
    pub max_id: i32,
    pub origin: Origin,
}

impl App {
    pub async fn read_history(
        &self,
        caller: &Caller,
        req: ReadHistory,
    ) -> Result<AffectedMessages, AppError> {
        let reader = caller.user_id;
        let peer = self.chat_peer(reader, &req.peer)?.user_id(reader);
        let read = PreparedReadHistory {
            reader,
            peer,
            max_id: req.max_id,
            origin: Origin::from(caller),
        };
        self.write(Write::ReadHistory(read)).await?.affected()
    }
}

/// The mark-read's work inside a transaction that has locked both accounts; the caller commits.
pub(crate) async fn read_history_locked(
    tx: &mut dyn WriteTx,
    req: &PreparedReadHistory,
) -> Result<AffectedMessages, AppError> {
    let (reader, peer) = (req.reader, req.peer);
    let unchanged = |tx: &dyn WriteTx| -> Result<AffectedMessages, AppError> {
        Ok(AffectedMessages {
            pts: tx.current_pts(reader)?.get(),
            pts_count: 0,
        })
    };
    let Some(dialog) = tx.dialog(reader, peer).await? else {
        return unchanged(tx);
    };
    // max_id 0 (or past the end) means "everything so far".
    let target = if req.max_id <= 0 {
        dialog.top_message
    } else {
        req.max_id.min(dialog.top_message)
    };
    let moves = target > dialog.read_inbox_max_id;
    if peer == reader || (!moves && !dialog.unread_mark) {
        return unchanged(tx);
    }
    let new_max = target.max(dialog.read_inbox_max_id);
    let Some(max_id) = BoxId::new(new_max) else {
        return unchanged(tx);
    };
    let progress = tx.read_progress(reader, peer, new_max).await?;
    let origin = req.origin;
    let pts = tx
        .append(
            reader,
            UserEvent::ReadHistoryInbox(ReadHistoryInbox {
                peer_id: peer,
                max_id,
                still_unread_count: progress.still_unread,
            }),
            origin,
        )
        .await?;

    // The sender learns how far its messages were read: the newest incoming message now read, in
    // the sender's own ids, if that moves the sender's watermark. The sender's box counts even if
    // the sender deleted it for itself: its older messages were read all the same.
    if let (true, Some(senders_id), Some(read_outbox)) = (
        moves,
        progress.senders_box,
        progress.senders_read_outbox_max_id,
    ) {
        if read_outbox < senders_id.get() {
            let event = ReadHistoryOutbox {
                peer_id: reader,
                max_id: senders_id,
                date: unix_now(),
            };
            tx.append(peer, UserEvent::ReadHistoryOutbox(event), origin)
                .await?;
        }
    }
    Ok(AffectedMessages {
        pts: pts.get(),
        pts_count: 1,
    })
}
