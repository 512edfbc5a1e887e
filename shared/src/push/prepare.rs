//! What a delivery's POST needs: the callee's endpoint (the agent as read within the agent
//! cache's life), the endpoint's secret (opened with KMS, then cached), the signing key, all
//! gathered before the lease is taken; then the caller's newest message and the request headers.
//! Trouble on the way (the store, KMS, the body store, the signing key) costs no attempt: the
//! message comes back after [`STORE_RETRY`] (a lease taken before the message could be read is
//! given back). A delivery that cannot succeed at all (no endpoint, unreadable content) fails the
//! task.

use serde_json::Value;

use super::endpoint::Endpoint;
use super::outcome::{JobOutcome, Stop, STORE_RETRY};
use super::request::{Callee, Prepared};
use super::worker::Worker;
use crate::bodies::BodyError;
use crate::domain::{Agent, AgentId, Task, TaskId, TenantId};

const COME_BACK: Stop = Stop::With(JobOutcome::RetryIn(STORE_RETRY));

/// The error of a task whose delivery found its endpoint disabled: no POST, no attempt.
pub const ENDPOINT_DISABLED: &str =
    "delivery failed: the endpoint is disabled; an admin enables it";

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
    /// longer has one, or has it disabled.
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
        let error = match (callee, endpoint) {
            (Some(callee), Some(endpoint)) if endpoint.disabled.is_none() => {
                return Ok((callee, endpoint))
            }
            (Some(_), Some(_)) => ENDPOINT_DISABLED,
            _ => "delivery failed: the callee no longer has a push endpoint",
        };
        self.tasks().fail_delivery(task_id, None, error).await?;
        Err(Stop::With(JobOutcome::Done))
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
                self.tasks().fail_delivery(&task.id, token, error).await?;
                Err(Stop::With(JobOutcome::Done))
            }
        }
    }
}
