//! The composition root: configuration, wiring of adapters into the application, the HTTP front
//! and the CLI commands.

pub mod admin_token;
pub mod allocator;
pub mod calls;
pub mod cli;
pub mod config;
pub mod events;
pub mod feed;
pub mod file_storage;
pub mod gateway;
pub mod http;
pub mod metrics;
pub mod mtproto;
pub mod projections_command;
pub mod relay_command;
pub mod secrets_at_rest;
pub mod serving_limits;
pub mod wiring;

pub use config::Config;
pub use wiring::{start, Running};
