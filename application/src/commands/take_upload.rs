//! Putting an uploaded file together when a media message (or a profile photo) names its
//! `inputFile`/`inputFileBig`: every part present and of Telegram's sizes, the md5 right when
//! one is given, then the parts streamed in order into one blob, complete in the store before
//! this answers, and the parts freed. Naming the same file again (a retried send) answers the
//! same blob while the record lives.

use std::sync::{Arc, Mutex};

use domain::media::upload_parts::{check_assembly, check_file_name, MAX_FILE_PARTS};
use domain::media::{FileError, UploadKind};
use futures::StreamExt;
use md5::{Digest, Md5};

use crate::clock::unix_now;
use crate::error::AppError;
use crate::media::{
    BlobError, FilePorts, InputFile, PendingFile, PendingPart, StagedPart, UploadedFile,
};
use crate::{App, Caller};

impl App {
    /// The caller's uploaded `file` as one stored blob. Refusals: `FILE_PARTS_INVALID` (a part
    /// count out of range or not the one uploaded, a small file named as big or the other way
    /// round), `FILE_PART_<n>_MISSING` (also for a file id this account never uploaded: file ids
    /// are per account), `FILE_PART_SIZE_INVALID`, `MD5_CHECKSUM_INVALID`, `FILE_NAME_INVALID`.
    pub async fn take_upload(
        &self,
        caller: &Caller,
        file: &InputFile,
    ) -> Result<UploadedFile, AppError> {
        let files = self.file_ports()?;
        let (id, parts, md5, big) = match file {
            InputFile::Small {
                id,
                parts,
                md5_checksum,
                ..
            } => (*id, *parts, md5_checksum.as_str(), false),
            InputFile::Big { id, parts, .. } => (*id, *parts, "", true),
        };
        check_file_name(file.name())?;
        if !(1..=MAX_FILE_PARTS).contains(&parts) {
            return Err(FileError::FilePartsInvalid.into());
        }
        let expected_md5 = parse_md5(md5)?;
        let now = i64::from(unix_now());
        let expired_before = now - files.limits.pending_lifetime_secs;
        let Some(pending) = files
            .pending
            .pending_file(caller.user_id, id, expired_before)
            .await?
        else {
            return Err(FileError::FilePartMissing(0).into());
        };
        if let Some((key, size)) = pending.taken {
            return Ok(UploadedFile {
                key,
                size,
                name: file.name().to_string(),
            });
        }
        let ordered = check_parts(&pending, parts, big)?;
        let staged: Vec<StagedPart> = ordered
            .iter()
            .map(|p| StagedPart {
                user: caller.user_id,
                file_id: id,
                part: p.part,
                nonce: p.nonce,
            })
            .collect();
        if let Some(expected) = expected_md5 {
            // A pass of its own (small files only, at most 10 MiB) so a wrong checksum stores
            // nothing.
            let mut md5 = Md5::new();
            for (name, part) in staged.iter().zip(&ordered) {
                md5.update(read_part(files, name, part).await?);
            }
            if <[u8; 16]>::from(md5.finalize()) != expected {
                return Err(FileError::Md5ChecksumInvalid.into());
            }
        }
        let (key, size) = match assemble(files, &staged, &ordered).await {
            Ok(stored) => stored,
            Err(e) => {
                // A concurrent take of the same file may have finished and freed the parts.
                if let Some(PendingFile {
                    taken: Some((key, size)),
                    ..
                }) = files
                    .pending
                    .pending_file(caller.user_id, id, expired_before)
                    .await?
                {
                    return Ok(UploadedFile {
                        key,
                        size,
                        name: file.name().to_string(),
                    });
                }
                return Err(e);
            }
        };
        files
            .pending
            .mark_taken(caller.user_id, id, &key, size, now)
            .await?;
        if let Err(e) = files.staging.delete_file(caller.user_id, id).await {
            // The record is gone; the sweep of the staging area is the file system's or the
            // bucket's lifecycle rule (docs/media.md).
            tracing::warn!(error = %e, "deleting a taken upload's parts failed");
        }
        Ok(UploadedFile {
            key,
            size,
            name: file.name().to_string(),
        })
    }
}

/// The md5 a client gave: empty (none) or 32 hex digits.
fn parse_md5(md5: &str) -> Result<Option<[u8; 16]>, FileError> {
    if md5.is_empty() {
        return Ok(None);
    }
    let mut out = [0u8; 16];
    hex::decode_to_slice(md5, &mut out).map_err(|_| FileError::Md5ChecksumInvalid)?;
    Ok(Some(out))
}

