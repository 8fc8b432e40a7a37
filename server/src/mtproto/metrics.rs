//! Counters of the MTProto front, rendered by `/metrics`.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct MtprotoMetrics {
    /// Connections open now.
    pub connections: AtomicI64,
    pub connections_total: AtomicU64,
    pub auth_keys_created: AtomicU64,
    /// RPC calls served (answered with a result or an error).
    pub calls: AtomicU64,
    /// Calls answered with `rpc_error`.
    pub call_errors: AtomicU64,
    /// Connections closed for bad input: a malformed frame, an unknown key, an undecryptable
    /// packet, a refused handshake step.
    pub refused: AtomicU64,
}

impl MtprotoMetrics {
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
