//! The sends waiting for a batch, and which of them the next batch takes (pure: no I/O).
//!
//! Two batches in flight at once must not share an account: the second finds the account's row
//! locked by the first and, locking without waiting, has to take that send out and run it alone,
//! which then waits for the lock and for a flush of its own (with 200 accounts and 32-send
//! batches, about half of the second batch's sends did). So the next batch takes, in arrival
//! order, only sends none of whose accounts is in a batch in flight, and leaves the others queued
//! for a later one. A send passed over [`RESERVE_AFTER`] times reserves its accounts: later sends
//! with one of them wait behind it, so no send is overtaken forever. (Reserving at once, keeping
//! each account's sends in strict arrival order, left batches of a few sends once the queue grew:
//! the waiting sends' accounts soon covered nearly every account.)

use std::collections::{HashMap, HashSet, VecDeque};

use domain::ids::UserId;

/// The queued sends one batch looks through at most: under overload the queue is long, and
/// taking a batch must not cost time in proportion to it.
pub const MAX_SCANNED: usize = 1024;

/// Times a send may be passed over (an account of it in flight) before it reserves its accounts.
pub const RESERVE_AFTER: u32 = 2;

/// What the queue needs of a send: the accounts its batch locks.
pub(crate) trait Accounts {
    /// The sender and the peer (the same account for Saved Messages).
    fn accounts(&self) -> [UserId; 2];
}

/// The queue, and the accounts of the batches in flight.
pub(crate) struct SendQueue<T> {
    /// Each send, and how many batches have passed it over.
    waiting: VecDeque<(T, u32)>,
    /// Account → batches in flight that hold it (one, unless the caller releases late).
    busy: HashMap<UserId, usize>,
}

impl<T: Accounts> SendQueue<T> {
    pub(crate) fn new() -> Self {
        Self {
            waiting: VecDeque::new(),
            busy: HashMap::new(),
        }
    }

    pub(crate) fn push(&mut self, send: T) {
        self.waiting.push_back((send, 0));
    }

    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The next batch, up to `max` sends in arrival order, and its accounts (ascending, once
    /// each), now busy until [`Self::release`]d. Empty when every queued send (of the first
    /// [`MAX_SCANNED`]) has an account in flight.
    pub(crate) fn take(&mut self, max: usize) -> (Vec<T>, Vec<UserId>) {
        let mut batch = Vec::new();
        let mut accounts = Vec::new();
        // Accounts reserved in this pass by sends passed over often enough: later sends wait.
        let mut reserved: HashSet<UserId> = HashSet::new();
        // The looked-through sends left waiting; put back in front, so a take costs what it scans.
        let mut kept = Vec::new();
        let mut scanned = 0;
        while let Some((send, passes)) = self.waiting.pop_front() {
            if batch.len() == max || scanned == MAX_SCANNED {
                self.waiting.push_front((send, passes));
                break;
            }
            scanned += 1;
            let mine = send.accounts();
            if mine
                .iter()
                .any(|a| self.busy.contains_key(a) || reserved.contains(a))
            {
                let passes = passes.saturating_add(1);
                if passes >= RESERVE_AFTER {
                    reserved.extend(mine);
                }
                kept.push((send, passes));
            } else {
                accounts.extend(mine);
                batch.push(send);
            }
        }
        for send in kept.into_iter().rev() {
            self.waiting.push_front(send);
        }
        accounts.sort();
        accounts.dedup();
        for a in &accounts {
            *self.busy.entry(*a).or_default() += 1;
        }
        (batch, accounts)
    }

    /// The batch that held `accounts` has ended (committed, rolled back or failed).
    pub(crate) fn release(&mut self, accounts: &[UserId]) {
        for a in accounts {
            if let Some(n) = self.busy.get_mut(a) {
                *n -= 1;
                if *n == 0 {
                    self.busy.remove(a);
                }
            }
        }
    }

    /// Accounts held by batches in flight.
    #[cfg(test)]
    fn busy(&self) -> usize {
        self.busy.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq)]
    struct S(i64, i64, u32);

    impl Accounts for S {
        fn accounts(&self) -> [UserId; 2] {
            [UserId::new(self.0).unwrap(), UserId::new(self.1).unwrap()]
        }
    }

