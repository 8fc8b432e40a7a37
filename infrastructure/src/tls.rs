//! The process-wide rustls crypto provider. sqlx picks its provider itself, but rustls is built
//! with two (ring, and aws-lc-rs through pgwire-replication's defaults), and then a client that
//! asks rustls for "the default" (redis's `rediss://`, pgwire-replication) finds none unless one
//! is installed. ring is the one every client here is built with.

/// Installs ring as the process default; harmless when one is installed already.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests {
    use redis::{ConnectionAddr, IntoConnectionInfo};

    #[test]
    fn rediss_urls_mean_tls() {
        super::install_crypto_provider();
        let info = "rediss://:pw@cache.internal:6380/2"
            .into_connection_info()
            .unwrap();
        assert!(matches!(
            info.addr,
            ConnectionAddr::TcpTls { ref host, port: 6380, insecure: false, .. } if host == "cache.internal"
        ));
        assert_eq!(info.redis.db, 2);
        let info = "rediss://127.0.0.1:6380/#insecure"
            .into_connection_info()
            .unwrap();
        assert!(matches!(
            info.addr,
            ConnectionAddr::TcpTls { insecure: true, .. }
        ));
        let plain = "redis://127.0.0.1:6379".into_connection_info().unwrap();
        assert!(matches!(plain.addr, ConnectionAddr::Tcp(..)));
        // The limiter takes a TLS URL as it is (it connects on first use).
        assert!(crate::RedisRateLimiter::new("rediss://127.0.0.1:6380", "p:", 30).is_ok());
    }
}
