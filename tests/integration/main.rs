//! Integration tests of the whole server over HTTP, against real Postgres and Redis.

mod api;
