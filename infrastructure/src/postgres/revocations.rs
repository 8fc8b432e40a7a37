//! Keeps this process's token cache ([`CallerCache`]) true: listens on the revocation channel
//! that migration 0019's trigger notifies for every device deleted and every token, owner or end
//! changed, and evicts each named device. The cache serves only while this listener is listening:
//! it is marked live once `LISTEN` is in place, and emptied and marked not live as soon as the
//! connection is lost (a notification sent meanwhile would be missed), until listening again.
//!
//! Acknowledgements make an ending immediate everywhere: each listener, once it has evicted a
//! device, notifies [`REVOCATION_ACK_CHANNEL`] with `<device>:<its backend pid>`. The store's
//! `end_authorizations` notes, inside its transaction, which listeners are connected (their
//! sessions carry [`LISTENER_APPLICATION_NAME`]) and, after the commit, waits (at most
//! [`ACK_TIMEOUT`]) until each of them has acknowledged every ended device. So when a log-out
//! answers, no instance's cache holds the device any more.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use application::caller_cache::CallerCache;
use domain::AuthKeyId;
use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::watch;

use crate::postgres::accounts::AUTHORIZATION_REVOKED_CHANNEL;

/// Listeners acknowledge each revocation here, payload `<device>:<backend pid>`.
pub const REVOCATION_ACK_CHANNEL: &str = "ptslog_revocation_ack";
/// The `application_name` of every revocation listener's session, by which an ending finds them.
pub const LISTENER_APPLICATION_NAME: &str = "ptslog_revocations";
/// How long an ending waits for the listeners' acknowledgements: a listener that does not answer
/// by then is gone or stuck (a stuck one's cache entries still end at `CALLER_CACHE_TTL`).
pub const ACK_TIMEOUT: Duration = Duration::from_secs(2);

/// Devices whose acknowledgements are kept at once.
const MAX_HEARD_DEVICES: usize = 10_000;

