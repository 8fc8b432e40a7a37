//! The process-wide rustls crypto provider. sqlx picks its provider itself, but rustls is built
//! with two (ring, and aws-lc-rs through pgwire-replication's defaults), and then a client that
//! asks rustls for "the default" (redis's `rediss://`, pgwire-replication) finds none unless one
//! is installed. ring is the one every client here is built with.

/// Installs ring as the process default; harmless when one is installed already.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
