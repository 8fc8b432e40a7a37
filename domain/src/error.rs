//! Why a command or query was refused. The edge maps each variant to one TL error string.

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DomainError {
    #[error("the message text is empty")]
    MessageEmpty,
    #[error("the message text is longer than {max} code points", max = crate::limits::MAX_MESSAGE_TEXT_CODE_POINTS)]
    MessageTooLong,
    #[error("the peer is not a user this account can reach")]
    PeerIdInvalid,
    #[error("the user id or its access hash is wrong")]
    UserIdInvalid,
    #[error("the message id is not one of this account's messages")]
    MessageIdInvalid,
    #[error("no message ids were given")]
    MessageIdsEmpty,
    #[error("too many message ids")]
    MessageIdsTooMuch,
    #[error("random_id must be non-zero")]
    RandomIdEmpty,
    #[error("random_id was already used for a different message")]
    RandomIdDuplicate,
    #[error("id and random_id must have the same length")]
    RandomIdInvalid,
    #[error("an entity lies outside the text")]
    EntityBoundsInvalid,
    #[error("too many entities")]
    EntitiesTooLong,
    #[error("an entity is malformed")]
    EntityInvalid,
    #[error("the replied-to message is not in this chat")]
    ReplyMessageIdInvalid,
    #[error("the quote is longer than {max} code points", max = crate::limits::MAX_QUOTE_TEXT_CODE_POINTS)]
    QuoteTextInvalid,
    #[error("the quote offset is out of range")]
    QuoteOffsetInvalid,
    #[error("stories cannot be replied to in a private chat")]
    StoryIdInvalid,
    #[error("monoforum replies are not supported in a private chat")]
    ReplyToMonoforumPeerInvalid,
    #[error("todo and poll item replies are not supported")]
    PollOptionInvalid,
    #[error("scheduled messages are not supported")]
    ScheduleDateInvalid,
    #[error("send_as is only valid in channels")]
    SendAsPeerInvalid,
    #[error("reply markup is only for bots")]
    ReplyMarkupInvalid,
    #[error("quick reply shortcuts are not supported")]
    ShortcutInvalid,
    #[error("message effects are not supported")]
    EffectIdInvalid,
    #[error("paid messages are not supported")]
    PaymentUnsupported,
    #[error("suggested posts are only for channels")]
    SuggestedPostPeerInvalid,
    #[error("the media, its mime type or an attribute is invalid")]
    MediaInvalid,
    #[error("the caption is longer than {max} code points", max = crate::media::limits::MAX_CAPTION_CODE_POINTS)]
    MediaCaptionTooLong,
    #[error("an album has more than {max} items", max = crate::media::limits::MAX_ALBUM_ITEMS)]
    MultiMediaTooLong,
    #[error("no media was given")]
    MediaEmpty,
    #[error("the photo is unknown or not visible to this account")]
    PhotoInvalid,
    #[error("the document is unknown or not visible to this account")]
    DocumentInvalid,
    #[error("the file location is unknown or not visible to this account")]
    FileIdInvalid,
    #[error("the file reference expired: fetch the message again")]
    FileReferenceExpired,
    #[error("the photo is too small, too large or too elongated")]
    PhotoInvalidDimensions,
    #[error("the file is not an image that can be processed")]
    ImageProcessFailed,
    #[error("the source message is protected from forwarding")]
    ChatForwardsRestricted,
    #[error("only the author can edit a message")]
    MessageAuthorRequired,
    #[error("the message was not changed")]
    MessageNotModified,
    #[error("the other user blocked this account")]
    EditMessagesForbidden,
    #[error("revoking would reach a user who blocked this account")]
    DeleteMessagesForbidden,
    #[error("this account blocked the user")]
    YouBlockedUser,
    #[error("the message has not been read yet")]
    MessageNotReadYet,
    #[error("the search query is too long")]
    SearchQueryInvalid,
    #[error("the limit is out of range")]
    LimitInvalid,
    #[error("the offset peer is invalid")]
    OffsetPeerIdInvalid,
    #[error("the folder id must be 0 or 1")]
    FolderIdInvalid,
    #[error("the phone number is invalid")]
    PhoneNumberInvalid,
    #[error("the first name is invalid")]
    FirstNameInvalid,
    #[error("the last name is invalid")]
    LastNameInvalid,
    #[error("the phone number is not registered")]
    PhoneNotOccupied,
    #[error("a user cannot block themselves")]
    ContactIdInvalid,
    #[error("the pts is ahead of the account's state")]
    PersistentTimestampInvalid,
    #[error("the dialog filter is unknown")]
    FilterIdInvalid,
    #[error("too many pinned dialogs in this folder")]
    PinnedDialogsTooMuch,
    #[error("the chat has no dialog")]
    PeerHistoryEmpty,
    #[error("too many peers in the dialog filter")]
    FilterIncludeTooMuch,
    #[error("the dialog filter includes nothing")]
    FilterIncludeEmpty,
    #[error("the dialog filter title is empty or too long")]
    FilterTitleEmpty,
    #[error("too many dialog filters")]
    DialogFiltersTooMuch,
    #[error("the contact's first name is empty")]
    ContactNameEmpty,
    #[error("a mention names a user this account cannot reach")]
    EntityMentionUserInvalid,
    #[error("the dialog filter emoticon is too long or holds control characters")]
    EmoticonInvalid,
    #[error("the change would store an event of more than {max} bytes", max = crate::limits::MAX_EVENT_PAYLOAD_BYTES)]
    EventTooLarge,
}
