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
//!
//! What an address is (its class, the ranges) lives in `address.rs`; this module holds the
//! policy applied to a push URL's addresses and the resolver that finds them. The dialer
//! ([`super::dial`]) applies both on every connection, the endpoint route when a URL is saved.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};

mod address;
pub mod url;

pub use address::{canonical, classify, is_metadata, AddressClass, Cidr};
pub use url::PushUrl;

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

    /// Checks the addresses `url`'s host leads to: every one against the policy, and plain http
    /// only when every address is private or operator-allowed, never across the public internet.
    pub fn check_destination(&self, url: &PushUrl, addresses: &[IpAddr]) -> Result<(), Refusal> {
        self.check_all(addresses)?;
        if url.url.scheme() == "http" {
            let all_inside = addresses.iter().all(|address| {
                self.operator_allows(*address) || classify(*address) == AddressClass::Private
            });
            if !all_inside {
                return Err(Refusal::PlainHttp);
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn address(text: &str) -> IpAddr {
        text.parse().unwrap()
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

    /// Every address must pass, then plain http only when all of them stay inside (private or
    /// operator-allowed).
    #[test]
    fn a_destination_passes_only_when_every_address_and_the_scheme_do() {
        let strict = AddressPolicy::default();
        let private = AddressPolicy {
            allow_private: true,
            ..AddressPolicy::default()
        };
        let operator = AddressPolicy {
            allow_private: false,
            operator_allowed: Cidr::parse_list("127.0.0.0/8").unwrap(),
        };
        let loopback = Err(Refusal::Blocked("a loopback address"));
        #[rustfmt::skip]
        let table = [
            (&strict, "https://a.example/", &["93.184.216.34"][..], Ok(())),
            (&strict, "https://a.example/", &[], Err(Refusal::Unresolvable)),
            (&strict, "https://a.example/", &["93.184.216.34", "10.0.0.1"], Err(Refusal::Private)),
            (&strict, "https://a.example/", &["93.184.216.34", "::1"], loopback.clone()),
            (&strict, "http://a.example/", &["93.184.216.34"], Err(Refusal::PlainHttp)),
            (&strict, "http://a.example/", &["10.0.0.1"], Err(Refusal::Private)),
            (&private, "https://a.example/", &["10.0.0.1", "fd12::1"], Ok(())),
            (&private, "https://a.example/", &["10.0.0.1", "127.0.0.1"], loopback.clone()),
            (&private, "http://a.example/", &["10.0.0.1", "192.168.1.1"], Ok(())),
            (&private, "http://a.example/", &["10.0.0.1", "8.8.8.8"], Err(Refusal::PlainHttp)),
            (&operator, "http://a.example/", &["127.0.0.1", "::ffff:127.0.0.2"], Ok(())),
            (&operator, "https://a.example/", &["127.0.0.1", "::1"], loopback.clone()),
            (&operator, "https://a.example/", &["10.0.0.1"], Err(Refusal::Private)),
        ];
        for (policy, url, addresses, expected) in table {
            let url = PushUrl::parse(url).unwrap();
            let addresses: Vec<IpAddr> = addresses.iter().map(|text| address(text)).collect();
            assert_eq!(
                policy.check_destination(&url, &addresses),
                expected,
                "{policy:?} {} {addresses:?}",
                url.url
            );
        }
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
