//! The SSRF guard of `web_fetch`: which addresses a fetch may reach. A host
//! is resolved once; if any of its addresses is internal the fetch is
//! refused (a name that mixes public and private answers is how DNS
//! rebinding gets in), otherwise the caller connects to exactly the
//! addresses checked here. Every redirect target goes through the same
//! check. An allowlist of networks (CIDR) opens internal ranges on purpose.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::IpNet;

/// Why a fetch was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SsrfError {
    #[error("{host} resolves to {ip}, a {kind} address; web_fetch only reaches public hosts")]
    Internal {
        host: String,
        ip: IpAddr,
        kind: &'static str,
    },
    #[error("cannot resolve {host}: {message}")]
    Resolve { host: String, message: String },
    #[error("{host} has no addresses")]
    NoAddress { host: String },
}

/// An allowlist entry that is not a network.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0:?} is not an address or CIDR network")]
pub struct NotANetwork(pub String);

/// Networks a fetch may reach even though they are internal.
#[derive(Debug, Clone, Default)]
pub struct Allowlist(Vec<IpNet>);

impl Allowlist {
    /// Parses CIDRs (`10.1.0.0/16`) or single addresses (`192.168.1.5`).
    pub fn parse<'a>(items: impl IntoIterator<Item = &'a str>) -> Result<Allowlist, NotANetwork> {
        items
            .into_iter()
            .map(|s| {
                let s = s.trim();
                s.parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| NotANetwork(s.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Allowlist)
    }

    fn allows(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|n| n.contains(&ip))
    }
}

/// The kind of internal address `ip` is, or None for a public one.
pub fn internal_kind(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    }
}

fn v4_kind(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() || a == 0 => "unspecified",
        _ if ip.is_private() => "private",
        // 169.254.169.254 (cloud metadata) is in here.
        _ if ip.is_link_local() => "link-local",
        (100, 64..=127, _) => "carrier-grade NAT",
        _ if ip.is_multicast() => "multicast",
        _ if ip.is_broadcast() => "broadcast",
        (192, 0, 0) => "IETF protocol assignment",
        (198, 18..=19, _) => "benchmarking",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (240..=255, _, _) => "reserved",
        _ => return None,
    })
}

fn v6_kind(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        // ::ffff:a.b.c.d reaches the IPv4 host a.b.c.d: never let a mapped
        // form smuggle an address past the IPv4 rules.
        return Some(v4_kind(v4).unwrap_or("IPv4-mapped"));
    }
    let seg = ip.segments();
    Some(match seg[0] {
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_multicast() => "multicast",
        s if s & 0xffc0 == 0xfe80 => "link-local",
        s if s & 0xffc0 == 0xfec0 => "site-local",
        // fc00::/7, AWS's IPv6 metadata address fd00:ec2::254 among them.
        s if s & 0xfe00 == 0xfc00 => "unique local",
        // ::a.b.c.d (deprecated IPv4-compatible), NAT64 and 6to4 embed an
        // IPv4 address: judged as that address.
        0 if seg[1..6] == [0; 5] => return v4_kind(embedded_v4(seg[6], seg[7])),
        0x64 if seg[1..6] == [0xff9b, 0, 0, 0, 0] => return v4_kind(embedded_v4(seg[6], seg[7])),
        0x2002 => return v4_kind(embedded_v4(seg[1], seg[2])),
        0x2001 if seg[1] == 0x0db8 => "documentation",
        _ => return None,
    })
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))
}

/// Checks one address against the rules and the allowlist.
pub fn check_ip(host: &str, ip: IpAddr, allow: &Allowlist) -> Result<(), SsrfError> {
    match internal_kind(ip) {
        Some(kind) if !allow.allows(ip) => Err(SsrfError::Internal {
            host: host.to_string(),
            ip,
            kind,
        }),
        _ => Ok(()),
    }
}

