//! [`CodeStore`] over the `login_codes` table (migrations/0011_login_codes.sql). Every decision is
//! one statement or one transaction under advisory locks on the phone and the requester, and
//! uses the database's clock, so every instance counts the same tries and sends.

use application::login_codes::{CodeCheck, CodeLimits, CodeStore, Issued};
use application::ports::StoreError;
use async_trait::async_trait;
use sqlx::{PgPool, Postgres, Transaction};

use crate::error::db_error;

/// Stale rows deleted per send: more than one send makes, so the table cannot grow without bound,
/// few enough that a send never waits on a big delete.
pub const CLEANUP_BATCH: i64 = 16;

pub struct PgCodeStore {
    pool: PgPool,
}

impl PgCodeStore {
    pub fn new(pool: PgPool) -> Self {
        Self { pool }
    }
}

/// Serializes sends of one phone and of one requester (in a fixed order, so two transactions
/// never wait on each other crosswise), so concurrent sends cannot all pass a limit together.
async fn lock(
    tx: &mut Transaction<'_, Postgres>,
    phone: &str,
    requester: &str,
) -> Result<(), StoreError> {
    let mut names = [format!("phone:{phone}"), format!("requester:{requester}")];
    names.sort();
    for name in names {
        sqlx::query(
            "SELECT pg_advisory_xact_lock(hashtextextended('ptslog.login_codes:' || $1, 0))",
        )
        .bind(name)
        .execute(&mut **tx)
        .await
        .map_err(db_error)?;
    }
    Ok(())
}

/// Seconds to wait before the phone or the requester may get another code, if any: a lockout
/// after a dead hash, or a full send window.
async fn flood_wait(
    tx: &mut Transaction<'_, Postgres>,
    phone: &str,
    requester: &str,
    limits: &CodeLimits,
) -> Result<Option<u32>, StoreError> {
    let lockout: Option<f64> = sqlx::query_scalar(
        "SELECT EXTRACT(EPOCH FROM max(dead_at) + make_interval(secs => $3) - now())::float8 \
         FROM login_codes WHERE (phone = $1 OR requester = $2) AND state = 'dead' \
           AND dead_at > now() - make_interval(secs => $3)",
    )
    .bind(phone)
    .bind(requester)
    .bind(limits.lockout.as_secs_f64())
    .fetch_one(&mut **tx)
    .await
    .map_err(db_error)?;
    if let Some(secs) = lockout {
        return Ok(Some(secs.ceil().max(1.0) as u32));
    }
    // Per phone, then per requester: the sends in the window, and when its oldest leaves it.
    for (column, value, limit) in [
        ("phone", phone, limits.sends_per_phone),
        ("requester", requester, limits.sends_per_requester),
    ] {
        let (sent, oldest): (i64, Option<f64>) = sqlx::query_as(&format!(
            "SELECT COALESCE(sum(sends), 0)::int8, \
                    EXTRACT(EPOCH FROM min(last_sent_at) + make_interval(secs => $2) - now())::float8 \
             FROM login_codes WHERE {column} = $1 AND last_sent_at > now() - make_interval(secs => $2)"
        ))
        .bind(value)
        .bind(limits.window.as_secs_f64())
        .fetch_one(&mut **tx)
        .await
        .map_err(db_error)?;
        if sent >= i64::from(limit) {
            return Ok(Some(oldest.unwrap_or(1.0).ceil().max(1.0) as u32));
        }
    }
    Ok(None)
}

