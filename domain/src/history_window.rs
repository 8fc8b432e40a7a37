//! The window rules of `messages.getHistory` and `messages.search`: how a client's
//! offset_id / add_offset / limit / max_id / min_id become one bounded index seek.

use crate::limits::{MAX_ADD_OFFSET, MAX_HISTORY_LIMIT};

/// A validated history window. Box ids in the page are `> min_exclusive` and `< max_exclusive`,
/// newest first, and `skip` newer-than-anchor rows are dropped from the front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryWindow {
    /// `offset_id`: the page starts below it (0 = from the newest).
    pub offset_id: i32,
    /// `offset_date`: only messages strictly older than it (0 = no bound).
    pub offset_date: i32,
    /// `add_offset`, clamped.
    pub add_offset: i32,
    pub limit: i32,
    /// Only ids strictly below this (0 = no bound).
    pub max_id: i32,
    /// Only ids strictly above this (0 = no bound).
    pub min_id: i32,
}

impl HistoryWindow {
    pub fn new(
        offset_id: i32,
        offset_date: i32,
        add_offset: i32,
        limit: i32,
        max_id: i32,
        min_id: i32,
    ) -> Self {
        Self {
            offset_id: offset_id.max(0),
            offset_date: offset_date.max(0),
            add_offset: clamp_add_offset(add_offset),
            limit: clamp_limit(limit),
            max_id: max_id.max(0),
            min_id: min_id.max(0),
        }
    }

    /// How many rows newer than the anchor the page needs (a negative add_offset reaches back up).
    pub fn newer_count(&self) -> i32 {
        if self.add_offset < 0 {
            (-self.add_offset).min(self.limit)
        } else {
            0
        }
    }

    /// How many rows at or older than the anchor to skip before the page starts.
    pub fn older_skip(&self) -> i32 {
        self.add_offset.max(0)
    }

    /// How many rows at or older than the anchor the page needs.
    pub fn older_count(&self) -> i32 {
        self.limit - self.newer_count()
    }
}

/// `add_offset` is clamped to `[-100, 100]` so a hostile client cannot turn it into a huge skip.
pub fn clamp_add_offset(raw: i32) -> i32 {
    raw.clamp(-MAX_ADD_OFFSET, MAX_ADD_OFFSET)
}

/// A limit of 0 or less means the default page (Telegram's behaviour); above the cap it is capped.
pub fn clamp_limit(raw: i32) -> i32 {
    if raw <= 0 {
        20
    } else {
        raw.min(MAX_HISTORY_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_offset_is_clamped_at_100() {
        assert_eq!(clamp_add_offset(100), 100);
        assert_eq!(clamp_add_offset(101), 100);
        assert_eq!(clamp_add_offset(-100), -100);
        assert_eq!(clamp_add_offset(-101), -100);
        assert_eq!(clamp_add_offset(i32::MIN), -100);
    }

    #[test]
    fn limit_is_capped() {
        assert_eq!(clamp_limit(MAX_HISTORY_LIMIT), MAX_HISTORY_LIMIT);
        assert_eq!(clamp_limit(MAX_HISTORY_LIMIT + 1), MAX_HISTORY_LIMIT);
        assert_eq!(clamp_limit(0), 20);
    }

    #[test]
    fn negative_add_offset_splits_the_page() {
        let w = HistoryWindow::new(50, 0, -10, 30, 0, 0);
        assert_eq!(
            (w.newer_count(), w.older_count(), w.older_skip()),
            (10, 20, 0)
        );
        let w = HistoryWindow::new(50, 0, 5, 30, 0, 0);
        assert_eq!(
            (w.newer_count(), w.older_count(), w.older_skip()),
            (0, 30, 5)
        );
    }
}
