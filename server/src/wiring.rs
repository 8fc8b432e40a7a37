//! Builds the application from configuration and starts the HTTP front.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use application::ports::Store;
use application::{App, AppConfig};
use infrastructure::kafka::ConsumerStatus;
use infrastructure::postgres::read_pool::ReadPool;
use infrastructure::postgres::replica::{Freshness, Replica, REPLICA_CONNECT_TIMEOUT};
use infrastructure::postgres::revocations::Acks;
use infrastructure::relay::RelayStatus;
use infrastructure::{
    access_hash_key, PgAccounts, PgCodeStore, PgStore, RedisRateLimiter, WebhookCodes,
};
use sqlx::PgPool;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::feed::{sink_kind, Feed};
use crate::gateway::Gateway;
use crate::http;
use crate::mtproto::{MtprotoMetrics, PublicKeyInfo};

/// Connects to Postgres, applies pending migrations and wires the adapters into an [`App`].
pub async fn build(config: &Config) -> anyhow::Result<(App, PgPool)> {
    let (app, pool, _, _) = build_with_acks(config).await?;
    Ok((app, pool))
}

/// The read replica of `DATABASE_READ_URL`, checked to be the primary's cluster (a standby or the
/// primary itself): another database's reads could not be waited for.
async fn replica(config: &Config, primary: &PgPool) -> anyhow::Result<Option<Arc<Replica>>> {
    let Some(url) = &config.database_read_url else {
        return Ok(None);
    };
    if config.db_read_max_connections == 0 {
        anyhow::bail!("DATABASE_READ_URL needs PTSLOG_DB_READ_MAX_CONNECTIONS above 0");
    }
    let pool = ReadPool::with_connect_timeout(
        url,
        config.db_read_max_connections,
        config.limits.db,
        REPLICA_CONNECT_TIMEOUT,
    )
    .with_context(|| format!("the replica's read pool for {}", redact(url)))?;
    let replica = Replica::new(pool, Freshness::new());
    let same = replica
        .same_cluster(primary)
        .await
        .with_context(|| format!("checking DATABASE_READ_URL {}", redact(url)))?;
    if !same {
        anyhow::bail!(
            "DATABASE_READ_URL {} is not a streaming replica of DATABASE_URL (another system identifier)",
            redact(url)
        );
    }
    replica
        .freshness()
        .wait_for_everything_committed(primary)
        .await
        .context("the primary's WAL position")?;
    Ok(Some(Arc::new(replica)))
}

/// Connections of the admin pool: an operator's export or status read, rarely more than one.
const ADMIN_POOL_CONNECTIONS: u32 = 2;

/// Connections of the feed's pool: the fanout's cache misses (users, contact links), one record
/// at a time.
const FEED_POOL_CONNECTIONS: u32 = 2;

