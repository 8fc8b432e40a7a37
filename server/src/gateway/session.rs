//! One connected device: registers with the hub, writes its frames to the WebSocket, answers
//! pings, and unregisters when the socket closes. Clients send nothing but control frames.

use std::sync::Arc;
use std::time::Duration;

use application::fanout::{Outgoing, RESERVED_SLOTS};
use application::Caller;
use axum::extract::ws::{CloseFrame, Message, WebSocket};
use futures::{SinkExt, StreamExt};
use tokio::sync::mpsc;

use super::device_channel::DeviceSender;
use super::Gateway;

/// The close code after `updatesTooLong`: reconnect, then call `updates.getDifference`.
pub const CLOSE_TOO_LONG: u16 = 4000;
/// A ping this often finds connections whose peer vanished without a close.
const PING_EVERY: Duration = Duration::from_secs(30);
/// A write that takes longer than this means the peer stopped reading.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

pub async fn run(gateway: Arc<Gateway>, caller: Caller, socket: WebSocket) {
    let (tx, mut rx) = mpsc::channel(gateway.push_buffer + RESERVED_SLOTS);
    let id = gateway
        .hub
        .register(caller.user_id, caller.auth_key_id, DeviceSender(tx));
    tracing::debug!(user_id = %caller.user_id, auth_key_id = caller.auth_key_id.0, "device online");
    let (mut sink, mut stream) = socket.split();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            item = rx.recv() => match item {
                Some(Outgoing::Frame(frame)) => {
                    let write = sink.send(Message::Text(frame.json.as_ref().into()));
                    match tokio::time::timeout(WRITE_TIMEOUT, write).await {
                        Ok(Ok(())) => gateway.metrics.pushed(frame.committed_at_micros),
                        _ => break,
                    }
                }
                Some(Outgoing::TooLong) => {
                    let _ = tokio::time::timeout(WRITE_TIMEOUT, async {
                        sink.send(Message::Text(r#"{"_":"updatesTooLong"}"#.into())).await?;
                        sink.send(Message::Close(Some(CloseFrame {
                            code: CLOSE_TOO_LONG,
                            reason: "updatesTooLong: reconnect and call updates.getDifference".into(),
                        })))
                        .await
                    })
                    .await;
                    break;
                }
                None => break,
            },
            incoming = stream.next() => match incoming {
                // Pongs to the client's pings are queued by the WebSocket layer and flushed with
                // the next read or write.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            },
            _ = ping.tick() => {
                if tokio::time::timeout(WRITE_TIMEOUT, sink.send(Message::Ping(Default::default()))).await.map_or(true, |r| r.is_err()) {
                    break;
                }
            }
        }
    }
    gateway.hub.unregister(caller.user_id, id);
    tracing::debug!(user_id = %caller.user_id, auth_key_id = caller.auth_key_id.0, "device offline");
}
