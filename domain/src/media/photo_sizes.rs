//! The sizes a photo is stored in, as Telegram's clients expect them: box sizes `s`, `m`, `x`,
//! `y`, `w` (each fits the photo into a square of that side, keeping its proportions), only
//! those the source allows: never upscaled, and the largest one is the source's own size when
//! it fits a box. Plus the dimensions Telegram refuses as `PHOTO_INVALID_DIMENSIONS`.

/// The box sizes, smallest first: Telegram's letters and the side of their square.
pub const PHOTO_BOXES: [(char, u32); 5] =
    [('s', 100), ('m', 320), ('x', 800), ('y', 1280), ('w', 2560)];
/// The stripped `i` thumbnail (photoStrippedSize) fits this square.
pub const STRIPPED_BOX: u32 = 40;
/// A photo's width plus height may be at most this (Telegram's limit for photos).
pub const MAX_PHOTO_SIDES_SUM: u32 = 10_000;
/// The long side may be at most this many times the short one.
pub const MAX_PHOTO_ASPECT_RATIO: u32 = 20;

/// Whether a photo of these dimensions is accepted.
pub fn photo_dimensions_ok(width: u32, height: u32) -> bool {
    let (long, short) = (width.max(height), width.min(height));
    short >= 1
        && u64::from(width) + u64::from(height) <= u64::from(MAX_PHOTO_SIDES_SUM)
        && u64::from(long) <= u64::from(short) * u64::from(MAX_PHOTO_ASPECT_RATIO)
}

/// `width × height` fitted into a square of side `side`, never enlarged, each side at least 1.
pub fn fit_in_box(width: u32, height: u32, side: u32) -> (u32, u32) {
    let long = width.max(height);
    if long <= side {
        return (width, height);
    }
    let scale = |v: u32| {
        ((u64::from(v) * u64::from(side) + u64::from(long) / 2) / u64::from(long)).max(1) as u32
    };
    (scale(width), scale(height))
}

/// The sizes to store for a source of these dimensions, smallest first: every box up to the
/// first one the source fits in whole.
pub fn photo_size_plan(width: u32, height: u32) -> Vec<(char, u32, u32)> {
    let long = width.max(height);
    let mut plan = Vec::new();
    let mut previous_side = 0;
    for (kind, side) in PHOTO_BOXES {
        if long <= previous_side {
            break;
        }
        let (w, h) = fit_in_box(width, height, side);
        plan.push((kind, w, h));
        previous_side = side;
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_photo_gets_the_boxes_up_to_its_own_size() {
        assert_eq!(photo_size_plan(90, 60), vec![('s', 90, 60)]);
        assert_eq!(photo_size_plan(100, 60), vec![('s', 100, 60)]);
        assert_eq!(
            photo_size_plan(101, 60),
            vec![('s', 100, 59), ('m', 101, 60)]
        );
        assert_eq!(
            photo_size_plan(500, 400),
            vec![('s', 100, 80), ('m', 320, 256), ('x', 500, 400)]
        );
        let all = photo_size_plan(4000, 3000);
        assert_eq!(
            all,
            vec![
                ('s', 100, 75),
                ('m', 320, 240),
                ('x', 800, 600),
                ('y', 1280, 960),
                ('w', 2560, 1920)
            ]
        );
        // Portrait keeps its height as the long side.
        assert_eq!(photo_size_plan(300, 1000)[1], ('m', 96, 320));
    }

    #[test]
    fn thin_photos_keep_at_least_one_pixel() {
        assert_eq!(fit_in_box(2000, 100, 40), (40, 2));
        assert_eq!(fit_in_box(2000, 1, 100), (100, 1));
    }

    #[test]
    fn dimensions_at_their_boundaries() {
        assert!(photo_dimensions_ok(1, 1));
        assert!(!photo_dimensions_ok(0, 10));
        assert!(photo_dimensions_ok(5000, 5000));
        assert!(!photo_dimensions_ok(5000, 5001));
        assert!(photo_dimensions_ok(2000, 100));
        assert!(!photo_dimensions_ok(2001, 100));
        assert!(photo_dimensions_ok(100, 2000));
        assert!(!photo_dimensions_ok(u32::MAX, u32::MAX));
    }
}
