use domain::DomainError;
use thiserror::Error;

use crate::ports::StoreError;

/// Why a handler refused or failed. The fronts map each to one TL error.
#[derive(Debug, Error)]
pub enum AppError {
    #[error(transparent)]
    Domain(#[from] DomainError),
    /// Too many sends: retry after this many seconds.
    #[error("too many requests, retry in {0} s")]
    FloodWait(u32),
    /// Refused by configuration (e.g. development sign-in is off); the TL error name is given.
    #[error("forbidden: {0}")]
    Forbidden(&'static str),
    /// A sign-in step refused (`PHONE_CODE_INVALID`, `PHONE_CODE_EXPIRED`, …): `400` with this
    /// TL error name.
    #[error("bad request: {0}")]
    BadRequest(&'static str),
    #[error("the authorization is unknown or revoked")]
    Unauthorized,
    #[error("storage failed: {0}")]
    Store(#[from] StoreError),
    /// An upload part, an upload or a download range refused by Telegram's file rules.
    #[error(transparent)]
    File(#[from] domain::media::FileError),
    /// The blob store failed: never the client's fault (`500`).
    #[error(transparent)]
    Blob(#[from] crate::media::BlobError),
}
