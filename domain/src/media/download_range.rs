//! Telegram's rules for upload.getFile's `offset` and `limit` (core.telegram.org/api/files,
//! "Downloading files"). Without `precise`: both divisible by 4 KiB, 1 MiB divisible by the
//! limit; with `precise`: both divisible by 1 KiB and the limit at most 1 MiB. Either way a
//! request stays within one 1 MiB window of the file. What lies past the end is simply not
//! there: a range starting at or after it reads nothing.

use super::file_error::FileError;

/// Offsets and limits are multiples of this without `precise`.
pub const DOWNLOAD_ALIGNMENT: i64 = 4 * 1024;
/// … and of this with `precise`.
pub const PRECISE_DOWNLOAD_ALIGNMENT: i64 = 1024;
/// The largest limit, and the window no request may cross.
pub const MAX_DOWNLOAD_LIMIT: i64 = 1024 * 1024;

/// A range of a file one upload.getFile may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownloadRange {
    pub offset: u64,
    pub limit: u32,
}

impl DownloadRange {
    pub fn new(offset: i64, limit: i32, precise: bool) -> Result<Self, FileError> {
        let limit = i64::from(limit);
        let alignment = if precise {
            PRECISE_DOWNLOAD_ALIGNMENT
        } else {
            DOWNLOAD_ALIGNMENT
        };
        if offset < 0 || offset % alignment != 0 {
            return Err(FileError::OffsetInvalid);
        }
        if limit <= 0 || limit % alignment != 0 || limit > MAX_DOWNLOAD_LIMIT {
            return Err(FileError::LimitInvalid);
        }
        if !precise && MAX_DOWNLOAD_LIMIT % limit != 0 {
            return Err(FileError::LimitInvalid);
        }
        // Near i64::MAX the range's end would overflow.
        let end = offset
            .checked_add(limit - 1)
            .ok_or(FileError::OffsetInvalid)?;
        if offset / MAX_DOWNLOAD_LIMIT != end / MAX_DOWNLOAD_LIMIT {
            return Err(FileError::LimitInvalid);
        }
        Ok(Self {
            offset: offset as u64,
            limit: limit as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: i32 = 1024;
    const MIB: i32 = 1024 * 1024;

    #[test]
    fn aligned_ranges_within_a_mebibyte_window_are_allowed() {
        let r = DownloadRange::new(0, MIB, false).unwrap();
        assert_eq!((r.offset, r.limit), (0, MIB as u32));
        assert!(DownloadRange::new(MIB as i64, 512 * KIB, false).is_ok());
        assert!(DownloadRange::new(512 * 1024, 512 * KIB, false).is_ok());
        assert!(DownloadRange::new(4096, 4 * KIB, false).is_ok());
        // Past the end of any file: allowed, reads nothing.
        assert!(DownloadRange::new(1 << 40, 4 * KIB, false).is_ok());
    }

    #[test]
    fn offsets_at_their_boundaries() {
        assert_eq!(
            DownloadRange::new(-4096, 4 * KIB, false),
            Err(FileError::OffsetInvalid)
        );
        assert_eq!(
            DownloadRange::new(1024, 4 * KIB, false),
            Err(FileError::OffsetInvalid)
        );
        assert!(DownloadRange::new(1024, KIB, true).is_ok());
        assert_eq!(
            DownloadRange::new(512, KIB, true),
            Err(FileError::OffsetInvalid)
        );
        // The end of the range would overflow: refused, not wrapped.
        assert_eq!(
            DownloadRange::new(i64::MAX - 1023, MIB, true),
            Err(FileError::OffsetInvalid)
        );
    }

    #[test]
    fn limits_at_their_boundaries() {
        assert_eq!(
            DownloadRange::new(0, 0, false),
            Err(FileError::LimitInvalid)
        );
        assert_eq!(
            DownloadRange::new(0, -4096, false),
            Err(FileError::LimitInvalid)
        );
        assert_eq!(
            DownloadRange::new(0, 2 * MIB, false),
            Err(FileError::LimitInvalid)
        );
        assert_eq!(
            DownloadRange::new(0, MIB + 4096, true),
            Err(FileError::LimitInvalid)
        );
        assert_eq!(
            DownloadRange::new(0, KIB, false),
            Err(FileError::LimitInvalid)
        );
        // 12 KiB is 4 KiB-aligned but does not divide 1 MiB; precise allows it.
        assert_eq!(
            DownloadRange::new(0, 12 * KIB, false),
            Err(FileError::LimitInvalid)
        );
        assert!(DownloadRange::new(0, 12 * KIB, true).is_ok());
        assert!(DownloadRange::new(0, MIB, true).is_ok());
        assert_eq!(
            DownloadRange::new(0, 3 * KIB / 2, true),
            Err(FileError::LimitInvalid)
        );
    }

    #[test]
    fn no_request_crosses_a_mebibyte_boundary() {
        // The last 4 KiB before the boundary, then one past it.
        assert!(DownloadRange::new((MIB - 4 * KIB) as i64, 4 * KIB, false).is_ok());
        assert_eq!(
            DownloadRange::new((MIB - 4 * KIB) as i64, 8 * KIB, false),
            Err(FileError::LimitInvalid)
        );
        assert_eq!(
            DownloadRange::new(4096, MIB, false),
            Err(FileError::LimitInvalid)
        );
        assert!(DownloadRange::new((MIB - KIB) as i64, KIB, true).is_ok());
        assert_eq!(
            DownloadRange::new((MIB - KIB) as i64, 2 * KIB, true),
            Err(FileError::LimitInvalid)
        );
    }
}
