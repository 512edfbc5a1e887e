//! Verifying the gateway's signed push deliveries, on the callee's endpoint.
//!
//! Every POST the gateway pushes carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature: v1a,<base64 Ed25519 signature over "{id}.{timestamp}.{body}">`, made with
//! one of the `webhook-signing` keys of the JWKS at `GET /v1/billing/export/pubkey`. One key signs
//! the deliveries of every tenant, so the body's `destination` is what binds a delivery to one
//! endpoint. [`verify_delivery`] makes the checks of docs/api.md ("Signed deliveries"), in its
//! order: the timestamp, the signature, the destination; and, given a [`ReplayCache`], drops a
//! `webhook-id` already handled.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::Value;

/// How far a delivery's `webhook-timestamp` may be from the receiver's clock, either way.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// The `purpose` of the JWKS keys that sign deliveries (`card-signing` keys never do).
pub const WEBHOOK_SIGNING_PURPOSE: &str = "webhook-signing";

/// The gateway's JWKS route (any key of the tenant reads it).
pub const JWKS_PATH: &str = "/v1/billing/export/pubkey";

const SIGNATURE_PREFIX: &str = "v1a,";

/// Who the receiver is: its endpoint URL exactly as saved on the agent
/// (`PUT /v1/agents/{agent}/endpoint`) and its agent id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expected<'a> {
    pub url: &'a str,
    pub agent_id: &'a str,
}

/// The check a delivery failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WebhookCheck {
    Timestamp,
    Signature,
    Destination,
    Replay,
}

impl WebhookCheck {
    /// `timestamp`, `signature`, `destination` or `replay`.
    pub fn as_str(self) -> &'static str {
        match self {
            WebhookCheck::Timestamp => "timestamp",
            WebhookCheck::Signature => "signature",
            WebhookCheck::Destination => "destination",
            WebhookCheck::Replay => "replay",
        }
    }
}

impl std::fmt::Display for WebhookCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A delivery failed a check: the variant says which one. The message names what was wrong,
/// never a header's value, the body, or the URLs compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// `webhook-timestamp` is missing, not Unix seconds, or outside the tolerance.
    #[error("timestamp check failed: {0}")]
    Timestamp(String),
    /// No published `webhook-signing` key signed `{id}.{timestamp}.{body}` (or a header is
    /// missing).
    #[error("signature check failed: {0}")]
    Signature(String),
    /// The body's `destination` is not this endpoint and agent.
    #[error("destination check failed: {0}")]
    Destination(String),
    /// The [`ReplayCache`] already accepted this `webhook-id`.
    #[error("replay check failed: {0}")]
    Replay(String),
}

impl WebhookError {
    /// The check that failed.
    pub fn check(&self) -> WebhookCheck {
        match self {
            WebhookError::Timestamp(_) => WebhookCheck::Timestamp,
            WebhookError::Signature(_) => WebhookCheck::Signature,
            WebhookError::Destination(_) => WebhookCheck::Destination,
            WebhookError::Replay(_) => WebhookCheck::Replay,
        }
    }
}

/// A request's headers, looked up by name case-insensitively (the first value of a name).
pub trait DeliveryHeaders {
    fn header(&self, name: &str) -> Option<&str>;
}

/// An `http::HeaderMap` (axum, hyper, reqwest): names are case-insensitive already.
impl DeliveryHeaders for reqwest::header::HeaderMap {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|value| value.to_str().ok())
    }
}

