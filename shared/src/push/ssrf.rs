//! The SSRF guard for push endpoints: which addresses the gateway may POST to, checked when an
//! endpoint is saved and again on every dial (a hostname re-pointed later gets no free pass).
//!
//! - Always refused: loopback, unspecified, link-local, multicast, reserved and documentation
//!   ranges, and the cloud metadata addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200).
//! - Private ranges (RFC 1918, CGNAT 100.64/10, unique-local fc00::/7) only for an endpoint saved
//!   with `allow_private_network: true`.
//! - IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64 64:ff9b::/96,
//!   6to4 2002::/16) are judged by the IPv4 address inside; Teredo is refused.
//! - Every resolved address must pass, not just the first; redirects are never followed.
//! - An operator may allow extra ranges for local development (`FORGEBENCH_PUSH_ALLOWED_CIDRS`,
//!   empty by default, never set by the deployment template).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, RwLock};

/// An address range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Option<Cidr> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let network: IpAddr = address.trim().parse().ok()?;
        let bits = if network.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(bits);
        (prefix <= bits).then_some(Cidr { network, prefix })
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        match (self.network, address) {
            (IpAddr::V4(network), IpAddr::V4(address)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(network) & mask == u32::from(address) & mask
            }
            (IpAddr::V6(network), IpAddr::V6(address)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(network) & mask == u128::from(address) & mask
            }
            _ => false,
        }
    }

    /// Parses a comma-separated list; returns the first entry that is not a range on error.
    pub fn parse_list(text: &str) -> Result<Vec<Cidr>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| Cidr::parse(entry).ok_or_else(|| entry.to_owned()))
            .collect()
    }
}

/// What kind of destination an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    Public,
    Private,
    /// Never a push destination; the text says what it is.
    Blocked(&'static str),
}

/// The IPv4 address an IPv6 address stands for, if it embeds one.
fn embedded_ipv4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = address.to_ipv4_mapped() {
        return Some(v4);
    }
    let bits = u128::from(address);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let segments = address.segments();
    // NAT64 well-known prefix 64:ff9b::/96.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low32);
    }
    // 6to4 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
    if segments[0] == 0x2002 {
        return Some(Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32));
    }
    // Deprecated IPv4-compatible ::a.b.c.d (but not :: or ::1).
    if segments[..6] == [0, 0, 0, 0, 0, 0] && bits > 1 {
        return Some(low32);
    }
    None
}

fn in_any(address: IpAddr, ranges: &[&str]) -> bool {
    ranges
        .iter()
        .filter_map(|range| Cidr::parse(range))
        .any(|cidr| cidr.contains(address))
}

const METADATA: [&str; 3] = [
    "169.254.169.254/32",
    "100.100.100.200/32",
    "fd00:ec2::254/128",
];

/// Classifies an address after canonicalising IPv6 forms that embed an IPv4 address.
pub fn classify(address: IpAddr) -> AddressClass {
    let address = match address {
        IpAddr::V6(v6) => match embedded_ipv4(v6) {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    };
    if in_any(address, &METADATA) {
        return AddressClass::Blocked("a cloud metadata address");
    }
    match address {
        IpAddr::V4(v4) => {
            if v4.is_loopback() {
                AddressClass::Blocked("a loopback address")
            } else if in_any(address, &["0.0.0.0/8"]) {
                AddressClass::Blocked("an unspecified address")
            } else if v4.is_link_local() {
                AddressClass::Blocked("a link-local address")
            } else if v4.is_multicast() || v4.is_broadcast() || in_any(address, &["240.0.0.0/4"]) {
                AddressClass::Blocked("a multicast, broadcast or reserved address")
            } else if in_any(
                address,
                &[
                    "192.0.0.0/24",
                    "192.0.2.0/24",
                    "198.51.100.0/24",
                    "203.0.113.0/24",
                    "198.18.0.0/15",
                ],
            ) {
                AddressClass::Blocked("a special-purpose address")
            } else if v4.is_private() || in_any(address, &["100.64.0.0/10"]) {
                AddressClass::Private
            } else {
                AddressClass::Public
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                AddressClass::Blocked("a loopback address")
            } else if v6.is_unspecified() {
                AddressClass::Blocked("an unspecified address")
            } else if in_any(address, &["fe80::/10"]) {
                AddressClass::Blocked("a link-local address")
            } else if v6.is_multicast() {
                AddressClass::Blocked("a multicast address")
            } else if in_any(
                address,
                &[
                    "2001::/32",
                    "2001:db8::/32",
                    "100::/64",
                    "64:ff9b:1::/48",
                    "::/96",
                ],
            ) {
                AddressClass::Blocked("a special-purpose address")
            } else if in_any(address, &["fc00::/7", "fec0::/10"]) {
                AddressClass::Private
            } else {
                AddressClass::Public
            }
        }
    }
}

/// What a push endpoint may reach.
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    pub allow_private: bool,
    /// Operator-allowed ranges (local development); these pass whatever their class.
    pub operator_allowed: Vec<Cidr>,
}

/// Why a destination was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the url is not valid: {0}")]
    BadUrl(String),
    #[error("the host resolves to {0}, which push endpoints may never reach")]
    Blocked(&'static str),
    #[error("the host resolves to a private address; set allow_private_network (admin only)")]
    Private,
    #[error("the host could not be resolved")]
    Unresolvable,
}