/// `host`'s addresses, once (an IP literal, bracketed or not, as is);
/// never empty.
pub async fn lookup(host: &str, port: u16) -> Result<Vec<SocketAddr>, SsrfError> {
    let literal = host.trim_start_matches('[').trim_end_matches(']');
    let addrs: Vec<SocketAddr> = match literal.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((literal, port))
            .await
            .map_err(|e| SsrfError::Resolve {
                host: host.to_string(),
                message: e.to_string(),
            })?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(SsrfError::NoAddress {
            host: host.to_string(),
        });
    }
    Ok(addrs)
}

/// Resolves `host` and checks every address. Returns the addresses to
/// connect to (pin them: a second lookup could answer differently).
pub async fn resolve_checked(
    host: &str,
    port: u16,
    allow: &Allowlist,
) -> Result<Vec<SocketAddr>, SsrfError> {
    let addrs = lookup(host, port).await?;
    for a in &addrs {
        check_ip(host, a.ip(), allow)?;
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(s: &str) -> Option<&'static str> {
        internal_kind(s.parse().unwrap())
    }

    #[test]
    fn internal_ipv4_ranges_are_named() {
        for (ip, want) in [
            ("127.0.0.1", "loopback"),
            ("127.8.9.10", "loopback"),
            ("0.0.0.0", "unspecified"),
            ("10.0.0.1", "private"),
            ("172.16.5.4", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "carrier-grade NAT"),
            ("100.127.255.254", "carrier-grade NAT"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("198.18.0.1", "benchmarking"),
            ("240.0.0.1", "reserved"),
        ] {
            assert_eq!(kind(ip), Some(want), "{ip}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "100.128.0.1", "172.32.0.1"] {
            assert_eq!(kind(public), None, "{public}");
        }
    }

    #[test]
    fn internal_ipv6_ranges_and_embedded_ipv4_are_named() {
        for (ip, want) in [
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("fe80::1", "link-local"),
            ("fc00::1", "unique local"),
            ("fd00:ec2::254", "unique local"),
            ("ff02::1", "multicast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::ffff:169.254.169.254", "link-local"),
            ("::ffff:93.184.216.34", "IPv4-mapped"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::10.0.0.1", "private"),
            ("2002:7f00:1::", "loopback"),
            ("2001:db8::1", "documentation"),
        ] {
            assert_eq!(kind(ip), Some(want), "{ip}");
        }
        for public in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:81a::200e",
            "64:ff9b::8.8.8.8",
        ] {
            assert_eq!(kind(public), None, "{public}");
        }
    }

    #[test]
    fn an_allowlisted_network_opens_only_itself() {
        let allow = Allowlist::parse(["10.1.0.0/16", "192.168.1.5"]).unwrap();
        assert!(check_ip("h", "10.1.2.3".parse().unwrap(), &allow).is_ok());
        assert!(check_ip("h", "192.168.1.5".parse().unwrap(), &allow).is_ok());
        assert!(check_ip("h", "10.2.0.1".parse().unwrap(), &allow).is_err());
        assert!(check_ip("h", "192.168.1.6".parse().unwrap(), &allow).is_err());
        assert!(Allowlist::parse(["not-a-net"]).is_err());
    }

    #[tokio::test]
    async fn names_and_literals_that_reach_internal_hosts_are_refused() {
        let none = Allowlist::default();
        // `localhost` resolves from /etc/hosts, no network needed.
        for host in [
            "localhost",
            "127.0.0.1",
            "[::1]",
            "[::ffff:127.0.0.1]",
            "10.0.0.1",
            "169.254.169.254",
        ] {
            let err = resolve_checked(host, 80, &none).await.unwrap_err();
            assert!(matches!(err, SsrfError::Internal { .. }), "{host}: {err}");
        }
        let err = resolve_checked("localhost", 80, &none).await.unwrap_err();
        assert!(err.to_string().contains("loopback"), "{err}");
        let allow = Allowlist::parse(["127.0.0.0/8", "::1/128"]).unwrap();
        let addrs = resolve_checked("localhost", 8080, &allow).await.unwrap();
        assert!(addrs
            .iter()
            .all(|a| a.port() == 8080 && a.ip().is_loopback()));
        let public = resolve_checked("93.184.216.34", 443, &none).await.unwrap();
        assert_eq!(public, vec!["93.184.216.34:443".parse().unwrap()]);
    }
}
