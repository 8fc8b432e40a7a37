//! Group commit (docs/performance.md, "Group commit"): concurrent writes between two accounts —
//! `messages.sendMessage`, and since they cost as much a transaction each, `readHistory`,
//! `editMessage` and `deleteMessages` in one chat (commands::batched_write) — share one
//! transaction, so one BEGIN, one lock statement, one counters + events statement and one WAL
//! flush serve them all. The names say "send" because sends are what it was built for and most
//! of what it carries.
//!
//! A dispatcher takes the writes waiting in a queue (up to [`SendBatchConfig::max`], after waiting
//! at most [`SendBatchConfig::wait`] for more) whenever one of its [`SendBatchConfig::committers`]
//! is free, leaving queued the writes with an account a batch in flight holds (`send_queue`), and
//! a committer runs the batch: it locks the union of the batch's accounts in one ascending
//! statement without waiting (`SKIP LOCKED`: a write with an account another transaction holds —
//! another process's, or another command's — leaves the batch and runs alone, so a busy account
//! never stalls the others' writes, and a batch never waits while holding locks), runs each write
//! in queue order, and commits once. A write refused before it wrote (its checks are reads) is
//! answered with its error and its neighbours go on; one that fails after writing is answered with
//! its error and the batch runs again without it in a new transaction (no savepoint per write).
//! The sends' new messages are projected together, one statement per table, before the next
//! read or other event of an account with one waiting and at the end. The counters stay in the
//! transaction's memory across the batch, so each account's pts stay dense and in commit order;
//! a random_id repeated within the batch finds the earlier send's box (same transaction) and is
//! answered with it; a write reads what the writes before it in the batch wrote. Nobody is answered
//! before the commit, so a crash loses only unanswered writes. If the batch itself fails (its
//! BEGIN, lock, a second write failing after writing, or the commit), nothing of it was committed —
//! or, if the commit's outcome is unknown, each write of it is safe to run again (a send is
//! idempotent by random_id, a mark-read or a deletion done finds nothing left to do, an edit done
//! answers `MESSAGE_NOT_MODIFIED` as a client's own retry would) — and each write is run again
//! alone.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use domain::ids::UserId;
use tokio::sync::{mpsc, oneshot};

use super::batched_write::{Write, Written};
use super::send_queue::{Accounts, SendQueue};
use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::{PreflightKey, Store, StoreError, WriteTx};

/// Whether sends are batched unless configured otherwise (`PTSLOG_SEND_BATCH_MAX`; 0 turns it
/// off). On: on the reference machine it brings no more peak throughput, but it keeps the other
/// writers' and the reads' tails under a mixed load several times shorter, since far fewer
/// transactions wait for a WAL flush (docs/performance.md, "Group commit").
pub const SEND_BATCHING_BY_DEFAULT: bool = true;
/// Writes per batch by default.
pub const DEFAULT_SEND_BATCH_MAX: usize = 32;
/// The most sends one batch may hold: its locks and rows are held until its one commit, and a
/// send failing after writing makes the batch run again, so the batch's size bounds that waste.
pub const MAX_SEND_BATCH: usize = 64;
/// How long a batch waits for more sends after its first, by default: none. Sends that arrive
/// while every committer is busy wait for one anyway, and are taken together when one is free.
pub const DEFAULT_SEND_BATCH_WAIT: Duration = Duration::ZERO;
/// The longest wait that may be configured: each send's latency grows by up to this much.
pub const MAX_SEND_BATCH_WAIT: Duration = Duration::from_millis(10);
/// Batches in flight at once by default: while one waits for its commit's flush, the next runs.
pub const DEFAULT_SEND_BATCH_COMMITTERS: usize = 2;
/// The most batches in flight (each holds a write connection).
pub const MAX_SEND_BATCH_COMMITTERS: usize = 16;