/// The application, the write pool, the revocation acknowledgements and the read replica (if
/// `DATABASE_READ_URL` names one).
async fn build_with_acks(
    config: &Config,
) -> anyhow::Result<(App, PgPool, Arc<Acks>, Option<Arc<Replica>>)> {
    // Shared by the accounts adapter (endings wait on them) and the revocation listener.
    let revocation_acks = Acks::new();
    let pool = infrastructure::postgres::connect_with(
        &config.database_url,
        config.db_max_connections,
        config.limits.db,
    )
    .await
    .with_context(|| format!("connecting to Postgres at {}", redact(&config.database_url)))?;
    // Migrations may run long statements (an index on a big table): not on the serving pool.
    let unbounded = admin_pool(config)?;
    let migrated = infrastructure::migrate(&unbounded).await;
    unbounded.close().await;
    migrated.context("applying migrations")?;
    let keys = access_hash_key(&pool)
        .await
        .context("loading the access hash key")?;
    let limiter = RedisRateLimiter::new(
        &config.redis_url,
        config.redis_prefix.clone(),
        config.send_rate_per_minute,
    )
    .context("setting up the Redis rate limiter")?
    .with_phone_lookups_per_day(config.limits.phone_lookups_per_day);
    let limiter = match &config.redis_ca_file {
        None => limiter,
        Some(path) => {
            let pem = std::fs::read(path)
                .with_context(|| format!("reading PTSLOG_REDIS_CA_FILE {}", path.display()))?;
            limiter
                .with_root_ca(&config.redis_url, pem)
                .context("PTSLOG_REDIS_CA_FILE")?
        }
    };
    let replica = replica(config, &pool).await?;
    // Reads on their own pool (0: on the write pool), connected on first use.
    let store: Arc<dyn Store> = if config.db_read_max_connections == 0 {
        Arc::new(PgStore::new(pool.clone()))
    } else {
        let read = ReadPool::new(
            &config.database_url,
            config.db_read_max_connections,
            config.limits.db,
        )
        .with_context(|| format!("the read pool for {}", redact(&config.database_url)))?;
        let store = PgStore::with_read_pool(pool.clone(), read);
        let store = Arc::new(match &replica {
            Some(replica) => store.with_replica(replica.clone()),
            None => store,
        });
        if config.db_warm_read_connections {
            let warming = store.clone();
            tokio::spawn(async move {
                match warming.warm_read_connections().await {
                    Ok(n) => tracing::debug!(connections = n, "read connections warmed"),
                    Err(e) => tracing::warn!(
                        error = %e,
                        "warming the read connections failed; they warm on first use"
                    ),
                }
            });
        }
        store
    };
    let accounts = PgAccounts::new(pool.clone()).with_acks(revocation_acks.clone());
    let app = App::new(
        store,
        Arc::new(match &replica {
            Some(replica) => accounts.with_freshness(replica.freshness().clone()),
            None => accounts,
        }),
        Arc::new(limiter),
        keys,
        AppConfig {
            dev_login: config.dev_login,
            max_concurrent_requests_per_account: config.limits.account_max_concurrent_requests,
            account_queue_wait: config.limits.account_queue_wait,
        },
    )
    .with_sign_in(sign_in_ports(config, &pool)?)
    .with_passwords(Arc::new(
        infrastructure::postgres::passwords::PgPasswords::new(pool.clone()),
    ))
    .with_media_catalog(Arc::new(
        infrastructure::postgres::media_catalog::PgMediaCatalog::new(pool.clone()),
    ));
    // Photos and documents (docs/media.md): made from uploads into the same blob store.
    let files = file_ports(config, &pool)?;
    let making = application::media::MediaMaking {
        blobs: files.blobs.clone(),
        photos: Arc::new(infrastructure::photos::ImagePhotos),
    };
    let app = app.with_files(files).with_media_making(making);
    let app = match config.send_batch {
        Some(batching) => app.with_send_batching(batching),
        None => app,
    };
    Ok((app, pool, revocation_acks, replica))
}

/// File bytes: the configured blob store (which also stages upload parts) and the Postgres
/// bookkeeping of pending uploads.
fn file_ports(config: &Config, pool: &PgPool) -> anyhow::Result<application::media::FilePorts> {
    let (blobs, staging) = config.file_storage.open()?;
    Ok(application::media::FilePorts {
        blobs,
        staging,
        pending: Arc::new(infrastructure::postgres::uploads::PgPendingUploads::new(
            pool.clone(),
        )),
        limits: config.file_storage.upload_limits,
    })
}

/// How often expired pending uploads are swept (each instance sweeps; `SKIP LOCKED` keeps them
/// apart). Small against the pending lifetime, so parts outlive it by at most this much.
pub const UPLOAD_SWEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);

async fn sweep_uploads(app: App) {
    let mut every = tokio::time::interval(UPLOAD_SWEEP_INTERVAL);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        match app
            .sweep_uploads(i64::from(application::clock::unix_now()))
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(files = n, "expired pending uploads swept"),
            Err(e) => tracing::warn!(error = %e, "sweeping expired uploads failed"),
        }
    }
}

/// Sign-in codes: kept in Postgres, delivered by the webhook when configured, else by the
/// development provider when development sign-in is on, else by nothing (sendCode refused).
fn sign_in_ports(
    config: &Config,
    pool: &PgPool,
) -> anyhow::Result<application::commands::sign_in::SignInPorts> {
    use application::login_codes::{CodeLimits, LoginCodes};
    let limits = CodeLimits::default();
    let delivery: Option<Arc<dyn LoginCodes>> =
        match (&config.login_webhook_url, &config.dev_login_code) {
            (Some(url), _) => Some(Arc::new(
                WebhookCodes::new(url, limits.lifetime).context("PTSLOG_LOGIN_WEBHOOK_URL")?,
            )),
            (None, Some(code)) => crate::mtproto::DevCode::new(code, config.dev_login)
                .map(|c| Arc::new(c) as Arc<dyn LoginCodes>),
            (None, None) => None,
        };
    Ok(application::commands::sign_in::SignInPorts {
        store: Arc::new(PgCodeStore::new(pool.clone())),
        delivery,
        limits,
    })
}

