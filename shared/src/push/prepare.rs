//! What a delivery's POST needs, gathered before the lease is taken: the callee's endpoint, the
//! endpoint's secret (opened with KMS), the caller's newest message, the signing key and the
//! request headers. Trouble on the way (the store, KMS, the body store, the signing key) costs no
//! attempt and writes nothing: the message comes back after [`STORE_RETRY`]. A delivery that
//! cannot succeed at all (no endpoint, unreadable content) fails the task.

use ed25519_dalek::SigningKey;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;

use super::endpoint::{AuthScheme, Endpoint};
use super::worker::{JobOutcome, Stop, Worker, STORE_RETRY};
use crate::bodies::BodyError;
use crate::domain::headers as names;
use crate::domain::{Agent, AgentRef, Task};
use crate::store::StoreError;

/// Everything one POST needs: the endpoint, the headers so far (with the credential), the
/// caller's newest message and the signing key.
pub(super) struct Prepared {
    pub endpoint: Endpoint,
    pub headers: HeaderMap,
    pub message: Value,
    pub key: SigningKey,
}

/// The message comes back after [`STORE_RETRY`]; nothing was written, no attempt used.
const COME_BACK: Stop = Stop::With(JobOutcome::RetryIn(STORE_RETRY));

impl Worker {
    /// Gathers the POST's needs, in this order: the callee and its endpoint, the endpoint's
    /// secret, the message, the signing key.
    pub(super) async fn prepare(&self, task: &Task) -> Result<Prepared, Stop> {
        let (callee, endpoint) = self.callee_endpoint(task).await?;
        let secret = self.endpoint_secret(&callee, &endpoint).await?;
        let message = self.caller_message(task).await?;
        let key = match self.signing.active(&self.store, &self.vault).await {
            Ok((_, key)) => key,
            Err(error) => {
                tracing::warn!(error = %error, "cannot open the signing key; will retry");
                return Err(COME_BACK);
            }
        };
        let headers = request_headers(task, &endpoint, secret.as_deref());
        Ok(Prepared {
            endpoint,
            headers,
            message,
            key,
        })
    }

    /// The callee agent and its push endpoint; the task fails when it no longer has one.
    async fn callee_endpoint(&self, task: &Task) -> Result<(Agent, Endpoint), Stop> {
        let callee = self
            .store
            .find_agent(
                &task.tenant_id,
                &AgentRef::Id(parse_id(&task.callee_agent_id)?),
            )
            .await?;
        let endpoint = callee
            .as_ref()
            .and_then(|agent| agent.endpoint.as_ref())
            .and_then(Endpoint::from_json);
        match (callee, endpoint) {
            (Some(callee), Some(endpoint)) => Ok((callee, endpoint)),
            _ => {
                let error = "delivery failed: the callee no longer has a push endpoint";
                self.fail_delivery(&task.id, None, error).await?;
                Err(Stop::With(JobOutcome::Done))
            }
        }
    }

    /// The endpoint's secret in clear, when the endpoint has auth and a sealed secret.
    async fn endpoint_secret(
        &self,
        callee: &Agent,
        endpoint: &Endpoint,
    ) -> Result<Option<String>, Stop> {
        let (Some(_), Some(sealed)) = (&endpoint.auth, &callee.sealed_secret) else {
            return Ok(None);
        };
        match self
            .vault
            .unseal(&callee.tenant_id, &callee.id, sealed)
            .await
        {
            Ok(secret) => Ok(Some(secret)),
            Err(error) => {
                tracing::warn!(error = %error, "cannot open the endpoint secret; will retry");
                Err(COME_BACK)
            }
        }
    }

    /// The caller's newest message, its stored bodies read back; the task fails when they
    /// cannot be read at all.
    async fn caller_message(&self, task: &Task) -> Result<Value, Stop> {
        match self
            .bodies
            .resolve_message(task.latest_caller_message())
            .await
        {
            Ok(message) => Ok(message),
            Err(BodyError::Unavailable(cause)) => {
                tracing::warn!(cause = %cause, "body store unavailable; will retry");
                Err(COME_BACK)
            }
            Err(error) => {
                tracing::error!(error = %error, "the task's content cannot be read; failing it");
                let error = "delivery failed: the task's content could not be read";
                self.fail_delivery(&task.id, None, error).await?;
                Err(Stop::With(JobOutcome::Done))
            }
        }
    }
}

fn parse_id(text: &str) -> Result<uuid::Uuid, StoreError> {
    uuid::Uuid::parse_str(text).map_err(|_| StoreError::Corrupt(format!("agent id {text:?}")))
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
