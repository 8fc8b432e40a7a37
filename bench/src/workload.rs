//! The operations the bench drives, in process (the `App` handlers) and over HTTP, and what they
//! leave behind for later operations and for the correctness checks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use application::commands::delete_messages::DeleteMessages;
use application::commands::edit_message::EditMessage;
use application::commands::read_history::ReadHistory;
use application::commands::send_message::SendMessage;
use application::queries::get_dialogs::GetDialogs;
use application::queries::get_difference::GetDifference;
use application::queries::get_history::GetHistory;
use application::tl::{Difference, InputPeer, Messages, Updates};
use application::App;
use domain::access_hash::AccessHashKey;
use domain::UserId;
use rand::Rng;
use serde_json::{json, Value};

use crate::setup::BenchUser;

/// A message the bench sent and may later read, edit or delete.
#[derive(Debug, Clone, Copy)]
pub struct Sent {
    pub sender: usize,
    pub recipient: usize,
    /// The sender's box id.
    pub id: i32,
}

/// Counters every correctness check relies on, and a sample of sent messages.
#[derive(Default)]
pub struct Tally {
    pub sends_ok: AtomicU64,
    pub self_sends_ok: AtomicU64,
    pub send_errors: AtomicU64,
    pub other_errors: AtomicU64,
    /// Box rows written outside the application (pgbench, the loader).
    pub external_boxes: AtomicU64,
    sample: Mutex<Vec<Sent>>,
    next_random_id: AtomicU64,
}

/// At most this many sent messages are kept for the mixed workload.
const SAMPLE_CAP: usize = 200_000;

impl Tally {
    pub fn new() -> Self {
        Self {
            next_random_id: AtomicU64::new(rand::thread_rng().gen_range(1..1u64 << 40)),
            ..Self::default()
        }
    }

    /// A random_id no other send of the run uses (so no retry semantics kick in by accident).
    pub fn random_id(&self) -> i64 {
        (self.next_random_id.fetch_add(1, Ordering::Relaxed) & (i64::MAX as u64)) as i64
    }

    fn remember(&self, sent: Sent) {
        let Ok(mut sample) = self.sample.lock() else {
            return;
        };
        if sample.len() < SAMPLE_CAP {
            sample.push(sent);
        } else {
            let i = rand::thread_rng().gen_range(0..sample.len());
            sample[i] = sent;
        }
    }

    /// A random sent message, left in the sample.
    pub fn any_sent(&self) -> Option<Sent> {
        let sample = self.sample.lock().ok()?;
        if sample.is_empty() {
            return None;
        }
        Some(sample[rand::thread_rng().gen_range(0..sample.len())])
    }

    /// A random sent message, taken out of the sample (edits put theirs back; deletions do not), so
    /// that no message is edited and deleted at once.
    pub fn take_sent(&self) -> Option<Sent> {
        let mut sample = self.sample.lock().ok()?;
        if sample.is_empty() {
            return None;
        }
        let i = rand::thread_rng().gen_range(0..sample.len());
        Some(sample.swap_remove(i))
    }

    pub fn put_back(&self, sent: Sent) {
        self.remember(sent);
    }

    /// Boxes the application must have written: two per send, one per Saved Messages send.
    pub fn expected_app_boxes(&self) -> u64 {
        2 * self.sends_ok.load(Ordering::Relaxed) - self.self_sends_ok.load(Ordering::Relaxed)
    }
}

/// How calls reach the application.
#[derive(Clone)]
pub enum Front {
    InProcess(App),
    Http {
        client: reqwest::Client,
        base: String,
    },
}

impl Front {
    pub fn label(&self) -> &'static str {
        match self {
            Front::InProcess(_) => "in-process",
            Front::Http { .. } => "http",
        }
    }
}

/// Everything an operation needs.
#[derive(Clone)]
pub struct Workload {
    pub users: Arc<Vec<BenchUser>>,
    pub keys: AccessHashKey,
    pub tally: Arc<Tally>,
    pub text: Arc<String>,
}

impl Workload {
    pub fn new(users: Vec<BenchUser>, keys: AccessHashKey, tally: Arc<Tally>) -> Self {
        // A typical short chat message.
        let text = "benchmark message: the quick brown fox jumps over the lazy dog".to_string();
        Self {
            users: Arc::new(users),
            keys,
            tally,
            text: Arc::new(text),
        }
    }

    fn peer(&self, viewer: usize, target: usize) -> InputPeer {
        let (v, t) = (self.users[viewer].id(), self.users[target].id());
        if v == t {
            return InputPeer::SelfPeer;
        }
        InputPeer::User {
            user_id: t.get(),
            access_hash: self.keys.for_pair(v, t),
        }
    }

