//! The media catalogue over Postgres: `photos` and `documents` (migration 0017), and the
//! visibility check over `message_boxes.media_id` (migration 0018).

use application::media::{MediaCatalog, StoredMedia};
use application::ports::StoreError;
use async_trait::async_trait;
use domain::media::{Document, MediaId, Photo};
use domain::UserId;
use sqlx::{PgPool, Row};

use crate::error::db_error;
use crate::postgres::rows::user_id;

#[derive(Clone)]
pub struct PgMediaCatalog {
    pool: PgPool,
}

impl PgMediaCatalog {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn encode<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, StoreError> {
    serde_json::to_value(v).map_err(|e| StoreError::Bug(format!("media does not encode: {e}")))
}

fn decode<T: serde::de::DeserializeOwned>(
    v: serde_json::Value,
    what: &str,
    id: MediaId,
) -> Result<T, StoreError> {
    serde_json::from_value(v).map_err(|e| StoreError::Corrupt(format!("{what} {}: {e}", id.get())))
}

#[async_trait]
impl MediaCatalog for PgMediaCatalog {
    async fn next_media_id(&self) -> Result<MediaId, StoreError> {
        let raw: i64 = sqlx::query_scalar("SELECT nextval('media_ids')")
            .fetch_one(&self.pool)
            .await
            .map_err(db_error)?;
        MediaId::new(raw).ok_or_else(|| StoreError::Corrupt(format!("media id {raw}")))
    }

    async fn put_photo(&self, owner: UserId, photo: &Photo) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO photos (id, access_hash, owner_user_id, photo) VALUES ($1, $2, $3, $4)",
        )
        .bind(photo.id.get())
        .bind(photo.access_hash)
        .bind(owner.get())
        .bind(encode(photo)?)
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn put_document(&self, owner: UserId, document: &Document) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO documents (id, access_hash, owner_user_id, mime_type, size, document) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(document.id.get())
        .bind(document.access_hash)
        .bind(owner.get())
        .bind(&document.mime_type)
        .bind(document.size)
        .bind(encode(document)?)
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn photo(&self, id: MediaId) -> Result<Option<StoredMedia>, StoreError> {
        let row = sqlx::query("SELECT owner_user_id, photo FROM photos WHERE id = $1")
            .bind(id.get())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(StoredMedia::Photo {
            owner: user_id(
                row.try_get("owner_user_id").map_err(db_error)?,
                "photos.owner",
            )?,
            photo: decode(row.try_get("photo").map_err(db_error)?, "photo", id)?,
        }))
    }

    async fn document(&self, id: MediaId) -> Result<Option<StoredMedia>, StoreError> {
        let row = sqlx::query("SELECT owner_user_id, document FROM documents WHERE id = $1")
            .bind(id.get())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error)?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(StoredMedia::Document {
            owner: user_id(
                row.try_get("owner_user_id").map_err(db_error)?,
                "documents.owner",
            )?,
            document: decode(row.try_get("document").map_err(db_error)?, "document", id)?,
        }))
    }

    async fn visible_to(&self, viewer: UserId, id: MediaId) -> Result<bool, StoreError> {
        // message_boxes_media: (owner_user_id, media_id) WHERE media_id IS NOT NULL AND NOT deleted.
        // A profile photo not deleted is anyone's to see (photos.getUserPhotos shows it to anyone
        // who can name its owner): the photos primary key, then the profile_photos primary key.
        sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM photos WHERE id = $2 AND owner_user_id = $1) \
                 OR EXISTS (SELECT 1 FROM documents WHERE id = $2 AND owner_user_id = $1) \
                 OR EXISTS (SELECT 1 FROM message_boxes WHERE owner_user_id = $1 AND media_id = $2 \
                            AND media_id IS NOT NULL AND NOT deleted) \
                 OR EXISTS (SELECT 1 FROM photos p JOIN profile_photos pp \
                            ON pp.owner_user_id = p.owner_user_id AND pp.photo_id = p.id \
                            WHERE p.id = $2)",
        )
        .bind(viewer.get())
        .bind(id.get())
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)
    }
}
