//! Adapters of the application's ports: Postgres for the store, the write transactions and the
//! accounts, Redis for the shared send-rate limit; the relay that streams the committed log out of
//! Postgres, and Kafka.

pub mod blobs;
pub mod error;
pub mod histogram;
pub mod kafka;
pub mod login_webhook;
pub mod photos;
pub mod postgres;
pub mod redis_rate_limiter;
pub mod relay;
pub mod tls;

pub use login_webhook::WebhookCodes;
pub use postgres::accounts::{
    PgAccounts, AUTHORIZATION_ENDED_CHANNEL, AUTHORIZATION_NEW_CHANNEL,
    AUTHORIZATION_REVOKED_CHANNEL,
};
pub use postgres::auth_key_cipher::AuthKeyCipher;
pub use postgres::login_codes::PgCodeStore;
pub use postgres::mtproto_keys::{PgMtprotoKeys, StoredAuthKey};
pub use postgres::secrets::access_hash_key;
pub use postgres::store::PgStore;
pub use postgres::write_tx::PgWriteTx;
pub use postgres::{connect, migrate};
pub use redis_rate_limiter::RedisRateLimiter;
