//! The port two-step verification keeps its state behind (Postgres in production): the account's
//! SRP verifier, the open SRP exchanges, wrong-password counts and sign-ins waiting for a
//! password. Times are unix seconds.

use async_trait::async_trait;
use domain::UserId;

use crate::ports::StoreError;

/// An account's password as stored: the client's verifier and the salts it was derived with.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredPassword {
    pub salt1: Vec<u8>,
    pub salt2: Vec<u8>,
    /// v = g^x mod p, 256 bytes.
    pub verifier: Vec<u8>,
    pub hint: String,
    /// Kept unverified (no mail is sent; docs/security.md).
    pub email: Option<String>,
    /// Random, new with every change: an exchange made for another version is stale.
    pub version: i64,
}

impl std::fmt::Debug for StoredPassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredPassword")
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

/// One SRP exchange handed out by account.getPassword.
#[derive(Clone)]
pub struct SrpExchangeRecord {
    pub srp_id: i64,
    pub user_id: UserId,
    /// The server's secret b (256 bytes).
    pub secret_b: Vec<u8>,
    /// The password version B was computed for.
    pub version: i64,
}

#[async_trait]
pub trait Passwords: Send + Sync {
    async fn password(&self, user: UserId) -> Result<Option<StoredPassword>, StoreError>;
    /// Replaces the account's password (`None` removes it) if its version is still `expected`
    /// (`None`: it had none); `false` when another change came first.
    async fn replace_password(
        &self,
        user: UserId,
        expected: Option<i64>,
        new: Option<&StoredPassword>,
    ) -> Result<bool, StoreError>;
    /// Saves an exchange, keeping only the account's `keep` newest (older ones are dropped, as
    /// are expired ones).
    async fn save_exchange(
        &self,
        exchange: &SrpExchangeRecord,
        expires_at: i64,
        keep: usize,
    ) -> Result<(), StoreError>;
    /// Removes and answers the account's exchange `srp_id` if it has not expired (each is used
    /// once, right or wrong).
    async fn take_exchange(
        &self,
        user: UserId,
        srp_id: i64,
        now: i64,
    ) -> Result<Option<SrpExchangeRecord>, StoreError>;
    /// Counts a wrong password at `now`.
    async fn record_failure(&self, user: UserId, now: i64) -> Result<(), StoreError>;
    /// The account's wrong passwords at or after `since`: how many, and the oldest's time.
    async fn failures_since(
        &self,
        user: UserId,
        since: i64,
    ) -> Result<(u32, Option<i64>), StoreError>;
    async fn set_pending_sign_in(
        &self,
        auth_key_id: i64,
        user: UserId,
        expires_at: i64,
    ) -> Result<(), StoreError>;
    /// The account auth key `auth_key_id` gave the right code for, if that has not expired.
    async fn pending_sign_in(
        &self,
        auth_key_id: i64,
        now: i64,
    ) -> Result<Option<UserId>, StoreError>;
    async fn clear_pending_sign_in(&self, auth_key_id: i64) -> Result<(), StoreError>;
    /// The JSON API's pending sign-ins, keyed by a random `password_token` (stored hashed, so
    /// the table does not hold working tokens; dropping expired ones on each write).
    async fn set_token_sign_in(
        &self,
        token: &[u8; 32],
        user: UserId,
        expires_at: i64,
    ) -> Result<(), StoreError>;
    /// The account `token` was handed out for, if that has not expired.
    async fn token_sign_in(&self, token: &[u8; 32], now: i64)
        -> Result<Option<UserId>, StoreError>;
    /// Ends the token's sign-in; `false` if it was already gone (used by a concurrent check).
    async fn clear_token_sign_in(&self, token: &[u8; 32]) -> Result<bool, StoreError>;
}
