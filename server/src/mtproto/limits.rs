//! The MTProto front's limits on connections, key exchanges and waits (docs/security.md, section
//! "mtproto-connections"), with their defaults and the settings that change them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;

use anyhow::{anyhow, Context};

/// Connections open at once (`PTSLOG_MTPROTO_MAX_CONNECTIONS`): each holds a 64 KiB read buffer
/// and its transport state, so this caps the front at well under 1 GiB; past it a new connection
/// is closed at once.
pub const MAX_CONNECTIONS: usize = 10_000;
/// Connections open at once from one IPv4 address or IPv6 /64 (`PTSLOG_MTPROTO_MAX_CONNECTIONS_PER_IP`):
/// TDesktop opens up to ~8 per account (main, uploads, downloads), so this lets a dozen clients
/// share a NAT; past it a new connection from there is closed at once.
pub const MAX_CONNECTIONS_PER_IP: usize = 128;
/// Key exchanges (`req_pq`) one IPv4 address or IPv6 /64 may start per minute
/// (`PTSLOG_MTPROTO_HANDSHAKES_PER_MINUTE`), a token bucket that refills evenly: a client makes
/// one permanent key and a temporary key a day; each exchange costs the server an RSA decryption
/// and two 2048-bit exponentiations. Loopback is not exempt (tests that start many clients raise
/// it). Past it the connection is closed.
pub const HANDSHAKES_PER_MINUTE: u32 = 60;
/// From a connection's first byte (or a later `req_pq`) to a finished key exchange or the first
/// valid encrypted message (`PTSLOG_MTPROTO_HANDSHAKE_TIMEOUT_SECS`): three round trips and the
/// client's factoring of pq take a second or two even on a slow mobile link. Past it the
/// connection is closed.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// A connection that sends nothing for this long is closed, unless `ping_delay_disconnect` set
/// another delay (`PTSLOG_MTPROTO_IDLE_TIMEOUT_SECS`): Telethon 1.45 sends a plain `ping` every
/// 60 s; Kurigram and GramJS ping every 5 and 9 s with `ping_delay_disconnect`.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The largest `disconnect_delay` of `ping_delay_disconnect` honoured (seconds); a client asking
/// more gets this. Clients ask for a little more than their ping interval (Kurigram 25 s with a
/// ping every 5 s; GramJS sends 60 000, meant as milliseconds, with a ping every 9 s), so 75 s
/// serves a ping a minute with room; before, a client could hold a silent connection an hour.
pub const MAX_PING_DISCONNECT_DELAY: i32 = 75;
/// Added to the client's `disconnect_delay`: its next ping may be a little late.
pub const DISCONNECT_SLACK: Duration = Duration::from_secs(5);
/// Key-exchange steps (RSA and Diffie-Hellman exponentiations, milliseconds each) computed at once,
/// on blocking threads, so a flood of handshakes neither stalls the async workers nor starts
/// unbounded threads; more wait their turn (within their handshake deadline).
pub const HANDSHAKE_WORKERS: usize = 2;
/// Addresses the connection and handshake counters track at once: past it idle entries are
/// dropped first; if all are busy a new address is refused (an attack from that many /64s).
pub const TRACKED_ADDRESSES: usize = 65_536;

/// The settings above, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MtprotoLimits {
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub handshakes_per_minute: u32,
    pub handshake_timeout: Duration,
    pub idle_timeout: Duration,
}

impl Default for MtprotoLimits {
    fn default() -> Self {
        Self {
            max_connections: MAX_CONNECTIONS,
            max_connections_per_ip: MAX_CONNECTIONS_PER_IP,
            handshakes_per_minute: HANDSHAKES_PER_MINUTE,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
        }
    }
}

