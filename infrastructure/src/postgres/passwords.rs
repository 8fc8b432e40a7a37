//! [`Passwords`] over Postgres (migration 0012): verifiers, SRP exchanges, wrong-password
//! counts and sign-ins waiting for a password (per MTProto auth key, or per JSON API
//! password_token, migration 0015). Expired exchanges and pending sign-ins are
//! ignored by the reads and deleted when the same account or key writes again.

use application::password_port::{Passwords, SrpExchangeRecord, StoredPassword};
use application::ports::StoreError;
use async_trait::async_trait;
use domain::UserId;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use crate::error::db_error;

#[derive(Clone)]
pub struct PgPasswords {
    pool: PgPool,
}

impl PgPasswords {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

fn user_id(raw: i64) -> Result<UserId, StoreError> {
    UserId::new(raw).map_err(|_| StoreError::Corrupt(format!("user id {raw}")))
}

#[async_trait]
impl Passwords for PgPasswords {
    async fn password(&self, user: UserId) -> Result<Option<StoredPassword>, StoreError> {
        let row: Option<(Vec<u8>, Vec<u8>, Vec<u8>, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT salt1, salt2, verifier, hint, email, version \
                 FROM account_passwords WHERE user_id = $1",
        )
        .bind(user.get())
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(row.map(
            |(salt1, salt2, verifier, hint, email, version)| StoredPassword {
                salt1,
                salt2,
                verifier,
                hint,
                email,
                version,
            },
        ))
    }

