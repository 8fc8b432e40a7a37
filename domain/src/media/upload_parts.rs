//! Telegram's rules for uploads in parts (core.telegram.org/api/files): every part but the last
//! has one size, divisible by 1 KiB and dividing 512 KiB; the last may be smaller. Files up to
//! 10 MiB go through upload.saveFilePart (the total is only known when the file is used), larger
//! ones through upload.saveBigFilePart (which names its total in every call).

use super::file_error::FileError;

/// Every part but the last is a multiple of this.
pub const PART_SIZE_UNIT: usize = 1024;
/// The largest part (Telegram's recommended part size too).
pub const MAX_PART_BYTES: usize = 512 * 1024;
/// Parts one file may have: Telegram's `upload_max_fileparts_default` (4000 × 512 KiB ≈ 2 GB).
pub const MAX_FILE_PARTS: i32 = 4000;
/// The largest file upload.saveFilePart may carry: clients (Telethon, Pyrogram/Kurigram, GramJS,
/// tdesktop) switch to saveBigFilePart above 10 MiB.
pub const SMALL_FILE_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// The largest file at all: the most parts of the largest size.
pub const MAX_FILE_BYTES: u64 = MAX_FILE_PARTS as u64 * MAX_PART_BYTES as u64;
/// The longest file name kept, in characters (a common file system's name limit).
pub const MAX_FILE_NAME_CHARS: usize = 255;

/// How a file is being uploaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadKind {
    /// upload.saveFilePart: the number of parts comes with the `inputFile` that uses it.
    Small,
    /// upload.saveBigFilePart with its `file_total_parts`.
    Big { total_parts: i32 },
}

/// Whether `len` may be the size of the parts before the last: divisible by 1 KiB and dividing
/// 512 KiB (1, 2, 4, … 512 KiB).
pub fn is_full_part_size(len: usize) -> bool {
    len >= PART_SIZE_UNIT
        && len.is_multiple_of(PART_SIZE_UNIT)
        && MAX_PART_BYTES.is_multiple_of(len)
}

/// Checks one part as it is saved. The size of a small file's part can only be judged once the
/// file is used (which part is last is not known before), in [`check_assembly`].
pub fn check_part(kind: UploadKind, part: i32, len: usize) -> Result<(), FileError> {
    if let UploadKind::Big { total_parts } = kind {
        if !(1..=MAX_FILE_PARTS).contains(&total_parts) {
            return Err(FileError::FilePartsInvalid);
        }
    }
    let last_allowed = match kind {
        UploadKind::Small => MAX_FILE_PARTS - 1,
        UploadKind::Big { total_parts } => total_parts - 1,
    };
    if !(0..=last_allowed).contains(&part) {
        return Err(FileError::FilePartInvalid);
    }
    if len == 0 {
        return Err(FileError::FilePartEmpty);
    }
    if len > MAX_PART_BYTES {
        return Err(FileError::FilePartTooBig);
    }
    if let UploadKind::Big { total_parts } = kind {
        if part < total_parts - 1 && !is_full_part_size(len) {
            return Err(FileError::FilePartSizeInvalid);
        }
    }
    Ok(())
}

/// Checks the sizes of a whole upload, part 0 first, and answers its length: all parts but the
/// last of one full part size, the last no larger.
pub fn check_assembly(sizes: &[usize]) -> Result<u64, FileError> {
    let Some((last, full)) = sizes.split_last() else {
        return Err(FileError::FilePartsInvalid);
    };
    if sizes.len() > MAX_FILE_PARTS as usize {
        return Err(FileError::FilePartsInvalid);
    }
    if let Some(&part_size) = full.first() {
        if !is_full_part_size(part_size)
            || full.iter().any(|&s| s != part_size)
            || *last > part_size
        {
            return Err(FileError::FilePartSizeInvalid);
        }
    }
    if *last == 0 || *last > MAX_PART_BYTES {
        return Err(FileError::FilePartSizeInvalid);
    }
    Ok(sizes.iter().map(|&s| s as u64).sum())
}

