//! The MTProto front (docs/mtproto.md): a TCP listener speaking MTProto 2.0 to Telegram clients,
//! serving the same application handlers as the JSON API. The protocol itself (transports, key
//! exchange, encrypted layer, TL) is the `mtproto` crate; this module adds sockets, the auth key
//! store, sign-in and the mapping of TL calls onto the application.

mod bootstrap;
mod calls;
mod connection;
pub mod login_codes;
pub mod metrics;
mod server_key;
mod sign_in;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use application::App;
use infrastructure::PgMtprotoKeys;
use mtproto::crypto::ServerKey;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::gateway::Gateway;

pub use login_codes::{DevCode, LoginCodes};
pub use metrics::MtprotoMetrics;
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
    /// Where sign-in codes come from (`None`: development sign-in is off and no provider is
    /// configured; auth.sendCode answers PHONE_CODE_PROVIDER_MISSING).
    pub codes: Option<Arc<dyn LoginCodes>>,
    /// The address `help.getConfig` announces.
    pub public_addr: SocketAddr,
    pub metrics: Arc<MtprotoMetrics>,
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
        keys: PgMtprotoKeys::new(pool),
        server_key,
        codes: config
            .dev_login_code
            .clone()
            .map(|c| Arc::new(DevCode(c)) as Arc<dyn LoginCodes>),
        public_addr,
        metrics,
    });
    let task = tokio::spawn(async move {
        loop {
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    tokio::spawn(connection::serve(front.clone(), stream, peer));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "MTProto accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok((info, task))
}
