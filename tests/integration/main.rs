//! Integration tests of the whole server over HTTP, against real Postgres and Redis.

mod api;
mod send;
mod forward;
mod edit;
mod delete;
mod read;
mod blocks;
mod dialog_organization;
mod queries;
mod contract;
mod difference;
mod random_mix;
mod two_processes;
mod push;
