//! The gateway's counters for `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

use application::fanout::DeliveryReport;

use infrastructure::histogram::{Histogram, LATENCY_BUCKETS, STAGE_BUCKETS};

#[derive(Debug)]
pub struct GatewayMetrics {
    /// Frames written to devices' sockets.
    pub pushes: AtomicU64,
    pub too_long: AtomicU64,
    pub duplicates: AtomicU64,
    /// Records that did not read as a known event (left to getDifference).
    pub bad_records: AtomicU64,
    /// From the event's `committed_at` to its frame written to the socket.
    pub push_latency: Histogram,
    /// From the event's `committed_at` to the gateway holding its record (from Kafka or the
    /// in-process feed), for accounts with devices here: the relay's and the broker's part of
    /// `push_latency`; the rest is rendering and the sockets.
    pub receive_latency: Histogram,
}

impl Default for GatewayMetrics {
    fn default() -> Self {
        Self {
            pushes: AtomicU64::new(0),
            too_long: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            bad_records: AtomicU64::new(0),
            push_latency: Histogram::new(LATENCY_BUCKETS),
            receive_latency: Histogram::new(STAGE_BUCKETS),
        }
    }
}

impl GatewayMetrics {
    pub fn delivered(&self, report: &DeliveryReport) {
        self.too_long
            .fetch_add(report.too_long as u64, Ordering::Relaxed);
        self.duplicates
            .fetch_add(report.duplicates as u64, Ordering::Relaxed);
    }

    pub fn pushed(&self, committed_at_micros: i64) {
        self.pushes.fetch_add(1, Ordering::Relaxed);
        self.push_latency.observe_since(committed_at_micros);
    }

    pub fn received(&self, committed_at_micros: i64) {
        self.receive_latency.observe_since(committed_at_micros);
    }
}
