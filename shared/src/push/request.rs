//! A delivery's POST as gathered before it is sent: the endpoint, the request headers (with the
//! endpoint's secret, marked sensitive), the caller's message and the signing key.

use ed25519_dalek::SigningKey;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;

use super::endpoint::{AuthScheme, Endpoint};
use crate::domain::headers as names;
use crate::domain::Task;

/// Everything one POST needs: the endpoint, the headers so far (with the credential), the
/// caller's newest message and the signing key.
pub(super) struct Prepared {
    pub endpoint: Endpoint,
    pub headers: HeaderMap,
    pub message: Value,
    pub key: SigningKey,
}

/// The message comes back after [`STORE_RETRY`]; nothing was written, no attempt used.
/// What a POST needs from its callee, before the task: the endpoint, its secret in clear, and
/// the signing key.
pub(super) struct Callee {
    pub endpoint: Endpoint,
    pub secret: Option<String>,
    pub key: SigningKey,
}

impl Callee {
    /// The POST of `message` to this callee for `task`.
    pub(super) fn post_of(self, task: &Task, message: Value) -> Prepared {
        Prepared {
            headers: request_headers(task, &self.endpoint, self.secret.as_deref()),
            endpoint: self.endpoint,
            message,
            key: self.key,
        }
    }
}

/// The headers of the POST, as the serving docs print them.
fn request_headers(task: &Task, endpoint: &Endpoint, secret: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(value) = HeaderValue::from_str(&task.id) {
        headers.insert(names::TASK, value);
    }
    if let Ok(value) = HeaderValue::from_str(&task.call_id) {
        headers.insert(names::PARENT_CALL, value);
    }
    if let (Some(scheme), Some(secret)) = (&endpoint.auth, secret) {
        let (name, value) = match scheme {
            AuthScheme::Bearer => (AUTHORIZATION, format!("Bearer {secret}")),
            AuthScheme::Header(name) => match HeaderName::from_bytes(name.as_bytes()) {
                Ok(name) => (name, secret.to_owned()),
                Err(_) => return headers,
            },
        };
        if let Ok(mut value) = HeaderValue::from_str(&value) {
            value.set_sensitive(true);
            headers.insert(name, value);
        }
    }
    headers
}
