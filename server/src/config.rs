//! Settings, from the environment; a `KEY=VALUE` file named by `--config` (or `PTSLOG_CONFIG`) fills
//! in what the environment leaves unset.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;

use anyhow::{anyhow, Context};

use crate::admin_token::AdminToken;

#[derive(Debug, Clone)]
pub struct Config {
    /// `DATABASE_URL`.
    pub database_url: String,
    /// `PTSLOG_DB_MAX_CONNECTIONS` (default 32): the write pool (write transactions, accounts,
    /// sign-in, the gateway's device listener).
    pub db_max_connections: u32,
    /// `PTSLOG_DB_READ_MAX_CONNECTIONS` (default 16): the read pool, which every read of the
    /// store uses, so reads never queue behind writers holding connections across their commits
    /// (docs/performance.md, "Reads"). 0 puts the reads on the write pool.
    pub db_read_max_connections: u32,
    /// `DATABASE_READ_URL`: a streaming (physical) standby of `DATABASE_URL` that serves the
    /// store's reads once it has replayed the reader's own writes (at most
    /// `REPLICA_CATCH_UP_WAIT`, else the read goes to the primary); its pool has
    /// `PTSLOG_DB_READ_MAX_CONNECTIONS` connections, as has the primary's read pool beside it
    /// (docs/performance.md, "A read replica"). Unset: reads on the primary.
    pub database_read_url: Option<String>,
    /// `PTSLOG_DB_WARM_READ_CONNECTIONS` (default true): at start, open every read connection and
    /// prepare the hot reads on each for every partition, in the background, so that the first
    /// calls do not pay it (docs/performance.md, "Statements addressed to the partition").
    pub db_warm_read_connections: bool,
    /// `REDIS_URL`.
    pub redis_url: String,
    /// `PTSLOG_REDIS_PREFIX`: a prefix for every Redis key (several deployments can share a Redis).
    pub redis_prefix: String,
    /// `PTSLOG_HTTP_ADDR` (default 127.0.0.1:8080).
    pub http_addr: SocketAddr,
    /// `PTSLOG_SEND_RATE_PER_MINUTE` (default 30; 0 turns the limit off).
    pub send_rate_per_minute: u32,
    /// `PTSLOG_DEV_LOGIN` (default false): development sign-in: `POST /v1/auth/login` signs in by
    /// phone alone and every code request gets the fixed `PTSLOG_DEV_LOGIN_CODE`.
    pub dev_login: bool,
    /// `PTSLOG_LOGIN_WEBHOOK_URL`: sign-in codes are POSTed as JSON to this URL (an SMS
    /// gateway's adapter); it takes precedence over the development code.
    pub login_webhook_url: Option<String>,
    /// `KAFKA_BROKERS` (`host:port[,…]`): the relay produces to and the gateway consumes from
    /// Kafka. Unset: the in-process relay feeds this process's fanout directly.
    pub kafka_brokers: Option<String>,
    /// `PTSLOG_KAFKA_TOPIC` (default `ptslog.user-updates`).
    pub kafka_topic: String,
    /// `PTSLOG_KAFKA_GROUP` (default `ptslog-gateway`): consumer group prefix; each instance adds
    /// its own random id, so every instance reads every partition.
    pub kafka_group: String,
    /// `PTSLOG_KAFKA_PARTITIONS` (default 16): partitions of the topic when the relay creates it.
    pub kafka_partitions: i32,
    /// `PTSLOG_RELAY` (default on): whether `serve` runs a relay candidate (one leader per database).
    pub relay: bool,
    /// `PTSLOG_RELAY_SLOT` (default `ptslog_relay`): the logical replication slot; slot names are
    /// per Postgres server, so databases sharing a server need different ones.
    pub relay_slot: String,
    /// `PTSLOG_FEED_THREAD` (default on): the relay and the Kafka consumer run on a thread of their
    /// own rather than on the request runtime's workers, so a busy front does not delay pushes
    /// (docs/performance.md, "Live pushes"). Off only to measure the difference.
    pub feed_thread: bool,
    /// `PTSLOG_PUSH_BUFFER` (default 256): frames buffered per connected device before it gets
    /// `updatesTooLong`.
    pub push_buffer: usize,
    /// The HTTP front's, the serving pool's and each account's limits, timeouts and caps
    /// (`PTSLOG_HTTP_*`, `PTSLOG_DB_*_TIMEOUT_MS`, `PTSLOG_ACCOUNT_*`, `PTSLOG_PHONE_LOOKUPS_PER_DAY`).
    pub limits: crate::serving_limits::ServingLimits,
    /// `PTSLOG_MTPROTO_ADDR` (default 127.0.0.1:8443; `off` disables): the MTProto listener that
    /// `ptslog serve` starts.
    pub mtproto_addr: Option<SocketAddr>,
    /// `PTSLOG_MTPROTO_PUBLIC_ADDR`: the address `help.getConfig` tells clients (default: the
    /// listener's own address).
    pub mtproto_public_addr: Option<SocketAddr>,
    /// `PTSLOG_DATA_DIR` (default `.data`): where the server keeps files it creates.
    pub data_dir: std::path::PathBuf,
    /// `PTSLOG_MTPROTO_KEY_FILE` (default `<data dir>/mtproto_rsa_key.pem`): the server's RSA key,
    /// created on first start.
    pub mtproto_key_file: std::path::PathBuf,
    /// `PTSLOG_DEV_LOGIN_CODE` (default `12345`): the code sign-in accepts while development
    /// sign-in is on; setting it without `PTSLOG_DEV_LOGIN=true` is a configuration error.
    pub dev_login_code: Option<String>,
    /// `PTSLOG_ADMIN_TOKEN`: the operator token of the `/admin/` endpoints. Unset: no admin
    /// endpoints at all.
    pub admin_token: Option<AdminToken>,
    /// `PTSLOG_ADMIN_ADDR`: serve the admin endpoints only on this address instead of the public
    /// listener (e.g. a private interface). Unset: on `PTSLOG_HTTP_ADDR`, still behind the token.
    pub admin_addr: Option<SocketAddr>,
    /// The MTProto front's connection, key-exchange and timeout limits (`PTSLOG_MTPROTO_MAX_*`,
    /// `…_HANDSHAKES_PER_MINUTE`, `…_HANDSHAKE_TIMEOUT_SECS`, `…_IDLE_TIMEOUT_SECS`; see
    /// `mtproto::limits`).
    pub mtproto_limits: crate::mtproto::MtprotoLimits,
    /// TLS and secrets at rest (docs/security.md, "TLS and secrets at rest").
    /// `PTSLOG_KAFKA_OPT_<NAME>`: librdkafka properties passed through (`security.protocol`,
    /// `sasl.*`, `ssl.*`…).
    pub kafka_properties: infrastructure::kafka::KafkaProperties,
    /// `PTSLOG_OPS_ON_ADMIN_ONLY` (default false): serve `/metrics` and `/healthz/relay` on the
    /// admin listener (`PTSLOG_ADMIN_ADDR`) only, not on the public one.
    pub ops_on_admin_only: bool,
    /// `PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY` (32 bytes, hex or base64): the key that encrypts MTProto
    /// auth keys at rest. Unset: `PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY_FILE` (default
    /// `<data dir>/mtproto_auth_key_encryption.key`), created on first start.
    pub auth_key_encryption: crate::secrets_at_rest::KeyEncryptionKeySource,
    /// `PTSLOG_REDIS_CA_FILE`: the CA (PEM) that verifies a `rediss://` Redis, instead of the
    /// system's roots.
    pub redis_ca_file: Option<std::path::PathBuf>,
    /// Where file bytes are kept and the upload quotas (`PTSLOG_BLOB_STORE`, `PTSLOG_BLOB_DIR`,
    /// `PTSLOG_S3_*`, `PTSLOG_UPLOAD_*`; see `file_storage`).
    pub file_storage: crate::file_storage::FileStorage,
    /// Group commit of sends (docs/performance.md, "Group commit"): `PTSLOG_SEND_BATCH_MAX`
    /// (sends per batch, 1–64; 0 turns batching off; default 32 if `SEND_BATCHING_BY_DEFAULT`,
    /// else 0), `PTSLOG_SEND_BATCH_WAIT_US` (how long a batch waits for more
    /// after its first, 0–10000; default 0), `PTSLOG_SEND_BATCH_COMMITTERS` (batches in flight,
    /// 1–16; default 2). `None`: each send is a transaction of its own.
    pub send_batch: Option<application::commands::send_batch::SendBatchConfig>,
}