    fn ids(batch: &[S]) -> Vec<u32> {
        batch.iter().map(|s| s.2).collect()
    }

    fn users(v: &[i64]) -> Vec<UserId> {
        v.iter().map(|u| UserId::new(*u).unwrap()).collect()
    }

    #[test]
    fn a_batch_takes_sends_in_order_up_to_its_size_and_holds_their_accounts() {
        let mut q = SendQueue::new();
        for (i, (a, b)) in [(1, 2), (3, 4), (2, 1), (5, 5), (6, 7)]
            .into_iter()
            .enumerate()
        {
            q.push(S(a, b, i as u32));
        }
        let (batch, accounts) = q.take(4);
        assert_eq!(ids(&batch), vec![0, 1, 2, 3]);
        assert_eq!(accounts, users(&[1, 2, 3, 4, 5]));
        assert_eq!(q.len(), 1);
        assert_eq!(q.busy(), 5);
        let (batch, accounts) = q.take(4);
        assert_eq!(ids(&batch), vec![4]);
        assert_eq!(accounts, users(&[6, 7]));
        assert!(q.is_empty());
        assert_eq!(q.take(4), (vec![], vec![]));
    }

    #[test]
    fn sends_with_an_account_in_flight_wait_and_one_passed_over_twice_reserves_its_accounts() {
        let mut q = SendQueue::new();
        q.push(S(1, 2, 0));
        let (first, first_accounts) = q.take(32);
        assert_eq!(ids(&first), vec![0]);
        // 1: Bob (2) is in flight, it waits. 2: Carol and Dave are free: it goes, before 1.
        // 3: Alice (1) in flight.
        q.push(S(2, 3, 1));
        q.push(S(3, 4, 2));
        q.push(S(1, 5, 3));
        let (second, second_accounts) = q.take(32);
        assert_eq!(ids(&second), vec![2]);
        assert_eq!(second_accounts, users(&[3, 4]));
        q.release(&first_accounts);
        // 1 now waits for Carol (second batch): passed over twice, it reserves Bob and Carol.
        // 4 (Bob, Erin) waits behind it although Bob is free; 3 and 5 go.
        q.push(S(2, 6, 4));
        q.push(S(7, 8, 5));
        let (third, third_accounts) = q.take(32);
        assert_eq!(ids(&third), vec![3, 5]);
        assert_eq!(third_accounts, users(&[1, 5, 7, 8]));
        // Nothing else can go while the second batch holds Carol.
        assert_eq!(q.take(32), (vec![], vec![]));
        q.release(&second_accounts);
        let (fourth, _) = q.take(32);
        assert_eq!(ids(&fourth), vec![1, 4]);
        assert!(q.is_empty());
    }

    #[test]
    fn a_batch_looks_through_at_most_max_scanned_sends() {
        let mut q = SendQueue::new();
        q.push(S(1, 2, 0));
        let _ = q.take(1);
        // MAX_SCANNED sends that must wait for account 1, then one that could go.
        for i in 0..MAX_SCANNED {
            q.push(S(1, 3 + i as i64, i as u32 + 1));
        }
        q.push(S(100_000, 100_001, 9999));
        assert_eq!(q.take(32), (vec![], vec![]));
        assert_eq!(q.len(), MAX_SCANNED + 1);
        // One fewer in the way: the last is reached.
        let mut q2 = SendQueue::new();
        q2.push(S(1, 2, 0));
        let _ = q2.take(1);
        for i in 0..MAX_SCANNED - 1 {
            q2.push(S(1, 3 + i as i64, i as u32 + 1));
        }
        q2.push(S(100_000, 100_001, 9999));
        assert_eq!(ids(&q2.take(32).0), vec![9999]);
        assert_eq!(q2.len(), MAX_SCANNED - 1);
    }

    #[test]
    fn release_is_counted_per_batch() {
        let mut q: SendQueue<S> = SendQueue::new();
        q.push(S(1, 2, 0));
        let (_, a) = q.take(1);
        q.release(&a);
        q.release(&a);
        assert_eq!(q.busy(), 0);
        q.push(S(1, 2, 1));
        assert_eq!(ids(&q.take(1).0), vec![1]);
    }
}
