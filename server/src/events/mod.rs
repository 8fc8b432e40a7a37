//! `ptslog events …` and what the admin endpoint `GET /admin/events` shares with it: reading the log
//! for analysts (docs/events.md, "Export").

pub mod command;
pub mod export;
pub mod filter;
pub mod replay;
pub mod schema;
pub mod state;