pub const DEFAULT_HTTP_ADDR: &str = "127.0.0.1:8080";
/// The read pool's default size: reads are short (index seeks, a few tenths of a millisecond), so
/// half the write pool keeps both cores busy while leaving Postgres room for the writers.
pub const DEFAULT_DB_READ_MAX_CONNECTIONS: u32 = 16;
pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/ptslog";
pub const DEFAULT_REDIS_URL: &str = "redis://127.0.0.1:6379";
pub const DEFAULT_MTPROTO_ADDR: &str = "127.0.0.1:8443";

/// `PTSLOG_SEND_BATCH_MAX`, `PTSLOG_SEND_BATCH_WAIT_US`, `PTSLOG_SEND_BATCH_COMMITTERS`.
fn send_batch_from_vars(
    vars: &HashMap<String, String>,
) -> anyhow::Result<Option<application::commands::send_batch::SendBatchConfig>> {
    use application::commands::send_batch::{
        SendBatchConfig, DEFAULT_SEND_BATCH_MAX, SEND_BATCHING_BY_DEFAULT,
    };
    let number = |k: &str| -> anyhow::Result<Option<u64>> {
        vars.get(k)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
            .map(str::parse::<u64>)
            .transpose()
            .context(k.to_string())
    };
    let default_max = if SEND_BATCHING_BY_DEFAULT {
        DEFAULT_SEND_BATCH_MAX as u64
    } else {
        0
    };
    let max = number("PTSLOG_SEND_BATCH_MAX")?.unwrap_or(default_max);
    let defaults = SendBatchConfig::default();
    // The other knobs are checked even with batching off: a typo is refused, not kept for later.
    let config = SendBatchConfig {
        max: usize::try_from(max.max(1)).unwrap_or(usize::MAX),
        wait: number("PTSLOG_SEND_BATCH_WAIT_US")?
            .map(std::time::Duration::from_micros)
            .unwrap_or(defaults.wait),
        committers: number("PTSLOG_SEND_BATCH_COMMITTERS")?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .unwrap_or(defaults.committers),
    };
    let config = config.checked().context("PTSLOG_SEND_BATCH_*")?;
    Ok((max > 0).then_some(config))
}