/// How sends are batched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendBatchConfig {
    /// Sends per batch, 1..=[`MAX_SEND_BATCH`].
    pub max: usize,
    /// How long a batch waits for more sends after its first, up to [`MAX_SEND_BATCH_WAIT`].
    pub wait: Duration,
    /// Batches in flight at once, 1..=[`MAX_SEND_BATCH_COMMITTERS`].
    pub committers: usize,
}

impl Default for SendBatchConfig {
    fn default() -> Self {
        Self {
            max: DEFAULT_SEND_BATCH_MAX,
            wait: DEFAULT_SEND_BATCH_WAIT,
            committers: DEFAULT_SEND_BATCH_COMMITTERS,
        }
    }
}

/// A configuration out of its bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendBatchConfigError {
    #[error("a batch holds 1 to {MAX_SEND_BATCH} sends, not {0}")]
    Max(usize),
    #[error("a batch waits at most {} µs, not {} µs", MAX_SEND_BATCH_WAIT.as_micros(), .0.as_micros())]
    Wait(Duration),
    #[error("1 to {MAX_SEND_BATCH_COMMITTERS} batches may be in flight, not {0}")]
    Committers(usize),
}

impl SendBatchConfig {
    pub fn checked(self) -> Result<Self, SendBatchConfigError> {
        if !(1..=MAX_SEND_BATCH).contains(&self.max) {
            return Err(SendBatchConfigError::Max(self.max));
        }
        if self.wait > MAX_SEND_BATCH_WAIT {
            return Err(SendBatchConfigError::Wait(self.wait));
        }
        if !(1..=MAX_SEND_BATCH_COMMITTERS).contains(&self.committers) {
            return Err(SendBatchConfigError::Committers(self.committers));
        }
        Ok(self)
    }
}

/// A write waiting for its batch, and where its answer goes.
struct Queued {
    write: Write,
    answer: oneshot::Sender<Result<Written, AppError>>,
}

impl Accounts for Queued {
    fn accounts(&self) -> [UserId; 2] {
        self.write.accounts()
    }
}

/// What group commit has done since the process started (`/metrics`, and the bench's account of
/// each phase).
#[derive(Debug, Default)]
pub struct SendBatchCounters {
    /// Writes in the queue, not yet taken into a batch.
    queued: AtomicUsize,
    /// Batch transactions committed.
    batches: AtomicU64,
    /// Writes answered from a committed batch transaction.
    batched_sends: AtomicU64,
    /// Writes taken out of their batch because another transaction held one of their accounts,
    /// run alone.
    alone_account_held: AtomicU64,
    /// Writes run alone because their batch failed.
    alone_batch_failed: AtomicU64,
    /// Batch transactions rolled back to run again (a write failing after writing, or a failure
    /// pinned on no write).
    reruns: AtomicU64,
}

/// A reading of [`SendBatchCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendBatchCount {
    pub queued: u64,
    pub batches: u64,
    pub batched_sends: u64,
    pub alone_account_held: u64,
    pub alone_batch_failed: u64,
    pub reruns: u64,
}

impl SendBatchCounters {
    pub fn read(&self) -> SendBatchCount {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        SendBatchCount {
            queued: self.queued.load(Ordering::Relaxed) as u64,
            batches: get(&self.batches),
            batched_sends: get(&self.batched_sends),
            alone_account_held: get(&self.alone_account_held),
            alone_batch_failed: get(&self.alone_batch_failed),
            reruns: get(&self.reruns),
        }
    }

    fn add(c: &AtomicU64, n: usize) {
        c.fetch_add(n as u64, Ordering::Relaxed);
    }
}

/// The queue in front of the committers. Dropping every clone ends the dispatcher (once the
/// sends already queued have gone).
#[derive(Clone)]
pub(crate) struct SendBatches {
    queue: mpsc::UnboundedSender<Queued>,
    counters: Arc<SendBatchCounters>,
}

impl SendBatches {
    /// Starts the dispatcher (on the current Tokio runtime).
    pub(crate) fn start(store: Arc<dyn Store>, config: SendBatchConfig) -> Self {
        let (queue, waiting) = mpsc::unbounded_channel();
        let counters = Arc::new(SendBatchCounters::default());
        tokio::spawn(dispatch(store, config, waiting, counters.clone()));
        Self { queue, counters }
    }

