//! Ended and new devices, from every instance: listens on the Postgres channels the store notifies
//! in the transaction that ends a device (`AUTHORIZATION_ENDED_CHANNEL`), and closes that device's
//! live connections here (push WebSockets, MTProto connections), or that signs one in
//! (`AUTHORIZATION_NEW_CHANNEL`), and pushes `updateNewAuthorization` to the account's other
//! devices here. The instance that served the call hears it the same way, so there is one path
//! whichever instance it was.

use std::sync::Arc;
use std::time::Duration;

use application::fanout::Frame;
use application::fanout::Hub;
use domain::{AuthKeyId, UserId};
use infrastructure::{AUTHORIZATION_ENDED_CHANNEL, AUTHORIZATION_NEW_CHANNEL};
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
    listener
        .listen_all([AUTHORIZATION_ENDED_CHANNEL, AUTHORIZATION_NEW_CHANNEL])
        .await?;
    loop {
        let n = listener.recv().await?;
        let Some((user, device)) = parse(n.payload()) else {
            tracing::warn!(payload = n.payload(), "unreadable device notification");
            continue;
        };
        if n.channel() == AUTHORIZATION_NEW_CHANNEL {
            let pushed = hub.deliver_unsequenced(user, device, &new_authorization(device));
            tracing::debug!(user_id = %user, auth_key_id = device.0, pushed, "new device");
        } else {
            let closed = hub.end_device(user, device);
            tracing::debug!(user_id = %user, auth_key_id = device.0, closed, "device ended");
        }
    }
}

/// `updates` with `updateNewAuthorization` (just the device's hash: its description arrives with
/// its first initConnection, after the sign-in).
fn new_authorization(device: AuthKeyId) -> Frame {
    let now = chrono::Utc::now();
    let json = serde_json::json!({
        "_": "updates",
        "updates": [{"_": "updateNewAuthorization", "hash": device.0}],
        "users": [],
        "chats": [],
        "date": now.timestamp(),
        "seq": 0,
    });
    Frame::new(
        0,
        Arc::from(json.to_string()),
        now.timestamp_micros(),
        false,
    )
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
