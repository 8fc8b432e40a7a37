//! Why an upload part, an assembled upload or a download range was refused. Each variant is one
//! TL error (the edge maps them in `application::tl::rpc_error`).

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FileError {
    /// `FILE_PART_INVALID`: the part number is outside `0..MAX_FILE_PARTS` (or past the big
    /// file's `file_total_parts`).
    #[error("the file part number is invalid")]
    FilePartInvalid,
    /// `FILE_PART_EMPTY`: a part of zero bytes.
    #[error("the file part is empty")]
    FilePartEmpty,
    /// `FILE_PART_TOO_BIG`: a part over `MAX_PART_BYTES`.
    #[error("the file part is over 512 KiB")]
    FilePartTooBig,
    /// `FILE_PART_SIZE_INVALID`: a part that is not the last is not a valid part size, or the
    /// parts do not all have the same size.
    #[error("the file part size is invalid")]
    FilePartSizeInvalid,
    /// `FILE_PARTS_INVALID`: the number of parts is outside `1..=MAX_FILE_PARTS`, does not match
    /// what was uploaded, or a small file went over `SMALL_FILE_MAX_BYTES`.
    #[error("the number of file parts is invalid")]
    FilePartsInvalid,
    /// `FILE_PART_<n>_MISSING`: part `n` was never uploaded (or expired).
    #[error("file part {0} is missing")]
    FilePartMissing(i32),
    /// `MD5_CHECKSUM_INVALID`: the md5 the client gave is not the file's.
    #[error("the md5 checksum does not match the file")]
    Md5ChecksumInvalid,
    /// `FILE_NAME_INVALID`: the file name is too long or holds control characters.
    #[error("the file name is invalid")]
    FileNameInvalid,
    /// `UPLOAD_QUOTA_EXCEEDED`: the account's pending parts would go over its quota of bytes or
    /// of files being uploaded at once.
    #[error("too many pending upload bytes or files for this account")]
    UploadQuotaExceeded,
    /// `FILE_ID_INVALID`: no such file (a blob a location named is not in the store).
    #[error("the file id is invalid")]
    FileIdInvalid,
    /// `LIMIT_INVALID`: a download limit Telegram's rules refuse.
    #[error("the download limit is invalid")]
    LimitInvalid,
    /// `OFFSET_INVALID`: a download offset Telegram's rules refuse.
    #[error("the download offset is invalid")]
    OffsetInvalid,
}

impl FileError {
    /// The TL error name (`FILE_PART_3_MISSING` carries its part number).
    pub fn tl_name(&self) -> String {
        match self {
            Self::FilePartInvalid => "FILE_PART_INVALID".into(),
            Self::FilePartEmpty => "FILE_PART_EMPTY".into(),
            Self::FilePartTooBig => "FILE_PART_TOO_BIG".into(),
            Self::FilePartSizeInvalid => "FILE_PART_SIZE_INVALID".into(),
            Self::FilePartsInvalid => "FILE_PARTS_INVALID".into(),
            Self::FilePartMissing(n) => format!("FILE_PART_{n}_MISSING"),
            Self::Md5ChecksumInvalid => "MD5_CHECKSUM_INVALID".into(),
            Self::FileNameInvalid => "FILE_NAME_INVALID".into(),
            Self::UploadQuotaExceeded => "UPLOAD_QUOTA_EXCEEDED".into(),
            Self::FileIdInvalid => "FILE_ID_INVALID".into(),
            Self::LimitInvalid => "LIMIT_INVALID".into(),
            Self::OffsetInvalid => "OFFSET_INVALID".into(),
        }
    }
}
