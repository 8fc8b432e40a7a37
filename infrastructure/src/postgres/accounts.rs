//! [`Accounts`] over Postgres: accounts by phone, one authorization (device) per login.

use application::caller::Caller;
use application::devices::{Authorization, DeviceInfo, DeviceText, Ending, TOKEN_LIFETIME};
use application::ports::{Accounts, StoreError, UserRecord};
use async_trait::async_trait;
use domain::{AuthKeyId, SessionId, UserId};
use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::PgPool;

use std::sync::Arc;

use crate::error::db_error;
use crate::postgres::replica::Freshness;
use crate::postgres::revocations::{self, Acks};
use crate::postgres::rows::{self, user, USER_COLUMNS};

/// The Postgres notification channel of ended devices: the payload is `<user_id>:<device id>`,
/// sent in the transaction that ends them (so only once it committed); every instance's gateway
/// listens and closes the device's live connections (docs/security.md, "Sessions and devices").
pub const AUTHORIZATION_ENDED_CHANNEL: &str = "ptslog_authorization_ended";

/// The Postgres notification channel of new devices: the payload is `<user_id>:<device id>`,
/// sent in the sign-in's transaction; every instance's gateway pushes `updateNewAuthorization`
/// to the account's other devices.
pub const AUTHORIZATION_NEW_CHANNEL: &str = "ptslog_authorization_new";

/// The Postgres notification channel of revoked tokens (migration 0019's trigger on
/// `authorizations`: a device deleted, or its token, owner or end changed), payload
/// `<user_id>:<device id>`; every instance's token cache listens (`revocations::listen`).
pub const AUTHORIZATION_REVOKED_CHANNEL: &str = "ptslog_authorization_revoked";

/// Tokens are 32 random bytes, handed out as 64 hex characters.
const TOKEN_BYTES: usize = 32;

#[derive(Clone)]
pub struct PgAccounts {
    pool: PgPool,
    /// When set, an ending waits for every instance's token cache to drop the devices.
    acks: Option<Arc<Acks>>,
    /// With a read replica: a sign-in marks its account, so that its first reads (a new
    /// account's state) wait for the replica to have it (replica.rs).
    freshness: Option<Arc<Freshness>>,
}

impl PgAccounts {
    pub fn new(pool: PgPool) -> Self {
        Self {
            pool,
            acks: None,
            freshness: None,
        }
    }

    /// Sign-ins mark their account in `freshness` (the store's replica's).
    pub fn with_freshness(mut self, freshness: Arc<Freshness>) -> Self {
        self.freshness = Some(freshness);
        self
    }

    /// Endings answer only once every revocation listener acknowledged them (revocations.rs).
    pub fn with_acks(mut self, acks: Arc<Acks>) -> Self {
        self.acks = Some(acks);
        self
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
        let mut inserted = None;
        for _ in 0..4 {
            let id = random_auth_key_id();
            let done = sqlx::query(
                "INSERT INTO authorizations (auth_key_id, user_id, token_hash, expires_at) \
                 VALUES ($1, $2, $3, now() + make_interval(secs => $4)) \
                 ON CONFLICT (auth_key_id) DO NOTHING",
            )
            .bind(id)
            .bind(account.id.get())
            .bind(token_hash(&token))
            .bind(TOKEN_LIFETIME.as_secs() as f64)
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
            if done.rows_affected() == 1 {
                inserted = Some(id);
                break;
            }
        }
        let Some(device) = inserted else {
            return Err(StoreError::Bug("could not allocate an auth_key_id".into()));
        };
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(AUTHORIZATION_NEW_CHANNEL)
            .bind(format!("{}:{device}", account.id.get()))
            .execute(&mut *tx)
            .await
            .map_err(db_error)?;
        tx.commit().await.map_err(db_error)?;
        if let Some(freshness) = &self.freshness {
            freshness.note_commit(&self.pool, &[account.id]).await;
        }
        Ok((account, token))
    }

    async fn authenticate(&self, token: &str) -> Result<Option<Caller>, StoreError> {
        Ok(self.authenticate_until(token).await?.map(|(c, _)| c))
    }

