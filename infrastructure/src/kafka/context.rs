//! librdkafka's callbacks: its log lines go to `tracing`, and its errors update what health
//! reports about the broker.

use std::sync::Arc;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{ConsumerContext, Rebalance};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

use super::consumer::ConsumerStatus;
use crate::relay::{BrokerState, RelayStatus};

fn log(level: RDKafkaLogLevel, fac: &str, message: &str) {
    // librdkafka reports every failed connection attempt as an error; while a broker is away that is
    // one line per retry, and health/metrics already say the broker is down.
    let level = if fac == "FAIL" && matches!(level, RDKafkaLogLevel::Error) {
        RDKafkaLogLevel::Warning
    } else {
        level
    };
    match level {
        RDKafkaLogLevel::Emerg
        | RDKafkaLogLevel::Alert
        | RDKafkaLogLevel::Critical
        | RDKafkaLogLevel::Error => {
            tracing::error!(target: "librdkafka", fac, "{message}")
        }
        RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", fac, "{message}"),
        RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
            tracing::info!(target: "librdkafka", fac, "{message}")
        }
        RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", fac, "{message}"),
    }
}

/// Whether an error means the broker cannot be reached (as opposed to one bad request).
fn broker_unreachable(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::AllBrokersDown
                | RDKafkaErrorCode::BrokerTransportFailure
                | RDKafkaErrorCode::Resolve
        )
    )
}

/// The relay producer's context.
pub struct ProducerContext {
    pub status: Arc<RelayStatus>,
}

impl ClientContext for ProducerContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        log(level, fac, message)
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if broker_unreachable(&error) {
            self.status.set_broker(BrokerState::Down);
            tracing::debug!(target: "librdkafka", %error, reason, "producer cannot reach the broker");
        } else {
            tracing::warn!(target: "librdkafka", %error, reason, "producer error");
        }
    }
}

/// A gateway consumer's context.
pub struct ConsumerCtx {
    pub status: Arc<ConsumerStatus>,
}

impl ClientContext for ConsumerCtx {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        log(level, fac, message)
    }

    fn error(&self, error: KafkaError, reason: &str) {
        if error.rdkafka_error_code() == Some(RDKafkaErrorCode::AllBrokersDown) {
            self.status.all_brokers_down();
        }
        if broker_unreachable(&error) {
            self.status.set_broker(BrokerState::Down);
            tracing::debug!(target: "librdkafka", %error, reason, "consumer cannot reach the broker");
        } else {
            tracing::warn!(target: "librdkafka", %error, reason, "consumer error");
        }
    }
}

impl ConsumerContext for ConsumerCtx {
    fn post_rebalance(
        &self,
        _consumer: &rdkafka::consumer::BaseConsumer<Self>,
        rebalance: &Rebalance<'_>,
    ) {
        match rebalance {
            Rebalance::Assign(partitions) => {
                tracing::info!(partitions = partitions.count(), "consumer assigned");
                self.status.assigned(partitions.count());
            }
            Rebalance::Revoke(_) => self.status.assigned(0),
            Rebalance::Error(e) => tracing::warn!(error = %e, "consumer rebalance failed"),
        }
    }
}
