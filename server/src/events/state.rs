//! `ptslog events state --user N --at-pts P`: the user's dialogs as they were at pts P, folded in
//! memory from the log (payloads upcast on the way), never read from the read models.

use domain::dialog_fold::{DialogFold, DialogState};
use domain::events::UserEvent;
use domain::{Pts, UserId};
use futures::StreamExt;
use infrastructure::postgres::log_export::{LogExport, LogFilter};
use serde_json::{json, Value};
use sqlx::PgPool;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum StateError {
    #[error("reading the log: {0}")]
    Read(#[from] sqlx::Error),
    #[error("event at pts {pts}: {source}")]
    Decode {
        pts: i32,
        source: domain::events::EventDecodeError,
    },
    #[error("pts {0} is negative")]
    BadPts(i32),
}

/// The fold after every event of `user` up to `at_pts` (inclusive; `None`: the whole log).
pub async fn fold(
    pool: &PgPool,
    user: UserId,
    at_pts: Option<i32>,
) -> Result<DialogFold, StateError> {
    if let Some(p) = at_pts.filter(|p| *p < 0) {
        return Err(StateError::BadPts(p));
    }
    let export = LogExport::new(LogFilter {
        users: vec![user],
        to_pts: at_pts,
        ..LogFilter::default()
    });
    let mut fold = DialogFold::new();
    let mut rows = std::pin::pin!(export.rows(pool));
    while let Some(record) = rows.next().await {
        let record = record?;
        let pts = record.pts;
        let event = UserEvent::decode(&record.kind, record.payload_version, record.payload)
            .map_err(|source| StateError::Decode { pts, source })?;
        fold.apply(Pts::new(pts).unwrap_or_default(), &event);
    }
    Ok(fold)
}

/// `{"user_id", "pts", "dialogs": [...]}`.
pub fn to_json(user: UserId, fold: &DialogFold) -> Value {
    json!({
        "user_id": user.get(),
        "pts": fold.pts(),
        "dialogs": fold.dialogs().iter().map(dialog_json).collect::<Vec<_>>(),
    })
}

fn dialog_json(d: &DialogState) -> Value {
    json!({
        "peer_id": d.peer_id.get(),
        "folder_id": d.folder_id,
        "pinned": d.pinned(),
        "top_message": d.top_message,
        "top_message_date": d.top_message_date,
        "unread_count": d.unread_count,
        "read_inbox_max_id": d.read_inbox_max_id,
        "read_outbox_max_id": d.read_outbox_max_id,
        "unread_mark": d.unread_mark,
    })
}

/// A plain-text table, one dialog per line.
pub fn to_table(user: UserId, fold: &DialogFold) -> String {
    let mut out = format!("user {} at pts {}\n", user.get(), fold.pts());
    out.push_str(&format!(
        "{:>12} {:>6} {:>6} {:>11} {:>6} {:>10} {:>11} {:>11}\n",
        "peer",
        "folder",
        "pinned",
        "top_message",
        "unread",
        "unread_mark",
        "read_inbox",
        "read_outbox"
    ));
    for d in fold.dialogs() {
        out.push_str(&format!(
            "{:>12} {:>6} {:>6} {:>11} {:>6} {:>10} {:>11} {:>11}\n",
            d.peer_id.get(),
            d.folder_id,
            if d.pinned() { "yes" } else { "no" },
            d.top_message,
            d.unread_count,
            if d.unread_mark { "yes" } else { "no" },
            d.read_inbox_max_id,
            d.read_outbox_max_id
        ));
    }
    out
}
