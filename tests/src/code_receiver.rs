//! A stand-in for an operator's SMS gateway adapter: a tiny HTTP server on 127.0.0.1 that takes
//! the sign-in webhook's `POST` (`PTSLOG_LOGIN_WEBHOOK_URL`) and keeps each JSON body.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the receiver answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    Ok,
    Fail,
    /// Reads the request and never answers (a stuck gateway).
    Hang,
}

pub struct CodeReceiver {
    pub url: String,
    received: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

async fn serve_one(mut stream: TcpStream, answer: Answer) -> Option<Value> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let (head_end, length) = loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).ok();
    let status = match answer {
        Answer::Ok => "200 OK",
        Answer::Fail => "502 Bad Gateway",
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            return body;
        }
    };
    let reply = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    let _ = stream.write_all(reply.as_bytes()).await;
    body
}

impl CodeReceiver {
    pub async fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("receiver binds");
        let url = format!("http://{}/sms", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let kept = kept.clone();
                tokio::spawn(async move {
                    if let Some(body) = serve_one(stream, answer).await {
                        kept.lock().unwrap().push(body);
                    }
                });
            }
        });
        Self {
            url,
            received,
            task,
        }
    }

    /// Every body received so far.
    pub fn received(&self) -> Vec<Value> {
        self.received.lock().unwrap().clone()
    }

    /// The code of the newest message to `phone` (waits a little for it: the server answers
    /// only after the webhook did, so it is normally there already).
    pub async fn code_for(&self, phone: &str) -> String {
        for _ in 0..50 {
            if let Some(m) = self.received().iter().rev().find(|m| m["phone"] == phone) {
                return m["code"].as_str().expect("code is a string").to_string();
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("no code was posted for {phone}");
    }
}

impl Drop for CodeReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}
