//! Keeps this process's token cache ([`CallerCache`]) true: listens on the revocation channel
//! that migration 0019's trigger notifies for every device deleted and every token, owner or end
//! changed, and evicts each named device. The cache serves only while this listener is listening:
//! it is marked live once `LISTEN` is in place, and emptied and marked not live as soon as the
//! connection is lost (a notification sent meanwhile would be missed), until listening again.

use std::sync::Arc;
use std::time::Duration;

use application::caller_cache::CallerCache;
use domain::AuthKeyId;
use sqlx::postgres::PgListener;
use sqlx::PgPool;

use crate::postgres::accounts::AUTHORIZATION_REVOKED_CHANNEL;

/// Wait before listening again after the connection was lost.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// `<user_id>:<device id>`, as the trigger writes it; only the device matters here.
fn device(payload: &str) -> Option<AuthKeyId> {
    let (_, device) = payload.split_once(':')?;
    Some(AuthKeyId(device.parse().ok()?))
}

/// Runs until aborted; the cache is not live whenever this is not listening.
pub async fn listen(pool: PgPool, cache: Arc<CallerCache>) {
    let _not_live_on_exit = NotLiveOnDrop(cache.clone());
    loop {
        if let Err(e) = listen_once(&pool, &cache).await {
            tracing::warn!(error = %e, "listening for revoked tokens; the token cache is off until it listens again");
        }
        cache.set_live(false);
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

async fn listen_once(pool: &PgPool, cache: &CallerCache) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(AUTHORIZATION_REVOKED_CHANNEL).await?;
    cache.set_live(true);
    // try_recv, not recv: the connection's loss must end this (None) rather than be bridged by a
    // silent reconnection that skips the notifications sent in between.
    while let Some(n) = listener.try_recv().await? {
        match device(n.payload()) {
            Some(d) => cache.evict_device(d),
            None => {
                // Unreadable: trust nothing cached.
                tracing::warn!(
                    payload = n.payload(),
                    "unreadable revocation; emptying the token cache"
                );
                cache.set_live(true);
            }
        }
    }
    Ok(())
}

/// An aborted listener leaves the cache not live.
struct NotLiveOnDrop(Arc<CallerCache>);

impl Drop for NotLiveOnDrop {
    fn drop(&mut self) {
        self.0.set_live(false);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn payloads() {
        assert_eq!(super::device("7:-42").map(|d| d.0), Some(-42));
        assert!(super::device("7").is_none());
        assert!(super::device("7:x").is_none());
    }
}
