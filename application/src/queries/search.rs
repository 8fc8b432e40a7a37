//! `messages.search`: the caller's private text messages containing a string, in one chat or all.
//! Always scoped to the caller's own partition; the text test is trigram-indexed. Media filters
//! narrow it to messages whose media is of some classes (docs/media.md, "Search").

use domain::history_window::HistoryWindow;
use domain::{limits, DomainError, UserId};
use serde::Deserialize;
use serde_json::Value;

use domain::media::MediaClass;

use crate::error::AppError;
use crate::ports::SearchFilter;
use crate::tl::{long, InputPeer, Messages};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct Search {
    pub peer: InputPeer,
    #[serde(default)]
    pub q: String,
    #[serde(default)]
    pub from_id: Option<InputPeer>,
    #[serde(default)]
    pub filter: Option<Value>,
    #[serde(default)]
    pub min_date: i32,
    #[serde(default)]
    pub max_date: i32,
    #[serde(default)]
    pub offset_id: i32,
    #[serde(default)]
    pub add_offset: i32,
    #[serde(default)]
    pub limit: i32,
    #[serde(default)]
    pub max_id: i32,
    #[serde(default)]
    pub min_id: i32,
    #[serde(default, deserialize_with = "long")]
    pub hash: i64,
}

impl App {
    pub async fn search(&self, caller: &Caller, req: Search) -> Result<Messages, AppError> {
        let owner = caller.user_id;
        if req.q.chars().count() > limits::MAX_SEARCH_QUERY_CODE_POINTS {
            return Err(DomainError::SearchQueryInvalid.into());
        }
        // Only text exists yet: a media filter matches nothing.
        let filter = req
            .filter
            .as_ref()
            .and_then(|f| f.get("_"))
            .and_then(Value::as_str)
            .unwrap_or("inputMessagesFilterEmpty");
        let peer: Option<UserId> = match &req.peer {
            InputPeer::Empty => None,
            other => Some(self.existing_chat_peer(owner, other).await?),
        };
        let from: Option<UserId> = match &req.from_id {
            None | Some(InputPeer::Empty) => None,
            Some(other) => Some(self.chat_peer(owner, other)?.user_id(owner)),
        };
        let media = match media_filter(filter) {
            Filter::Any => None,
            Filter::Media(classes) => Some(classes),
            // Links, mentions, calls, locations…: ptslog has none of these yet.
            Filter::Nothing => return self.messages_answer(owner, Vec::new(), Some(0)).await,
        };
        let window = HistoryWindow::new(
            req.offset_id,
            0,
            req.add_offset,
            req.limit,
            req.max_id,
            req.min_id,
        );
        // NUL cannot reach Postgres text; it can never match either.
        let q = req.q.replace('\0', "");
        let filter = SearchFilter {
            peer,
            from,
            min_date: req.min_date.max(0),
            max_date: req.max_date.max(0),
            media,
        };
        let (page, count) = self.store.search(owner, &filter, q.trim(), &window).await?;
        self.messages_answer(owner, page, Some(count)).await
    }
}

enum Filter {
    Any,
    Media(&'static [MediaClass]),
    Nothing,
}

/// What each `MessagesFilter` matches.
fn media_filter(name: &str) -> Filter {
    use MediaClass::*;
    Filter::Media(match name {
        "inputMessagesFilterEmpty" => return Filter::Any,
        "inputMessagesFilterPhotos" => &[Photo],
        "inputMessagesFilterVideo" => &[Video],
        "inputMessagesFilterPhotoVideo" => &[Photo, Video],
        "inputMessagesFilterDocument" => &[File],
        "inputMessagesFilterMusic" => &[Music],
        "inputMessagesFilterVoice" => &[Voice],
        "inputMessagesFilterRoundVoice" => &[Round, Voice],
        "inputMessagesFilterRoundVideo" => &[Round],
        "inputMessagesFilterGif" => &[Gif],
        _ => return Filter::Nothing,
    })
}