    /// `inputPeer…` JSON naming account index `target` as `viewer` sees it.
    pub fn peer_json_of(&self, viewer: usize, target: usize) -> Value {
        self.peer_json(viewer, target)
    }

    fn peer_json(&self, viewer: usize, target: usize) -> Value {
        match self.peer(viewer, target) {
            InputPeer::User {
                user_id,
                access_hash,
            } => json!({"_": "inputPeerUser", "user_id": user_id, "access_hash": access_hash}),
            _ => json!({"_": "inputPeerSelf"}),
        }
    }

    /// A uniformly random (sender, recipient) pair; the recipient may be the sender (Saved Messages).
    pub fn random_pair(&self) -> (usize, usize) {
        let mut rng = rand::thread_rng();
        (
            rng.gen_range(0..self.users.len()),
            rng.gen_range(0..self.users.len()),
        )
    }

    /// `messages.sendMessage`; on success the message is counted and sampled.
    pub async fn send(&self, front: &Front, sender: usize, recipient: usize) -> Result<(), String> {
        let random_id = self.tally.random_id();
        let result = match front {
            Front::InProcess(app) => {
                let req = send_request(
                    self.peer(sender, recipient),
                    self.text.as_str().to_string(),
                    random_id,
                );
                match app.send_message(&self.users[sender].caller, req).await {
                    Ok(Updates::ShortSentMessage { id, pts, .. }) if pts > 0 => Ok(id),
                    Ok(other) => Err(format!("unexpected answer {other:?}")),
                    Err(e) => Err(format!("{e:?}")),
                }
            }
            Front::Http { client, base } => {
                let body = json!({"peer": self.peer_json(sender, recipient), "message": self.text.as_str(), "random_id": random_id});
                match http_call(
                    client,
                    base,
                    &self.users[sender].token,
                    "messages.sendMessage",
                    &body,
                )
                .await
                {
                    Ok(v) if v["_"] == "updateShortSentMessage" => v["id"]
                        .as_i64()
                        .and_then(|id| i32::try_from(id).ok())
                        .ok_or_else(|| format!("no id in {v}")),
                    Ok(v) => Err(format!("unexpected answer {v}")),
                    Err(e) => Err(e),
                }
            }
        };
        match result {
            Ok(id) => {
                self.tally.sends_ok.fetch_add(1, Ordering::Relaxed);
                if sender == recipient {
                    self.tally.self_sends_ok.fetch_add(1, Ordering::Relaxed);
                }
                self.tally.remember(Sent {
                    sender,
                    recipient,
                    id,
                });
                Ok(())
            }
            Err(e) => {
                self.tally.send_errors.fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    fn failed<T>(&self, e: impl std::fmt::Debug) -> Result<T, String> {
        self.tally.other_errors.fetch_add(1, Ordering::Relaxed);
        Err(format!("{e:?}"))
    }

    /// `updates.getDifference` from `from_pts` (a device `from_pts` events behind reads one slice).
    pub async fn get_difference(
        &self,
        app: &App,
        user: usize,
        from_pts: i32,
    ) -> Result<(), String> {
        let req = GetDifference {
            pts: from_pts,
            pts_limit: None,
            pts_total_limit: None,
            date: 0,
            qts: 0,
            qts_limit: None,
        };
        match app.get_difference(&self.users[user].caller, req).await {
            Ok(Difference::Empty { .. } | Difference::Full { .. } | Difference::Slice { .. }) => {
                Ok(())
            }
            Err(e) => self.failed(e),
        }
    }

    /// `messages.getHistory`, newest 50.
    pub async fn get_history(&self, app: &App, owner: usize, peer: usize) -> Result<(), String> {
        let req = GetHistory {
            peer: self.peer(owner, peer),
            offset_id: 0,
            offset_date: 0,
            add_offset: 0,
            limit: 50,
            max_id: 0,
            min_id: 0,
            hash: 0,
        };
        match app.get_history(&self.users[owner].caller, req).await {
            Ok(Messages::All { .. } | Messages::Slice { .. }) => Ok(()),
            Err(e) => self.failed(e),
        }
    }

    /// `messages.getDialogs`, first 100.
    pub async fn get_dialogs(&self, app: &App, owner: usize) -> Result<(), String> {
        let req = GetDialogs {
            exclude_pinned: false,
            folder_id: None,
            offset_date: 0,
            offset_id: 0,
            offset_peer: InputPeer::Empty,
            limit: 100,
            hash: 0,
        };
        match app.get_dialogs(&self.users[owner].caller, req).await {
            Ok(_) => Ok(()),
            Err(e) => self.failed(e),
        }
    }

    /// `messages.readHistory`: the recipient of a sent message reads the chat up to the end.
    pub async fn read_history(&self, app: &App) -> Result<(), String> {
        let Some(s) = self.tally.any_sent() else {
            return Ok(());
        };
        let req = ReadHistory {
            peer: self.peer(s.recipient, s.sender),
            max_id: 0,
        };
        match app.read_history(&self.users[s.recipient].caller, req).await {
            Ok(_) => Ok(()),
            Err(e) => self.failed(e),
        }
    }

    /// `messages.editMessage` of a message the bench sent, with a new text.
    pub async fn edit_message(&self, app: &App) -> Result<(), String> {
        let Some(s) = self.tally.take_sent() else {
            return Ok(());
        };
        let req = EditMessage {
            no_webpage: false,
            invert_media: false,
            peer: self.peer(s.sender, s.recipient),
            id: i64::from(s.id),
            message: Some(format!("edited {}", self.tally.random_id())),
            media: None,
            reply_markup: None,
            entities: None,
            schedule_date: None,
            quick_reply_shortcut_id: None,
        };
        let r = app.edit_message(&self.users[s.sender].caller, req).await;
        self.tally.put_back(s);
        match r {
            Ok(_) => Ok(()),
            Err(e) => self.failed(e),
        }
    }

    /// `messages.deleteMessages` (for both sides) of a message the bench sent.
    pub async fn delete_message(&self, app: &App) -> Result<(), String> {
        let Some(s) = self.tally.take_sent() else {
            return Ok(());
        };
        let req = DeleteMessages {
            revoke: true,
            id: vec![i64::from(s.id)],
        };
        match app.delete_messages(&self.users[s.sender].caller, req).await {
            Ok(_) => Ok(()),
            Err(e) => self.failed(e),
        }
    }

    pub fn user_id(&self, i: usize) -> UserId {
        self.users[i].id()
    }
}

pub fn send_request(peer: InputPeer, message: String, random_id: i64) -> SendMessage {
    SendMessage {
        no_webpage: false,
        peer,
        message,
        random_id,
        entities: None,
        options: Default::default(),
    }
}

/// One JSON-API call; any non-200 answer is an error.
/// A read over HTTP whose answer is received whole and checked to be a 200 with one of the TL
/// types `expect`, without building its JSON tree: the load generator shares the server's cores,
/// and pgbench, the reads' baseline, does not parse its rows into objects either (nor does the
/// MTProto load generator, `mtproto_load::MtConn::call_expecting`).
pub async fn http_call_expecting(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    method: &str,
    body: &Value,
    expect: &[&str],
) -> Result<(), String> {
    let bytes = rpc_answer(client, base, token, method, body).await?;
    check_answer(method, 200, bytes.as_ref(), expect)
}

/// Ok when the answer is a 200 of one of the `expect`ed TL types.
pub fn check_answer(method: &str, status: u16, body: &[u8], expect: &[&str]) -> Result<(), String> {
    if status != 200 {
        return Err(format!(
            "{method}: HTTP {status}: {}",
            String::from_utf8_lossy(body)
        ));
    }
    match answer_type(body) {
        Some(t) if expect.contains(&t) => Ok(()),
        other => Err(format!("{method}: unexpected answer {other:?}")),
    }
}

/// The `_` of a JSON answer, which the server writes first.
fn answer_type(body: &[u8]) -> Option<&str> {
    let rest = body.strip_prefix(br#"{"_":""#)?;
    let end = rest.iter().position(|&b| b == b'"')?;
    std::str::from_utf8(&rest[..end]).ok()
}

pub async fn http_call(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    method: &str,
    body: &Value,
) -> Result<Value, String> {
    let bytes = rpc_answer(client, base, token, method, body).await?;
    serde_json::from_slice(bytes.as_ref()).map_err(|e| format!("{method}: reading the answer: {e}"))
}

/// The body of a 200 answer to `method`; any other status is an error with the body's text.
async fn rpc_answer(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    method: &str,
    body: &Value,
) -> Result<impl AsRef<[u8]>, String> {
    let resp = client
        .post(format!("{base}/v1/rpc/{method}"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .map_err(|e| format!("{method}: {e}"))?;
    let status = resp.status();
    let bytes = resp
        .bytes()
        .await
        .map_err(|e| format!("{method}: reading the answer: {e}"))?;
    if status != reqwest::StatusCode::OK {
        return Err(format!(
            "{method}: HTTP {status}: {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::answer_type;

    #[test]
    fn an_answer_type_is_read_from_its_first_field() {
        assert_eq!(
            answer_type(br#"{"_":"messages.messagesSlice","count":3}"#),
            Some("messages.messagesSlice")
        );
        assert_eq!(answer_type(br#"{"count":3,"_":"messages.messages"}"#), None);
        assert_eq!(answer_type(br#"{"_":"unterminated"#), None);
        assert_eq!(answer_type(b""), None);
    }
}
