//! Server-wide secrets, shared by every instance through the database.

use application::ports::StoreError;
use domain::access_hash::AccessHashKey;
use sqlx::PgPool;

use crate::error::db_error;

/// The access-hash key the first migration generated.
pub async fn access_hash_key(pool: &PgPool) -> Result<AccessHashKey, StoreError> {
    let value: Option<String> =
        sqlx::query_scalar("SELECT value FROM server_secrets WHERE name = 'access_hash_key'")
            .fetch_optional(pool)
            .await
            .map_err(db_error)?;
    match value {
        Some(v) if !v.is_empty() => Ok(AccessHashKey::new(v.into_bytes())),
        _ => Err(StoreError::Corrupt(
            "server_secrets has no access_hash_key".into(),
        )),
    }
}
