//! A push URL parsed, with the checks that need no network: its scheme, host and port.

use std::net::IpAddr;

use super::Refusal;

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

/// The shape of a push URL, as the OpenAPI document states it: http(s), a host name (its last
/// label starting with a letter) or a dotted IPv4 address, an optional port from 1, and printable
/// ASCII after. Every URL of this shape parses ([`PushUrl::parse`]); whether its destination may
/// be reached is the guard's call, when saved and on every dial. An IPv6 literal is taken too,
/// though the pattern leaves it out: no pattern can tell a valid one.
pub const URL_PATTERN: &str = concat!(
    "^https?://",
    "(?:(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)*[A-Za-z](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?",
    "|(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?:\\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3})",
    "(?::(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}))?",
    "(?:[/?#][!-~]*)?$",
);

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
}
