use std::sync::Arc;

use domain::access_hash::AccessHashKey;

use crate::account_concurrency::{self, AccountConcurrency};
use crate::caller_cache::CallerCache;
use crate::password_port::Passwords;
use crate::ports::{Accounts, RateLimiter, Store};

/// Settings the handlers need.
#[derive(Debug, Clone)]
pub struct AppConfig {
    /// Development sign-in: `POST /v1/auth/login` without a code (off unless configured).
    pub dev_login: bool,
    /// Calls one account may have in flight at once (0: no cap); see [`AccountConcurrency`].
    pub max_concurrent_requests_per_account: u32,
    /// How long a call past that cap waits for a place before `FLOOD_WAIT_1`.
    pub account_queue_wait: std::time::Duration,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            dev_login: false,
            max_concurrent_requests_per_account:
                account_concurrency::DEFAULT_MAX_CONCURRENT_REQUESTS,
            account_queue_wait: account_concurrency::DEFAULT_QUEUE_WAIT,
        }
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
    account_requests: AccountConcurrency,
    /// Where sign-in codes are kept and how they are delivered; `None` until
    /// [`App::with_sign_in`] (auth.sendCode answers `PHONE_CODE_PROVIDER_MISSING`).
    pub(crate) sign_in: Option<crate::commands::sign_in::SignInPorts>,
    /// Two-step verification's store (commands::two_step), given with `with_passwords`.
    pub(crate) passwords: Option<Arc<dyn Passwords>>,
    /// The catalogue of photos and documents (commands::send_media, queries::get_file), given
    /// with `with_media_catalog`; without it media calls answer `MEDIA_INVALID`.
    pub(crate) media_catalog: Option<Arc<dyn crate::media::MediaCatalog>>,
    /// What making media from uploads needs, given with `with_media_making`; without it uploaded
    /// media answers `MEDIA_INVALID` (media sent by id still works).
    pub(crate) media_making: Option<crate::media::MediaMaking>,
    /// File bytes: uploads, blobs, downloads (`media::file_ports`), given with `with_files`.
    pub(crate) files: Option<crate::media::FilePorts>,
    /// Token → caller; serves only while a revocation listener keeps it live (caller_cache.rs).
    pub(crate) callers: Arc<CallerCache>,
    /// Group commit of sends and the other writes between two accounts (commands::send_batch),
    /// when turned on with `with_send_batching`.
    pub(crate) send_batches: Option<crate::commands::send_batch::SendBatches>,
}

impl App {
    pub fn new(
        store: Arc<dyn Store>,
        accounts: Arc<dyn Accounts>,
        limiter: Arc<dyn RateLimiter>,
        keys: AccessHashKey,
        config: AppConfig,
    ) -> Self {
        let account_requests = AccountConcurrency::new(
            config.max_concurrent_requests_per_account,
            config.account_queue_wait,
        );
        Self {
            store,
            accounts,
            limiter,
            keys,
            config,
            account_requests,
            sign_in: None,
            passwords: None,
            media_catalog: None,
            media_making: None,
            files: None,
            callers: Arc::new(CallerCache::new()),
            send_batches: None,
        }
    }

    /// `messages.sendMessage` by group commit (commands::send_batch); starts its dispatcher on the
    /// current Tokio runtime.
    pub fn with_send_batching(
        mut self,
        config: crate::commands::send_batch::SendBatchConfig,
    ) -> Self {
        self.send_batches = Some(crate::commands::send_batch::SendBatches::start(
            self.store.clone(),
            config,
        ));
        self
    }

    /// Sign-in by code through these ports (both fronts use [`App::send_code`] and the rest).
    pub fn with_sign_in(mut self, ports: crate::commands::sign_in::SignInPorts) -> Self {
        self.sign_in = Some(ports);
        self
    }

    /// The per-account cap on calls in flight, shared by every front of this process: take a
    /// permit after authenticating a call and hold it until its answer is ready.
    pub fn account_requests(&self) -> &AccountConcurrency {
        &self.account_requests
    }

    /// Media messages through this catalogue.
    pub fn with_media_catalog(mut self, catalog: Arc<dyn crate::media::MediaCatalog>) -> Self {
        self.media_catalog = Some(catalog);
        self
    }

    /// Media made from uploads through these ports.
    pub fn with_media_making(mut self, making: crate::media::MediaMaking) -> Self {
        self.media_making = Some(making);
        self
    }

    /// Runs a write by group commit when it is on, otherwise in a transaction of its own.
    pub(crate) async fn write(
        &self,
        write: crate::commands::batched_write::Write,
    ) -> Result<crate::commands::batched_write::Written, crate::error::AppError> {
        match &self.send_batches {
            Some(batches) => batches.write(write).await,
            None => write.run_alone(self.store.as_ref()).await,
        }
    }

    /// Writes waiting for a batch (0 without group commit): for tests that line writes up in one
    /// batch, and for metrics.
    pub fn sends_queued(&self) -> usize {
        self.send_batches.as_ref().map_or(0, |b| b.queued())
    }

    /// What group commit has done since the start (None without group commit): `/metrics`.
    pub fn send_batch_counters(
        &self,
    ) -> Option<std::sync::Arc<crate::commands::send_batch::SendBatchCounters>> {
        self.send_batches.as_ref().map(|b| b.counters())
    }

    /// File references for media shown now.
    pub(crate) fn file_refs(&self) -> crate::tl::FileRefs<'_> {
        crate::tl::FileRefs::now(&self.keys)
    }

    /// The token cache, for the revocation listener that keeps it live (server wiring).
    pub fn caller_cache(&self) -> Arc<CallerCache> {
        self.callers.clone()
    }

    pub fn access_hash_key(&self) -> &AccessHashKey {
        &self.keys
    }
}
