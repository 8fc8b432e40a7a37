//! Integration tests of the Postgres and Redis adapters and the projectors, against real servers:
//! `PTSLOG_TEST_DATABASE_URL` (each test makes its own database) and `PTSLOG_TEST_REDIS_URL`.

mod accounts;
mod common;
mod log;
mod migrate;
mod projections;
mod rate_limiter;
mod rebuild_verify;
mod store;
mod write_tx;
