//! A callee's push endpoint configuration, as stored and as the API shows it.

use serde_json::{json, Value};

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
}

/// Headers an endpoint credential may not replace.
const RESERVED_HEADERS: [&str; 9] = [
    "host",
    "content-type",
    "content-length",
    "transfer-encoding",
    "connection",
    "x-forgebench-task",
    "x-parent-call",
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
    /// allow_private_network}`.
    pub fn to_json(&self) -> Value {
        let auth = match &self.auth {
            None => Value::Null,
            Some(AuthScheme::Bearer) => json!({"type": "bearer", "configured": true}),
            Some(AuthScheme::Header(name)) => {
                json!({"type": "header", "name": name, "configured": true})
            }
        };
        json!({"url": self.url, "auth": auth, "allow_private_network": self.allow_private_network})
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
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        };
        let shown = endpoint.to_json();
        assert_eq!(
            shown["auth"],
            json!({"type": "header", "name": "X-Api-Key", "configured": true})
        );
        assert_eq!(Endpoint::from_json(&shown), Some(endpoint));
    }
}
