//! The application layer: one handler per RPC, written against the ports in [`ports`]. Handlers take
//! a [`Caller`] and a request whose fields are the TL method's parameters, and answer with TL-shaped
//! objects from [`tl`] that both fronts (JSON and MTProto) present as they need.

pub mod account_concurrency;
pub mod app;
pub mod caller;
pub mod caller_cache;
pub mod clock;
pub mod commands;
pub mod devices;
pub mod error;
pub mod fanout;
pub mod login_codes;
pub mod media;
pub mod password_port;
pub mod ports;
pub mod queries;
pub mod resolve;
pub mod tl;

pub use account_concurrency::AccountConcurrency;
pub use app::{App, AppConfig};
pub use caller::Caller;
pub use error::AppError;
