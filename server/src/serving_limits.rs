//! The limits, timeouts and caps of the HTTP front, the serving Postgres pool and each account
//! (docs/security.md, "HTTP, WebSocket, Postgres and per-account caps"), read from the environment.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{anyhow, Context};
use infrastructure::postgres::{
    PlanCacheMode, SessionSettings, MAX_GIN_PENDING_LIST_LIMIT_KB, MIN_GIN_PENDING_LIST_LIMIT_KB,
};

use crate::http::serve::HttpLimits;

#[derive(Debug, Clone, Copy)]
pub struct ServingLimits {
    /// `PTSLOG_HTTP_HEADER_TIMEOUT_MS`, `PTSLOG_HTTP_BODY_TIMEOUT_MS`,
    /// `PTSLOG_HTTP_REQUEST_TIMEOUT_MS`, `PTSLOG_HTTP_MAX_CONNECTIONS`.
    pub http: HttpLimits,
    /// `PTSLOG_DB_STATEMENT_TIMEOUT_MS`, `PTSLOG_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS`,
    /// `PTSLOG_DB_PLAN_CACHE_MODE`, `PTSLOG_DB_GIN_PENDING_LIST_LIMIT_KB`: the serving pools'
    /// sessions (the CLI's pools have none).
    pub db: SessionSettings,
    /// `PTSLOG_ACCOUNT_MAX_CONCURRENT_REQUESTS` (0: no cap).
    pub account_max_concurrent_requests: u32,
    /// `PTSLOG_ACCOUNT_QUEUE_WAIT_MS`: how long a call past that cap waits before `FLOOD_WAIT_1`.
    pub account_queue_wait: Duration,
    /// `PTSLOG_ACCOUNT_MAX_PUSH_SOCKETS` (0: no cap).
    pub account_max_push_sockets: usize,
    /// `PTSLOG_PHONE_LOOKUPS_PER_DAY` (0: no limit).
    pub phone_lookups_per_day: u32,
}

impl Default for ServingLimits {
    fn default() -> Self {
        Self {
            http: HttpLimits::default(),
            db: SessionSettings::SERVING,
            account_max_concurrent_requests:
                application::account_concurrency::DEFAULT_MAX_CONCURRENT_REQUESTS,
            account_queue_wait: application::account_concurrency::DEFAULT_QUEUE_WAIT,
            account_max_push_sockets:
                crate::gateway::push_sockets::DEFAULT_MAX_PUSH_SOCKETS_PER_ACCOUNT,
            phone_lookups_per_day:
                infrastructure::redis_rate_limiter::DEFAULT_PHONE_LOOKUPS_PER_DAY,
        }
    }
}

