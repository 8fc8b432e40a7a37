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
