//! Query handlers: reads of the projections and the log, scoped to the caller's own rows.

pub mod dialog_organization;
pub mod download_file;
pub mod get_blocked;
pub mod get_dialogs;
pub mod get_difference;
pub mod get_file;
pub mod get_full_user;
pub mod get_history;
pub mod get_messages;
pub mod get_notify_settings;
pub mod get_outbox_read_date;
pub mod get_peer_dialogs;
pub mod get_state;
pub mod get_user_photos;
pub mod get_users;
pub mod read_file_part;
pub mod resolve_phone;
pub mod search;