/// A pool without the serving pool's `statement_timeout` (its idle-in-transaction timeout kept),
/// connected on first use: for migrations and the admin endpoints, whose export is one statement
/// that streams for as long as the log is long. Their statements run rarely, so they are planned
/// the server's way.
fn admin_pool(config: &Config) -> anyhow::Result<PgPool> {
    let settings = infrastructure::postgres::SessionSettings {
        statement: None,
        plan_cache_mode: None,
        ..config.limits.db
    };
    infrastructure::postgres::connect_lazy_with(
        &config.database_url,
        ADMIN_POOL_CONNECTIONS,
        settings,
    )
    .with_context(|| format!("the admin pool for {}", redact(&config.database_url)))
}

/// A started server.
pub struct Running {
    pub addr: SocketAddr,
    /// The admin listener's address when `PTSLOG_ADMIN_ADDR` puts the admin endpoints apart;
    /// `None` when they are on `addr` (or off).
    pub admin_addr: Option<SocketAddr>,
    pub app: App,
    pub pool: PgPool,
    pub task: JoinHandle<std::io::Result<()>>,
    pub gateway: Arc<Gateway>,
    pub relay_status: Arc<RelayStatus>,
    pub consumer_status: Option<Arc<ConsumerStatus>>,
    /// Empty until [`Running::start_feed`].
    pub feed: Feed,
    /// The MTProto server key, once [`Running::start_mtproto`] ran.
    pub mtproto_key: Arc<OnceLock<PublicKeyInfo>>,
    /// The MTProto listener, once started.
    pub mtproto: Option<(SocketAddr, JoinHandle<()>)>,
    /// The MTProto front's counters (zero until it starts), shown by `/metrics`.
    pub mtproto_metrics: Arc<MtprotoMetrics>,
    /// Closes the live connections of devices logged out on any instance.
    pub device_endings: JoinHandle<()>,
    /// Drops expired pending uploads every [`UPLOAD_SWEEP_INTERVAL`].
    pub upload_sweep: JoinHandle<()>,
    /// Keeps the token cache true (and live) while it listens for revoked tokens.
    pub revocations: JoinHandle<()>,
}

impl Running {
    /// Starts feeding the gateway (the relay candidate, and the Kafka consumer with a broker), so
    /// connected devices get live pushes. `ptslog serve` always does; [`start`] leaves it to the
    /// caller so tests and benchmarks that do not need pushes hold no replication slot.
    pub fn start_feed(&mut self, config: &Config) -> anyhow::Result<()> {
        self.feed = Feed::start(
            config,
            &self.gateway,
            self.relay_status.clone(),
            self.consumer_status.clone(),
        )?;
        Ok(())
    }

    /// Starts the MTProto listener on `config.mtproto_addr` (unless it is off): loads or creates
    /// the server's RSA key, prints its public half and fingerprint, and serves clients through
    /// the same application as the JSON API. `ptslog serve` always does; tests opt in.
    pub async fn start_mtproto(&mut self, config: &Config) -> anyhow::Result<Option<SocketAddr>> {
        let Some(addr) = config.mtproto_addr else {
            return Ok(None);
        };
        let (info, task) = crate::mtproto::start(
            config,
            addr,
            self.app.clone(),
            self.gateway.clone(),
            self.pool.clone(),
            self.mtproto_metrics.clone(),
        )
        .await?;
        let local: SocketAddr = info.address.parse().unwrap_or(addr);
        tracing::info!(
            addr = %info.address,
            fingerprint = %info.fingerprint_hex,
            "MTProto front is serving; server public key:\n{}",
            info.pem
        );
        let _ = self.mtproto_key.set(info);
        self.mtproto = Some((local, task));
        Ok(Some(local))
    }

    /// Stops the feed cleanly (the replication slot is released) and the HTTP task.
    pub async fn shutdown(mut self) {
        self.feed.stop().await;
        if let Some((_, task)) = self.mtproto.take() {
            task.abort();
        }
        self.device_endings.abort();
        self.upload_sweep.abort();
        self.revocations.abort();
        self.task.abort();
    }
}