/// What `ptslog serve` prints at start while development sign-in is on.
pub const DEV_LOGIN_WARNING: &str = "\
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!
!! WARNING: PTSLOG_DEV_LOGIN=true: development sign-in is ON.                 !!
!! Anyone can sign in as any phone (POST /v1/auth/login, or the fixed code    !!
!! PTSLOG_DEV_LOGIN_CODE). Never run a reachable server like this.            !!
!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!";

impl Config {
    /// Reads the environment, then the optional file.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut vars: HashMap<String, String> = HashMap::new();
        let file = file
            .map(Path::to_path_buf)
            .or_else(|| std::env::var_os("PTSLOG_CONFIG").map(Into::into));
        if let Some(path) = file {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading config file {}", path.display()))?;
            for (n, line) in text.lines().enumerate() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = line
                    .split_once('=')
                    .ok_or_else(|| anyhow!("{}:{}: expected KEY=VALUE", path.display(), n + 1))?;
                vars.insert(k.trim().to_string(), v.trim().trim_matches('"').to_string());
            }
        }
        for (k, v) in std::env::vars() {
            vars.insert(k, v);
        }
        Self::from_vars(&vars)
    }

    pub fn from_vars(vars: &HashMap<String, String>) -> anyhow::Result<Self> {
        let get = |k: &str| vars.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let parse_bool = |k: &str, default: bool| -> anyhow::Result<bool> {
            match get(k) {
                None => Ok(default),
                Some("1" | "true" | "yes" | "on") => Ok(true),
                Some("0" | "false" | "no" | "off") => Ok(false),
                Some(other) => Err(anyhow!("{k}: expected true or false, got {other:?}")),
            }
        };
        Ok(Self {
            database_url: get("DATABASE_URL")
                .unwrap_or(DEFAULT_DATABASE_URL)
                .to_string(),
            db_max_connections: get("PTSLOG_DB_MAX_CONNECTIONS")
                .map(str::parse)
                .transpose()
                .context("PTSLOG_DB_MAX_CONNECTIONS")?
                .unwrap_or(32),
            db_read_max_connections: get("PTSLOG_DB_READ_MAX_CONNECTIONS")
                .map(str::parse)
                .transpose()
                .context("PTSLOG_DB_READ_MAX_CONNECTIONS")?
                .unwrap_or(DEFAULT_DB_READ_MAX_CONNECTIONS),
            database_read_url: get("DATABASE_READ_URL").map(str::to_string),
            db_warm_read_connections: parse_bool("PTSLOG_DB_WARM_READ_CONNECTIONS", true)?,
            redis_url: get("REDIS_URL").unwrap_or(DEFAULT_REDIS_URL).to_string(),
            redis_prefix: get("PTSLOG_REDIS_PREFIX").unwrap_or("").to_string(),
            http_addr: get("PTSLOG_HTTP_ADDR")
                .unwrap_or(DEFAULT_HTTP_ADDR)
                .parse()
                .context("PTSLOG_HTTP_ADDR")?,
            send_rate_per_minute: get("PTSLOG_SEND_RATE_PER_MINUTE")
                .map(str::parse)
                .transpose()
                .context("PTSLOG_SEND_RATE_PER_MINUTE")?
                .unwrap_or(domain::limits::DEFAULT_SEND_RATE_PER_MINUTE),
            dev_login: parse_bool("PTSLOG_DEV_LOGIN", false)?,
            login_webhook_url: match get("PTSLOG_LOGIN_WEBHOOK_URL") {
                None => None,
                Some(u) => {
                    let parsed = url::Url::parse(u).context("PTSLOG_LOGIN_WEBHOOK_URL")?;
                    if !matches!(parsed.scheme(), "http" | "https") {
                        return Err(anyhow!("PTSLOG_LOGIN_WEBHOOK_URL must be an http(s) URL"));
                    }
                    Some(u.to_string())
                }
            },
            kafka_brokers: get("KAFKA_BROKERS").map(str::to_string),
            kafka_topic: get("PTSLOG_KAFKA_TOPIC")
                .unwrap_or(infrastructure::kafka::DEFAULT_TOPIC)
                .to_string(),
            kafka_group: get("PTSLOG_KAFKA_GROUP")
                .unwrap_or(infrastructure::kafka::DEFAULT_GROUP)
                .to_string(),
            kafka_partitions: match get("PTSLOG_KAFKA_PARTITIONS")
                .map(str::parse::<i32>)
                .transpose()
                .context("PTSLOG_KAFKA_PARTITIONS")?
            {
                Some(n) if n < 1 => {
                    return Err(anyhow!("PTSLOG_KAFKA_PARTITIONS must be at least 1"))
                }
                Some(n) => n,
                None => infrastructure::kafka::DEFAULT_PARTITIONS,
            },
            relay: parse_bool("PTSLOG_RELAY", true)?,
            feed_thread: parse_bool("PTSLOG_FEED_THREAD", true)?,
            relay_slot: {
                let slot = get("PTSLOG_RELAY_SLOT").unwrap_or(infrastructure::relay::DEFAULT_SLOT);
                if !infrastructure::relay::slot::valid_slot_name(slot) {
                    return Err(anyhow!(
                        "PTSLOG_RELAY_SLOT: {slot:?} must be 1-63 characters of a-z, 0-9 and _"
                    ));
                }
                slot.to_string()
            },
            push_buffer: match get("PTSLOG_PUSH_BUFFER")
                .map(str::parse::<usize>)
                .transpose()
                .context("PTSLOG_PUSH_BUFFER")?
            {
                Some(0) => return Err(anyhow!("PTSLOG_PUSH_BUFFER must be at least 1")),
                Some(n) => n,
                None => 256,
            },
            limits: crate::serving_limits::ServingLimits::from_vars(vars)?,
            send_batch: send_batch_from_vars(vars)?,
            mtproto_addr: match get("PTSLOG_MTPROTO_ADDR") {
                Some("off") => None,
                other => Some(
                    other
                        .unwrap_or(DEFAULT_MTPROTO_ADDR)
                        .parse()
                        .context("PTSLOG_MTPROTO_ADDR")?,
                ),
            },
            mtproto_public_addr: get("PTSLOG_MTPROTO_PUBLIC_ADDR")
                .map(str::parse)
                .transpose()
                .context("PTSLOG_MTPROTO_PUBLIC_ADDR")?,
            data_dir: get("PTSLOG_DATA_DIR").unwrap_or(".data").into(),
            mtproto_key_file: match get("PTSLOG_MTPROTO_KEY_FILE") {
                Some(f) => f.into(),
                None => std::path::Path::new(get("PTSLOG_DATA_DIR").unwrap_or(".data"))
                    .join("mtproto_rsa_key.pem"),
            },
            dev_login_code: match (
                parse_bool("PTSLOG_DEV_LOGIN", false)?,
                get("PTSLOG_DEV_LOGIN_CODE"),
            ) {
                (false, Some(_)) => {
                    return Err(anyhow!(
                        "PTSLOG_DEV_LOGIN_CODE is set but PTSLOG_DEV_LOGIN is not true: the development code is refused unless development sign-in is explicitly on"
                    ))
                }
                (false, None) => None,
                (true, code) => {
                    let code = code.unwrap_or(crate::mtproto::login_codes::DEFAULT_DEV_CODE);
                    if code.is_empty()
                        || code.chars().count() > application::commands::sign_in::MAX_CODE_CHARS
                    {
                        return Err(anyhow!(
                            "PTSLOG_DEV_LOGIN_CODE must be 1 to {} characters",
                            application::commands::sign_in::MAX_CODE_CHARS
                        ));
                    }
                    Some(code.to_string())
                }
            },
            admin_token: get("PTSLOG_ADMIN_TOKEN").map(AdminToken::new).transpose()?,
            admin_addr: match get("PTSLOG_ADMIN_ADDR") {
                None => None,
                Some(a) => {
                    if get("PTSLOG_ADMIN_TOKEN").is_none() {
                        return Err(anyhow!(
                            "PTSLOG_ADMIN_ADDR is set but PTSLOG_ADMIN_TOKEN is not: the admin endpoints need a token"
                        ));
                    }
                    Some(a.parse().context("PTSLOG_ADMIN_ADDR")?)
                }
            },
            mtproto_limits: crate::mtproto::MtprotoLimits::from_vars(vars)?,
            kafka_properties: infrastructure::kafka::KafkaProperties::from_vars(vars)
                .map_err(|e| anyhow!(e))?,
            ops_on_admin_only: {
                let on = parse_bool("PTSLOG_OPS_ON_ADMIN_ONLY", false)?;
                if on && get("PTSLOG_ADMIN_ADDR").is_none() {
                    return Err(anyhow!(
                        "PTSLOG_OPS_ON_ADMIN_ONLY needs PTSLOG_ADMIN_ADDR (and PTSLOG_ADMIN_TOKEN): there is no admin listener to serve them on"
                    ));
                }
                on
            },
            auth_key_encryption: crate::secrets_at_rest::KeyEncryptionKeySource::from_vars(
                get("PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY"),
                get("PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY_FILE"),
                std::path::Path::new(get("PTSLOG_DATA_DIR").unwrap_or(".data")),
            )?,
            redis_ca_file: get("PTSLOG_REDIS_CA_FILE").map(Into::into),
            file_storage: crate::file_storage::FileStorage::from_vars(
                vars,
                std::path::Path::new(get("PTSLOG_DATA_DIR").unwrap_or(".data")),
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_batching_knobs_at_their_bounds() {
        use application::commands::send_batch::{
            SendBatchConfig, MAX_SEND_BATCH, MAX_SEND_BATCH_COMMITTERS, MAX_SEND_BATCH_WAIT,
            SEND_BATCHING_BY_DEFAULT,
        };
        let batch = |pairs: &[(&str, String)]| {
            let vars: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            send_batch_from_vars(&vars)
        };
        let default = batch(&[]).unwrap();
        assert_eq!(
            default,
            SEND_BATCHING_BY_DEFAULT.then(SendBatchConfig::default)
        );
        assert_eq!(
            batch(&[("PTSLOG_SEND_BATCH_MAX", "0".into())]).unwrap(),
            None
        );
        let most = batch(&[
            ("PTSLOG_SEND_BATCH_MAX", MAX_SEND_BATCH.to_string()),
            (
                "PTSLOG_SEND_BATCH_WAIT_US",
                MAX_SEND_BATCH_WAIT.as_micros().to_string(),
            ),
            (
                "PTSLOG_SEND_BATCH_COMMITTERS",
                MAX_SEND_BATCH_COMMITTERS.to_string(),
            ),
        ])
        .unwrap()
        .expect("batching on");
        assert_eq!(
            (most.max, most.wait, most.committers),
            (
                MAX_SEND_BATCH,
                MAX_SEND_BATCH_WAIT,
                MAX_SEND_BATCH_COMMITTERS
            )
        );
        assert!(batch(&[("PTSLOG_SEND_BATCH_MAX", (MAX_SEND_BATCH + 1).to_string())]).is_err());
        assert!(batch(&[(
            "PTSLOG_SEND_BATCH_WAIT_US",
            (MAX_SEND_BATCH_WAIT.as_micros() + 1).to_string()
        )])
        .is_err());
        assert!(batch(&[(
            "PTSLOG_SEND_BATCH_COMMITTERS",
            (MAX_SEND_BATCH_COMMITTERS + 1).to_string()
        )])
        .is_err());
        assert!(batch(&[("PTSLOG_SEND_BATCH_COMMITTERS", "0".into())]).is_err());
        assert!(batch(&[("PTSLOG_SEND_BATCH_MAX", "x".into())]).is_err());
        let one = batch(&[("PTSLOG_SEND_BATCH_MAX", "1".into())]).unwrap();
        assert_eq!(one.map(|c| c.max), Some(1));
    }

    #[test]
    fn defaults_and_overrides() {
        let c = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(c.http_addr.to_string(), DEFAULT_HTTP_ADDR);
        assert_eq!(c.send_rate_per_minute, 30);
        // Production default: no development sign-in, no development code.
        assert!(!c.dev_login);
        assert!(c.dev_login_code.is_none() && c.login_webhook_url.is_none());
        let vars = HashMap::from([
            ("PTSLOG_SEND_RATE_PER_MINUTE".to_string(), "0".to_string()),
            ("PTSLOG_DEV_LOGIN".to_string(), "true".to_string()),
        ]);
        let c = Config::from_vars(&vars).unwrap();
        assert_eq!(c.send_rate_per_minute, 0);
        assert!(c.dev_login);
        assert_eq!(c.dev_login_code.as_deref(), Some("12345"));
        let bad = HashMap::from([("PTSLOG_HTTP_ADDR".to_string(), "nope".to_string())]);
        assert!(Config::from_vars(&bad).is_err());
    }

    #[test]
    fn sign_in_settings() {
        let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        // The development code is refused unless development sign-in is explicitly on.
        assert!(Config::from_vars(&vars(&[("PTSLOG_DEV_LOGIN_CODE", "11111")])).is_err());
        let c = Config::from_vars(&vars(&[
            ("PTSLOG_DEV_LOGIN", "true"),
            ("PTSLOG_DEV_LOGIN_CODE", "11111"),
        ]))
        .unwrap();
        assert_eq!(c.dev_login_code.as_deref(), Some("11111"));
        let at = "1".repeat(application::commands::sign_in::MAX_CODE_CHARS);
        let over = format!("{at}1");
        assert!(Config::from_vars(&vars(&[
            ("PTSLOG_DEV_LOGIN", "true"),
            ("PTSLOG_DEV_LOGIN_CODE", &at)
        ]))
        .is_ok());
        assert!(Config::from_vars(&vars(&[
            ("PTSLOG_DEV_LOGIN", "true"),
            ("PTSLOG_DEV_LOGIN_CODE", &over)
        ]))
        .is_err());
        let c = Config::from_vars(&vars(&[(
            "PTSLOG_LOGIN_WEBHOOK_URL",
            "http://127.0.0.1:9000/sms",
        )]))
        .unwrap();
        assert_eq!(
            c.login_webhook_url.as_deref(),
            Some("http://127.0.0.1:9000/sms")
        );
        for bad in ["not a url", "ftp://example.com/x"] {
            assert!(Config::from_vars(&vars(&[("PTSLOG_LOGIN_WEBHOOK_URL", bad)])).is_err());
        }
    }

    #[test]
    fn push_settings() {
        let c = Config::from_vars(&HashMap::new()).unwrap();
        assert_eq!(c.kafka_brokers, None);
        assert_eq!(
            (c.kafka_topic.as_str(), c.kafka_group.as_str()),
            ("ptslog.user-updates", "ptslog-gateway")
        );
        assert!(c.relay);
        assert!(c.feed_thread);
        assert_eq!(c.relay_slot, "ptslog_relay");
        let vars = HashMap::from([
            ("KAFKA_BROKERS".to_string(), "127.0.0.1:9092".to_string()),
            ("PTSLOG_RELAY".to_string(), "off".to_string()),
            ("PTSLOG_RELAY_SLOT".to_string(), "relay_2".to_string()),
            ("PTSLOG_FEED_THREAD".to_string(), "off".to_string()),
        ]);
        let c = Config::from_vars(&vars).unwrap();
        assert_eq!(c.kafka_brokers.as_deref(), Some("127.0.0.1:9092"));
        assert!(!c.relay);
        assert!(!c.feed_thread);
        assert_eq!(c.relay_slot, "relay_2");
        for (k, v) in [
            ("PTSLOG_RELAY_SLOT", "Bad-Name"),
            ("PTSLOG_PUSH_BUFFER", "0"),
            ("PTSLOG_RELAY", "maybe"),
        ] {
            assert!(
                Config::from_vars(&HashMap::from([(k.to_string(), v.to_string())])).is_err(),
                "{k}={v}"
            );
        }
    }

    #[test]
    fn tls_and_secrets_settings() {
        let c = Config::from_vars(&HashMap::new()).unwrap();
        assert!(!c.ops_on_admin_only);
        assert_eq!(c.kafka_properties.iter().count(), 0);
        let vars = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let c = Config::from_vars(&vars(&[
            ("PTSLOG_ADMIN_TOKEN", "0123456789abcdef"),
            ("PTSLOG_ADMIN_ADDR", "127.0.0.1:9090"),
            ("PTSLOG_OPS_ON_ADMIN_ONLY", "true"),
            ("PTSLOG_KAFKA_OPT_SECURITY_PROTOCOL", "SSL"),
        ]))
        .unwrap();
        assert!(c.ops_on_admin_only);
        assert_eq!(c.redis_ca_file, None);
        assert_eq!(
            c.kafka_properties.iter().collect::<Vec<_>>(),
            vec![("security.protocol", "SSL")]
        );
        // Without an admin listener there is nowhere to move them to.
        assert!(Config::from_vars(&vars(&[("PTSLOG_OPS_ON_ADMIN_ONLY", "true")])).is_err());
        assert!(
            Config::from_vars(&vars(&[("PTSLOG_KAFKA_OPT_BOOTSTRAP_SERVERS", "x:1")])).is_err()
        );
    }

    #[test]
    fn admin_settings() {
        let c = Config::from_vars(&HashMap::new()).unwrap();
        assert!(c.admin_token.is_none() && c.admin_addr.is_none());
        let vars = HashMap::from([
            (
                "PTSLOG_ADMIN_TOKEN".to_string(),
                "0123456789abcdef".to_string(),
            ),
            (
                "PTSLOG_ADMIN_ADDR".to_string(),
                "127.0.0.1:9090".to_string(),
            ),
        ]);
        let c = Config::from_vars(&vars).unwrap();
        assert!(c.admin_token.unwrap().matches("0123456789abcdef"));
        assert_eq!(c.admin_addr.unwrap().to_string(), "127.0.0.1:9090");
        for vars in [
            vec![("PTSLOG_ADMIN_TOKEN", "short")],
            vec![("PTSLOG_ADMIN_ADDR", "127.0.0.1:9090")],
        ] {
            let vars = vars
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert!(Config::from_vars(&vars).is_err(), "{vars:?}");
        }
    }
}
