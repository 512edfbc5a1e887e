//! The SSRF guard for push endpoints: which addresses the gateway may POST to, checked when an
//! endpoint is saved and again on every dial (a hostname re-pointed later gets no free pass).
//!
//! - Always refused: loopback, unspecified, link-local, multicast, reserved and documentation
//!   ranges, and the cloud metadata addresses (169.254.169.254, fd00:ec2::254, 100.100.100.200).
//! - Private ranges (RFC 1918, CGNAT 100.64/10, unique-local fc00::/7) only for an endpoint saved
//!   with `allow_private_network: true`.
//! - IPv6 forms that embed an IPv4 address (IPv4-mapped, IPv4-translated ::ffff:0:0/96,
//!   IPv4-compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the IPv4 address inside;
//!   Teredo is refused.
//! - Every resolved address must pass, not just the first; redirects are never followed.
//! - An operator may allow extra ranges for local development (`FORGEBENCH_PUSH_ALLOWED_CIDRS`,
//!   empty by default, never set by the deployment template): none wider than /8 (IPv4) or /7
//!   (IPv6), and never covering a metadata address, which stays refused inside any range.
//! - A refusal that depends on where the host leads says only the rules, never what the host
//!   resolved to.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, RwLock};

use ipnet::IpNet;

/// An address range (an [`ipnet::IpNet`]; a bare address is a one-address range).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr(IpNet);

/// The widest operator-allowed range: no wider than the widest private range the guard knows
/// (10.0.0.0/8, fc00::/7), so the allowlist opens a network, never the whole address space.
const MIN_ALLOWED_PREFIX: (u8, u8) = (8, 7);

impl Cidr {
    pub fn parse(text: &str) -> Option<Cidr> {
        let text = text.trim();
        match text.parse::<IpNet>() {
            Ok(net) => Some(Cidr(net)),
            Err(_) => text
                .parse::<IpAddr>()
                .ok()
                .map(|address| Cidr(address.into())),
        }
    }

    pub fn contains(&self, address: IpAddr) -> bool {
        self.0.contains(&address)
    }

    /// Parses the operator allowlist (`FORGEBENCH_PUSH_ALLOWED_CIDRS`), comma-separated; on
    /// error, says which entry and why: not a range, or wider than /8 (IPv4) or /7 (IPv6), such
    /// as `0.0.0.0/0`.
    pub fn parse_list(text: &str) -> Result<Vec<Cidr>, String> {
        text.split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let cidr = Cidr::parse(entry).ok_or_else(|| format!("{entry:?} is not a range"))?;
                let widest = match cidr.0 {
                    IpNet::V4(_) => MIN_ALLOWED_PREFIX.0,
                    IpNet::V6(_) => MIN_ALLOWED_PREFIX.1,
                };
                if cidr.0.prefix_len() < widest {
                    return Err(format!(
                        "{entry:?} is wider than /{widest}; allow a network, not the address space"
                    ));
                }
                Ok(cidr)
            })
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
    // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765, SIIT).
    if segments[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return Some(low32);
    }
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

/// The address an address stands for: the IPv4 address inside an IPv6 form that embeds one,
/// else itself. Every check judges this form.
pub fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => embedded_ipv4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Whether an address is (or embeds) a cloud metadata address: refused whatever else allows it.
pub fn is_metadata(address: IpAddr) -> bool {
    in_any(canonical(address), &METADATA)
}