impl AddressPolicy {
    pub fn operator_allows(&self, address: IpAddr) -> bool {
        self.operator_allowed
            .iter()
            .any(|cidr| cidr.contains(address))
    }

    /// Checks one address.
    pub fn check(&self, address: IpAddr) -> Result<AddressClass, Refusal> {
        if self.operator_allows(address) {
            return Ok(AddressClass::Public);
        }
        match classify(address) {
            AddressClass::Blocked(what) => Err(Refusal::Blocked(what)),
            AddressClass::Private if !self.allow_private => Err(Refusal::Private),
            class => Ok(class),
        }
    }

    /// Checks every address; one bad address refuses the whole set.
    pub fn check_all(&self, addresses: &[IpAddr]) -> Result<(), Refusal> {
        if addresses.is_empty() {
            return Err(Refusal::Unresolvable);
        }
        addresses
            .iter()
            .try_for_each(|address| self.check(*address).map(|_| ()))
    }
}

/// Resolves hostnames for push, with optional fixed answers per host (like curl's `--resolve`),
/// from `FORGEBENCH_PUSH_RESOLVE` (`host=addr[|addr];host=addr`) or set at run time.
#[derive(Debug, Clone, Default)]
pub struct HostResolver {
    overrides: Arc<RwLock<HashMap<String, Vec<IpAddr>>>>,
}

impl HostResolver {
    pub fn parse_overrides(text: &str) -> Result<HostResolver, String> {
        let resolver = HostResolver::default();
        for entry in text
            .split(';')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
        {
            let (host, addresses) = entry
                .split_once('=')
                .ok_or_else(|| format!("{entry:?} is not host=address"))?;
            let addresses = addresses
                .split('|')
                .map(|address| {
                    address
                        .trim()
                        .parse::<IpAddr>()
                        .map_err(|_| format!("{address:?} is not an address"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            resolver.set_override(host.trim(), addresses);
        }
        Ok(resolver)
    }

    /// Makes `host` resolve to `addresses` from now on.
    pub fn set_override(&self, host: &str, addresses: Vec<IpAddr>) {
        if let Ok(mut overrides) = self.overrides.write() {
            overrides.insert(host.to_ascii_lowercase(), addresses);
        }
    }

    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<IpAddr>, Refusal> {
        let fixed = self
            .overrides
            .read()
            .ok()
            .and_then(|overrides| overrides.get(&host.to_ascii_lowercase()).cloned());
        if let Some(addresses) = fixed {
            return Ok(addresses);
        }
        let addresses: Vec<IpAddr> = tokio::net::lookup_host((host, port))
            .await
            .map_err(|_| Refusal::Unresolvable)?
            .map(|socket| socket.ip())
            .collect();
        Ok(addresses)
    }
}

/// A parsed push URL: scheme, host and port, with the checks that need no network.
#[derive(Debug, Clone)]
pub struct PushUrl {
    pub url: reqwest::Url,
    pub host: Host,
    pub port: u16,
}

/// The host of a URL: an address literal or a name to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    Address(IpAddr),
    Name(String),
}

/// Longest URL accepted.
pub const MAX_URL_LEN: usize = 2048;

impl PushUrl {
    /// Parses `text`: http(s), a host, no credentials. Numeric IPv4 spellings (decimal, hex,
    /// octal, short forms) are normalised by the URL parser before any check.
    pub fn parse(text: &str) -> Result<PushUrl, Refusal> {
        if text.len() > MAX_URL_LEN {
            return Err(Refusal::BadUrl(format!(
                "longer than {MAX_URL_LEN} characters"
            )));
        }
        let mut url =
            reqwest::Url::parse(text).map_err(|error| Refusal::BadUrl(error.to_string()))?;
        if !matches!(url.scheme(), "https" | "http") {
            return Err(Refusal::BadUrl("the scheme must be https (or http)".into()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::BadUrl(
                "credentials in the url are not allowed; use auth".into(),
            ));
        }
        url.set_fragment(None);
        let host = match url.host() {
            Some(url::Host::Ipv4(v4)) => Host::Address(IpAddr::V4(v4)),
            Some(url::Host::Ipv6(v6)) => Host::Address(IpAddr::V6(v6)),
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.').to_ascii_lowercase();
                if name.is_empty() {
                    return Err(Refusal::BadUrl("the host is empty".into()));
                }
                Host::Name(name)
            }
            None => return Err(Refusal::BadUrl("a host is required".into())),
        };
        let port = url.port_or_known_default().unwrap_or(443);
        Ok(PushUrl { url, host, port })
    }

    /// Resolves the host and checks every address against `policy`; plain http is accepted only
    /// when every address is private or operator-allowed, never across the public internet.
    pub async fn vet(
        &self,
        policy: &AddressPolicy,
        resolver: &HostResolver,
    ) -> Result<Vec<SocketAddr>, Refusal> {
        let addresses = match &self.host {
            Host::Address(address) => vec![*address],
            Host::Name(name) => resolver.resolve(name, self.port).await?,
        };
        policy.check_all(&addresses)?;
        if self.url.scheme() == "http" {
            let all_inside = addresses.iter().all(|address| {
                policy.operator_allows(*address) || classify(*address) == AddressClass::Private
            });
            if !all_inside {
                return Err(Refusal::BadUrl(
                    "plain http is only for private-network endpoints; use https".into(),
                ));
            }
        }
        Ok(addresses
            .into_iter()
            .map(|address| SocketAddr::new(address, self.port))
            .collect())
    }
}
