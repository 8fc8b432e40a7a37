//! The one mapping from handler errors to TL errors, shared by every front.

use domain::DomainError;
use serde::Serialize;

use crate::error::AppError;
use crate::ports::StoreError;

/// TL `rpc_error`: a code (also the JSON API's HTTP status) and an upper-case message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "_", rename = "rpc_error")]
pub struct RpcError {
    pub error_code: u16,
    pub error_message: String,
    /// A human explanation, for errors whose name alone does not say what was wrong.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl RpcError {
    pub fn new(code: u16, message: impl Into<String>) -> Self {
        Self {
            error_code: code,
            error_message: message.into(),
            detail: None,
        }
    }
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
    /// The parameters did not parse (malformed JSON, a missing or mistyped field).
    pub fn bad_input(detail: impl Into<String>) -> Self {
        Self::new(400, "INPUT_REQUEST_INVALID").with_detail(detail)
    }
    pub fn method_invalid(method: &str) -> Self {
        Self::new(400, "METHOD_INVALID").with_detail(format!("unknown method {method:?}"))
    }
    pub fn unauthorized() -> Self {
        Self::new(401, "AUTH_KEY_UNREGISTERED")
    }
    pub fn internal() -> Self {
        Self::new(500, "INTERNAL")
    }
}

/// The TL error name of each domain refusal.
pub fn tl_name(e: &DomainError) -> &'static str {
    use DomainError::*;
    match e {
        MessageEmpty => "MESSAGE_EMPTY",
        MessageTooLong => "MESSAGE_TOO_LONG",
        PeerIdInvalid => "PEER_ID_INVALID",
        UserIdInvalid => "USER_ID_INVALID",
        MessageIdInvalid => "MESSAGE_ID_INVALID",
        MessageIdsEmpty => "MESSAGE_IDS_EMPTY",
        MessageIdsTooMuch => "MESSAGE_IDS_TOO_MUCH",
        RandomIdEmpty => "RANDOM_ID_EMPTY",
        RandomIdDuplicate => "RANDOM_ID_DUPLICATE",
        RandomIdInvalid => "RANDOM_ID_INVALID",
        EntityBoundsInvalid => "ENTITY_BOUNDS_INVALID",
        EntitiesTooLong => "ENTITIES_TOO_LONG",
        EntityInvalid => "ENTITY_INVALID",
        ReplyMessageIdInvalid => "REPLY_MESSAGE_ID_INVALID",
        QuoteTextInvalid => "QUOTE_TEXT_INVALID",
        QuoteOffsetInvalid => "QUOTE_OFFSET_INVALID",
        StoryIdInvalid => "STORY_ID_INVALID",
        ReplyToMonoforumPeerInvalid => "REPLY_TO_MONOFORUM_PEER_INVALID",
        PollOptionInvalid => "POLL_OPTION_INVALID",
        ScheduleDateInvalid => "SCHEDULE_DATE_INVALID",
        SendAsPeerInvalid => "SEND_AS_PEER_INVALID",
        ReplyMarkupInvalid => "REPLY_MARKUP_INVALID",
        ShortcutInvalid => "SHORTCUT_INVALID",
        EffectIdInvalid => "EFFECT_ID_INVALID",
        PaymentUnsupported => "PAYMENT_UNSUPPORTED",
        SuggestedPostPeerInvalid => "SUGGESTED_POST_PEER_INVALID",
        MediaInvalid => "MEDIA_INVALID",
        MediaCaptionTooLong => "MEDIA_CAPTION_TOO_LONG",
        MultiMediaTooLong => "MULTI_MEDIA_TOO_LONG",
        MediaEmpty => "MEDIA_EMPTY",
        PhotoInvalid => "PHOTO_INVALID",
        DocumentInvalid => "DOCUMENT_INVALID",
        FileIdInvalid => "FILE_ID_INVALID",
        FileReferenceExpired => "FILE_REFERENCE_EXPIRED",
        PhotoInvalidDimensions => "PHOTO_INVALID_DIMENSIONS",
        ImageProcessFailed => "IMAGE_PROCESS_FAILED",
        ChatForwardsRestricted => "CHAT_FORWARDS_RESTRICTED",
        MessageAuthorRequired => "MESSAGE_AUTHOR_REQUIRED",
        MessageNotModified => "MESSAGE_NOT_MODIFIED",
        EditMessagesForbidden => "EDIT_MESSAGES_FORBIDDEN",
        DeleteMessagesForbidden => "DELETE_MESSAGES_FORBIDDEN",
        YouBlockedUser => "YOU_BLOCKED_USER",
        MessageNotReadYet => "MESSAGE_NOT_READ_YET",
        SearchQueryInvalid => "SEARCH_QUERY_EMPTY",
        LimitInvalid => "LIMIT_INVALID",
        OffsetPeerIdInvalid => "OFFSET_PEER_ID_INVALID",
        FolderIdInvalid => "FOLDER_ID_INVALID",
        PhoneNumberInvalid => "PHONE_NUMBER_INVALID",
        FirstNameInvalid => "FIRSTNAME_INVALID",
        LastNameInvalid => "LASTNAME_INVALID",
        PhoneNotOccupied => "PHONE_NOT_OCCUPIED",
        ContactIdInvalid => "CONTACT_ID_INVALID",
        PersistentTimestampInvalid => "PERSISTENT_TIMESTAMP_INVALID",
        FilterIdInvalid => "FILTER_ID_INVALID",
        PinnedDialogsTooMuch => "PINNED_DIALOGS_TOO_MUCH",
        PeerHistoryEmpty => "PEER_HISTORY_EMPTY",
        FilterIncludeTooMuch => "FILTER_INCLUDE_TOO_MUCH",
        FilterIncludeEmpty => "FILTER_INCLUDE_EMPTY",
        FilterTitleEmpty => "FILTER_TITLE_EMPTY",
        DialogFiltersTooMuch => "DIALOG_FILTERS_TOO_MUCH",
        ContactNameEmpty => "CONTACT_NAME_EMPTY",
        EntityMentionUserInvalid => "ENTITY_MENTION_USER_INVALID",
        EmoticonInvalid => "EMOTICON_INVALID",
        EventTooLarge => "EVENT_TOO_LARGE",
    }
}

impl From<&AppError> for RpcError {
    fn from(e: &AppError) -> Self {
        match e {
            AppError::Domain(d) => RpcError::new(400, tl_name(d)),
            AppError::FloodWait(secs) => RpcError::new(420, format!("FLOOD_WAIT_{secs}")),
            AppError::Forbidden(name) => RpcError::new(403, *name),
            AppError::BadRequest(name) => RpcError::new(400, *name),
            AppError::Unauthorized => RpcError::unauthorized(),
            // Telegram's answer when a call takes too long on its side; clients retry it.
            AppError::Store(StoreError::Timeout(_)) => RpcError::new(503, "TIMEOUT"),
            AppError::Store(crate::ports::StoreError::Refused(d)) => RpcError::new(400, tl_name(d)),
            AppError::Store(_) => RpcError::internal(),
            AppError::File(f) => RpcError::new(400, f.tl_name()),
            AppError::Blob(_) => RpcError::internal(),
        }
    }
}