    async fn replace_password(
        &self,
        user: UserId,
        expected: Option<i64>,
        new: Option<&StoredPassword>,
    ) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        let changed = match (expected, new) {
            (None, None) => true,
            (None, Some(p)) => {
                sqlx::query(
                    "INSERT INTO account_passwords \
                 (user_id, salt1, salt2, verifier, hint, email, version) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (user_id) DO NOTHING",
                )
                .bind(user.get())
                .bind(&p.salt1)
                .bind(&p.salt2)
                .bind(&p.verifier)
                .bind(&p.hint)
                .bind(&p.email)
                .bind(p.version)
                .execute(&mut *tx)
                .await
                .map_err(db_error)?
                .rows_affected()
                    == 1
            }
            (Some(old), Some(p)) => sqlx::query(
                "UPDATE account_passwords SET salt1 = $2, salt2 = $3, verifier = $4, hint = $5, \
                 email = $6, version = $7, updated_at = now() WHERE user_id = $1 AND version = $8",
            )
            .bind(user.get())
            .bind(&p.salt1)
            .bind(&p.salt2)
            .bind(&p.verifier)
            .bind(&p.hint)
            .bind(&p.email)
            .bind(p.version)
            .bind(old)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?
            .rows_affected()
                == 1,
            (Some(old), None) => {
                sqlx::query("DELETE FROM account_passwords WHERE user_id = $1 AND version = $2")
                    .bind(user.get())
                    .bind(old)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_error)?
                    .rows_affected()
                    == 1
            }
        };
        // Exchanges made for the old password stay until used or expired: using one answers
        // SRP_PASSWORD_CHANGED (their version is the old one), as Telegram does.
        tx.commit().await.map_err(db_error)?;
        Ok(changed)
    }

    async fn save_exchange(
        &self,
        exchange: &SrpExchangeRecord,
        expires_at: i64,
        keep: usize,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        sqlx::query("DELETE FROM srp_exchanges WHERE user_id = $1 AND expires_at < now()")
            .bind(exchange.user_id.get())
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(
            "INSERT INTO srp_exchanges (srp_id, user_id, secret_b, version, expires_at) \
             VALUES ($1, $2, $3, $4, to_timestamp($5))",
        )
        .bind(exchange.srp_id)
        .bind(exchange.user_id.get())
        .bind(&exchange.secret_b)
        .bind(exchange.version)
        .bind(expires_at as f64)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        sqlx::query(
            "DELETE FROM srp_exchanges WHERE user_id = $1 AND srp_id NOT IN \
             (SELECT srp_id FROM srp_exchanges WHERE user_id = $1 \
              ORDER BY seq DESC LIMIT $2)",
        )
        .bind(exchange.user_id.get())
        .bind(i64::try_from(keep).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)
    }

    async fn take_exchange(
        &self,
        user: UserId,
        srp_id: i64,
        now: i64,
    ) -> Result<Option<SrpExchangeRecord>, StoreError> {
        let row: Option<(Vec<u8>, i64, bool)> = sqlx::query_as(
            "DELETE FROM srp_exchanges WHERE srp_id = $1 AND user_id = $2 \
             RETURNING secret_b, version, expires_at > to_timestamp($3)",
        )
        .bind(srp_id)
        .bind(user.get())
        .bind(now as f64)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(row
            .filter(|(_, _, live)| *live)
            .map(|(secret_b, version, _)| SrpExchangeRecord {
                srp_id,
                user_id: user,
                secret_b,
                version,
            }))
    }

    async fn record_failure(&self, user: UserId, now: i64) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        // Rows older than any window the limit looks at are of no use.
        sqlx::query(
            "DELETE FROM password_failures WHERE user_id = $1 \
             AND failed_at < to_timestamp($2) - interval '1 day'",
        )
        .bind(user.get())
        .bind(now as f64)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        sqlx::query(
            "INSERT INTO password_failures (user_id, failed_at) VALUES ($1, to_timestamp($2))",
        )
        .bind(user.get())
        .bind(now as f64)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)
    }

    async fn failures_since(
        &self,
        user: UserId,
        since: i64,
    ) -> Result<(u32, Option<i64>), StoreError> {
        let (count, oldest): (i64, Option<i64>) = sqlx::query_as(
            "SELECT count(*), min(extract(epoch FROM failed_at))::int8 FROM password_failures \
             WHERE user_id = $1 AND failed_at >= to_timestamp($2)",
        )
        .bind(user.get())
        .bind(since as f64)
        .fetch_one(&self.pool)
        .await
        .map_err(db_error)?;
        Ok((u32::try_from(count).unwrap_or(u32::MAX), oldest))
    }

    async fn set_pending_sign_in(
        &self,
        auth_key_id: i64,
        user: UserId,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO password_pending_sign_ins (auth_key_id, user_id, expires_at) \
             VALUES ($1, $2, to_timestamp($3)) ON CONFLICT (auth_key_id) \
             DO UPDATE SET user_id = EXCLUDED.user_id, expires_at = EXCLUDED.expires_at",
        )
        .bind(auth_key_id)
        .bind(user.get())
        .bind(expires_at as f64)
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn pending_sign_in(
        &self,
        auth_key_id: i64,
        now: i64,
    ) -> Result<Option<UserId>, StoreError> {
        let raw: Option<i64> = sqlx::query_scalar(
            "SELECT user_id FROM password_pending_sign_ins \
             WHERE auth_key_id = $1 AND expires_at > to_timestamp($2)",
        )
        .bind(auth_key_id)
        .bind(now as f64)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        raw.map(user_id).transpose()
    }

    async fn clear_pending_sign_in(&self, auth_key_id: i64) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM password_pending_sign_ins WHERE auth_key_id = $1")
            .bind(auth_key_id)
            .execute(&self.pool)
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn set_token_sign_in(
        &self,
        token: &[u8; 32],
        user: UserId,
        expires_at: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        sqlx::query("DELETE FROM password_token_sign_ins WHERE expires_at < now()")
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        sqlx::query(
            "INSERT INTO password_token_sign_ins (token_sha256, user_id, expires_at) \
             VALUES ($1, $2, to_timestamp($3))",
        )
        .bind(Sha256::digest(token).to_vec())
        .bind(user.get())
        .bind(expires_at as f64)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)
    }

    async fn token_sign_in(
        &self,
        token: &[u8; 32],
        now: i64,
    ) -> Result<Option<UserId>, StoreError> {
        let raw: Option<i64> = sqlx::query_scalar(
            "SELECT user_id FROM password_token_sign_ins \
             WHERE token_sha256 = $1 AND expires_at > to_timestamp($2)",
        )
        .bind(Sha256::digest(token).to_vec())
        .bind(now as f64)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        raw.map(user_id).transpose()
    }

    async fn clear_token_sign_in(&self, token: &[u8; 32]) -> Result<bool, StoreError> {
        Ok(
            sqlx::query("DELETE FROM password_token_sign_ins WHERE token_sha256 = $1")
                .bind(Sha256::digest(token).to_vec())
                .execute(&self.pool)
                .await
                .map_err(db_error)?
                .rows_affected()
                == 1,
        )
    }
}
