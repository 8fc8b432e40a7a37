//! The wall clock, in TL's unix seconds.

use std::time::{SystemTime, UNIX_EPOCH};

pub fn unix_now() -> i32 {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    i32::try_from(secs).unwrap_or(i32::MAX)
}
