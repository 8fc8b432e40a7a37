//! [`RateLimiter`] over Redis, so every instance shares one count per user.
//!
//! Sends: a fixed 60-second window; the key `{prefix}ratelimit:messages:send:{user}:{window_start}`
//! is incremented by the number of sends and expires after the window. A limit of 0 turns limiting
//! off.
//!
//! Phone look-ups (`contacts.resolvePhone`, `contacts.importContacts`): a fixed one-day window; the
//! set `{prefix}ratelimit:contacts:phones:{user}:{window_start}` holds the distinct numbers the user
//! looked up in it (at most the limit), so looking up a number again is free and enumerating new
//! ones is capped. A limit of 0 turns it off.
//!
//! If Redis is unreachable, slow or failing, calls are ALLOWED (fail open) and a warning is logged:
//! losing the limit for a while is better than losing messaging. Every call is bounded by
//! [`CALL_TIMEOUT`], and after a failed connection attempt no new one is made for
//! [`RECONNECT_BACKOFF`], so a down Redis neither hangs nor slows calls.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use application::ports::RateLimiter;
use async_trait::async_trait;
use domain::UserId;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;
use tokio::sync::Mutex;

const WINDOW_SECS: u64 = 60;
/// The window of the phone look-up limit: Telegram's own contact-import limits are per day.
pub const PHONE_LOOKUP_WINDOW_SECS: u64 = 24 * 60 * 60;
/// Distinct phone numbers one account may look up per [`PHONE_LOOKUP_WINDOW_SECS`] unless
/// configured otherwise (`PTSLOG_PHONE_LOOKUPS_PER_DAY`): one full `contacts.importContacts` batch
/// (`MAX_IMPORT_CONTACTS`, 1000) fits, so a real phone book imports in one day, while enumerating
/// the number space is bounded to 1000 numbers per account per day.
pub const DEFAULT_PHONE_LOOKUPS_PER_DAY: u32 = 1000;
/// The most one check may take, connecting included.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(200);
/// How long to wait after a failed connection attempt before trying again.
pub const RECONNECT_BACKOFF: Duration = Duration::from_secs(1);

/// INCRBY and EXPIRE in one atomic step; the TTL is set by the call that creates the key and
/// outlives the window a little, so a slightly skewed clock on another instance still finds it.
const COUNT_SCRIPT: &str = r"
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n == tonumber(ARGV[1]) then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return n
";