/// The parts `0..parts` in order, checked against Telegram's rules.
fn check_parts(
    pending: &PendingFile,
    parts: i32,
    big: bool,
) -> Result<Vec<PendingPart>, FileError> {
    match pending.kind {
        UploadKind::Small if big => return Err(FileError::FilePartsInvalid),
        UploadKind::Big { .. } if !big => return Err(FileError::FilePartsInvalid),
        UploadKind::Big { total_parts } if total_parts != parts => {
            return Err(FileError::FilePartsInvalid)
        }
        _ => {}
    }
    // Ascending and unique by part (the store's key): the first gap is the first missing.
    for (expected, p) in (0..parts).zip(&pending.parts) {
        if p.part != expected {
            return Err(FileError::FilePartMissing(expected));
        }
    }
    if pending.parts.len() < parts as usize {
        return Err(FileError::FilePartMissing(pending.parts.len() as i32));
    }
    if pending.parts.len() > parts as usize {
        // More parts were saved than the file says it has.
        return Err(FileError::FilePartsInvalid);
    }
    let sizes: Vec<usize> = pending.parts.iter().map(|p| p.size as usize).collect();
    check_assembly(&sizes)?;
    Ok(pending.parts.clone())
}

/// A staged part's bytes; gone or of another length than recorded is missing.
async fn read_part(
    files: &FilePorts,
    name: &StagedPart,
    part: &PendingPart,
) -> Result<Vec<u8>, AppError> {
    match files.staging.read_part(name).await? {
        Some(bytes) if bytes.len() == part.size as usize => Ok(bytes),
        _ => Err(FileError::FilePartMissing(part.part).into()),
    }
}

/// Streams the parts in order into one blob, one part in memory at a time.
async fn assemble(
    files: &FilePorts,
    staged: &[StagedPart],
    ordered: &[PendingPart],
) -> Result<(domain::media::BlobKey, u64), AppError> {
    // Which part failed, for the client's error (the stream's own error is the store's).
    let failed: Arc<Mutex<Option<AppError>>> = Arc::new(Mutex::new(None));
    let chunks = futures::stream::iter(staged.iter().zip(ordered))
        .then(|(name, part)| {
            let failed = failed.clone();
            async move {
                read_part(files, name, part).await.map_err(|e| {
                    let message = e.to_string();
                    if let Ok(mut slot) = failed.lock() {
                        *slot = Some(e);
                    }
                    BlobError::Backend(message)
                })
            }
        })
        .boxed();
    let stored = files.blobs.put_stream(chunks).await;
    match stored {
        Ok(stored) => Ok(stored),
        Err(e) => match failed.lock().ok().and_then(|mut slot| slot.take()) {
            Some(part_error) => Err(part_error),
            None => Err(e.into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(kind: UploadKind, sizes: &[(i32, u32)]) -> PendingFile {
        PendingFile {
            kind,
            parts: sizes
                .iter()
                .map(|&(part, size)| PendingPart {
                    part,
                    size,
                    nonce: 0,
                })
                .collect(),
            taken: None,
        }
    }

    #[test]
    fn the_first_gap_is_the_missing_part() {
        let f = file(UploadKind::Small, &[(0, 1024), (2, 1024), (3, 10)]);
        assert_eq!(
            check_parts(&f, 4, false),
            Err(FileError::FilePartMissing(1))
        );
        let f = file(UploadKind::Small, &[(0, 1024), (1, 10)]);
        assert_eq!(
            check_parts(&f, 3, false),
            Err(FileError::FilePartMissing(2))
        );
        assert_eq!(check_parts(&f, 1, false), Err(FileError::FilePartsInvalid));
        assert_eq!(check_parts(&f, 2, false).map(|p| p.len()), Ok(2));
    }

    #[test]
    fn small_and_big_are_not_interchangeable() {
        let small = file(UploadKind::Small, &[(0, 10)]);
        assert_eq!(
            check_parts(&small, 1, true),
            Err(FileError::FilePartsInvalid)
        );
        let big = file(UploadKind::Big { total_parts: 1 }, &[(0, 10)]);
        assert_eq!(
            check_parts(&big, 1, false),
            Err(FileError::FilePartsInvalid)
        );
        assert_eq!(check_parts(&big, 2, true), Err(FileError::FilePartsInvalid));
        assert!(check_parts(&big, 1, true).is_ok());
    }

    #[test]
    fn md5_is_empty_or_32_hex_digits() {
        assert_eq!(parse_md5(""), Ok(None));
        assert_eq!(
            parse_md5("900150983cd24fb0d6963f7d28e17f72"),
            Ok(Some(
                *b"\x90\x01\x50\x98\x3c\xd2\x4f\xb0\xd6\x96\x3f\x7d\x28\xe1\x7f\x72"
            ))
        );
        assert_eq!(
            parse_md5("900150983cd24fb0d6963f7d28e17f7"),
            Err(FileError::Md5ChecksumInvalid)
        );
        assert_eq!(
            parse_md5(&"z".repeat(32)),
            Err(FileError::Md5ChecksumInvalid)
        );
    }
}
