//! The composition root: configuration, wiring of adapters into the application, the HTTP front
//! and the CLI commands.

pub mod cli;
pub mod config;
pub mod http;
pub mod wiring;

pub use config::Config;
pub use wiring::{start, Running};
