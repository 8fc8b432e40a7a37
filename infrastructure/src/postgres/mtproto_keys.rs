//! MTProto auth keys in Postgres (migration 0005), so a client's key survives restarts and works
//! on every instance. Keys are stored sealed (`AuthKeyCipher`): what the table holds is not the
//! key, and a database dump alone decrypts no client's traffic.

use sqlx::PgPool;

use super::auth_key_cipher::{AuthKeyCipher, CipherError, Opened};

/// A stored key and, when signed in, the device (authorization) and account it acts for. Debug
/// leaves the key out, so it never reaches a log line.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredAuthKey {
    pub auth_key: Vec<u8>,
    pub server_salt: i64,
    /// `(user_id, authorization id)`; for a bound temporary key, its permanent key's.
    pub signed_in: Option<(i64, i64)>,
    /// When a temporary key stops working (unix seconds); `None` for a permanent key.
    pub expires_at: Option<i64>,
    /// When the key was made (unix seconds): its handshake salt is valid for a while after.
    pub created_at: i64,
}

impl std::fmt::Debug for StoredAuthKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredAuthKey")
            .field("auth_key", &"<secret>")
            .field("server_salt", &self.server_salt)
            .field("signed_in", &self.signed_in)
            .field("expires_at", &self.expires_at)
            .field("created_at", &self.created_at)
            .finish()
    }
}

impl StoredAuthKey {
    pub fn temporary(&self) -> bool {
        self.expires_at.is_some()
    }
}

#[derive(Clone)]
pub struct PgMtprotoKeys {
    pool: PgPool,
    cipher: AuthKeyCipher,
}

type Result<T> = std::result::Result<T, sqlx::Error>;

/// A key that does not open is a configuration fault (the wrong key-encryption key), reported as a
/// decode error of the row, never with any of its bytes.
fn cipher_error(e: CipherError) -> sqlx::Error {
    sqlx::Error::Decode(Box::new(e))
}

/// Rows sealed per statement by [`PgMtprotoKeys::seal_plaintext`].
const SEAL_BATCH: i64 = 500;

impl PgMtprotoKeys {
    pub fn new(pool: PgPool, cipher: AuthKeyCipher) -> Self {
        Self { pool, cipher }
    }

    /// Seals every key still stored in plaintext (stored before encryption at rest); answers how
    /// many. Run at start, so a deployment's old keys do not wait for their client to come back.
    pub async fn seal_plaintext(&self) -> Result<u64> {
        let mut sealed = 0;
        loop {
            let rows: Vec<(i64, Vec<u8>)> = sqlx::query_as(
                "SELECT auth_key_id, auth_key FROM mtproto_auth_keys \
                 WHERE length(auth_key) = 256 LIMIT $1",
            )
            .bind(SEAL_BATCH)
            .fetch_all(&self.pool)
            .await?;
            if rows.is_empty() {
                return Ok(sealed);
            }
            for (id, key) in rows {
                sealed += self.reseal(id, &key).await?;
            }
        }
    }

