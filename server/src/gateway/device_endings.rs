//! Ended devices, from every instance: listens on the Postgres channel the store notifies in the
//! transaction that ends a device (`AUTHORIZATION_ENDED_CHANNEL`), and closes that device's live
//! connections here (push WebSockets, MTProto connections). The instance that ended the device
//! hears it the same way, so there is one path whichever instance served the log-out.

use std::sync::Arc;
use std::time::Duration;

use application::fanout::Hub;
use domain::{AuthKeyId, UserId};
use infrastructure::AUTHORIZATION_ENDED_CHANNEL;
use sqlx::postgres::PgListener;
use sqlx::PgPool;

use super::DeviceSender;

/// Wait before listening again after the connection was lost.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// `<user_id>:<device id>`, as the store writes it.
fn parse(payload: &str) -> Option<(UserId, AuthKeyId)> {
    let (user, device) = payload.split_once(':')?;
    let user = UserId::new(user.parse().ok()?).ok()?;
    Some((user, AuthKeyId(device.parse().ok()?)))
}

/// Runs until aborted.
pub async fn listen(pool: PgPool, hub: Arc<Hub<DeviceSender>>) {
    loop {
        match listen_once(&pool, &hub).await {
            Ok(()) => {}
            Err(e) => tracing::warn!(error = %e, "listening for ended devices; retrying"),
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

async fn listen_once(pool: &PgPool, hub: &Hub<DeviceSender>) -> Result<(), sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.listen(AUTHORIZATION_ENDED_CHANNEL).await?;
    loop {
        let n = listener.recv().await?;
        match parse(n.payload()) {
            Some((user, device)) => {
                let closed = hub.end_device(user, device);
                tracing::debug!(user_id = %user, auth_key_id = device.0, closed, "device ended");
            }
            None => tracing::warn!(
                payload = n.payload(),
                "unreadable ended-device notification"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn payloads() {
        let (u, d) = super::parse("7:-42").unwrap();
        assert_eq!((u.get(), d.0), (7, -42));
        assert!(super::parse("x:1").is_none());
        assert!(super::parse("7").is_none());
    }
}
