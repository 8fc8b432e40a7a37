//! The replication connection's settings, read from the same `DATABASE_URL` the pool uses
//! (pgwire-replication takes them one by one; sqlx does not expose the password it parsed).

use std::time::Duration;

use pgwire_replication::{ReplicationConfig, SslMode, TlsConfig};
use url::Url;

/// The publication migration 0002 creates over the log.
pub const PUBLICATION: &str = "ptslog_events";

// The URL crate leaves userinfo and path percent-encoded; a password may well contain '@' or '/'.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(b) = hex {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The TLS settings, read as sqlx reads them for the pool (so one `DATABASE_URL` means the same on
/// both connections): `sslmode`, `sslrootcert`, `sslcert`, `sslkey` (and their `ssl-…` spellings)
/// from the URL, else `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY` from the environment.
/// `verify-ca`/`verify-full` without `sslrootcert` trust the bundled web roots, as sqlx does.
fn tls_config(
    param: &dyn Fn(&str) -> Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TlsConfig, String> {
    let setting = |names: &[&str], var: &str| {
        names
            .iter()
            .find_map(|n| param(n))
            .or_else(|| env(var))
            .filter(|v| !v.is_empty())
    };
    let mode = match setting(&["sslmode", "ssl-mode"], "PGSSLMODE").as_deref() {
        None | Some("prefer") => SslMode::Prefer,
        // sqlx's `allow` tries without TLS first; pgwire-replication has no such mode.
        Some("disable" | "allow") => SslMode::Disable,
        Some("require") => SslMode::Require,
        Some("verify-ca") => SslMode::VerifyCa,
        Some("verify-full") => SslMode::VerifyFull,
        Some(other) => return Err(format!("DATABASE_URL sslmode {other:?} is not known")),
    };
    let cert = setting(&["sslcert", "ssl-cert"], "PGSSLCERT");
    let key = setting(&["sslkey", "ssl-key"], "PGSSLKEY");
    if cert.is_some() != key.is_some() {
        return Err(
            "DATABASE_URL: sslcert and sslkey go together (a client certificate needs its key)"
                .into(),
        );
    }
    Ok(TlsConfig {
        mode,
        ca_pem_path: setting(&["sslrootcert", "ssl-root-cert", "ssl-ca"], "PGSSLROOTCERT")
            .map(Into::into),
        client_cert_pem_path: cert.map(Into::into),
        client_key_pem_path: key.map(Into::into),
        ..TlsConfig::disabled()
    })
}

/// Replication settings for `slot` over the database `database_url` names.
pub fn replication_config(database_url: &str, slot: &str) -> Result<ReplicationConfig, String> {
    let url = Url::parse(database_url).map_err(|e| format!("DATABASE_URL is not a URL: {e}"))?;
    if !matches!(url.scheme(), "postgres" | "postgresql") {
        return Err(format!(
            "DATABASE_URL scheme {:?} is not postgres://",
            url.scheme()
        ));
    }
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let user = match url.username() {
        "" => param("user").unwrap_or_else(|| "postgres".into()),
        u => percent_decode(u),
    };
    let password = url
        .password()
        .map(percent_decode)
        .or_else(|| param("password"))
        .unwrap_or_default();
    // `?host=/run/postgresql` names a socket directory, as with libpq.
    let host = param("host")
        .or_else(|| {
            url.host_str()
                .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let port = match (url.port(), param("port")) {
        (Some(p), _) => p,
        (None, Some(p)) => p
            .parse()
            .map_err(|_| format!("DATABASE_URL port {p:?} is not a number"))?,
        (None, None) => 5432,
    };
    let database = match url.path().trim_start_matches('/') {
        "" => user.clone(),
        d => percent_decode(d),
    };
    let mut tls = tls_config(&param, &|name| std::env::var(name).ok())?;
    // pgwire-replication refuses verify-full with an IP host unless told the name to check; rustls
    // checks an IP literal against the certificate's IP addresses, as sqlx (and libpq) do.
    if tls.mode == SslMode::VerifyFull && host.parse::<std::net::IpAddr>().is_ok() {
        tls.sni_hostname = Some(host.clone());
    }
    Ok(
        ReplicationConfig::new(host, user, password, database, slot, PUBLICATION)
            .with_port(port)
            .with_tls(tls)
            // Timestamps must arrive in the one text form the decoder reads.
            .with_options("-c DateStyle=ISO -c TimeZone=UTC")
            .with_application_name(format!("ptslog-relay-{}", std::process::id()))
            // A confirmed position reaches Postgres within a second, so a restarted relay re-reads
            // little; keepalives from an idle stream are answered within 10 s.
            .with_status_interval(Duration::from_secs(1))
            .with_wakeup_interval(Duration::from_secs(10)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_map_to_replication_settings() {
        let c = replication_config(
            "postgres://app:p%40ss@db.example:6543/ptslog?sslmode=require",
            "s",
        )
        .unwrap();
        assert_eq!(
            (
                c.host.as_str(),
                c.port,
                c.user.as_str(),
                c.password.as_str()
            ),
            ("db.example", 6543, "app", "p@ss")
        );
        assert_eq!((c.database.as_str(), c.slot.as_str()), ("ptslog", "s"));
        assert_eq!(c.tls.mode, SslMode::Require);
        let c = replication_config("postgres://postgres@127.0.0.1:55432/ptslog_t_1", "s").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.password.as_str()),
            ("127.0.0.1", 55432, "")
        );
        assert_eq!(c.tls.mode, SslMode::Prefer);
        let c =
            replication_config("postgresql:///ptslog?host=/run/postgresql&user=me", "s").unwrap();
        assert_eq!(
            (c.host.as_str(), c.user.as_str(), c.database.as_str()),
            ("/run/postgresql", "me", "ptslog")
        );
        assert!(replication_config("mysql://x/y", "s").is_err());
        assert!(replication_config("postgres://h/db?sslmode=sometimes", "s").is_err());
    }

    #[test]
    fn tls_settings_match_what_sqlx_reads() {
        let url = |q: &str| Url::parse(&format!("postgres://h/db?{q}")).unwrap();
        let read = |q: &str, env: &[(&str, &str)]| {
            let u = url(q);
            let param = |n: &str| {
                u.query_pairs()
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.into_owned())
            };
            let env: Vec<(String, String)> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            tls_config(&param, &|n| {
                env.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone())
            })
        };
        let t = read("sslmode=verify-full&sslrootcert=/ca.pem", &[]).unwrap();
        assert_eq!(t.mode, SslMode::VerifyFull);
        assert_eq!(
            t.ca_pem_path.as_deref(),
            Some(std::path::Path::new("/ca.pem"))
        );
        assert!(t.client_cert_pem_path.is_none());
        // The environment fills in what the URL leaves out; the URL wins.
        let env = [("PGSSLMODE", "require"), ("PGSSLROOTCERT", "/env.pem")];
        let t = read("x=1", &env).unwrap();
        assert_eq!(
            (t.mode, t.ca_pem_path.unwrap()),
            (SslMode::Require, "/env.pem".into())
        );
        let t = read("ssl-mode=verify-ca&ssl-ca=/u.pem", &env).unwrap();
        assert_eq!(
            (t.mode, t.ca_pem_path.unwrap()),
            (SslMode::VerifyCa, "/u.pem".into())
        );
        let t = read("sslcert=/c.pem&sslkey=/k.pem", &[]).unwrap();
        assert!(t.is_mtls());
        assert!(read("sslcert=/c.pem", &[]).is_err());
        assert!(read("sslmode=sometimes", &[]).is_err());
        assert_eq!(read("sslmode=disable", &[]).unwrap().mode, SslMode::Disable);
    }

    #[test]
    fn percent_decoding_leaves_stray_percent_signs() {
        assert_eq!(percent_decode("a%2Fb%"), "a/b%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
