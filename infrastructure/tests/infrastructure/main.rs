//! Integration tests of the Postgres and Redis adapters and the projectors, against real servers:
//! `PTSLOG_TEST_DATABASE_URL` (each test makes its own database), `PTSLOG_TEST_REDIS_URL` and
//! `PTSLOG_TEST_KAFKA_BROKERS`.

// The library is `ptslog_infrastructure`; the rest of the workspace knows it as `infrastructure`.
extern crate ptslog_infrastructure as infrastructure;

mod accounts;
mod blobs;
mod common;
mod kafka_consumer;
mod log;
mod migrate;
mod partitions;
mod pool;
mod projections;
mod rate_limiter;
mod rebuild_verify;
mod replica;
mod store;
mod write_tx;
