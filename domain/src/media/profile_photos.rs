//! The pure decisions about an owner's profile photos: which photo is current after a delete, and
//! which slice of the photos a `photos.getUserPhotos` page answers. The photos are always given
//! current first, then by when they were set, newest first (the `profile_photos` read model's
//! order).

use std::ops::Range;

use super::limits::MAX_USER_PHOTOS_LIMIT;
use super::MediaId;

/// What deleting some of an owner's photos changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    /// The owner's photos among the ids, each once, in the order the owner has them.
    pub removed: Vec<MediaId>,
    /// The current photo afterwards: the current one if it stays, else the next one left.
    pub current: Option<MediaId>,
}

/// `None` when none of `ids` is one of the owner's photos (nothing to record): ids of other
/// accounts' photos and unknown ids are left out, so the answer names only what was deleted.
pub fn delete(photos: &[MediaId], ids: &[MediaId]) -> Option<Deletion> {
    let removed: Vec<MediaId> = photos.iter().copied().filter(|p| ids.contains(p)).collect();
    if removed.is_empty() {
        return None;
    }
    let current = photos.iter().copied().find(|p| !removed.contains(p));
    Some(Deletion { removed, current })
}

/// The indexes of `photos` (ids, in order) a getUserPhotos page answers. Telegram's parameters:
/// `max_id` > 0 starts the page just after that photo (after the first photo with a smaller id if
/// it is gone), `offset` moves the start (`offset = -1` with `max_id` answers that photo itself),
/// `limit` is cut to [`MAX_USER_PHOTOS_LIMIT`] and below 1 answers none.
pub fn page(photos: &[MediaId], offset: i32, max_id: i64, limit: i32) -> Range<usize> {
    let len = photos.len() as i64;
    let base = if max_id > 0 {
        match photos.iter().position(|p| p.get() == max_id) {
            Some(i) => i as i64 + 1,
            None => photos
                .iter()
                .position(|p| p.get() < max_id)
                .map_or(len, |i| i as i64),
        }
    } else {
        0
    };
    let start = (base + i64::from(offset)).clamp(0, len);
    let take = i64::from(limit.clamp(0, MAX_USER_PHOTOS_LIMIT));
    let end = (start + take).min(len);
    start as usize..end as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(raw: &[i64]) -> Vec<MediaId> {
        raw.iter().map(|&r| MediaId::new(r).unwrap()).collect()
    }

    #[test]
    fn deleting_the_current_photo_makes_the_next_one_current() {
        let photos = ids(&[30, 20, 10]);
        assert_eq!(
            delete(&photos, &ids(&[30])),
            Some(Deletion {
                removed: ids(&[30]),
                current: Some(ids(&[20])[0]),
            })
        );
        // The current one stays when others go; each id once, in the owner's order.
        assert_eq!(
            delete(&photos, &ids(&[10, 20, 10])),
            Some(Deletion {
                removed: ids(&[20, 10]),
                current: Some(ids(&[30])[0]),
            })
        );
        assert_eq!(
            delete(&photos, &ids(&[10, 20, 30])),
            Some(Deletion {
                removed: ids(&[30, 20, 10]),
                current: None,
            })
        );
    }

    #[test]
    fn ids_that_are_not_the_owners_change_nothing() {
        assert_eq!(delete(&ids(&[30, 20]), &ids(&[31, 5])), None);
        assert_eq!(delete(&[], &ids(&[1])), None);
        assert_eq!(
            delete(&ids(&[30, 20]), &ids(&[31, 20])).map(|d| d.removed),
            Some(ids(&[20]))
        );
    }

    #[test]
    fn a_page_starts_after_max_id_moved_by_offset() {
        let photos = ids(&[50, 40, 30, 20, 10]);
        assert_eq!(page(&photos, 0, 0, 100), 0..5);
        assert_eq!(page(&photos, 0, 0, 2), 0..2);
        assert_eq!(page(&photos, 2, 0, 2), 2..4);
        assert_eq!(page(&photos, 0, 40, 2), 2..4);
        // Refetching one photo by id: offset -1, limit 1.
        assert_eq!(page(&photos, -1, 30, 1), 2..3);
        // A max_id that is gone: after the first photo below it.
        assert_eq!(page(&photos, 0, 35, 10), 2..5);
        assert_eq!(page(&photos, 0, 5, 10), 5..5);
        // Out of range offsets and limits are cut, never an error.
        assert_eq!(page(&photos, -10, 0, 3), 0..3);
        assert_eq!(page(&photos, 99, 0, 3), 5..5);
        assert_eq!(page(&photos, 0, 0, 0), 0..0);
        assert_eq!(page(&photos, 0, 0, -5), 0..0);
        assert_eq!(page(&photos, i32::MIN, i64::MAX, i32::MAX), 0..5);
    }

    #[test]
    fn the_limit_is_cut_at_its_maximum() {
        let many: Vec<MediaId> = (1..=150).rev().map(|r| MediaId::new(r).unwrap()).collect();
        let max = MAX_USER_PHOTOS_LIMIT as usize;
        assert_eq!(page(&many, 0, 0, MAX_USER_PHOTOS_LIMIT), 0..max);
        assert_eq!(page(&many, 0, 0, MAX_USER_PHOTOS_LIMIT + 1), 0..max);
        assert_eq!(page(&many, 0, 0, MAX_USER_PHOTOS_LIMIT - 1), 0..max - 1);
    }
}