/// Wait before listening again after the connection was lost.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// `<a>:<b>` as two numbers.
fn pair(payload: &str) -> Option<(i64, i64)> {
    let (a, b) = payload.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// The acknowledgements this process has heard, for endings of this process to wait on.
#[derive(Default)]
pub struct Acks {
    /// Whether this process's listener is listening (else nothing can be heard: no waiting).
    fed: AtomicBool,
    heard: Mutex<HashMap<AuthKeyId, HashSet<i32>>>,
    changed: Mutex<Option<watch::Sender<u64>>>,
}

impl Acks {
    pub fn new() -> Arc<Self> {
        let (tx, _) = watch::channel(0);
        Arc::new(Self {
            fed: AtomicBool::new(false),
            heard: Mutex::default(),
            changed: Mutex::new(Some(tx)),
        })
    }

    fn record(&self, device: AuthKeyId, pid: i32) {
        if let Ok(mut heard) = self.heard.lock() {
            // Acknowledgements of other instances' endings are never waited for here; keep them
            // bounded (a wait that loses its acknowledgement this way just times out).
            if heard.len() >= MAX_HEARD_DEVICES {
                heard.clear();
            }
            heard.entry(device).or_default().insert(pid);
        }
        if let Ok(changed) = self.changed.lock() {
            if let Some(tx) = changed.as_ref() {
                tx.send_modify(|n| *n += 1);
            }
        }
    }

    fn subscribe(&self) -> Option<watch::Receiver<u64>> {
        self.changed.lock().ok()?.as_ref().map(|tx| tx.subscribe())
    }

    fn missing(&self, devices: &[AuthKeyId], listeners: &[i32]) -> usize {
        let Ok(heard) = self.heard.lock() else {
            return 0;
        };
        devices
            .iter()
            .map(|d| {
                let got = heard.get(d);
                listeners
                    .iter()
                    .filter(|p| !got.is_some_and(|g| g.contains(p)))
                    .count()
            })
            .sum()
    }

    fn forget(&self, devices: &[AuthKeyId]) {
        if let Ok(mut heard) = self.heard.lock() {
            for d in devices {
                heard.remove(d);
            }
        }
    }

    /// Waits until every listener of `listeners` acknowledged every device (or [`ACK_TIMEOUT`]);
    /// answers how many acknowledgements never came.
    pub async fn wait(&self, devices: &[AuthKeyId], listeners: &[i32]) -> usize {
        if !self.fed.load(Ordering::SeqCst) {
            return 0;
        }
        let Some(mut changes) = self.subscribe() else {
            return 0;
        };
        let deadline = tokio::time::Instant::now() + ACK_TIMEOUT;
        let missing = loop {
            let missing = self.missing(devices, listeners);
            if missing == 0 {
                break 0;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => continue,
                _ => break self.missing(devices, listeners),
            }
        };
        self.forget(devices);
        missing
    }
}

/// Runs until aborted; the cache is not live whenever this is not listening.
pub async fn listen(pool: PgPool, cache: Arc<CallerCache>, acks: Arc<Acks>) {
    let _not_live_on_exit = NotLiveOnDrop(cache.clone());
    loop {
        if let Err(e) = listen_once(&pool, &cache, &acks).await {
            tracing::warn!(error = %e, "listening for revoked tokens; the token cache is off until it listens again");
        }
        cache.set_live(false);
        acks.fed.store(false, Ordering::SeqCst);
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

async fn listen_once(pool: &PgPool, cache: &CallerCache, acks: &Acks) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    sqlx::query(&format!(
        "SET application_name = '{LISTENER_APPLICATION_NAME}'"
    ))
    .execute(&mut listener)
    .await?;
    listener
        .listen_all([AUTHORIZATION_REVOKED_CHANNEL, REVOCATION_ACK_CHANNEL])
        .await?;
    cache.set_live(true);
    acks.fed.store(true, Ordering::SeqCst);
    // try_recv, not recv: the connection's loss must end this (None) rather than be bridged by a
    // silent reconnection that skips the notifications sent in between.
    while let Some(n) = listener.try_recv().await? {
        let parsed = pair(n.payload());
        if n.channel() == REVOCATION_ACK_CHANNEL {
            if let Some((device, pid)) = parsed {
                acks.record(AuthKeyId(device), i32::try_from(pid).unwrap_or(-1));
            }
            continue;
        }
        match parsed {
            Some((_, device)) => {
                cache.evict_device(AuthKeyId(device));
                sqlx::query("SELECT pg_notify($1, $2 || ':' || pg_backend_pid())")
                    .bind(REVOCATION_ACK_CHANNEL)
                    .bind(device.to_string())
                    .execute(&mut listener)
                    .await?;
            }
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

/// The backend pids of the revocation listeners connected to this database now (every
/// instance's), read inside an ending's transaction.
pub(crate) async fn listeners(conn: &mut sqlx::PgConnection) -> Result<Vec<i32>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1",
    )
    .bind(LISTENER_APPLICATION_NAME)
    .fetch_all(conn)
    .await
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
    use super::*;

    #[test]
    fn payloads() {
        assert_eq!(pair("7:-42"), Some((7, -42)));
        assert!(pair("7").is_none());
        assert!(pair("7:x").is_none());
    }

    #[tokio::test]
    async fn waits_for_every_listener_then_forgets() {
        let acks = Acks::new();
        assert_eq!(
            acks.wait(&[AuthKeyId(5)], &[10]).await,
            0,
            "no listener: no wait"
        );
        acks.fed.store(true, Ordering::SeqCst);
        let a = acks.clone();
        let t = tokio::spawn(async move { a.wait(&[AuthKeyId(5)], &[10, 11]).await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        acks.record(AuthKeyId(5), 10);
        acks.record(AuthKeyId(6), 11);
        assert!(!t.is_finished());
        acks.record(AuthKeyId(5), 11);
        assert_eq!(t.await.unwrap(), 0);
        assert_eq!(acks.missing(&[AuthKeyId(5)], &[10]), 1, "forgotten");
        // Nobody listening: nothing to wait for.
        assert_eq!(acks.wait(&[AuthKeyId(1)], &[]).await, 0);
    }
}
