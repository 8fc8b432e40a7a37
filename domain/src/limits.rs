//! Every limit of the seed's "Current Limits" section, by name. Tests pin each at its boundary.

/// Longest message text, in Unicode code points (`MESSAGE_TOO_LONG` past it).
pub const MAX_MESSAGE_TEXT_CODE_POINTS: usize = 4096;
/// Longest reply quote, in code points (TDesktop's `quote_length_max`; `QUOTE_TEXT_INVALID` past it).
pub const MAX_QUOTE_TEXT_CODE_POINTS: usize = 1024;
/// A quote offset points into the replied-to text, so it cannot exceed the longest text.
pub const MAX_QUOTE_OFFSET: i32 = MAX_MESSAGE_TEXT_CODE_POINTS as i32;
/// Most messages one `messages.forwardMessages` call may forward.
pub const MAX_FORWARD_IDS: usize = 100;
/// Most ids one `messages.deleteMessages` call may name.
pub const MAX_DELETE_MESSAGE_IDS: usize = 1000;
/// Most messages one `messages.deleteHistory` call deletes; more left means `offset > 0`.
pub const MAX_DELETE_HISTORY_BATCH: usize = 1000;
/// `add_offset` of history and search queries is clamped into `[-MAX_ADD_OFFSET, MAX_ADD_OFFSET]`.
pub const MAX_ADD_OFFSET: i32 = 100;
/// Most messages a history or search page returns.
pub const MAX_HISTORY_LIMIT: i32 = 100;
/// Most messages `messages.getMessages` returns in one call (Telegram's own cap).
pub const MAX_GET_MESSAGES_IDS: usize = 200;
/// Most dialogs one `messages.getDialogs` page returns.
pub const MAX_DIALOGS_LIMIT: i32 = 100;
/// Events in one `updates.getDifference` answer; more pending gives `updates.differenceSlice`.
pub const DIFFERENCE_SLICE_EVENTS: i64 = 100;
/// Most formatting entities one text may carry.
pub const MAX_MESSAGE_ENTITIES: usize = 100;
/// Most users one `users.getUsers` call resolves.
pub const MAX_GET_USERS_IDS: usize = 200;
/// Most peers one `messages.getPeerDialogs` call names.
pub const MAX_PEER_DIALOGS: usize = 100;
/// Longest search query, in code points.
pub const MAX_SEARCH_QUERY_CODE_POINTS: usize = 256;
/// Sends per user per minute unless configured otherwise (`FLOOD_WAIT_X` past it).
pub const DEFAULT_SEND_RATE_PER_MINUTE: u32 = 30;
/// Longest first name, in code points (Telegram's limit).
pub const MAX_FIRST_NAME_CODE_POINTS: usize = 64;
/// Longest last name, in code points.
pub const MAX_LAST_NAME_CODE_POINTS: usize = 64;
/// Blocked users per `contacts.getBlocked` page.
pub const MAX_BLOCKED_LIMIT: i32 = 100;
/// Pinned dialogs in the main list (Telegram's `pinned_dialogs_count_max` for non-premium accounts).
pub const MAX_PINNED_DIALOGS_MAIN: usize = 5;
/// Pinned dialogs in the archive (`pinned_infolder_count_max`).
pub const MAX_PINNED_DIALOGS_ARCHIVE: usize = 100;
/// Custom dialog filters per account (`dialog_filters_limit_default`, non-premium).
pub const MAX_DIALOG_FILTERS: usize = 10;
/// Pinned plus included peers of one filter (`dialog_filters_chats_limit_default`); excluded peers
/// have the same limit of their own.
pub const MAX_DIALOG_FILTER_PEERS: usize = 100;
/// Longest dialog filter title, in code points (TDesktop's limit).
pub const MAX_DIALOG_FILTER_TITLE_CODE_POINTS: usize = 12;
/// Contacts one `contacts.importContacts` call may import.
pub const MAX_IMPORT_CONTACTS: usize = 1000;
/// Longest `messageEntityTextUrl.url`, in bytes. 2048 is the longest URL browsers and TDesktop
/// handle everywhere (RFC 7230 suggests at least 8000 for servers, but no link a person sends is
/// longer). Bytes rather than code points: real URLs are ASCII (IDNs in punycode, the rest
/// percent-encoded), and bytes are what the payload budget counts. `ENTITY_INVALID` past it.
pub const MAX_ENTITY_URL_BYTES: usize = 2048;
/// Longest `messageEntityPre.language`, in bytes (a language tag such as `rust` or
/// `objective-c++`; 64 leaves room for any). `ENTITY_INVALID` past it.
pub const MAX_ENTITY_LANGUAGE_BYTES: usize = 64;
/// Longest dialog filter emoticon, in code points. Telegram offers a fixed set of single emoji;
/// the longest emoji sequences (ZWJ families, subdivision flags) have 7 to 10 code points.
/// `EMOTICON_INVALID` past it.
pub const MAX_DIALOG_FILTER_EMOTICON_CODE_POINTS: usize = 16;
/// Most bytes one event payload may take as compact JSON. Appending a bigger event is refused
/// with `EVENT_TOO_LARGE` and the request changes nothing.
///
/// Sizing: the largest ordinary payload is a `new_message` of 4096 code points (at most 4 bytes
/// each, up to 6 when JSON escapes a control character: 24 KiB), 100 entities (about 60 bytes each
/// without strings: 6 KiB), a quote of 1024 code points (6 KiB) with its 100 entities (6 KiB):
/// under 48 KiB. Every URL at [`MAX_ENTITY_URL_BYTES`] in every entity of text and quote (twice
/// 100 × ~4.2 KiB escaped) could reach about 0.9 MB; no real message does, and this cap refuses
/// it. 256 KiB keeps every real message and stays far below the 1 MB Kafka record limit (the
/// producer is set to [`MAX_EVENT_PAYLOAD_BYTES`] plus [`LOG_RECORD_ENVELOPE_BYTES`]).
pub const MAX_EVENT_PAYLOAD_BYTES: usize = 256 * 1024;
/// Room for the log record's fields around its payload (user_id, pts, kind, times: under 300
/// bytes) and Kafka's own framing of one record (key, headers, batch header: under 100 bytes),
/// with a wide margin.
pub const LOG_RECORD_ENVELOPE_BYTES: usize = 16 * 1024;