/// Builds everything and serves HTTP on `config.http_addr` (port 0 picks a free one) until the task
/// is aborted: the JSON API, the push WebSocket and the operations endpoints. Pushes flow once
/// [`Running::start_feed`] is called.
pub async fn start(config: &Config) -> anyhow::Result<Running> {
    let (app, pool, revocation_acks, replica) = build_with_acks(config).await?;
    // The fanout reads users and contact links on the feed's runtime. A socket is served by the
    // I/O driver of the runtime that opened it, so a connection of the serving pool, opened by a
    // request, would make the feed wait for the request workers (the hazard the feed thread is
    // there to remove; `push::commits_reach_device_buffers_while_every_request_worker_is_busy`
    // caught it). Its own pool, used only by the feed, has only connections the feed opened.
    let feed_pool = infrastructure::postgres::connect_lazy_with(
        &config.database_url,
        FEED_POOL_CONNECTIONS,
        config.limits.db,
    )
    .with_context(|| format!("the feed's pool for {}", redact(&config.database_url)))?;
    let gateway = Arc::new(Gateway::new(
        Arc::new(PgStore::new(feed_pool)),
        app.access_hash_key().clone(),
        config.push_buffer,
        config.limits.account_max_push_sockets,
    ));
    let relay_status = Arc::new(RelayStatus::new(if config.relay {
        sink_kind(config)
    } else {
        "none"
    }));
    let consumer_status = config
        .kafka_brokers
        .as_ref()
        .map(|_| Arc::new(ConsumerStatus::default()));
    let listener = TcpListener::bind(config.http_addr)
        .await
        .with_context(|| format!("binding {}", config.http_addr))?;
    let addr = listener.local_addr()?;
    let mtproto_metrics = Arc::new(MtprotoMetrics::default());
    let ops = http::ops::Ops {
        relay: relay_status.clone(),
        consumer: consumer_status.clone(),
        gateway: Some(gateway.clone()),
        database: Some(pool.clone()),
        mtproto: Some(mtproto_metrics.clone()),
        send_batches: app.send_batch_counters(),
        replica,
    };
    let mtproto_key = Arc::new(OnceLock::new());
    let admin = config
        .admin_token
        .clone()
        .map(|token| {
            admin_pool(config).map(|pool| http::admin::AdminState {
                pool,
                token: Arc::new(token),
            })
        })
        .transpose()?;
    if config.ops_on_admin_only && (admin.is_none() || config.admin_addr.is_none()) {
        anyhow::bail!(
            "PTSLOG_OPS_ON_ADMIN_ONLY needs the admin listener (PTSLOG_ADMIN_ADDR and PTSLOG_ADMIN_TOKEN)"
        );
    }
    // Apart from the public listener when PTSLOG_ADMIN_ADDR says so.
    let (public_admin, admin_listener) = match (admin, config.admin_addr) {
        (Some(admin), Some(admin_addr)) => {
            let listener = TcpListener::bind(admin_addr)
                .await
                .with_context(|| format!("binding the admin listener {admin_addr}"))?;
            let mut router = http::admin::router(admin);
            if config.ops_on_admin_only {
                // Unauthenticated like on the public listener: scrapers and probes reach the
                // private listener only.
                router = router.merge(http::ops::router(ops.clone()));
            }
            (None, Some((listener, router)))
        }
        (admin, _) => (admin, None),
    };
    let admin_addr = match &admin_listener {
        Some((l, _)) => Some(l.local_addr()?),
        None => None,
    };
    let router = http::router(http::HttpState {
        app: app.clone(),
        pool: pool.clone(),
        gateway: gateway.clone(),
        ops,
        mtproto_key: mtproto_key.clone(),
        admin: public_admin,
        serve_ops: !config.ops_on_admin_only,
    });
    // One task serves both listeners, so aborting it stops both.
    let limits = config.limits.http;
    let task = tokio::spawn(async move {
        match admin_listener {
            None => http::serve::serve(listener, router, limits).await,
            Some((admin_listener, admin_router)) => {
                tokio::try_join!(
                    http::serve::serve(listener, router, limits),
                    http::serve::serve(admin_listener, admin_router, limits)
                )?;
                Ok(())
            }
        }
    });
    let device_endings = tokio::spawn(crate::gateway::device_endings::listen(
        pool.clone(),
        gateway.hub.clone(),
    ));
    let upload_sweep = tokio::spawn(sweep_uploads(app.clone()));
    let revocations = tokio::spawn(infrastructure::postgres::revocations::listen(
        pool.clone(),
        app.caller_cache(),
        revocation_acks,
    ));
    Ok(Running {
        device_endings,
        upload_sweep,
        revocations,
        addr,
        admin_addr,
        app,
        pool,
        task,
        gateway,
        relay_status,
        consumer_status,
        feed: Feed::default(),
        mtproto_key,
        mtproto: None,
        mtproto_metrics,
    })
}

/// A connection URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..scheme + 3], user, &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            super::redact("postgres://u:secret@h/db"),
            "postgres://u:***@h/db"
        );
        assert_eq!(super::redact("postgres://u@h/db"), "postgres://u@h/db");
    }
}