    /// Writes waiting for a batch (not yet taken by a committer).
    pub(crate) fn queued(&self) -> usize {
        self.counters.queued.load(Ordering::Relaxed)
    }

    pub(crate) fn counters(&self) -> Arc<SendBatchCounters> {
        self.counters.clone()
    }

    /// Runs the write in the next batch and answers it once that batch has committed.
    pub(crate) async fn write(&self, write: Write) -> Result<Written, AppError> {
        let (answer, answered) = oneshot::channel();
        self.counters.queued.fetch_add(1, Ordering::Relaxed);
        self.queue
            .send(Queued { write, answer })
            .map_err(|_| StoreError::Bug("the send batch dispatcher has stopped".into()))?;
        // Dropped unanswered only if the committer panicked: its transaction was rolled back.
        answered
            .await
            .map_err(|_| StoreError::Bug("a send batch ended without answering".into()))?
    }
}

/// A batch in flight's hold on accounts (and on a committer), given back to the dispatcher when
/// dropped, however its task ends (a panic included).
struct InFlight {
    accounts: Vec<UserId>,
    /// Whether dropping it also frees a committer.
    committer: bool,
    ended: mpsc::UnboundedSender<Ended>,
}

/// What a batch's task gives back.
struct Ended {
    accounts: Vec<UserId>,
    committer: bool,
}

