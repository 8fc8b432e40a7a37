//! The domain of ptslog: identifiers, message content, the per-user event catalogue and the pure rules
//! that decide what a command may do. Nothing here performs I/O or awaits.

pub mod access_hash;
pub mod dialog_fold;
pub mod entities;
pub mod error;
pub mod events;
pub mod history_window;
pub mod ids;
pub mod limits;
pub mod media;
pub mod message;
pub mod message_entity;
pub mod message_text;
pub mod peer;
pub mod srp;

pub use error::DomainError;
pub use ids::{AuthKeyId, BoxId, MessageId, Pts, SessionId, UserId};
