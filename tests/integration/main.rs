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
mod hostile_payloads;
mod limits;
mod mtproto;
mod ops_listener;
mod organization_push;
mod payload_properties;
mod postgres_tls;
mod projections_online;
mod push;
mod push_auth;
mod queries;
mod random_mix;
mod read;
mod redis_tls;
mod send;
mod two_processes;
