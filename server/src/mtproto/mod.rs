//! The MTProto front (docs/mtproto.md): a TCP listener speaking MTProto 2.0 to Telegram clients,
//! serving the same application handlers as the JSON API. The protocol itself (transports, key
//! exchange, encrypted layer, TL) is the `mtproto` crate; this module adds sockets, the auth key
//! store, sign-in and the mapping of TL calls onto the application.

mod bootstrap;
mod calls;
mod connection;
mod connection_slots;
mod crypto_pool;
mod handshake_rate;
pub mod limits;
pub mod login_codes;
#[cfg(test)]
mod media_tl_tests;
pub mod metrics;
mod push_encoding;
mod server_key;
mod sign_in;
mod two_step;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use application::App;
use infrastructure::PgMtprotoKeys;
use mtproto::crypto::ServerKey;
use mtproto::replay::ReplayCache;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::gateway::Gateway;

pub use limits::MtprotoLimits;
pub use login_codes::DevCode;
pub use metrics::MtprotoMetrics;

use connection_slots::ConnectionSlots;
use crypto_pool::CryptoPool;
use handshake_rate::HandshakeRate;

/// How often expired temporary keys are deleted: they are refused from their expiry on anyway,
/// so this only bounds how long forgotten rows stay (TDesktop makes a new temporary key a day).
pub const KEY_SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(600);
pub use server_key::load_or_create;

/// What `GET /v1/mtproto/public-key` shows: how clients are configured to trust this server.
#[derive(Debug, Clone, Serialize)]
pub struct PublicKeyInfo {
    /// PKCS#1 `-----BEGIN RSA PUBLIC KEY-----`.
    pub pem: String,
    /// The key's fingerprint as clients compute it (signed 64-bit).
    pub fingerprint: i64,
    pub fingerprint_hex: String,
    /// The modulus and exponent as hex, for clients configured with numbers (Pyrogram forks).
    pub modulus_hex: String,
    pub exponent_hex: String,
    /// The MTProto listener, as `help.getConfig` announces it.
    pub address: String,
}

/// Everything a connection needs.
pub struct Front {
    pub app: App,
    pub gateway: Arc<Gateway>,
    pub keys: PgMtprotoKeys,
    pub server_key: ServerKey,
    /// The address `help.getConfig` announces.
    pub public_addr: SocketAddr,
    pub metrics: Arc<MtprotoMetrics>,
    pub limits: MtprotoLimits,
    /// Key exchanges started per address.
    handshake_rate: HandshakeRate,
    /// Where the key exchange's exponentiations run.
    crypto: CryptoPool,
    /// The client msg_ids served, per auth key and session, for every connection of this process.
    replay: Arc<ReplayCache>,
}

/// Binds the listener and serves connections until the task is aborted.
pub async fn start(
    config: &Config,
    addr: SocketAddr,
    app: App,
    gateway: Arc<Gateway>,
    pool: sqlx::PgPool,
    metrics: Arc<MtprotoMetrics>,
) -> anyhow::Result<(PublicKeyInfo, JoinHandle<()>)> {
    let server_key = load_or_create(&config.mtproto_key_file)?;
    let keys = PgMtprotoKeys::new(pool, config.auth_key_encryption.cipher()?);
    // Keys stored before encryption at rest are sealed now, not when their client comes back.
    match keys.seal_plaintext().await {
        Ok(0) => {}
        Ok(n) => tracing::info!(keys = n, "sealed MTProto auth keys stored in plaintext"),
        Err(e) => {
            tracing::warn!(error = %e, "sealing plaintext MTProto auth keys failed; they are sealed on load")
        }
    }
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding the MTProto listener on {addr}"))?;
    let local = listener.local_addr()?;
    let public_addr = config.mtproto_public_addr.unwrap_or(local);
    let (n, e) = server_key.public_numbers();
    let info = PublicKeyInfo {
        modulus_hex: hex::encode(n),
        exponent_hex: hex::encode(e),
        pem: server_key.public_pem(),
        fingerprint: server_key.fingerprint(),
        fingerprint_hex: format!("{:016x}", server_key.fingerprint()),
        address: public_addr.to_string(),
    };
    let front = Arc::new(Front {
        app,
        gateway,
        keys,
        server_key,
        public_addr,
        metrics,
        limits: config.mtproto_limits.clone(),
        handshake_rate: HandshakeRate::new(config.mtproto_limits.handshakes_per_minute),
        crypto: CryptoPool::new(limits::HANDSHAKE_WORKERS),
        replay: Arc::new(ReplayCache::default()),
    });
    let slots = ConnectionSlots::new(
        front.limits.max_connections,
        front.limits.max_connections_per_ip,
    );
    let task = tokio::spawn(async move {
        let mut sweep = tokio::time::interval(KEY_SWEEP_INTERVAL);
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = sweep.tick() => {
                    tokio::spawn(sweep_expired_keys(front.keys.clone()));
                    continue;
                }
            };
            match accepted {
                Ok((stream, peer)) => match slots.acquire(peer.ip()) {
                    Ok(slot) => {
                        let _ = stream.set_nodelay(true);
                        tokio::spawn(connection::serve(front.clone(), stream, peer, slot));
                    }
                    Err(e) => {
                        // Closed at once (dropped): the client sees the connection reset.
                        tracing::debug!(%peer, error = %e, "MTProto connection refused");
                        MtprotoMetrics::inc(&front.metrics.refused);
                    }
                },
                Err(e) => {
                    tracing::warn!(error = %e, "MTProto accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok((info, task))
}

async fn sweep_expired_keys(keys: PgMtprotoKeys) {
    match keys.delete_expired().await {
        Ok(0) => {}
        Ok(n) => tracing::debug!(deleted = n, "expired MTProto keys deleted"),
        Err(e) => tracing::warn!(error = %e, "deleting expired MTProto keys"),
    }
}