/// A file name as kept: at most [`MAX_FILE_NAME_CHARS`] characters, no control characters
/// (they would break a `Content-Disposition` header or a terminal); may be empty.
pub fn check_file_name(name: &str) -> Result<(), FileError> {
    if name.chars().count() > MAX_FILE_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(FileError::FileNameInvalid);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: usize = 1024;

    #[test]
    fn full_part_sizes_are_the_powers_of_two_from_1_to_512_kib() {
        let sizes: Vec<usize> = (1..=MAX_PART_BYTES)
            .filter(|&s| is_full_part_size(s))
            .collect();
        assert_eq!(
            sizes,
            vec![
                KIB,
                2 * KIB,
                4 * KIB,
                8 * KIB,
                16 * KIB,
                32 * KIB,
                64 * KIB,
                128 * KIB,
                256 * KIB,
                512 * KIB
            ]
        );
    }

    #[test]
    fn part_numbers_and_sizes_at_their_boundaries() {
        let small = UploadKind::Small;
        assert_eq!(check_part(small, 0, 1), Ok(()));
        assert_eq!(check_part(small, MAX_FILE_PARTS - 1, KIB), Ok(()));
        assert_eq!(
            check_part(small, MAX_FILE_PARTS, KIB),
            Err(FileError::FilePartInvalid)
        );
        assert_eq!(check_part(small, -1, KIB), Err(FileError::FilePartInvalid));
        assert_eq!(check_part(small, 0, 0), Err(FileError::FilePartEmpty));
        assert_eq!(check_part(small, 0, MAX_PART_BYTES), Ok(()));
        assert_eq!(
            check_part(small, 0, MAX_PART_BYTES + 1),
            Err(FileError::FilePartTooBig)
        );
        // A small file's odd-sized part may be its last: judged at assembly.
        assert_eq!(check_part(small, 3, 1000), Ok(()));

        let big = UploadKind::Big { total_parts: 3 };
        assert_eq!(
            check_part(big, 2, 1000),
            Ok(()),
            "the last part may be any size"
        );
        assert_eq!(
            check_part(big, 1, 1000),
            Err(FileError::FilePartSizeInvalid)
        );
        assert_eq!(
            check_part(big, 1, 3 * KIB),
            Err(FileError::FilePartSizeInvalid)
        );
        assert_eq!(check_part(big, 1, 4 * KIB), Ok(()));
        assert_eq!(check_part(big, 3, KIB), Err(FileError::FilePartInvalid));
        for total_parts in [0, MAX_FILE_PARTS + 1] {
            assert_eq!(
                check_part(UploadKind::Big { total_parts }, 0, KIB),
                Err(FileError::FilePartsInvalid)
            );
        }
        let most = UploadKind::Big {
            total_parts: MAX_FILE_PARTS,
        };
        assert_eq!(check_part(most, MAX_FILE_PARTS - 1, KIB), Ok(()));
    }

    #[test]
    fn an_assembly_has_one_part_size_and_a_last_part_no_larger() {
        assert_eq!(check_assembly(&[]), Err(FileError::FilePartsInvalid));
        assert_eq!(check_assembly(&[1]), Ok(1));
        assert_eq!(check_assembly(&[MAX_PART_BYTES]), Ok(MAX_PART_BYTES as u64));
        assert_eq!(
            check_assembly(&[4 * KIB, 4 * KIB, 1]),
            Ok(8 * KIB as u64 + 1)
        );
        assert_eq!(
            check_assembly(&[4 * KIB, 4 * KIB, 4 * KIB]),
            Ok(12 * KIB as u64)
        );
        assert_eq!(
            check_assembly(&[4 * KIB, 4 * KIB, 4 * KIB + 1]),
            Err(FileError::FilePartSizeInvalid)
        );
        assert_eq!(
            check_assembly(&[4 * KIB, 8 * KIB, 1]),
            Err(FileError::FilePartSizeInvalid)
        );
        assert_eq!(
            check_assembly(&[3 * KIB, 1]),
            Err(FileError::FilePartSizeInvalid)
        );
        assert_eq!(
            check_assembly(&[1000, 1000]),
            Err(FileError::FilePartSizeInvalid)
        );
        assert_eq!(
            check_assembly(&vec![KIB; MAX_FILE_PARTS as usize]),
            Ok(MAX_FILE_PARTS as u64 * KIB as u64)
        );
        assert_eq!(
            check_assembly(&vec![KIB; MAX_FILE_PARTS as usize + 1]),
            Err(FileError::FilePartsInvalid)
        );
    }

    #[test]
    fn file_names_at_their_boundary() {
        assert_eq!(check_file_name(""), Ok(()));
        assert_eq!(check_file_name(&"é".repeat(MAX_FILE_NAME_CHARS)), Ok(()));
        assert_eq!(
            check_file_name(&"é".repeat(MAX_FILE_NAME_CHARS + 1)),
            Err(FileError::FileNameInvalid)
        );
        assert_eq!(check_file_name("a\nb.jpg"), Err(FileError::FileNameInvalid));
        assert_eq!(check_file_name("a\0b"), Err(FileError::FileNameInvalid));
    }
}
