//! A callee's push endpoint: its URL with the checks that need no network, its auth, and the
//! configuration as stored and as the API shows it.

use serde_json::{json, Value};

pub use super::ssrf::url::{Host, PushUrl, MAX_URL_LEN, URL_PATTERN};
use crate::domain::endpoint_health::Disabled;
use crate::domain::headers;
use crate::domain::Invalid;

/// How the gateway authenticates to the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthScheme {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `<name>: <secret>`.
    Header(String),
}

/// The endpoint as stored in the agent's `endpoint` attribute (no secret in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    pub auth: Option<AuthScheme>,
    pub allow_private_network: bool,
    /// Set when the endpoint kept failing (docs/api.md, "Operating deliveries"): nothing is
    /// POSTed to it until an admin enables it.
    pub disabled: Option<Disabled>,
}

/// Headers an endpoint credential may not replace.
const RESERVED_HEADERS: [&str; 9] = [
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    headers::TASK,
    headers::PARENT_CALL,
    "user-agent",
    "te",
];

/// Parses the `auth` object of `PUT …/endpoint`: the scheme and the secret to seal.
pub fn parse_auth(value: &Value) -> Result<(AuthScheme, String), Invalid> {
    let object = value.as_object().ok_or_else(|| {
        Invalid::new("auth must be an object: {\"type\": \"bearer\", \"secret\"}")
    })?;
    for key in object.keys() {
        if !matches!(key.as_str(), "type" | "secret" | "name") {
            return Err(Invalid(format!("auth.{key} is not an auth field")));
        }
    }
    let secret = match object.get("secret") {
        Some(Value::String(secret)) if !secret.is_empty() && secret.len() <= 4096 => secret.clone(),
        _ => {
            return Err(Invalid::new(
                "auth.secret is required: a string of 1 to 4096 characters",
            ))
        }
    };
    if secret.chars().any(|c| c.is_control()) {
        return Err(Invalid::new(
            "auth.secret must not contain control characters",
        ));
    }
    let scheme = match object.get("type").and_then(Value::as_str) {
        Some("bearer") if !object.contains_key("name") => AuthScheme::Bearer,
        Some("header") => {
            let name = object
                .get("name")
                .and_then(Value::as_str)
                .filter(|name| {
                    !name.is_empty()
                        && name.len() <= 128
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                })
                .ok_or_else(|| Invalid::new("auth.name must be an HTTP header name"))?;
            if RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                return Err(Invalid(format!("auth.name may not be {name}")));
            }
            AuthScheme::Header(name.to_owned())
        }
        _ => {
            return Err(Invalid::new(
                "auth.type must be \"bearer\", or \"header\" with a name",
            ))
        }
    };
    Ok((scheme, secret))
}

impl Endpoint {
    /// The stored and shown form: `{url, auth: {type, name?, configured: true}|null,
    /// allow_private_network}`, and `disabled: {at, reason}` while it is disabled.
    pub fn to_json(&self) -> Value {
        let auth = match &self.auth {
            None => Value::Null,
            Some(AuthScheme::Bearer) => json!({"type": "bearer", "configured": true}),
            Some(AuthScheme::Header(name)) => {
                json!({"type": "header", "name": name, "configured": true})
            }
        };
        let mut shown = json!({"url": self.url, "auth": auth, "allow_private_network": self.allow_private_network});
        if let Some(disabled) = &self.disabled {
            shown["disabled"] = disabled.to_json();
        }
        shown
    }

