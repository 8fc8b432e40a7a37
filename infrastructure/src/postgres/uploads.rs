//! [`PendingUploads`] over Postgres (migration 0016): one row per file an account is uploading,
//! one per part saved. A part is recorded in one transaction under an advisory lock on the
//! account, so parts saved in parallel (several workers, several connections) are counted
//! against the quota exactly.

use application::media::{PartRecorded, PendingFile, PendingPart, PendingUploads, UploadQuota};
use application::ports::StoreError;
use async_trait::async_trait;
use domain::media::upload_parts::SMALL_FILE_MAX_BYTES;
use domain::media::{BlobKey, UploadKind};
use domain::UserId;
use sqlx::PgPool;

use crate::error::db_error;

#[derive(Clone)]
pub struct PgPendingUploads {
    pool: PgPool,
}

impl PgPendingUploads {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn kind_of(total_parts: Option<i32>) -> UploadKind {
    match total_parts {
        None => UploadKind::Small,
        Some(total_parts) => UploadKind::Big { total_parts },
    }
}

fn total_of(kind: UploadKind) -> Option<i32> {
    match kind {
        UploadKind::Small => None,
        UploadKind::Big { total_parts } => Some(total_parts),
    }
}

#[async_trait]
impl PendingUploads for PgPendingUploads {
    async fn record_part(
        &self,
        user: UserId,
        file_id: i64,
        kind: UploadKind,
        part: PendingPart,
        now: i64,
        expired_before: i64,
        quota: UploadQuota,
    ) -> Result<PartRecorded, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('ptslog.uploads:' || $1, 0))")
            .bind(user.get())
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        let file: Option<(Option<i32>, bool, bool)> = sqlx::query_as(
            "SELECT total_parts, touched_at < to_timestamp($3), blob_key IS NOT NULL \
             FROM upload_files WHERE user_id = $1 AND file_id = $2",
        )
        .bind(user.get())
        .bind(file_id)
        .bind(expired_before as f64)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let live = match file {
            // Expired or already put together: the id starts a new upload.
            Some((_, expired, taken)) if expired || taken => {
                sqlx::query("DELETE FROM upload_files WHERE user_id = $1 AND file_id = $2")
                    .bind(user.get())
                    .bind(file_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?;
                false
            }
            Some((total, _, _)) => {
                if kind_of(total) != kind {
                    return Ok(PartRecorded::KindChanged);
                }
                true
            }
            None => false,
        };
        // The account's live pending files and bytes, and this part's earlier write.
        let (files, bytes): (i64, i64) = sqlx::query_as(
            "SELECT count(*), COALESCE(sum(bytes), 0)::BIGINT FROM upload_files \
             WHERE user_id = $1 AND blob_key IS NULL AND touched_at >= to_timestamp($2)",
        )
        .bind(user.get())
        .bind(expired_before as f64)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        let earlier: Option<(i32, i64)> = sqlx::query_as(
            "SELECT size, nonce FROM upload_parts WHERE user_id = $1 AND file_id = $2 AND part = $3",
        )
        .bind(user.get())
        .bind(file_id)
        .bind(part.part)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let delta = i64::from(part.size) - earlier.map_or(0, |(size, _)| i64::from(size));
        if !live && files >= i64::from(quota.max_pending_files) {
            return Ok(PartRecorded::OverQuota);
        }
        if delta > 0 && (bytes + delta) as u64 > quota.max_pending_bytes {
            return Ok(PartRecorded::OverQuota);
        }
        let file_bytes: i64 = sqlx::query_scalar(
            "INSERT INTO upload_files (user_id, file_id, total_parts, bytes, touched_at) \
             VALUES ($1, $2, $3, $4, to_timestamp($5)) \
             ON CONFLICT (user_id, file_id) DO UPDATE \
             SET bytes = upload_files.bytes + $4, touched_at = to_timestamp($5) \
             RETURNING bytes",
        )
        .bind(user.get())
        .bind(file_id)
        .bind(total_of(kind))
        .bind(delta)
        .bind(now as f64)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        if kind == UploadKind::Small && file_bytes as u64 > SMALL_FILE_MAX_BYTES {
            // Dropping the transaction rolls the row back.
            return Ok(PartRecorded::SmallFileTooBig);
        }
        sqlx::query(
            "INSERT INTO upload_parts (user_id, file_id, part, size, nonce) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (user_id, file_id, part) DO UPDATE SET size = $4, nonce = $5",
        )
        .bind(user.get())
        .bind(file_id)
        .bind(part.part)
        .bind(part.size as i32)
        .bind(part.nonce)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(PartRecorded::Saved {
            replaced: earlier.map(|(_, nonce)| nonce),
        })
    }

    async fn pending_file(
        &self,
        user: UserId,
        file_id: i64,
        expired_before: i64,
    ) -> Result<Option<PendingFile>, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        // One snapshot for the file and its parts.
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        let file: Option<(Option<i32>, Option<Vec<u8>>, Option<i64>)> = sqlx::query_as(
            "SELECT total_parts, blob_key, blob_size FROM upload_files \
             WHERE user_id = $1 AND file_id = $2 AND touched_at >= to_timestamp($3)",
        )
        .bind(user.get())
        .bind(file_id)
        .bind(expired_before as f64)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let Some((total, blob_key, blob_size)) = file else {
            return Ok(None);
        };
        let taken = match (blob_key, blob_size) {
            (Some(key), Some(size)) => {
                let key: [u8; 32] = key
                    .try_into()
                    .map_err(|_| StoreError::Corrupt("upload blob key".into()))?;
                Some((BlobKey::from_digest(key), size as u64))
            }
            _ => None,
        };
        let rows: Vec<(i32, i32, i64)> = sqlx::query_as(
            "SELECT part, size, nonce FROM upload_parts \
             WHERE user_id = $1 AND file_id = $2 ORDER BY part",
        )
        .bind(user.get())
        .bind(file_id)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(Some(PendingFile {
            kind: kind_of(total),
            parts: rows
                .into_iter()
                .map(|(part, size, nonce)| PendingPart {
                    part,
                    size: size as u32,
                    nonce,
                })
                .collect(),
            taken,
        }))
    }

    async fn mark_taken(
        &self,
        user: UserId,
        file_id: i64,
        key: &BlobKey,
        size: u64,
        now: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        sqlx::query("DELETE FROM upload_parts WHERE user_id = $1 AND file_id = $2")
            .bind(user.get())
            .bind(file_id)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(
            "UPDATE upload_files SET blob_key = $3, blob_size = $4, bytes = 0, \
             touched_at = to_timestamp($5) WHERE user_id = $1 AND file_id = $2",
        )
        .bind(user.get())
        .bind(file_id)
        .bind(key.as_bytes().as_slice())
        .bind(size as i64)
        .bind(now as f64)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)
    }

    async fn sweep(&self, expired_before: i64, max: u32) -> Result<Vec<(UserId, i64)>, StoreError> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(
            "DELETE FROM upload_files WHERE (user_id, file_id) IN ( \
                 SELECT user_id, file_id FROM upload_files \
                 WHERE touched_at < to_timestamp($1) LIMIT $2 FOR UPDATE SKIP LOCKED) \
             RETURNING user_id, file_id",
        )
        .bind(expired_before as f64)
        .bind(i64::from(max))
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        rows.into_iter()
            .map(|(user, file_id)| {
                UserId::new(user)
                    .map(|u| (u, file_id))
                    .map_err(|_| StoreError::Corrupt(format!("user id {user}")))
            })
            .collect()
    }
}
