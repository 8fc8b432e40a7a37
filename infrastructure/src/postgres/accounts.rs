//! [`Accounts`] over Postgres: accounts by phone, one authorization (device) per login.

use application::caller::Caller;
use application::ports::{Accounts, StoreError, UserRecord};
use async_trait::async_trait;
use domain::{AuthKeyId, SessionId};
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::error::db_error;
use crate::postgres::rows::{self, user, USER_COLUMNS};

/// Tokens are 32 random bytes, handed out as 64 hex characters.
const TOKEN_BYTES: usize = 32;

#[derive(Clone)]
pub struct PgAccounts {
    pool: PgPool,
}

impl PgAccounts {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

/// Only the token's SHA-256 is stored, so a leaked table does not hand out sessions.
fn token_hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

fn random_auth_key_id() -> i64 {
    loop {
        let id = rand::thread_rng().next_u64() as i64;
        // 0 means "no device" on events.
        if id != 0 {
            return id;
        }
    }
}

#[async_trait]
impl Accounts for PgAccounts {
    async fn login(
        &self,
        phone: &str,
        first_name: &str,
        last_name: &str,
    ) -> Result<(UserRecord, String), StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        // A concurrent login with the same new phone waits on the unique index, then does nothing
        // and finds the committed row below.
        let created: Option<i64> = sqlx::query_scalar(
            "INSERT INTO users (phone, first_name, last_name) VALUES ($1, $2, $3) \
             ON CONFLICT (phone) DO NOTHING RETURNING id",
        )
        .bind(phone)
        .bind(first_name)
        .bind(last_name)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        if let Some(id) = created {
            sqlx::query("INSERT INTO user_sequences (user_id) VALUES ($1)")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        let row = sqlx::query(&format!(
            "SELECT {USER_COLUMNS} FROM users WHERE phone = $1"
        ))
        .bind(phone)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_error)?;
        let account = user(&row)?;

        let mut bytes = [0u8; TOKEN_BYTES];
        // Bearer tokens straight from the operating system's CSPRNG.
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        let token = hex::encode(bytes);
        // A random 64-bit id colliding is astronomically unlikely; a few tries make it impossible
        // in practice without a unique-violation error path.
        let mut inserted = false;
        for _ in 0..4 {
            let done = sqlx::query(
                "INSERT INTO authorizations (auth_key_id, user_id, token_hash) VALUES ($1, $2, $3) \
                 ON CONFLICT (auth_key_id) DO NOTHING",
            )
            .bind(random_auth_key_id())
            .bind(account.id.get())
            .bind(token_hash(&token))
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            if done.rows_affected() == 1 {
                inserted = true;
                break;
            }
        }
        if !inserted {
            return Err(StoreError::Bug("could not allocate an auth_key_id".into()));
        }
        tx.commit().await.map_err(db_error)?;
        Ok((account, token))
    }

    async fn authenticate(&self, token: &str) -> Result<Option<Caller>, StoreError> {
        let row: Option<(i64, i64)> =
            sqlx::query_as("SELECT auth_key_id, user_id FROM authorizations WHERE token_hash = $1")
                .bind(token_hash(token))
                .fetch_optional(&self.pool)
                .await
                .map_err(db_error)?;
        row.map(|(auth_key_id, user_id)| {
            Ok(Caller {
                user_id: rows::user_id(user_id, "authorizations.user_id")?,
                auth_key_id: AuthKeyId(auth_key_id),
                // One session per device until MTProto sessions exist.
                session_id: SessionId(auth_key_id),
            })
        })
        .transpose()
    }
}