impl MtprotoLimits {
    /// From the `PTSLOG_MTPROTO_*` variables (each at least 1).
    pub fn from_vars(vars: &HashMap<String, String>) -> anyhow::Result<Self> {
        let get = |k: &str| -> anyhow::Result<Option<u64>> {
            match vars.get(k).map(String::as_str).filter(|v| !v.is_empty()) {
                None => Ok(None),
                Some(v) => match v.parse::<u64>().context(k.to_string())? {
                    0 => Err(anyhow!("{k} must be at least 1")),
                    n => Ok(Some(n)),
                },
            }
        };
        let d = Self::default();
        Ok(Self {
            max_connections: get("PTSLOG_MTPROTO_MAX_CONNECTIONS")?
                .map_or(d.max_connections, |n| n as usize),
            max_connections_per_ip: get("PTSLOG_MTPROTO_MAX_CONNECTIONS_PER_IP")?
                .map_or(d.max_connections_per_ip, |n| n as usize),
            handshakes_per_minute: get("PTSLOG_MTPROTO_HANDSHAKES_PER_MINUTE")?
                .map_or(d.handshakes_per_minute, |n| {
                    n.min(u64::from(u32::MAX)) as u32
                }),
            handshake_timeout: get("PTSLOG_MTPROTO_HANDSHAKE_TIMEOUT_SECS")?
                .map_or(d.handshake_timeout, Duration::from_secs),
            idle_timeout: get("PTSLOG_MTPROTO_IDLE_TIMEOUT_SECS")?
                .map_or(d.idle_timeout, Duration::from_secs),
        })
    }
}

/// How long a connection may stay silent after `ping_delay_disconnect(disconnect_delay)`.
pub fn disconnect_after(delay: i32) -> Duration {
    Duration::from_secs(delay.clamp(1, MAX_PING_DISCONNECT_DELAY) as u64) + DISCONNECT_SLACK
}

/// What the per-address counters count by: an IPv4 address, or an IPv6 /64 (one subscriber's
/// prefix: anybody holds billions of addresses inside it).
pub fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_delay_disconnect_cannot_raise_the_idle_timeout_past_the_maximum() {
        assert_eq!(disconnect_after(75), Duration::from_secs(80));
        assert_eq!(disconnect_after(76), Duration::from_secs(80));
        assert_eq!(disconnect_after(3600), Duration::from_secs(80));
        assert_eq!(disconnect_after(i32::MAX), Duration::from_secs(80));
        assert_eq!(disconnect_after(10), Duration::from_secs(15));
        assert_eq!(disconnect_after(0), Duration::from_secs(6));
        assert_eq!(disconnect_after(-5), Duration::from_secs(6));
    }

    #[test]
    fn settings_default_and_override() {
        let d = MtprotoLimits::from_vars(&HashMap::new()).unwrap();
        assert_eq!(d, MtprotoLimits::default());
        assert_eq!(d.max_connections_per_ip, 128);
        let vars = |k: &str, v: &str| HashMap::from([(k.to_string(), v.to_string())]);
        let c =
            MtprotoLimits::from_vars(&vars("PTSLOG_MTPROTO_MAX_CONNECTIONS_PER_IP", "3")).unwrap();
        assert_eq!(c.max_connections_per_ip, 3);
        let c =
            MtprotoLimits::from_vars(&vars("PTSLOG_MTPROTO_HANDSHAKE_TIMEOUT_SECS", "2")).unwrap();
        assert_eq!(c.handshake_timeout, Duration::from_secs(2));
        for k in [
            "PTSLOG_MTPROTO_MAX_CONNECTIONS",
            "PTSLOG_MTPROTO_HANDSHAKES_PER_MINUTE",
            "PTSLOG_MTPROTO_IDLE_TIMEOUT_SECS",
        ] {
            assert!(MtprotoLimits::from_vars(&vars(k, "0")).is_err(), "{k}=0");
            assert!(MtprotoLimits::from_vars(&vars(k, "x")).is_err(), "{k}=x");
        }
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_prefix() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(address_key(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
    }
}
