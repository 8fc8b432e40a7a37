//! A device's WebSocket to `GET /v1/updates`, collecting every frame in arrival order.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// One pushed frame: the event's update (the frame's first), the pts and pts_count the frame moves
/// the device to (the event's update's, or for an update without pts the no-op pts carrier that
/// follows it: docs/events.md, "Updates without pts"), and the frame.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub pts: i64,
    pub pts_count: i64,
    pub update: Value,
    pub frame: Value,
}

pub struct Socket {
    frames: Arc<Mutex<Vec<Value>>>,
    closed: Arc<Mutex<Option<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Socket {
    /// Connects; `header` puts the token in `Authorization`, otherwise in `?token=`.
    pub async fn connect(base: &str, token: &str, header: bool) -> Socket {
        let ws_base = base.replacen("http://", "ws://", 1);
        let request = if header {
            let mut r = format!("{ws_base}/v1/updates")
                .into_client_request()
                .expect("request");
            r.headers_mut().insert(
                "Authorization",
                format!("Bearer {token}").parse().expect("header"),
            );
            r
        } else {
            format!("{ws_base}/v1/updates?token={token}")
                .into_client_request()
                .expect("request")
        };
        let (ws, _) = tokio_tungstenite::connect_async(request)
            .await
            .expect("WebSocket connects");
        let frames = Arc::new(Mutex::new(Vec::new()));
        let closed = Arc::new(Mutex::new(None));
        let (f, c) = (frames.clone(), closed.clone());
        let task = tokio::spawn(async move {
            let (mut tx, mut rx) = ws.split();
            // The server must answer pings (clients use them to detect dead connections).
            let _ = tx
                .send(Message::Ping(b"are you there".to_vec().into()))
                .await;
            while let Some(msg) = rx.next().await {
                match msg {
                    Ok(Message::Text(t)) => {
                        let v: Value = serde_json::from_str(&t).expect("frames are JSON");
                        // A sign-in of another device of the account: not an event of the log
                        // (tests/integration/mtproto/sessions.rs checks it), left out here.
                        if v["updates"][0]["_"] != "updateNewAuthorization" {
                            f.lock().unwrap().push(v);
                        }
                    }
                    Ok(Message::Pong(p)) => f
                        .lock()
                        .unwrap()
                        .push(serde_json::json!({"_": "pong", "data": p.len()})),
                    Ok(Message::Close(frame)) => {
                        *c.lock().unwrap() = Some(format!("{frame:?}"));
                        break;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        *c.lock().unwrap() = Some(format!("error: {e}"));
                        break;
                    }
                }
            }
        });
        Socket {
            frames,
            closed,
            task,
        }
    }

    /// Every `updates` frame so far, one entry per frame (one frame is one event).
    pub fn pushed(&self) -> Vec<Pushed> {
        let frames = self.frames.lock().unwrap();
        let mut out = Vec::new();
        for frame in frames.iter().filter(|f| f["_"] == "updates") {
            let updates = frame["updates"].as_array().expect("updates array");
            let with_pts = updates.iter().find(|u| u.get("pts").is_some());
            out.push(Pushed {
                pts: with_pts.and_then(|u| u["pts"].as_i64()).unwrap_or(-1),
                pts_count: with_pts.and_then(|u| u["pts_count"].as_i64()).unwrap_or(-1),
                update: updates.first().expect("an update").clone(),
                frame: frame.clone(),
            });
        }
        out
    }

    pub fn raw(&self) -> Vec<Value> {
        self.frames.lock().unwrap().clone()
    }

    pub fn closed(&self) -> Option<String> {
        self.closed.lock().unwrap().clone()
    }

    /// Waits until `done` holds for the pushes so far; answers whether it did in time.
    pub async fn wait_until(&self, timeout: Duration, done: impl Fn(&[Pushed]) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if done(&self.pushed()) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn close(self) {
        self.task.abort();
    }
}
