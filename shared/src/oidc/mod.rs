//! OpenID Connect issuers as the gateway reads them: the discovery document (OpenID Connect
//! Discovery 1.0), the signing keys it points to (the JWKS), and a per-process cache of those
//! keys. Every document is fetched through the outbound guard of push deliveries (no private,
//! loopback or metadata address unless the operator allows it; no redirects; bounded bodies).
//!
//! Keys are read again when they are older than [`KEYS_FRESH_FOR`], and when a token names a
//! key id the cache does not hold, at most once per [`REFETCH_AT_MOST_EVERY`] per issuer: a
//! flood of tokens with made-up key ids costs the issuer one request a few seconds, not one each.

pub mod token;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use serde::Deserialize;

use crate::domain::issuer::discovery_url;
use crate::push::dial::{DialError, Dialer};
use crate::push::ssrf::Refusal;

/// How long fetched keys are used before they are read again.
pub const KEYS_FRESH_FOR: Duration = Duration::from_secs(15 * 60);
/// The shortest time between two reads of one issuer's keys.
pub const REFETCH_AT_MOST_EVERY: Duration = Duration::from_secs(10);
/// The largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// Time for one read of an issuer's document.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why an issuer's documents could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    #[error("the issuer could not be reached: {0}")]
    Unreachable(String),
    #[error("the issuer's document is not usable: {0}")]
    BadDocument(String),
    /// The outbound guard refuses the issuer's address (private, loopback, metadata): no later
    /// read will reach it either.
    #[error("the outbound guard refuses the issuer's address")]
    Refused,
}

/// What the gateway reads of a discovery document.
#[derive(Debug, Clone, Deserialize)]
pub struct Discovery {
    pub issuer: String,
    pub jwks_uri: String,
}

#[derive(Clone)]
struct CachedKeys {
    keys: Arc<Vec<Jwk>>,
    fetched_at: Instant,
}

#[derive(Default)]
struct IssuerCache {
    keys: Option<CachedKeys>,
    last_read_at: Option<Instant>,
}

/// The issuers' keys this process knows.
pub struct Oidc {
    dialer: Dialer,
    issuers: Mutex<HashMap<String, IssuerCache>>,
}

impl Oidc {
    pub fn new(dialer: Dialer) -> Oidc {
        Oidc {
            dialer,
            issuers: Mutex::default(),
        }
    }

    /// Reads the issuer's discovery document, which must name the issuer exactly and its keys.
    pub async fn discover(&self, issuer: &str) -> Result<Discovery, OidcError> {
        let discovery: Discovery = self.read_json(&discovery_url(issuer)).await?;
        if discovery.issuer != issuer {
            return Err(OidcError::BadDocument(format!(
                "the discovery document names issuer {:?}",
                discovery.issuer
            )));
        }
        Ok(discovery)
    }

    /// The key of `issuer` that `key_id` names (or its only key, when the token names none),
    /// `None` when the issuer publishes no such key.
    pub async fn key(&self, issuer: &str, key_id: Option<&str>) -> Result<Option<Jwk>, OidcError> {
        let cached = self.cached(issuer);
        let held = cached
            .as_ref()
            .and_then(|cached| pick(&cached.keys, key_id));
        let fresh = cached
            .as_ref()
            .is_some_and(|cached| cached.fetched_at.elapsed() < KEYS_FRESH_FOR);
        if let (true, Some(key)) = (fresh, &held) {
            return Ok(Some(key.clone()));
        }
        if !self.may_read(issuer) {
            return match cached {
                Some(_) => Ok(held),
                None => Err(OidcError::Unreachable(
                    "its keys were asked for a moment ago and could not be read".into(),
                )),
            };
        }
        match self.read_keys(issuer).await {
            Ok(keys) => {
                let key = pick(&keys, key_id);
                self.remember(issuer, keys);
                Ok(key)
            }
            // Keys read before still sign: an issuer that is down does not sign everyone out.
            Err(error) => match held {
                Some(key) => {
                    tracing::warn!(issuer, error = %error, "using an issuer's keys read before");
                    Ok(Some(key))
                }
                None => Err(error),
            },
        }
    }

    /// The keys held for `issuer`.
    fn cached(&self, issuer: &str) -> Option<CachedKeys> {
        let issuers = self.issuers.lock().ok()?;
        issuers.get(issuer).and_then(|entry| entry.keys.clone())
    }

    /// Whether the issuer's keys may be read now, noting the read when they may: at most once
    /// per [`REFETCH_AT_MOST_EVERY`], whatever the reason.
    fn may_read(&self, issuer: &str) -> bool {
        let Ok(mut issuers) = self.issuers.lock() else {
            return false;
        };
        let entry = issuers.entry(issuer.to_owned()).or_default();
        let may_read = entry
            .last_read_at
            .is_none_or(|at| at.elapsed() >= REFETCH_AT_MOST_EVERY);
        if may_read {
            entry.last_read_at = Some(Instant::now());
        }
        may_read
    }

    fn remember(&self, issuer: &str, keys: Vec<Jwk>) {
        if let Ok(mut issuers) = self.issuers.lock() {
            issuers.entry(issuer.to_owned()).or_default().keys = Some(CachedKeys {
                keys: Arc::new(keys),
                fetched_at: Instant::now(),
            });
        }
    }

    async fn read_keys(&self, issuer: &str) -> Result<Vec<Jwk>, OidcError> {
        tracing::info!(issuer, "reading an issuer's keys");
        let discovery = self.discover(issuer).await?;
        let set: serde_json::Value = self.read_json(&discovery.jwks_uri).await?;
        let keys = set
            .get("keys")
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| OidcError::BadDocument("the key set has no keys".into()))?;
        // A key the gateway cannot use (an encryption key, an unknown type) is passed over.
        Ok(keys
            .iter()
            .filter_map(|key| serde_json::from_value::<Jwk>(key.clone()).ok())
            .filter(|key| {
                key.common.public_key_use != Some(jsonwebtoken::jwk::PublicKeyUse::Encryption)
            })
            .collect())
    }

    async fn read_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, OidcError> {
        let response = self
            .dialer
            .get(url, MAX_DOCUMENT_BYTES)
            .await
            .map_err(|error| unreadable(url, error))?;
        if response.status != 200 {
            return Err(OidcError::Unreachable(format!(
                "{url} answered {}",
                response.status
            )));
        }
        serde_json::from_slice(&response.body)
            .map_err(|error| OidcError::BadDocument(format!("{url}: {error}")))
    }
}

/// Why `url` could not be read: a host that resolves to nothing may yet, an address the guard
/// refuses never will (what it is goes to the log, never to the caller).
fn unreadable(url: &str, error: DialError) -> OidcError {
    match error {
        DialError::Refused(Refusal::Unresolvable) => {
            OidcError::Unreachable(format!("{url}: its host resolves to no address"))
        }
        DialError::Refused(refusal) => {
            tracing::info!(
                url,
                ?refusal,
                "the outbound guard refused an issuer's address"
            );
            OidcError::Refused
        }
        other => OidcError::Unreachable(format!("{url}: {other}")),
    }
}

/// The key `key_id` names; without a key id, the set's only key.
fn pick(keys: &[Jwk], key_id: Option<&str>) -> Option<Jwk> {
    match key_id {
        Some(key_id) => keys
            .iter()
            .find(|key| key.common.key_id.as_deref() == Some(key_id))
            .cloned(),
        None if keys.len() == 1 => keys.first().cloned(),
        None => None,
    }
}
