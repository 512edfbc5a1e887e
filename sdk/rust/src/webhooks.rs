//! Verifying the gateway's signed POSTs: push deliveries on a callee's endpoint, and A2A push
//! notifications on a caller's webhook.
//!
//! Every POST the gateway pushes carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature: v1a,<base64 Ed25519 signature over "{id}.{timestamp}.{body}">`, made with
//! one of the `webhook-signing` keys of the JWKS at `GET /v1/billing/export/pubkey`. One key signs
//! for every tenant, so the destination the body names is what binds a POST to one receiver.
//! [`verify_delivery`] makes the checks of docs/api.md ("Signed deliveries"), in its order: the
//! timestamp, the signature, the destination (`destination`); and, given a [`ReplayCache`], drops
//! a `webhook-id` already handled. [`verify_notification`] makes the same checks on an A2A push
//! notification, whose body (an A2A `StreamResponse`) names its destination in the update's
//! `metadata` (docs/a2a.md, "Push notifications").

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

/// Who a notification's receiver is: its URL exactly as saved on the push notification config,
/// and, when given, the config's id and its task's id, which the notification must name too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedNotification<'a> {
    pub url: &'a str,
    pub config_id: Option<&'a str>,
    pub task_id: Option<&'a str>,
}

impl<'a> ExpectedNotification<'a> {
    /// The receiver at `url`, for any of its configs and tasks.
    pub fn at(url: &'a str) -> ExpectedNotification<'a> {
        ExpectedNotification {
            url,
            config_id: None,
            task_id: None,
        }
    }
}

/// The member of a notification's update `metadata` that holds `destination`.
pub const NOTIFICATION_METADATA_KEY: &str = "forgebench";

/// The members of a `StreamResponse` a notification's update is under.
const NOTIFICATION_UPDATES: [&str; 2] = ["statusUpdate", "artifactUpdate"];

/// The check a delivery or a notification failed.
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

/// A delivery or a notification failed a check: the variant says which one. The message names what was wrong,
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
    /// The destination the body names is not this receiver (a delivery's `destination`: this
    /// endpoint and agent; a notification's: this URL, and the config and task given).
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
    let (webhook_id, timestamp) = signed_by_the_gateway(headers, body, jwks, tolerance, now)?;
    let delivery = json_of(body)?;
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

    not_replayed(replay, webhook_id, timestamp, now)?;
    Ok(delivery)
}

/// The notification (the parsed A2A `StreamResponse`, `{"statusUpdate": …}` or
/// `{"artifactUpdate": …}`) when the gateway signed it for this receiver.
///
/// `headers`, `body`, `jwks`, `tolerance`, `now` and `replay` are as for [`verify_delivery`].
/// The destination is the update's `metadata.forgebench.destination`
/// ([`notification_destination`]): its `url` must be `expected.url`, and its `config_id` and
/// `task_id` those `expected` gives. The error is the first check that failed.
pub fn verify_notification<H: DeliveryHeaders + ?Sized>(
    headers: &H,
    body: &[u8],
    jwks: &Value,
    expected: &ExpectedNotification<'_>,
    tolerance: Duration,
    now: SystemTime,
    replay: Option<&ReplayCache>,
) -> Result<Value, WebhookError> {
    let (webhook_id, timestamp) = signed_by_the_gateway(headers, body, jwks, tolerance, now)?;
    let notification = json_of(body)?;
    let Some(destination) = notification_destination(&notification) else {
        return Err(WebhookError::Destination(
            "the body names no destination".into(),
        ));
    };
    let named = |field: &str| destination.get(field).and_then(Value::as_str);
    if named("url") != Some(expected.url) {
        return Err(WebhookError::Destination(
            "destination.url is not this receiver".into(),
        ));
    }
    // A field the receiver gave must be named as given.
    let differs =
        |field: &str, given: Option<&str>| given.is_some_and(|id| named(field) != Some(id));
    if differs("config_id", expected.config_id) {
        return Err(WebhookError::Destination(
            "destination.config_id is not this config".into(),
        ));
    }
    if differs("task_id", expected.task_id) {
        return Err(WebhookError::Destination(
            "destination.task_id is not this task".into(),
        ));
    }
    not_replayed(replay, webhook_id, timestamp, now)?;
    Ok(notification)
}

/// Where a notification (a parsed `StreamResponse`) says it was sent: its update's
/// `metadata.forgebench.destination` (`{"tenant_id", "task_id", "config_id", "url"}`), or `None`
/// when it names none. Trust it only once [`verify_notification`] has accepted the notification.
pub fn notification_destination(notification: &Value) -> Option<&Value> {
    let update = NOTIFICATION_UPDATES
        .iter()
        .find_map(|kind| notification.get(kind).filter(|update| update.is_object()))?;
    update
        .get("metadata")?
        .get(NOTIFICATION_METADATA_KEY)?
        .get("destination")
        .filter(|destination| destination.is_object())
}

/// The timestamp and signature checks, in that order: `webhook-timestamp` within `tolerance` of
/// `now`, and a signature over `{id}.{timestamp}.{body}` by a `webhook-signing` key of `jwks`.
/// The `webhook-id` and the timestamp.
fn signed_by_the_gateway<'h, H: DeliveryHeaders + ?Sized>(
    headers: &'h H,
    body: &[u8],
    jwks: &Value,
    tolerance: Duration,
    now: SystemTime,
) -> Result<(&'h str, u64), WebhookError> {
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
    Ok((webhook_id, timestamp))
}

/// The signed body, parsed; a body that is not JSON names no destination.
fn json_of(body: &[u8]) -> Result<Value, WebhookError> {
    serde_json::from_slice(body)
        .map_err(|_| WebhookError::Destination("the body is not JSON".into()))
}

/// The replay check, last: with a cache, a `webhook-id` it already accepted is refused.
fn not_replayed(
    replay: Option<&ReplayCache>,
    webhook_id: &str,
    timestamp: u64,
    now: SystemTime,
) -> Result<(), WebhookError> {
    match replay {
        Some(cache) if !cache.remember(webhook_id, timestamp, now) => Err(WebhookError::Replay(
            "this webhook-id was already handled".into(),
        )),
        _ => Ok(()),
    }
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
