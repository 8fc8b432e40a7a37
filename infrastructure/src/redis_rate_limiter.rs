//! [`RateLimiter`] over Redis, so every instance shares one count per user.
//!
//! A fixed 60-second window: the key `{prefix}ratelimit:messages:send:{user}:{window_start}` is
//! incremented by the number of sends and expires after the window. A limit of 0 turns limiting off.
//!
//! If Redis is unreachable, slow or failing, sends are ALLOWED (fail open) and a warning is logged:
//! losing the limit for a while is better than losing messaging. Every call is bounded by
//! [`CALL_TIMEOUT`], and after a failed connection attempt no new one is made for
//! [`RECONNECT_BACKOFF`], so a down Redis neither hangs nor slows sends.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use application::ports::RateLimiter;
use async_trait::async_trait;
use domain::UserId;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;
use tokio::sync::Mutex;

const WINDOW_SECS: u64 = 60;
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

struct Connection {
    manager: Option<ConnectionManager>,
    last_attempt: Option<Instant>,
}

pub struct RedisRateLimiter {
    client: redis::Client,
    prefix: String,
    limit_per_minute: u32,
    script: Script,
    connection: Mutex<Connection>,
}

impl RedisRateLimiter {
    /// Parses the URL; the connection is made on first use (so a server starts while Redis is down).
    pub fn new(
        url: &str,
        prefix: impl Into<String>,
        limit_per_minute: u32,
    ) -> Result<Self, redis::RedisError> {
        Ok(Self {
            client: redis::Client::open(url)?,
            prefix: prefix.into(),
            limit_per_minute,
            script: Script::new(COUNT_SCRIPT),
            connection: Mutex::new(Connection {
                manager: None,
                last_attempt: None,
            }),
        })
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
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        self.check_send_at(user, sends, now).await
    }
}