impl ServingLimits {
    pub fn from_vars(vars: &HashMap<String, String>) -> anyhow::Result<Self> {
        let get = |k: &str| vars.get(k).map(String::as_str).filter(|v| !v.is_empty());
        let number = |k: &str| -> anyhow::Result<Option<u64>> {
            get(k)
                .map(str::parse::<u64>)
                .transpose()
                .context(k.to_string())
        };
        // A timeout of 0 would mean "wait forever" to hyper and Postgres: refused.
        let millis = |k: &str, default: Duration| -> anyhow::Result<Duration> {
            match number(k)? {
                Some(0) => Err(anyhow!("{k} must be at least 1 (milliseconds)")),
                Some(n) => Ok(Duration::from_millis(n)),
                None => Ok(default),
            }
        };
        let d = Self::default();
        Ok(Self {
            http: HttpLimits {
                header_timeout: millis("PTSLOG_HTTP_HEADER_TIMEOUT_MS", d.http.header_timeout)?,
                body_timeout: millis("PTSLOG_HTTP_BODY_TIMEOUT_MS", d.http.body_timeout)?,
                request_timeout: millis("PTSLOG_HTTP_REQUEST_TIMEOUT_MS", d.http.request_timeout)?,
                max_connections: match number("PTSLOG_HTTP_MAX_CONNECTIONS")? {
                    Some(0) => {
                        return Err(anyhow!("PTSLOG_HTTP_MAX_CONNECTIONS must be at least 1"))
                    }
                    Some(n) => usize::try_from(n).context("PTSLOG_HTTP_MAX_CONNECTIONS")?,
                    None => d.http.max_connections,
                },
            },
            db: SessionSettings {
                statement: Some(millis(
                    "PTSLOG_DB_STATEMENT_TIMEOUT_MS",
                    infrastructure::postgres::DEFAULT_STATEMENT_TIMEOUT,
                )?),
                idle_in_transaction: Some(millis(
                    "PTSLOG_DB_IDLE_IN_TRANSACTION_TIMEOUT_MS",
                    infrastructure::postgres::DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT,
                )?),
                plan_cache_mode: match get("PTSLOG_DB_PLAN_CACHE_MODE") {
                    None => d.db.plan_cache_mode,
                    Some(v) => Some(PlanCacheMode::parse(v).ok_or_else(|| {
                        anyhow!("PTSLOG_DB_PLAN_CACHE_MODE must be auto, force_generic_plan or force_custom_plan, not {v:?}")
                    })?),
                },
                gin_pending_list_limit_kb: match number("PTSLOG_DB_GIN_PENDING_LIST_LIMIT_KB")? {
                    None => d.db.gin_pending_list_limit_kb,
                    Some(n) => Some(
                        u32::try_from(n)
                            .ok()
                            .filter(|kb| (MIN_GIN_PENDING_LIST_LIMIT_KB..=MAX_GIN_PENDING_LIST_LIMIT_KB).contains(kb))
                            .ok_or_else(|| {
                                anyhow!("PTSLOG_DB_GIN_PENDING_LIST_LIMIT_KB must be from {MIN_GIN_PENDING_LIST_LIMIT_KB} to {MAX_GIN_PENDING_LIST_LIMIT_KB} (kB), not {n}")
                            })?,
                    ),
                },
            },
            account_max_concurrent_requests: match number("PTSLOG_ACCOUNT_MAX_CONCURRENT_REQUESTS")?
            {
                Some(n) => u32::try_from(n).context("PTSLOG_ACCOUNT_MAX_CONCURRENT_REQUESTS")?,
                None => d.account_max_concurrent_requests,
            },
            account_queue_wait: millis("PTSLOG_ACCOUNT_QUEUE_WAIT_MS", d.account_queue_wait)?,
            account_max_push_sockets: match number("PTSLOG_ACCOUNT_MAX_PUSH_SOCKETS")? {
                Some(n) => usize::try_from(n).context("PTSLOG_ACCOUNT_MAX_PUSH_SOCKETS")?,
                None => d.account_max_push_sockets,
            },
            phone_lookups_per_day: match number("PTSLOG_PHONE_LOOKUPS_PER_DAY")? {
                Some(n) => u32::try_from(n).context("PTSLOG_PHONE_LOOKUPS_PER_DAY")?,
                None => d.phone_lookups_per_day,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_overrides_and_refusals() {
        let d = ServingLimits::from_vars(&HashMap::new()).unwrap();
        assert_eq!(d.http.header_timeout, Duration::from_secs(10));
        assert_eq!(d.http.max_connections, 4096);
        assert_eq!(d.db.statement, Some(Duration::from_secs(10)));
        assert_eq!(d.db.plan_cache_mode, Some(PlanCacheMode::ForceGenericPlan));
        assert_eq!(d.db.gin_pending_list_limit_kb, Some(256));
        assert_eq!(d.account_max_concurrent_requests, 8);
        assert_eq!(d.account_max_push_sockets, 10);
        assert_eq!(d.phone_lookups_per_day, 1000);
        let c = ServingLimits::from_vars(&vars(&[
            ("PTSLOG_HTTP_HEADER_TIMEOUT_MS", "250"),
            ("PTSLOG_DB_STATEMENT_TIMEOUT_MS", "300"),
            ("PTSLOG_ACCOUNT_MAX_PUSH_SOCKETS", "0"),
            ("PTSLOG_DB_PLAN_CACHE_MODE", "auto"),
        ]))
        .unwrap();
        assert_eq!(c.db.plan_cache_mode, Some(PlanCacheMode::Auto));
        assert_eq!(c.http.header_timeout, Duration::from_millis(250));
        assert_eq!(c.db.statement, Some(Duration::from_millis(300)));
        assert_eq!(c.account_max_push_sockets, 0);
        for (k, v) in [
            ("PTSLOG_HTTP_HEADER_TIMEOUT_MS", "0"),
            ("PTSLOG_DB_STATEMENT_TIMEOUT_MS", "0"),
            ("PTSLOG_HTTP_MAX_CONNECTIONS", "0"),
            ("PTSLOG_HTTP_BODY_TIMEOUT_MS", "soon"),
            ("PTSLOG_DB_PLAN_CACHE_MODE", "generic"),
            ("PTSLOG_DB_GIN_PENDING_LIST_LIMIT_KB", "63"),
            ("PTSLOG_DB_GIN_PENDING_LIST_LIMIT_KB", "2147483648"),
        ] {
            assert!(
                ServingLimits::from_vars(&vars(&[(k, v)])).is_err(),
                "{k}={v}"
            );
        }
        // Postgres's own bounds of gin_pending_list_limit, each accepted.
        for kb in [MIN_GIN_PENDING_LIST_LIMIT_KB, MAX_GIN_PENDING_LIST_LIMIT_KB] {
            let c = ServingLimits::from_vars(&vars(&[(
                "PTSLOG_DB_GIN_PENDING_LIST_LIMIT_KB",
                &kb.to_string(),
            )]))
            .unwrap();
            assert_eq!(c.db.gin_pending_list_limit_kb, Some(kb));
        }
    }
}
