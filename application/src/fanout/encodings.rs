//! A push frame in the wire formats other than its JSON: made by the first device that needs one
//! and shared by every other device of the frame (an MTProto front keeps one slot per TL layer,
//! so N devices of one layer cost one encode, not N).

use std::fmt;
use std::sync::{Arc, OnceLock};

/// Formats a frame can be kept in: a front's encodings beyond this many are made per device.
/// The MTProto front takes one per supported TL layer (it checks that they fit at compile time).
pub const ENCODING_SLOTS: usize = 8;

/// An encoding that failed is kept as `None` too: the next device would fail the same way.
#[derive(Default)]
pub struct Encodings {
    slots: [OnceLock<Option<Arc<[u8]>>>; ENCODING_SLOTS],
}

impl Encodings {
    /// The encoding in `slot`, made by `encode` if no device made it yet; callers racing for the
    /// same slot wait for the one that encodes. A slot past [`ENCODING_SLOTS`] is not kept.
    pub fn get_or_encode(
        &self,
        slot: usize,
        encode: impl FnOnce() -> Option<Vec<u8>>,
    ) -> Option<Arc<[u8]>> {
        match self.slots.get(slot) {
            Some(cell) => cell.get_or_init(|| encode().map(Arc::from)).clone(),
            None => encode().map(Arc::from),
        }
    }
}

impl fmt::Debug for Encodings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let made = self.slots.iter().filter(|s| s.get().is_some()).count();
        f.debug_struct("Encodings").field("made", &made).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn each_slot_is_encoded_once_whoever_asks() {
        let encodings = Arc::new(Encodings::default());
        let made = Arc::new(AtomicUsize::new(0));
        let ask = |slot: usize| {
            let (encodings, made) = (encodings.clone(), made.clone());
            std::thread::spawn(move || {
                encodings.get_or_encode(slot, || {
                    made.fetch_add(1, Ordering::SeqCst);
                    Some(vec![slot as u8; 3])
                })
            })
        };
        // Eight devices of one layer at once, two of another.
        let same: Vec<_> = (0..8).map(|_| ask(1)).collect();
        let other: Vec<_> = (0..2).map(|_| ask(2)).collect();
        let same: Vec<Arc<[u8]>> = same
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        let other: Vec<Arc<[u8]>> = other
            .into_iter()
            .map(|t| t.join().unwrap().unwrap())
            .collect();
        assert_eq!(made.load(Ordering::SeqCst), 2, "one encode per slot");
        assert!(same.iter().all(|b| Arc::ptr_eq(b, &same[0])));
        assert!(Arc::ptr_eq(&other[0], &other[1]));
        assert_eq!(
            (&*same[0], &*other[0]),
            (&[1u8, 1, 1][..], &[2u8, 2, 2][..])
        );
    }

    #[test]
    fn a_failed_encoding_is_not_retried_and_an_unknown_slot_is_not_kept() {
        let e = Encodings::default();
        assert_eq!(e.get_or_encode(0, || None), None);
        assert_eq!(e.get_or_encode(0, || Some(vec![1])), None);
        let a = e.get_or_encode(ENCODING_SLOTS, || Some(vec![1])).unwrap();
        let b = e.get_or_encode(ENCODING_SLOTS, || Some(vec![1])).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
    }
}
