//! The writes group commit runs (commands::send_batch): each between at most two accounts known
//! before its transaction, checked and parsed already, so it can run alone or inside a batch.
//!
//! Sends are most of the writes, but a messenger's readers mark chats read about as often as they
//! send, and a mark read, an edit or a deletion run alone costs a transaction, a lock wait behind
//! the batches holding its accounts, and a WAL flush of its own — under a mixed load more flushes
//! than all the batches together (docs/performance.md, "The other writers in the batches").

use domain::ids::UserId;

use super::delete_messages::{delete_locked, Deleted, PreparedDelete};
use super::edit_message::{edit_locked, Edited, PreparedEdit};
use super::read_history::{read_history_locked, PreparedReadHistory};
use super::send_message::{send_locked, PreparedSend};
use crate::error::AppError;
use crate::ports::{PreflightKey, Store, StoreError, WriteTx};
use crate::tl::{AffectedMessages, Updates};

/// A write waiting for its transaction.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    Send(PreparedSend),
    ReadHistory(PreparedReadHistory),
    // Boxed: an edit carries its media, much larger than the others.
    Edit(Box<PreparedEdit>),
    Delete(PreparedDelete),
}

/// What a write answers, once its transaction has committed.
#[derive(Debug)]
pub(crate) enum Written {
    Sent(Updates),
    Affected(AffectedMessages),
    Edited(Box<Edited>),
    Deleted(Deleted),
}

impl Write {
    /// The accounts its transaction locks (the same one twice for a chat with oneself).
    pub(crate) fn accounts(&self) -> [UserId; 2] {
        match self {
            Write::Send(s) => [s.sender, s.peer_id],
            Write::ReadHistory(r) => [r.reader, r.peer],
            Write::Edit(e) => [e.author, e.peer],
            // Queued only with at most one other chat (App::delete_messages).
            Write::Delete(d) => [d.owner, d.peers.first().copied().unwrap_or(d.owner)],
        }
    }

    /// What a batch reads for it before running it, in one statement for all its sends.
    pub(crate) fn preflight(&self) -> Option<PreflightKey> {
        match self {
            Write::Send(s) => Some(PreflightKey {
                sender: s.sender,
                peer: s.peer_id,
                random_id: s.random_id,
            }),
            _ => None,
        }
    }

    /// Its work inside a transaction that has locked its accounts; the caller commits.
    pub(crate) async fn run_locked(&self, tx: &mut dyn WriteTx) -> Result<Written, AppError> {
        Ok(match self {
            Write::Send(s) => Written::Sent(send_locked(tx, s).await?),
            Write::ReadHistory(r) => Written::Affected(read_history_locked(tx, r).await?),
            Write::Edit(e) => Written::Edited(Box::new(edit_locked(tx, e).await?)),
            Write::Delete(d) => Written::Deleted(delete_locked(tx, d).await?),
        })
    }

    /// The write in a transaction of its own.
    pub(crate) async fn run_alone(&self, store: &dyn Store) -> Result<Written, AppError> {
        let mut tx = store.begin().await?;
        let lock = match self {
            Write::Delete(d) => d.lock_set(),
            other => other.accounts().to_vec(),
        };
        tx.lock_users(&lock).await?;
        let answer = self.run_locked(tx.as_mut()).await?;
        tx.commit().await?;
        Ok(answer)
    }
}

impl Written {
    pub(crate) fn sent(self) -> Result<Updates, AppError> {
        match self {
            Written::Sent(u) => Ok(u),
            other => Err(mismatch("a send", &other)),
        }
    }

    pub(crate) fn affected(self) -> Result<AffectedMessages, AppError> {
        match self {
            Written::Affected(a) => Ok(a),
            other => Err(mismatch("affected messages", &other)),
        }
    }

    pub(crate) fn deleted(self) -> Result<Deleted, AppError> {
        match self {
            Written::Deleted(d) => Ok(d),
            other => Err(mismatch("a deletion", &other)),
        }
    }

    pub(crate) fn edited(self) -> Result<Edited, AppError> {
        match self {
            Written::Edited(e) => Ok(*e),
            other => Err(mismatch("an edit", &other)),
        }
    }
}

fn mismatch(wanted: &str, got: &Written) -> AppError {
    StoreError::Bug(format!(
        "a batched write answered {got:?} where {wanted} was due"
    ))
    .into()
}
