//! Server-wide secrets, shared by every instance through the database.

use application::ports::StoreError;
use domain::access_hash::AccessHashKey;
use rand::rngs::OsRng;
use rand::RngCore;
use sqlx::PgPool;

use crate::error::db_error;

/// Random bytes of a secret the server generates: 256 bits.
pub const SECRET_BYTES: usize = 32;

/// 32 bytes from the operating system's CSPRNG, hex-encoded for the text column.
fn random_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// The stored secret `name`, created from the CSPRNG on first use; every instance (racing or
/// not) ends up with the one row that was inserted first.
pub async fn server_secret(pool: &PgPool, name: &str) -> Result<String, StoreError> {
    sqlx::query(
        "INSERT INTO server_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
    )
    .bind(name)
    .bind(random_secret())
    .execute(pool)
    .await
    .map_err(db_error)?;
    let value: Option<String> =
        sqlx::query_scalar("SELECT value FROM server_secrets WHERE name = $1")
            .bind(name)
            .fetch_optional(pool)
            .await
            .map_err(db_error)?;
    match value {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(StoreError::Corrupt(format!("server_secrets has no {name}"))),
    }
}

/// The access-hash key: 32 CSPRNG bytes (hex) on databases created since migration 0011; a
/// database that had accounts before keeps the key it had (see that migration).
pub async fn access_hash_key(pool: &PgPool) -> Result<AccessHashKey, StoreError> {
    let value = server_secret(pool, "access_hash_key").await?;
    Ok(AccessHashKey::new(value.into_bytes()))
}
