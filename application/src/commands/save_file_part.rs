//! upload.saveFilePart and upload.saveBigFilePart: one part of a file the client is uploading,
//! checked against Telegram's part rules, staged, and recorded for the calling account within
//! its quota. Parts arrive in any order, in parallel and possibly twice (a re-send replaces the
//! earlier write); the file is put together when a media message names it
//! ([`App::take_upload`](crate::App::take_upload)).

use domain::media::upload_parts::check_part;
use domain::media::{FileError, UploadKind};
use rand::Rng;
use serde::{Deserialize, Deserializer};

use crate::clock::unix_now;
use crate::error::AppError;
use crate::media::{PartRecorded, PendingPart, StagedPart};
use crate::tl::long;
use crate::{App, Caller};

/// A TL `bytes` field as the fronts give it (hex). Its length is bounded by the transport (the
/// HTTP body cap, the MTProto frame), both over the largest part, so a part too big still
/// decodes and is refused as `FILE_PART_TOO_BIG`.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PartBytes(pub Vec<u8>);

impl std::fmt::Debug for PartBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PartBytes({} bytes)", self.0.len())
    }
}

impl<'de> Deserialize<'de> for PartBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        // SIMD, into a buffer of the final size: `hex` decodes a digit at a time and was most of
        // an MTProto upload's CPU (docs/performance.md, "Media").
        // An odd length is refused by hex_decode (it wants exactly twice the buffer).
        let mut bytes = vec![0u8; s.len() / 2];
        faster_hex::hex_decode(s.as_bytes(), &mut bytes)
            .map(|()| PartBytes(bytes))
            .map_err(|_| serde::de::Error::custom("bytes must be hex"))
    }
}

/// upload.saveFilePart.
#[derive(Debug, Clone, Deserialize)]
pub struct SaveFilePart {
    #[serde(deserialize_with = "long")]
    pub file_id: i64,
    pub file_part: i32,
    pub bytes: PartBytes,
}

/// upload.saveBigFilePart.
#[derive(Debug, Clone, Deserialize)]
pub struct SaveBigFilePart {
    #[serde(deserialize_with = "long")]
    pub file_id: i64,
    pub file_part: i32,
    pub file_total_parts: i32,
    pub bytes: PartBytes,
}

/// One part, whichever method brought it.
#[derive(Debug, Clone)]
pub struct SavePart {
    pub file_id: i64,
    pub part: i32,
    pub kind: UploadKind,
    pub bytes: Vec<u8>,
}

impl From<SaveFilePart> for SavePart {
    fn from(r: SaveFilePart) -> Self {
        Self {
            file_id: r.file_id,
            part: r.file_part,
            kind: UploadKind::Small,
            bytes: r.bytes.0,
        }
    }
}

impl From<SaveBigFilePart> for SavePart {
    fn from(r: SaveBigFilePart) -> Self {
        Self {
            file_id: r.file_id,
            part: r.file_part,
            kind: UploadKind::Big {
                total_parts: r.file_total_parts,
            },
            bytes: r.bytes.0,
        }
    }
}

impl App {
    /// Saves one part for the caller's account (`boolTrue` on the wire). Nothing is recorded
    /// unless the part's bytes are staged in full first, so a recorded part is always readable.
    pub async fn save_file_part(&self, caller: &Caller, req: SavePart) -> Result<(), AppError> {
        let files = self.file_ports()?;
        check_part(req.kind, req.part, req.bytes.len())?;
        let size = req.bytes.len() as u32;
        let name = StagedPart {
            user: caller.user_id,
            file_id: req.file_id,
            part: req.part,
            nonce: rand::thread_rng().gen(),
        };
        files.staging.put_part(&name, req.bytes).await?;
        let now = i64::from(unix_now());
        let recorded = files
            .pending
            .record_part(
                caller.user_id,
                req.file_id,
                req.kind,
                PendingPart {
                    part: req.part,
                    size,
                    nonce: name.nonce,
                },
                now,
                now - files.limits.pending_lifetime_secs,
                files.limits.quota,
            )
            .await;
        let refused = match recorded {
            Ok(PartRecorded::Saved { replaced }) => {
                if let Some(nonce) = replaced.filter(|&n| n != name.nonce) {
                    let old = StagedPart { nonce, ..name };
                    if let Err(e) = files.staging.delete_part(&old).await {
                        // Left for the file's deletion when it is taken or expires.
                        tracing::warn!(error = %e, "deleting a replaced upload part failed");
                    }
                }
                return Ok(());
            }
            Ok(PartRecorded::OverQuota) => AppError::File(FileError::UploadQuotaExceeded),
            Ok(PartRecorded::KindChanged) => AppError::File(FileError::FilePartsInvalid),
            Ok(PartRecorded::SmallFileTooBig) => AppError::File(FileError::FilePartsInvalid),
            Err(e) => AppError::Store(e),
        };
        if let Err(e) = files.staging.delete_part(&name).await {
            tracing::warn!(error = %e, "deleting a refused upload part failed");
        }
        Err(refused)
    }

    /// Drops the pending uploads untouched for the pending lifetime as of `now` (unix seconds)
    /// and their staged bytes; answers how many files went. The server runs it periodically.
    pub async fn sweep_uploads(&self, now: i64) -> Result<usize, AppError> {
        let files = self.file_ports()?;
        let expired_before = now - files.limits.pending_lifetime_secs;
        let mut swept = 0;
        loop {
            let batch = files
                .pending
                .sweep(expired_before, crate::media::file_ports::UPLOAD_SWEEP_BATCH)
                .await?;
            for (user, file_id) in &batch {
                if let Err(e) = files.staging.delete_file(*user, *file_id).await {
                    tracing::warn!(error = %e, "deleting an expired upload's parts failed");
                }
            }
            swept += batch.len();
            if batch.len() < crate::media::file_ports::UPLOAD_SWEEP_BATCH as usize {
                return Ok(swept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(json: &str) -> Result<PartBytes, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn part_bytes_are_read_from_hex_and_anything_else_is_refused() {
        assert_eq!(part(r#""00ff10""#).unwrap(), PartBytes(vec![0, 0xff, 0x10]));
        assert_eq!(part(r#""ABcd""#).unwrap(), PartBytes(vec![0xab, 0xcd]));
        assert_eq!(part(r#""""#).unwrap(), PartBytes(Vec::new()));
        for bad in [r#""abc""#, r#""zz""#, r#""0g""#, "12"] {
            assert!(part(bad).is_err(), "{bad}");
        }
    }
}