    /// Replaces the plaintext `key` of row `id` by its sealed form (unless another instance did).
    async fn reseal(&self, id: i64, key: &[u8]) -> Result<u64> {
        let sealed = self.cipher.seal(id, key).map_err(cipher_error)?;
        let done = sqlx::query(
            "UPDATE mtproto_auth_keys SET auth_key = $2 WHERE auth_key_id = $1 AND auth_key = $3",
        )
        .bind(id)
        .bind(sealed)
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Stores a new key (`expires_in` seconds for a temporary one). A key id already present is
    /// left as it is (ids are hashes of 2048-bit keys: a clash is a replayed exchange).
    pub async fn create(
        &self,
        auth_key_id: i64,
        auth_key: &[u8],
        server_salt: i64,
        expires_in: Option<i32>,
    ) -> Result<bool> {
        let sealed = self
            .cipher
            .seal(auth_key_id, auth_key)
            .map_err(cipher_error)?;
        let done = sqlx::query(
            "INSERT INTO mtproto_auth_keys (auth_key_id, auth_key, server_salt, expires_at) \
             VALUES ($1, $2, $3, CASE WHEN $4::int IS NULL THEN NULL \
                                      ELSE now() + make_interval(secs => $4::int) END) \
             ON CONFLICT (auth_key_id) DO NOTHING",
        )
        .bind(auth_key_id)
        .bind(sealed)
        .bind(server_salt)
        .bind(expires_in)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// The key with this id, unless it expired.
    pub async fn load(&self, auth_key_id: i64) -> Result<Option<StoredAuthKey>> {
        type Row = (Vec<u8>, i64, Option<i64>, Option<i64>, Option<i64>, i64);
        let row: Option<Row> = sqlx::query_as(
            "SELECT k.auth_key, k.server_salt, a.user_id, a.auth_key_id, \
                    floor(extract(epoch FROM k.expires_at))::bigint, \
                    floor(extract(epoch FROM k.created_at))::bigint \
             FROM mtproto_auth_keys k \
             LEFT JOIN mtproto_auth_keys p ON p.auth_key_id = k.perm_auth_key_id \
             LEFT JOIN authorizations a \
                    ON a.auth_key_id = COALESCE(p.authorization_id, k.authorization_id) \
                   AND a.expires_at > now() \
             WHERE k.auth_key_id = $1 AND (k.expires_at IS NULL OR k.expires_at > now())",
        )
        .bind(auth_key_id)
        .fetch_optional(&self.pool)
        .await?;
        let Some((stored, server_salt, user, authz, expires_at, created_at)) = row else {
            return Ok(None);
        };
        let auth_key = match self
            .cipher
            .open(auth_key_id, &stored)
            .map_err(cipher_error)?
        {
            Opened::Sealed(key) => key,
            Opened::Plaintext(key) => {
                self.reseal(auth_key_id, &key).await?;
                key
            }
        };
        Ok(Some(StoredAuthKey {
            auth_key,
            server_salt,
            signed_in: user.zip(authz),
            expires_at,
            created_at,
        }))
    }

    /// Deletes the temporary keys that expired (they are refused from then on anyway): the
    /// front runs it periodically, so keys clients made and forgot do not pile up. Answers how
    /// many went.
    pub async fn delete_expired(&self) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM mtproto_auth_keys WHERE expires_at IS NOT NULL AND expires_at <= now()",
        )
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Signs the key in as this device (`None`: signs it out).
    pub async fn set_authorization(
        &self,
        auth_key_id: i64,
        authorization: Option<i64>,
    ) -> Result<()> {
        // A bound temporary key signs in its permanent key, which is what outlives it.
        sqlx::query(
            "UPDATE mtproto_auth_keys SET authorization_id = $2 WHERE auth_key_id = \
             COALESCE((SELECT perm_auth_key_id FROM mtproto_auth_keys WHERE auth_key_id = $1), $1)",
        )
        .bind(auth_key_id)
        .bind(authorization)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// auth.bindTempAuthKey: the temporary key acts for the permanent one until `expires_at`
    /// (unix seconds). Answers false when either key is unknown.
    pub async fn bind_temp(&self, temp_id: i64, perm_id: i64, expires_at: i32) -> Result<bool> {
        let done = sqlx::query(
            "UPDATE mtproto_auth_keys SET perm_auth_key_id = $2, \
                    expires_at = LEAST(expires_at, to_timestamp($3)) \
             WHERE auth_key_id = $1 AND expires_at IS NOT NULL \
               AND EXISTS (SELECT 1 FROM mtproto_auth_keys WHERE auth_key_id = $2 \
                                                             AND expires_at IS NULL)",
        )
        .bind(temp_id)
        .bind(perm_id)
        .bind(f64::from(expires_at))
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }
}