#[async_trait]
impl CodeStore for PgCodeStore {
    async fn issue(
        &self,
        phone: &str,
        requester: &str,
        hash: &str,
        code: &str,
        limits: &CodeLimits,
    ) -> Result<Issued, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        lock(&mut tx, phone, requester).await?;
        if let Some(secs) = flood_wait(&mut tx, phone, requester, limits).await? {
            return Ok(Issued::FloodWait(secs));
        }
        // Rows no limit looks at any more, a bounded batch per send: the table stays about as
        // large as one window's sends.
        sqlx::query(
            "DELETE FROM login_codes WHERE phone_code_hash IN ( \
               SELECT phone_code_hash FROM login_codes \
               WHERE last_sent_at < now() - make_interval(secs => $1) \
                 AND (dead_at IS NULL OR dead_at < now() - make_interval(secs => $2)) \
               LIMIT $3)",
        )
        .bind(limits.window.as_secs_f64())
        .bind(limits.lockout.as_secs_f64())
        .bind(CLEANUP_BATCH)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        // A new code replaces the phone's older live ones (Telegram accepts only the latest).
        sqlx::query(
            "UPDATE login_codes SET state = 'closed' WHERE phone = $1 AND state IN ('sent', 'verified')",
        )
        .bind(phone)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        sqlx::query(
            "INSERT INTO login_codes (phone_code_hash, phone, requester, code, expires_at) \
             VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))",
        )
        .bind(hash)
        .bind(phone)
        .bind(requester)
        .bind(code)
        .bind(limits.lifetime.as_secs_f64())
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(Issued::Code(code.to_string()))
    }

    async fn resend(
        &self,
        phone: &str,
        requester: &str,
        hash: &str,
        limits: &CodeLimits,
    ) -> Result<Issued, StoreError> {
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        lock(&mut tx, phone, requester).await?;
        let live: Option<String> = sqlx::query_scalar(
            "SELECT code FROM login_codes WHERE phone_code_hash = $1 AND phone = $2 \
               AND state = 'sent' AND expires_at > now() FOR UPDATE",
        )
        .bind(hash)
        .bind(phone)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_error)?;
        let Some(code) = live else {
            return Ok(Issued::Expired);
        };
        if let Some(secs) = flood_wait(&mut tx, phone, requester, limits).await? {
            return Ok(Issued::FloodWait(secs));
        }
        sqlx::query(
            "UPDATE login_codes SET sends = sends + 1, last_sent_at = now() WHERE phone_code_hash = $1",
        )
        .bind(hash)
        .execute(&mut *tx)
        .await
        .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        Ok(Issued::Code(code))
    }

    async fn try_code(
        &self,
        phone: &str,
        hash: &str,
        code: &str,
        max_attempts: u32,
    ) -> Result<CodeCheck, StoreError> {
        // One statement: the row lock makes concurrent tries (a container of thousands) count one
        // after another, and none runs once the hash is dead.
        let state: Option<String> = sqlx::query_scalar(
            "UPDATE login_codes SET \
               attempts = attempts + 1, \
               state = CASE WHEN code = $3 THEN 'verified' \
                            WHEN attempts + 1 >= $4 THEN 'dead' ELSE state END, \
               dead_at = CASE WHEN code <> $3 AND attempts + 1 >= $4 THEN now() ELSE dead_at END \
             WHERE phone_code_hash = $1 AND phone = $2 AND state = 'sent' AND expires_at > now() \
             RETURNING state",
        )
        .bind(hash)
        .bind(phone)
        .bind(code)
        .bind(max_attempts as i32)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(match state.as_deref() {
            Some("verified") => CodeCheck::Accepted,
            Some(_) => CodeCheck::Wrong,
            None => CodeCheck::Expired,
        })
    }

    async fn verified(&self, phone: &str, hash: &str) -> Result<bool, StoreError> {
        let found: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM login_codes WHERE phone_code_hash = $1 AND phone = $2 \
               AND state = 'verified' AND expires_at > now()",
        )
        .bind(hash)
        .bind(phone)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(found.is_some())
    }

    async fn close(&self, phone: &str, hash: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE login_codes SET state = 'closed' WHERE phone_code_hash = $1 AND phone = $2 \
               AND state IN ('sent', 'verified') AND expires_at > now()",
        )
        .bind(hash)
        .bind(phone)
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(done.rows_affected() == 1)
    }
}