/// Classifies an address after canonicalising IPv6 forms that embed an IPv4 address.
pub fn classify(address: IpAddr) -> AddressClass {
    let address = canonical(address);
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

/// What a caller is told about any refusal that depends on where the host leads: the rules,
/// never the outcome, so the guard is no oracle of what a name resolves to (loopback, metadata,
/// a private network, nothing at all). The logs keep the precise reason.
pub const DESTINATION_REFUSED: &str = "the host is not an allowed push destination: push \
     reaches https endpoints whose every address is public, or private addresses with \
     allow_private_network (admin only)";

/// Why a destination was refused. Only [`Refusal::BadUrl`] (the URL's own text) shows its
/// reason; every other variant displays [`DESTINATION_REFUSED`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("the url is not valid: {0}")]
    BadUrl(String),
    /// The address is never a push destination (what it is, for the logs).
    #[error("{DESTINATION_REFUSED}")]
    Blocked(&'static str),
    #[error("{DESTINATION_REFUSED}")]
    Private,
    #[error("{DESTINATION_REFUSED}")]
    Unresolvable,
    /// Plain http to an address that is neither private nor operator-allowed.
    #[error("{DESTINATION_REFUSED}")]
    PlainHttp,
}

impl AddressPolicy {
    /// Whether an operator range holds the address (judged in its canonical form; never a
    /// metadata address).
    pub fn operator_allows(&self, address: IpAddr) -> bool {
        let address = canonical(address);
        !is_metadata(address)
            && self
                .operator_allowed
                .iter()
                .any(|cidr| cidr.contains(address))
    }

    /// Checks one address: metadata addresses first (no allowlist opens them), then the
    /// operator's ranges, then the address's class; every step on the canonical form.
    pub fn check(&self, address: IpAddr) -> Result<AddressClass, Refusal> {
        if is_metadata(address) {
            return Err(Refusal::Blocked("a cloud metadata address"));
        }
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
                return Err(Refusal::PlainHttp);
            }
        }
        Ok(addresses
            .into_iter()
            .map(|address| SocketAddr::new(address, self.port))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn ipv4_translated_addresses_are_judged_by_the_ipv4_address_inside() {
        assert_eq!(
            classify(address("::ffff:0:7f00:1")),
            AddressClass::Blocked("a loopback address")
        );
        assert_eq!(
            classify(address("::ffff:0:169.254.169.254")),
            AddressClass::Blocked("a cloud metadata address")
        );
        assert_eq!(
            classify(address("::ffff:0:10.1.2.3")),
            AddressClass::Private
        );
        assert_eq!(
            classify(address("::ffff:0:93.184.216.34")),
            AddressClass::Public
        );
    }

    #[test]
    fn no_operator_range_opens_a_metadata_address() {
        let policy = AddressPolicy {
            allow_private: true,
            operator_allowed: Cidr::parse_list("169.254.0.0/16, 100.64.0.0/10, fd00:ec2::/32")
                .unwrap(),
        };
        for metadata in [
            "169.254.169.254",
            "100.100.100.200",
            "fd00:ec2::254",
            "::ffff:169.254.169.254",
            "::ffff:0:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert_eq!(
                policy.check(address(metadata)),
                Err(Refusal::Blocked("a cloud metadata address")),
                "{metadata}"
            );
            assert!(!policy.operator_allows(address(metadata)), "{metadata}");
        }
        assert!(policy.check(address("169.254.10.10")).is_ok());
        assert!(policy.check(address("fd00:ec2::1")).is_ok());
    }

    #[test]
    fn the_allowlist_refuses_whole_space_ranges() {
        for wide in [
            "0.0.0.0/0",
            "::/0",
            "0.0.0.0/1",
            "128.0.0.0/2",
            "10.0.0.0/7",
            "::/6",
        ] {
            let why = Cidr::parse_list(&format!("127.0.0.0/8,{wide}")).unwrap_err();
            assert!(why.contains(wide), "{wide}: {why}");
        }
        assert!(Cidr::parse_list("nonsense").is_err());
        let allowed = Cidr::parse_list("127.0.0.0/8, fc00::/7, 192.168.1.10").unwrap();
        assert_eq!(allowed.len(), 3);
        assert!(allowed[2].contains(address("192.168.1.10")));
        assert!(!allowed[2].contains(address("192.168.1.11")));
    }

    #[test]
    fn refusals_that_depend_on_resolution_all_read_the_same() {
        for refusal in [
            Refusal::Blocked("a loopback address"),
            Refusal::Blocked("a cloud metadata address"),
            Refusal::Private,
            Refusal::Unresolvable,
            Refusal::PlainHttp,
        ] {
            assert_eq!(refusal.to_string(), DESTINATION_REFUSED, "{refusal:?}");
        }
        for word in [
            "loopback",
            "metadata",
            "resolves to",
            "could not be resolved",
        ] {
            assert!(!DESTINATION_REFUSED.contains(word), "{word}");
        }
    }
}