    async fn authenticate_until(
        &self,
        token: &str,
    ) -> Result<Option<(Caller, std::time::Duration)>, StoreError> {
        let row: Option<(i64, i64, f64)> = sqlx::query_as(
            "SELECT auth_key_id, user_id, extract(epoch FROM expires_at - now())::float8 FROM authorizations \
                 WHERE token_hash = $1 AND expires_at > now()",
        )
        .bind(token_hash(token))
        .fetch_optional(&self.pool)
        .await
        .map_err(db_error)?;
        row.map(|(auth_key_id, user_id, ends_in)| {
            Ok((
                Caller {
                    user_id: rows::user_id(user_id, "authorizations.user_id")?,
                    auth_key_id: AuthKeyId(auth_key_id),
                    // One session per device until MTProto sessions exist.
                    session_id: SessionId(auth_key_id),
                },
                std::time::Duration::try_from_secs_f64(ends_in).unwrap_or_default(),
            ))
        })
        .transpose()
    }

    async fn authorizations(&self, user: UserId) -> Result<Vec<Authorization>, StoreError> {
        type Row = (
            i64,
            String,
            String,
            String,
            String,
            String,
            i32,
            String,
            i64,
            i64,
            i64,
        );
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT auth_key_id, device_model, platform, system_version, app_version, lang_code, \
                    api_id, ip, floor(extract(epoch FROM created_at))::bigint, \
                    floor(extract(epoch FROM active_at))::bigint, \
                    floor(extract(epoch FROM expires_at))::bigint \
             FROM authorizations WHERE user_id = $1 AND expires_at > now() \
             ORDER BY created_at, auth_key_id",
        )
        .bind(user.get())
        .fetch_all(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(rows
            .into_iter()
            .map(|r| Authorization {
                id: AuthKeyId(r.0),
                device: DeviceInfo {
                    device_model: DeviceText::new(&r.1),
                    platform: DeviceText::new(&r.2),
                    system_version: DeviceText::new(&r.3),
                    app_version: DeviceText::new(&r.4),
                    lang_code: DeviceText::new(&r.5),
                    api_id: r.6,
                    ip: DeviceText::new(&r.7),
                },
                created_at: r.8,
                active_at: r.9,
                expires_at: r.10,
            })
            .collect())
    }

    async fn record_device(
        &self,
        authorization: AuthKeyId,
        device: &DeviceInfo,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE authorizations SET device_model = $2, platform = $3, system_version = $4, \
                    app_version = $5, lang_code = $6, api_id = $7, ip = $8, active_at = now() \
             WHERE auth_key_id = $1",
        )
        .bind(authorization.0)
        .bind(device.device_model.as_str())
        .bind(device.platform.as_str())
        .bind(device.system_version.as_str())
        .bind(device.app_version.as_str())
        .bind(device.lang_code.as_str())
        .bind(device.api_id)
        .bind(device.ip.as_str())
        .execute(&self.pool)
        .await
        .map_err(db_error)?;
        Ok(())
    }

    async fn end_authorizations(
        &self,
        user: UserId,
        ending: Ending,
    ) -> Result<Vec<AuthKeyId>, StoreError> {
        let (id, all_but) = match ending {
            Ending::One(id) => (id, false),
            Ending::AllBut(id) => (id, true),
        };
        let mut tx = self.pool.begin().await.map_err(db_error)?;
        // Deleting the row refuses its token at once; the MTProto keys pointing at it are signed
        // out by the foreign key (ON DELETE SET NULL, migration 0005).
        let ended: Vec<i64> = sqlx::query_scalar(
            "DELETE FROM authorizations WHERE user_id = $1 \
               AND (CASE WHEN $3 THEN auth_key_id <> $2 ELSE auth_key_id = $2 END) \
             RETURNING auth_key_id",
        )
        .bind(user.get())
        .bind(id.0)
        .bind(all_but)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_error)?;
        // The token caches that must drop these devices before this answers.
        let listeners = match (&self.acks, ended.is_empty()) {
            (Some(_), false) => revocations::listeners(&mut tx).await.map_err(db_error)?,
            _ => Vec::new(),
        };
        for device in &ended {
            // Delivered to every listening instance when (and only if) this commits.
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(AUTHORIZATION_ENDED_CHANNEL)
                .bind(format!("{}:{device}", user.get()))
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)?;
        let ended: Vec<AuthKeyId> = ended.into_iter().map(AuthKeyId).collect();
        if let Some(acks) = &self.acks {
            let missing = acks.wait(&ended, &listeners).await;
            if missing > 0 {
                tracing::warn!(
                    missing,
                    listeners = listeners.len(),
                    "ended devices: some token caches did not acknowledge in time"
                );
            }
        }
        Ok(ended)
    }
}