impl<K: AsRef<str>, V: AsRef<str>, S> DeliveryHeaders for HashMap<K, V, S> {
    fn header(&self, name: &str) -> Option<&str> {
        first_of(self.iter(), name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> DeliveryHeaders for BTreeMap<K, V> {
    fn header(&self, name: &str) -> Option<&str> {
        first_of(self.iter(), name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> DeliveryHeaders for [(K, V)] {
    fn header(&self, name: &str) -> Option<&str> {
        first_of(self.iter().map(|(k, v)| (k, v)), name)
    }
}

impl<K: AsRef<str>, V: AsRef<str>> DeliveryHeaders for Vec<(K, V)> {
    fn header(&self, name: &str) -> Option<&str> {
        self.as_slice().header(name)
    }
}

fn first_of<'a, K: AsRef<str> + 'a, V: AsRef<str> + 'a>(
    mut pairs: impl Iterator<Item = (&'a K, &'a V)>,
    name: &str,
) -> Option<&'a str> {
    pairs
        .find(|(key, _)| key.as_ref().eq_ignore_ascii_case(name))
        .map(|(_, value)| value.as_ref())
}

/// The `webhook-id`s already accepted, each kept until its timestamp leaves the tolerance (a
/// delivery older than that is refused by the timestamp check anyway). In memory and
/// thread-safe: one per receiving process; several processes need a shared store instead.
#[derive(Debug)]
pub struct ReplayCache {
    tolerance: Duration,
    expiry: Mutex<HashMap<String, u64>>,
}

impl Default for ReplayCache {
    fn default() -> ReplayCache {
        ReplayCache::new(DEFAULT_TOLERANCE)
    }
}

impl ReplayCache {
    pub fn new(tolerance: Duration) -> ReplayCache {
        ReplayCache {
            tolerance,
            expiry: Mutex::new(HashMap::new()),
        }
    }

    /// How many ids it holds.
    pub fn len(&self) -> usize {
        self.held().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records `webhook_id` (a delivery of `timestamp`, Unix seconds); `true` the first time,
    /// `false` when it is already held.
    pub fn remember(&self, webhook_id: &str, timestamp: u64, now: SystemTime) -> bool {
        let current = unix_seconds(now);
        let mut held = self.held();
        held.retain(|_, expiry| i128::from(*expiry) >= current);
        if held.contains_key(webhook_id) {
            return false;
        }
        held.insert(
            webhook_id.to_owned(),
            timestamp.saturating_add(self.tolerance.as_secs()),
        );
        true
    }

    /// Lets `webhook_id` be accepted again: for a delivery accepted but not answered (its
    /// handler failed), which the gateway will send again with the same id.
    pub fn forget(&self, webhook_id: &str) {
        self.held().remove(webhook_id);
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        // A panic while holding the lock leaves the map whole: keep using it.
        self.expiry
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The delivery (the parsed body) when the gateway signed it for this endpoint.
///
/// `headers` are the request's headers (names matched case-insensitively), `body` the raw
/// request body exactly as received, `jwks` the set of [`fetch_jwks`], `now` the time to check
/// against (`SystemTime::now()` in a receiver). With `replay`, a `webhook-id` it already accepted
/// is refused after every other check passed. The error is the first check that failed.
pub fn verify_delivery<H: DeliveryHeaders + ?Sized>(
    headers: &H,
    body: &[u8],
    jwks: &Value,
    expected: &Expected<'_>,
    tolerance: Duration,
    now: SystemTime,
    replay: Option<&ReplayCache>,
) -> Result<Value, WebhookError> {
    let stamp = headers.header("webhook-timestamp").unwrap_or("").trim();
    if stamp.is_empty() {
        return Err(WebhookError::Timestamp(
            "the webhook-timestamp header is missing".into(),
        ));
    }
    let timestamp = stamp
        .bytes()
        .all(|byte| byte.is_ascii_digit())
        .then(|| stamp.parse::<u64>().ok())
        .flatten()
        .ok_or_else(|| WebhookError::Timestamp("webhook-timestamp is not Unix seconds".into()))?;
    if (unix_seconds(now) - i128::from(timestamp)).unsigned_abs() > u128::from(tolerance.as_secs())
    {
        return Err(WebhookError::Timestamp(format!(
            "webhook-timestamp is outside the tolerance of {} s",
            tolerance.as_secs()
        )));
    }

    let webhook_id = headers.header("webhook-id").unwrap_or("").trim();
    if webhook_id.is_empty() {
        return Err(WebhookError::Signature(
            "the webhook-id header is missing".into(),
        ));
    }
    let signature_header = headers.header("webhook-signature").unwrap_or("");
    if signature_header.trim().is_empty() {
        return Err(WebhookError::Signature(
            "the webhook-signature header is missing".into(),
        ));
    }
    let signatures = signatures(signature_header);
    if signatures.is_empty() {
        return Err(WebhookError::Signature(
            "webhook-signature holds no v1a signature".into(),
        ));
    }
    let keys = signing_keys(jwks);
    if keys.is_empty() {
        return Err(WebhookError::Signature(
            "the JWKS holds no webhook-signing key".into(),
        ));
    }
    let mut signed = format!("{webhook_id}.{stamp}.").into_bytes();
    signed.extend_from_slice(body);
    let verified = keys.iter().any(|key| {
        signatures
            .iter()
            .any(|signature| key.verify_strict(&signed, signature).is_ok())
    });
    if !verified {
        return Err(WebhookError::Signature(
            "no published webhook-signing key signed it".into(),
        ));
    }

    let delivery: Value = serde_json::from_slice(body)
        .map_err(|_| WebhookError::Destination("the body is not JSON".into()))?;
    let Some(destination) = delivery.get("destination").filter(|d| d.is_object()) else {
        return Err(WebhookError::Destination(
            "the body names no destination".into(),
        ));
    };
    if destination.get("url").and_then(Value::as_str) != Some(expected.url) {
        return Err(WebhookError::Destination(
            "destination.url is not this endpoint".into(),
        ));
    }
    if destination.get("agent_id").and_then(Value::as_str) != Some(expected.agent_id) {
        return Err(WebhookError::Destination(
            "destination.agent_id is not this agent".into(),
        ));
    }

    if let Some(cache) = replay {
        if !cache.remember(webhook_id, timestamp, now) {
            return Err(WebhookError::Replay(
                "this webhook-id was already handled".into(),
            ));
        }
    }
    Ok(delivery)
}

/// The gateway's JWKS (`GET /v1/billing/export/pubkey`) at `base_url`, read with `api_key` (any
/// key of the tenant) over `http`. A refusal is the SDK's typed [`crate::Error`]. Keep the set and
/// fetch it again when a delivery's signature fails, since a rotation adds a key.
pub async fn fetch_jwks(
    http: &reqwest::Client,
    base_url: &str,
    api_key: &str,
) -> Result<Value, crate::Error> {
    let url = format!("{}{JWKS_PATH}", base_url.trim_end_matches('/'));
    let response = http
        .get(url)
        .bearer_auth(api_key)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(crate::Error::Connection)?;
    // Read as every SDK answer is: a refusal is its typed error, with its request id.
    let body = crate::client::read_response(response, false)
        .await?
        .unwrap_or(Value::Null);
    if !body.get("keys").is_some_and(Value::is_array) {
        return Err(crate::Error::Decode(
            "the gateway's JWKS has no `keys` list".into(),
        ));
    }
    Ok(body)
}

/// Seconds since the Unix epoch, negative before it.
fn unix_seconds(time: SystemTime) -> i128 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i128::from(after.as_secs()),
        Err(before) => -i128::from(before.duration().as_secs()),
    }
}

/// The decoded `v1a,` entries of a `webhook-signature` header; others are ignored.
fn signatures(header: &str) -> Vec<Signature> {
    header
        .split_ascii_whitespace()
        .filter_map(|entry| entry.strip_prefix(SIGNATURE_PREFIX))
        .filter_map(|encoded| STANDARD.decode(encoded).ok())
        .filter_map(|bytes| Signature::from_slice(&bytes).ok())
        .collect()
}

/// The Ed25519 keys of the set whose `purpose` is `webhook-signing`.
fn signing_keys(jwks: &Value) -> Vec<VerifyingKey> {
    let Some(keys) = jwks.get("keys").and_then(Value::as_array) else {
        return Vec::new();
    };
    keys.iter()
        .filter(|jwk| {
            jwk.get("purpose").and_then(Value::as_str) == Some(WEBHOOK_SIGNING_PURPOSE)
                && jwk.get("kty").and_then(Value::as_str) == Some("OKP")
                && jwk.get("crv").and_then(Value::as_str) == Some("Ed25519")
        })
        .filter_map(|jwk| jwk.get("x").and_then(Value::as_str))
        .filter_map(|x| URL_SAFE_NO_PAD.decode(x.trim_end_matches('=')).ok())
        .filter_map(|bytes| <[u8; 32]>::try_from(bytes.as_slice()).ok())
        .filter_map(|bytes| VerifyingKey::from_bytes(&bytes).ok())
        .collect()
}