impl InFlight {
    /// Moves the hold on `accounts` (those of sends that leave the batch to run alone) to a hold
    /// of their own, kept until those sends end: until then later batches leave their accounts'
    /// sends queued rather than take them and find the accounts locked again, which would send
    /// those alone too, each waiting for the one before.
    fn split_off(&mut self, accounts: &[UserId]) -> InFlight {
        self.accounts.retain(|a| !accounts.contains(a));
        InFlight {
            accounts: accounts.to_vec(),
            committer: false,
            ended: self.ended.clone(),
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let _ = self.ended.send(Ended {
            accounts: std::mem::take(&mut self.accounts),
            committer: self.committer,
        });
    }
}

/// Starts a batch whenever a committer is free and the queue holds sends none of whose accounts
/// is in a batch in flight (`send_queue`), oldest first.
async fn dispatch(
    store: Arc<dyn Store>,
    config: SendBatchConfig,
    mut waiting: mpsc::UnboundedReceiver<Queued>,
    counters: Arc<SendBatchCounters>,
) {
    let (ended_tx, mut ended) = mpsc::unbounded_channel::<Ended>();
    let mut queue = SendQueue::new();
    let mut free = config.committers;
    let mut open = true;
    // While a free committer waits `config.wait` for more sends: until when.
    let mut gathering: Option<tokio::time::Instant> = None;
    loop {
        loop {
            match waiting.try_recv() {
                Ok(q) => queue.push(q),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if free > 0 && !queue.is_empty() {
            let now = tokio::time::Instant::now();
            let gathered = config.wait.is_zero()
                || !open
                || queue.len() >= config.max
                || gathering.is_some_and(|until| until <= now);
            if gathered {
                gathering = None;
                while free > 0 {
                    let (batch, accounts) = queue.take(config.max);
                    if batch.is_empty() {
                        break;
                    }
                    free -= 1;
                    counters.queued.fetch_sub(batch.len(), Ordering::Relaxed);
                    let held = InFlight {
                        accounts,
                        committer: true,
                        ended: ended_tx.clone(),
                    };
                    // A task per batch: a panic in one ends that batch (its sends answered with
                    // an error), not the dispatcher.
                    tokio::spawn(commit_batch(store.clone(), batch, held, counters.clone()));
                }
            } else {
                gathering.get_or_insert(now + config.wait);
            }
        }
        if !open && queue.is_empty() {
            return;
        }
        tokio::select! {
            q = waiting.recv(), if open => match q {
                Some(q) => queue.push(q),
                None => open = false,
            },
            Some(e) = ended.recv() => {
                queue.release(&e.accounts);
                if e.committer {
                    free += 1;
                }
            }
            _ = tokio::time::sleep_until(gathering.unwrap_or_else(tokio::time::Instant::now)), if gathering.is_some() => {}
        }
    }
}

async fn commit_batch(
    store: Arc<dyn Store>,
    batch: Vec<Queued>,
    mut held: InFlight,
    counters: Arc<SendBatchCounters>,
) {
    let mut batch = batch;
    match run_batch(&store, &mut batch, &mut held, &counters).await {
        Ok(answers) => {
            if !batch.is_empty() {
                SendBatchCounters::add(&counters.batches, 1);
                SendBatchCounters::add(&counters.batched_sends, batch.len());
            }
            for (q, a) in batch.into_iter().zip(answers) {
                // The caller may have gone (its request cancelled); the send stands.
                let _ = q.answer.send(a);
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, sends = batch.len(), "a send batch failed; running its sends one by one");
            SendBatchCounters::add(&counters.alone_batch_failed, batch.len());
            let store = store.as_ref();
            let alone = batch.into_iter().map(|q| async move {
                let _ = q.answer.send(q.write.run_alone(store).await);
            });
            futures::future::join_all(alone).await;
        }
    }
}

/// The batch in one transaction: the answers of its sends, in order, once committed; an error if
/// the batch itself failed (then nothing of it is known to be committed and nobody was answered).
/// The accounts are locked without waiting: a send with an account another transaction holds is
/// taken out of the batch and run alone in a task of its own (waiting there like an unbatched
/// send), so a busy account never holds up the other accounts' sends.
async fn run_batch(
    store: &Arc<dyn Store>,
    batch: &mut Vec<Queued>,
    hold: &mut InFlight,
    counters: &SendBatchCounters,
) -> Result<Vec<Result<Written, AppError>>, StoreError> {
    let mut tx = store.begin().await?;
    let locked = tx.try_lock_users(&accounts_of(batch)).await?;
    let (ready, held): (Vec<Queued>, Vec<Queued>) = std::mem::take(batch)
        .into_iter()
        .partition(|q| q.write.accounts().iter().all(|a| locked.contains(a)));
    *batch = ready;
    if !held.is_empty() {
        SendBatchCounters::add(&counters.alone_account_held, held.len());
        // Their accounts stay held for the dispatcher until the last of them ends.
        let alone = Arc::new(hold.split_off(&accounts_of(&held)));
        for q in held {
            let (store, alone) = (store.clone(), alone.clone());
            tokio::spawn(async move {
                let _ = q.answer.send(q.write.run_alone(store.as_ref()).await);
                drop(alone);
            });
        }
    }
    if batch.is_empty() {
        return Ok(Vec::new());
    }
    if let [only] = batch.as_slice() {
        // Alone: a failure rolls the transaction back.
        let answer = only.write.run_locked(tx.as_mut()).await;
        if answer.is_ok() {
            tx.commit().await?;
        }
        return Ok(vec![answer]);
    }
    // A send that fails having written nothing (a refusal, decided from reads) is answered with
    // its error and the transaction goes on. One that fails after writing, or whose statement
    // failed (which aborts the transaction in Postgres), is answered with its error and the batch
    // runs again without it, in a new transaction; a second such failure gives up the batch (its
    // sends then run alone). No savepoint per send: failures after a write are rare, and a
    // savepoint costs every send a round trip and a subtransaction.
    //
    // The sends' new messages are projected together, after the last send (WriteTx::flush), so a
    // statement that fails may be projecting any earlier send's: such a failure is pinned on no
    // send, and the batch runs again carefully, each send's projections written right after it,
    // which finds the one that fails.
    let mut culprit: Option<(usize, AppError)> = None;
    let mut careful = false;
    loop {
        let skip = culprit.as_ref().map(|(i, _)| *i);
        // Every send's reads in one round trip, not one each while the others wait.
        let keys: Vec<PreflightKey> = batch
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .filter_map(|(_, q)| q.write.preflight())
            .collect();
        tx.prefetch_send_preflights(&keys, unix_now()).await?;
        let outcome = match run_sends(tx.as_mut(), batch, skip, careful).await {
            Ok(answers) => match tx.flush().await {
                Ok(()) => Ok(answers),
                Err(e) => Err(Failure::Unplaced(e.into())),
            },
            Err(f) => Err(f),
        };
        match outcome {
            Ok(mut answers) => {
                tx.commit().await?;
                if let Some((i, e)) = culprit {
                    answers.insert(i, Err(e));
                }
                return Ok(answers);
            }
            Err(Failure::Unplaced(e)) if !careful => {
                tracing::warn!(error = %e, "a send batch failed projecting its messages; it runs again send by send");
                careful = true;
            }
            Err(Failure::Send(i, e)) if culprit.is_none() => {
                tracing::warn!(error = %e, "a send failed inside its batch; the batch runs again without it");
                culprit = Some((i, e));
            }
            Err(Failure::Send(_, e) | Failure::Unplaced(e)) => {
                return Err(StoreError::Database(format!(
                    "a second send of the batch failed after writing: {e}"
                )));
            }
        }
        // Rolled back at once (so its locks are free), then the accounts are locked again; a
        // batch that cannot have them all back runs alone.
        SendBatchCounters::add(&counters.reruns, 1);
        tx.rollback().await?;
        tx = store.begin().await?;
        let needed = accounts_of(batch);
        let locked = tx.try_lock_users(&needed).await?;
        if locked.len() != needed.len() {
            return Err(StoreError::Database(
                "the batch's accounts could not all be locked again".into(),
            ));
        }
    }
}

/// Why a batch's transaction must be rolled back.
enum Failure {
    /// This send failed after writing (or its own statement failed): it leaves the batch.
    Send(usize, AppError),
    /// A statement failed that may have been writing any send's projections.
    Unplaced(AppError),
}

/// The accounts of a batch's sends, ascending, once each (the order they are locked in).
fn accounts_of(batch: &[Queued]) -> Vec<UserId> {
    let mut accounts: Vec<UserId> = batch.iter().flat_map(|q| q.write.accounts()).collect();
    accounts.sort();
    accounts.dedup();
    accounts
}

/// Runs the batch's sends but `skip` in order; the answers, or why the transaction must be rolled
/// back. `careful`: each send's projections are written right after it, so a failing statement is
/// that send's.
async fn run_sends(
    tx: &mut dyn WriteTx,
    batch: &[Queued],
    skip: Option<usize>,
    careful: bool,
) -> Result<Vec<Result<Written, AppError>>, Failure> {
    let mut answers = Vec::with_capacity(batch.len());
    for (i, q) in batch.iter().enumerate() {
        if Some(i) == skip {
            continue;
        }
        tx.mark();
        match q.write.run_locked(&mut *tx).await {
            Ok(a) if careful => match tx.flush().await {
                Ok(()) => answers.push(Ok(a)),
                Err(e) => return Err(Failure::Send(i, e.into())),
            },
            Ok(a) => answers.push(Ok(a)),
            Err(e) if !aborts_transaction(&e) && tx.undo_to_mark() => answers.push(Err(e)),
            // Its reads may have projected earlier sends' messages first.
            Err(e) if aborts_transaction(&e) && !careful => return Err(Failure::Unplaced(e)),
            Err(e) => return Err(Failure::Send(i, e)),
        }
    }
    Ok(answers)
}

/// Whether an error may have come from a failed statement, after which Postgres refuses every
/// statement of the transaction until it rolls back.
fn aborts_transaction(e: &AppError) -> bool {
    matches!(
        e,
        AppError::Store(
            StoreError::Database(_)
                | StoreError::Timeout(_)
                | StoreError::Corrupt(_)
                | StoreError::Bug(_)
        )
    )
}
