use std::sync::Arc;

use domain::access_hash::AccessHashKey;

use crate::ports::{Accounts, RateLimiter, Store};

/// Settings the handlers need.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// `POST /v1/auth/login` without a code.
    pub dev_login: bool,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self { dev_login: true }
    }
}

/// The application: every RPC handler hangs off this, over the ports it was built with.
#[derive(Clone)]
pub struct App {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) accounts: Arc<dyn Accounts>,
    pub(crate) limiter: Arc<dyn RateLimiter>,
    pub(crate) keys: AccessHashKey,
    pub(crate) config: AppConfig,
}

impl App {
    pub fn new(
        store: Arc<dyn Store>,
        accounts: Arc<dyn Accounts>,
        limiter: Arc<dyn RateLimiter>,
        keys: AccessHashKey,
        config: AppConfig,
    ) -> Self {
        Self {
            store,
            accounts,
            limiter,
            keys,
            config,
        }
    }

    pub fn access_hash_key(&self) -> &AccessHashKey {
        &self.keys
    }
}
