//! What a delivery's POST needs: the callee's endpoint (the agent as read within the agent
//! cache's life), the endpoint's secret (opened with KMS, then cached), the signing key, all
//! gathered before the lease is taken; then the caller's newest message and the request headers.
//! Trouble on the way (the store, KMS, the body store, the signing key) costs no attempt: the
//! message comes back after [`STORE_RETRY`] (a lease taken before the message could be read is
//! given back). A delivery that cannot succeed at all (no endpoint, unreadable content) fails the
//! task.

use ed25519_dalek::SigningKey;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;

use super::endpoint::{AuthScheme, Endpoint};
use super::worker::{JobOutcome, Stop, Worker, STORE_RETRY};
use crate::bodies::BodyError;
use crate::domain::headers as names;
use crate::domain::{Agent, AgentId, Task, TaskId, TenantId};

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

/// What a POST needs from its callee, before the task: the endpoint, its secret in clear, and
/// the signing key.
pub(super) struct Callee {
    endpoint: Endpoint,
    secret: Option<String>,
    key: SigningKey,
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

impl Worker {
    /// Gathers the POST's needs for `task` as read: the callee (see [`Worker::callee`]), then
    /// the caller's message.
    pub(super) async fn prepare(&self, task: &Task) -> Result<Prepared, Stop> {
        let callee = self
            .callee(&task.id, &task.tenant_id, &task.callee_agent_id)
            .await?;
        let message = self.caller_message(task, None).await?;
        Ok(callee.post_of(task, message))
    }

    /// What the POST of task `task_id` needs from its callee `callee_id`, in this order: the
    /// callee and its endpoint (as read within the agent cache's life), the endpoint's secret,
    /// the signing key (both cached once opened).
    pub(super) async fn callee(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        callee_id: &AgentId,
    ) -> Result<Callee, Stop> {
        let (agent, endpoint) = self.callee_endpoint(task_id, tenant_id, callee_id).await?;
        let secret = self.endpoint_secret(&agent, &endpoint).await?;
        let key = match self.signing.active(&self.store, &self.vault).await {
            Ok((_, key)) => key,
            Err(error) => {
                tracing::warn!(error = %error, "cannot open the signing key; will retry");
                return Err(COME_BACK);
            }
        };
        Ok(Callee {
            endpoint,
            secret,
            key,
        })
    }

    /// The callee agent (of `tenant_id`) and its push endpoint; the task fails when it no
    /// longer has one.
    async fn callee_endpoint(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        callee_id: &AgentId,
    ) -> Result<(Agent, Endpoint), Stop> {
        let callee = self
            .store
            .recent_agent(callee_id, self.agent_ttl)
            .await?
            .filter(|agent| agent.tenant_id == *tenant_id);
        let endpoint = callee
            .as_ref()
            .and_then(|agent| agent.endpoint.as_ref())
            .and_then(Endpoint::from_json);
        match (callee, endpoint) {
            (Some(callee), Some(endpoint)) => Ok((callee, endpoint)),
            _ => {
                let error = "delivery failed: the callee no longer has a push endpoint";
                self.fail_delivery(task_id, None, error).await?;
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
    /// cannot be read at all (while the lease `token` is held, when given).
    pub(super) async fn caller_message(
        &self,
        task: &Task,
        token: Option<&str>,
    ) -> Result<Value, Stop> {
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
                self.fail_delivery(&task.id, token, error).await?;
                Err(Stop::With(JobOutcome::Done))
            }
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