/// Per phone (ARGV[3..]), 1 if it may be looked up: already in the set, or added while the set is
/// below the limit (ARGV[1]); the set's TTL (ARGV[2]) is set when it is created.
const PHONES_SCRIPT: &str = r"
local limit = tonumber(ARGV[1])
local card = redis.call('SCARD', KEYS[1])
local created = card == 0
local allowed = {}
for i = 3, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    allowed[#allowed + 1] = 1
  elseif card < limit then
    redis.call('SADD', KEYS[1], ARGV[i])
    card = card + 1
    allowed[#allowed + 1] = 1
  else
    allowed[#allowed + 1] = 0
  end
end
if created and card > 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return allowed
";

struct Connection {
    manager: Option<ConnectionManager>,
    last_attempt: Option<Instant>,
}

pub struct RedisRateLimiter {
    client: redis::Client,
    prefix: String,
    limit_per_minute: u32,
    phone_lookups_per_day: u32,
    script: Script,
    phones_script: Script,
    connection: Mutex<Connection>,
}

impl RedisRateLimiter {
    /// Parses the URL; the connection is made on first use (so a server starts while Redis is down).
    pub fn new(
        url: &str,
        prefix: impl Into<String>,
        limit_per_minute: u32,
    ) -> Result<Self, redis::RedisError> {
        // `rediss://` builds its rustls config from the process default provider.
        crate::tls::install_crypto_provider();
        Ok(Self {
            client: redis::Client::open(url)?,
            prefix: prefix.into(),
            limit_per_minute,
            phone_lookups_per_day: DEFAULT_PHONE_LOOKUPS_PER_DAY,
            script: Script::new(COUNT_SCRIPT),
            phones_script: Script::new(PHONES_SCRIPT),
            connection: Mutex::new(Connection {
                manager: None,
                last_attempt: None,
            }),
        })
    }

    /// Verifies a `rediss://` server against this CA (PEM) instead of the system's roots
    /// (`PTSLOG_REDIS_CA_FILE`: a private CA).
    pub fn with_root_ca(mut self, url: &str, ca_pem: Vec<u8>) -> Result<Self, redis::RedisError> {
        self.client = redis::Client::build_with_tls(
            url,
            redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(ca_pem),
            },
        )?;
        Ok(self)
    }

    /// Sets the phone look-up limit (distinct numbers per day; 0 turns it off).
    pub fn with_phone_lookups_per_day(mut self, limit: u32) -> Self {
        self.phone_lookups_per_day = limit;
        self
    }

    /// [`RateLimiter::check_phone_lookups`] as of `now` (unix seconds).
    pub async fn check_phone_lookups_at(
        &self,
        user: UserId,
        phones: &[String],
        now: u64,
    ) -> Result<Vec<bool>, u32> {
        let all = vec![true; phones.len()];
        if self.phone_lookups_per_day == 0 || phones.is_empty() {
            return Ok(all);
        }
        let window_start = now - now % PHONE_LOOKUP_WINDOW_SECS;
        let key = format!(
            "{}ratelimit:contacts:phones:{}:{}",
            self.prefix, user, window_start
        );
        let call = async {
            let Some(mut conn) = self.connection().await else {
                return Ok(None);
            };
            let mut invocation = self.phones_script.key(&key);
            invocation
                .arg(self.phone_lookups_per_day)
                .arg(PHONE_LOOKUP_WINDOW_SECS + 60);
            for phone in phones {
                invocation.arg(phone);
            }
            let flags: Result<Vec<i64>, redis::RedisError> =
                invocation.invoke_async(&mut conn).await;
            flags.map(Some)
        };
        let allowed = match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(Ok(Some(flags))) if flags.len() == phones.len() => flags,
            Ok(Ok(Some(_))) => {
                tracing::warn!(
                    "phone look-up limit not checked: Redis answered the wrong shape; allowing"
                );
                return Ok(all);
            }
            Ok(Ok(None)) => return Ok(all),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "phone look-up limit not checked: Redis failed; allowing the look-up");
                return Ok(all);
            }
            Err(_) => {
                tracing::warn!(
                    "phone look-up limit not checked: Redis timed out; allowing the look-up"
                );
                return Ok(all);
            }
        };
        if allowed.iter().all(|f| *f == 0) {
            let left = (window_start + PHONE_LOOKUP_WINDOW_SECS)
                .saturating_sub(now)
                .max(1);
            return Err(u32::try_from(left).unwrap_or(u32::MAX));
        }
        Ok(allowed.into_iter().map(|f| f == 1).collect())
    }

    /// [`RateLimiter::check_send`] as of `now` (unix seconds), for callers and tests that own the clock.
    pub async fn check_send_at(&self, user: UserId, sends: u32, now: u64) -> Result<(), u32> {
        if self.limit_per_minute == 0 || sends == 0 {
            return Ok(());
        }
        let window_start = now - now % WINDOW_SECS;
        let key = format!(
            "{}ratelimit:messages:send:{}:{}",
            self.prefix, user, window_start
        );
        let count = match tokio::time::timeout(CALL_TIMEOUT, self.count(&key, sends)).await {
            Ok(Ok(Some(count))) => count,
            // Already logged, or a connection attempt is backing off: allow.
            Ok(Ok(None)) => return Ok(()),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "send rate limit not checked: Redis failed; allowing the send");
                return Ok(());
            }
            Err(_) => {
                tracing::warn!("send rate limit not checked: Redis timed out; allowing the send");
                return Ok(());
            }
        };
        if count > i64::from(self.limit_per_minute) {
            let left = (window_start + WINDOW_SECS).saturating_sub(now).max(1);
            return Err(u32::try_from(left).unwrap_or(u32::MAX));
        }
        Ok(())
    }

    /// The window's count after adding `sends`, or None when there is no connection to ask.
    async fn count(&self, key: &str, sends: u32) -> Result<Option<i64>, redis::RedisError> {
        let Some(mut conn) = self.connection().await else {
            return Ok(None);
        };
        let ttl = WINDOW_SECS * 2;
        self.script
            .key(key)
            .arg(sends)
            .arg(ttl)
            .invoke_async(&mut conn)
            .await
            .map(Some)
    }

    /// The shared connection (the manager reconnects by itself once it exists).
    async fn connection(&self) -> Option<ConnectionManager> {
        let mut state = self.connection.lock().await;
        if let Some(m) = &state.manager {
            return Some(m.clone());
        }
        if state
            .last_attempt
            .is_some_and(|t| t.elapsed() < RECONNECT_BACKOFF)
        {
            return None;
        }
        state.last_attempt = Some(Instant::now());
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(CALL_TIMEOUT)
            .set_response_timeout(CALL_TIMEOUT)
            .set_number_of_retries(1);
        match ConnectionManager::new_with_config(self.client.clone(), config).await {
            Ok(m) => {
                state.manager = Some(m.clone());
                Some(m)
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot connect to Redis; send rate limit is off until it is back");
                None
            }
        }
    }
}

#[async_trait]
impl RateLimiter for RedisRateLimiter {
    async fn check_send(&self, user: UserId, sends: u32) -> Result<(), u32> {
        self.check_send_at(user, sends, unix_now()).await
    }

    async fn check_phone_lookups(&self, user: UserId, phones: &[String]) -> Result<Vec<bool>, u32> {
        self.check_phone_lookups_at(user, phones, unix_now()).await
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