    pub fn from_json(value: &Value) -> Option<Endpoint> {
        let auth = match value.get("auth") {
            Some(Value::Object(auth)) => match auth.get("type").and_then(Value::as_str) {
                Some("header") => Some(AuthScheme::Header(auth.get("name")?.as_str()?.to_owned())),
                _ => Some(AuthScheme::Bearer),
            },
            _ => None,
        };
        Some(Endpoint {
            url: value.get("url")?.as_str()?.to_owned(),
            auth,
            allow_private_network: value
                .get("allow_private_network")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            disabled: value.get("disabled").and_then(Disabled::from_json),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::ssrf::Refusal;

    #[test]
    fn auth_is_bearer_or_a_named_header_and_the_secret_is_required() {
        let (scheme, secret) = parse_auth(&json!({"type": "bearer", "secret": "s3cret"})).unwrap();
        assert_eq!((scheme, secret.as_str()), (AuthScheme::Bearer, "s3cret"));
        let (scheme, _) =
            parse_auth(&json!({"type": "header", "name": "X-Api-Key", "secret": "k"})).unwrap();
        assert_eq!(scheme, AuthScheme::Header("X-Api-Key".into()));
        for bad in [
            json!({"type": "bearer"}),
            json!({"type": "basic", "secret": "x"}),
            json!({"type": "header", "secret": "x"}),
            json!({"type": "header", "name": "Host", "secret": "x"}),
            json!({"type": "header", "name": "Bad Name", "secret": "x"}),
            json!({"type": "bearer", "secret": "line\nbreak"}),
            json!("bearer"),
        ] {
            assert!(parse_auth(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_shown_form_never_holds_the_secret_and_round_trips() {
        let endpoint = Endpoint {
            url: "https://callee.example.com/a2a".into(),
            auth: Some(AuthScheme::Header("X-Api-Key".into())),
            allow_private_network: false,
            disabled: None,
        };
        let shown = endpoint.to_json();
        assert_eq!(
            shown["auth"],
            json!({"type": "header", "name": "X-Api-Key", "configured": true})
        );
        assert!(shown.get("disabled").is_none());
        assert_eq!(Endpoint::from_json(&shown), Some(endpoint.clone()));
        let disabled = Endpoint {
            disabled: Some(Disabled {
                at: "2026-12-07T10:00:00.000000Z".into(),
                reason: "20 failures in a row since 2026-12-07T09:00:00.000000Z".into(),
            }),
            ..endpoint
        };
        let shown = disabled.to_json();
        assert_eq!(shown["disabled"]["at"], "2026-12-07T10:00:00.000000Z");
        assert_eq!(Endpoint::from_json(&shown), Some(disabled));
    }

    /// What `PushUrl::parse` keeps of a URL it accepts: the URL as it will be dialed, the host
    /// and the port.
    fn parsed(text: &str) -> Result<(String, Host, u16), Refusal> {
        PushUrl::parse(text).map(|url| (url.url.to_string(), url.host, url.port))
    }

    /// An address literal's host, or else a name's.
    fn host(text: &str) -> Host {
        text.parse()
            .map_or_else(|_| Host::Name(text.into()), Host::Address)
    }

    #[test]
    fn a_push_url_is_http_or_https_with_a_host_and_no_credentials() {
        // (as written, as dialed, its host, its port)
        #[rustfmt::skip]
        let accepted = [
            ("https://a.example/x", "https://a.example/x", "a.example", 443),
            ("http://a.example", "http://a.example/", "a.example", 80),
            ("HTTPS://A.Example./x?q=1", "https://a.example./x?q=1", "a.example", 443),
            ("https://a.example:8443/", "https://a.example:8443/", "a.example", 8443),
            ("https://a.example:443/", "https://a.example/", "a.example", 443),
            ("http://a.example:443/", "http://a.example:443/", "a.example", 443),
            ("https://a.example/#frag", "https://a.example/", "a.example", 443),
            ("https://b\u{fc}cher.example/", "https://xn--bcher-kva.example/", "xn--bcher-kva.example", 443),
            // Address literals, every IPv4 spelling normalised before any check.
            ("https://8.8.8.8/", "https://8.8.8.8/", "8.8.8.8", 443),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/", "127.0.0.1", 8080),
            ("https://2130706433/", "https://127.0.0.1/", "127.0.0.1", 443),
            ("https://0x7f.1/", "https://127.0.0.1/", "127.0.0.1", 443),
            ("https://0177.0.0.1/", "https://127.0.0.1/", "127.0.0.1", 443),
            ("https://[::1]:8443/", "https://[::1]:8443/", "::1", 8443),
            ("https://[::ffff:169.254.169.254]/", "https://[::ffff:a9fe:a9fe]/", "::ffff:a9fe:a9fe", 443),
        ];
        for (text, url, host_text, port) in accepted {
            let expected = (url.to_owned(), host(host_text), port);
            assert_eq!(parsed(text), Ok(expected), "{text}");
        }
    }

    #[test]
    fn a_push_url_is_refused_for_its_scheme_credentials_or_host() {
        let scheme = "the scheme must be https (or http)";
        let credentials = "credentials in the url are not allowed; use auth";
        let too_long = format!("https://a.example/{}", "a".repeat(MAX_URL_LEN));
        for (text, why) in [
            ("ftp://a.example/", scheme),
            ("file:///etc/passwd", scheme),
            ("gopher://a.example:70/", scheme),
            ("javascript:alert(1)", scheme),
            ("https://user@a.example/", credentials),
            ("https://user:pw@a.example/", credentials),
            ("https://:pw@a.example/", credentials),
            ("a.example/path", "relative URL without a base"),
            ("https://", "empty host"),
            ("https://a.example:65536/", "invalid port number"),
            ("https://a.example:x/", "invalid port number"),
            ("https://256.0.0.1/", "invalid IPv4 address"),
            ("https://[::1/", "invalid IPv6 address"),
            ("https://[fe80::1%25eth0]/", "invalid IPv6 address"),
            ("https://a b.example/", "invalid international domain name"),
            ("https://./", "the host is empty"),
            (&too_long, "longer than 2048 characters"),
        ] {
            assert_eq!(parsed(text), Err(Refusal::BadUrl(why.into())), "{text}");
        }
    }
}
