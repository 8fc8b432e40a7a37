//! Integration tests of the whole server over HTTP, against real Postgres and Redis.

mod admin;
mod api;
mod blocks;
mod contract;
mod delete;
mod dialog_organization;
mod difference;
mod edit;
mod events;
mod forward;
mod limits;
mod mtproto;
mod organization_push;
mod projections_online;
mod push;
mod queries;
mod random_mix;
mod read;
mod send;
mod two_processes;
mod two_step;
