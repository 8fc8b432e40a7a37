//! Command handlers: each is one write transaction (or its part of a group commit's, send_batch)
//! that appends the events of every affected account (projected inline) and answers with what
//! the calling device needs.

pub mod authenticate;
pub(crate) mod batched_write;
pub mod block;
pub mod contacts;
pub mod delete_history;
pub mod delete_messages;
pub mod dialog_filters;
pub mod edit_message;
pub mod edit_peer_folders;
pub mod forward_messages;
pub mod login;
pub mod mark_dialog_unread;
pub(crate) mod media_input;
pub mod notify_settings;
mod outgoing;
pub mod pin_dialogs;
pub mod profile_photos;
pub mod read_history;
pub mod read_message_contents;
pub mod save_file_part;
pub mod send_batch;
pub mod send_media;
pub mod send_message;
pub mod send_options;
pub(crate) mod send_queue;
pub mod sessions;
pub mod sign_in;
pub mod take_upload;
pub mod two_step;
