//! The push worker: one SQS message, one delivery attempt.
//!
//! For each message: read the task (finished, canceled or already accepted: nothing to do, so a
//! redelivered message never POSTs a finished task again); take the delivery lease; POST the task
//! to the callee's endpoint through the SSRF-guarded dialer; record the attempt; then apply the
//! answer, accept an asynchronous `working`, schedule a retry through the message's visibility,
//! or fail the task. Every write after the lease is conditioned on still holding it, so an
//! answer that comes back after the caller canceled is discarded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::{json, Value};
use tracing::Instrument;

use super::dial::Dialer;
use super::endpoint::{AuthScheme, Endpoint};
use super::queue::{Job, Queue};
use super::signature::sign_delivery;
use super::verdict::{judge, RetrySchedule, Verdict};
use crate::bodies::{Bodies, BodyError};
use crate::domain::content::MAX_TASK_CONTENT_BYTES;
use crate::domain::task::{Delivery, PackedResult};
use crate::domain::{clock, AgentRef, Task, TaskState};
use crate::signing::SigningCache;
use crate::store::{Attempt, Store, StoreError, TaskTransition};
use crate::vault::Vault;

/// What to do with the message after handling it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Delete it: the task needs nothing more from this message.
    Done,
    /// Leave it on the queue and make it visible again after this delay.
    RetryIn(Duration),
}

/// How long one attempt may hold a task before another attempt may take it over.
pub const LEASE_SECONDS: u64 = 60;
/// When the store fails mid-job, look again after this long.
const STORE_RETRY: Duration = Duration::from_secs(10);

pub struct Worker {
    pub store: Store,
    pub bodies: Bodies,
    pub vault: Vault,
    pub queue: Queue,
    pub dialer: Dialer,
    pub schedule: RetrySchedule,
    /// The webhook-signing key (not the card key), which signs every delivery.
    pub signing: Arc<SigningCache>,
}

fn jitter() -> f64 {
    let mut bytes = [0u8; 2];
    let _ = getrandom::fill(&mut bytes);
    f64::from(u16::from_le_bytes(bytes)) / f64::from(u16::MAX)
}

impl Worker {
    /// Handles a batch as the Lambda event source delivers it: each message on its own, all at
    /// once; returns the ids of the messages to leave on the queue, their visibility already set.
    pub async fn handle_batch(&self, jobs: &[Job]) -> Vec<String> {
        let outcomes = futures::future::join_all(jobs.iter().map(|job| self.handle(job))).await;
        let mut failed = Vec::new();
        for (job, outcome) in jobs.iter().zip(outcomes) {
            if let JobOutcome::RetryIn(delay) = outcome {
                if let Err(error) = self.queue.delay(&job.receipt_handle, delay).await {
                    tracing::warn!(error = %error, "could not delay a message; it returns after its visibility timeout");
                }
                failed.push(job.message_id.clone());
            }
        }
        failed
    }

    /// Handles one message.
    pub async fn handle(&self, job: &Job) -> JobOutcome {
        let task_id = match serde_json::from_str::<Value>(&job.body)
            .ok()
            .and_then(|body| body.get("task_id")?.as_str().map(str::to_owned))
        {
            Some(task_id) => task_id,
            None => {
                tracing::error!(message_id = %job.message_id, "push message without a task_id; dropped");
                return JobOutcome::Done;
            }
        };
        let span = tracing::info_span!("push", task_id = %task_id, message_id = %job.message_id);
        match self.deliver(&task_id).instrument(span.clone()).await {
            Ok(outcome) => outcome,
            Err(error) => {
                span.in_scope(
                    || tracing::warn!(error = %error, "store failed during delivery; will retry"),
                );
                JobOutcome::RetryIn(STORE_RETRY)
            }
        }
    }

    async fn deliver(&self, task_id: &str) -> Result<JobOutcome, StoreError> {
        let Some(task) = self.store.get_task(task_id).await? else {
            return Ok(JobOutcome::Done);
        };
        if task.delivery != Delivery::Push
            || !matches!(task.state, TaskState::Submitted | TaskState::Working)
            || task.delivered_at.is_some()
        {
            tracing::info!(state = task.state.as_str(), "nothing to deliver");
            return Ok(JobOutcome::Done);
        }
        let token = uuid::Uuid::new_v4().to_string();
        let max_attempts = self.schedule.max_attempts();
        let task = match self
            .store
            .lease_delivery(task_id, &token, LEASE_SECONDS, max_attempts)
            .await?
        {
            TaskTransition::Applied(task) => task,
            TaskTransition::Refused(None) => return Ok(JobOutcome::Done),
            TaskTransition::Refused(Some(current)) => return self.not_leased(&current).await,
        };
        let attempt = task.delivery_attempts;
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
        let (Some(callee), Some(endpoint)) = (callee, endpoint) else {
            let error = "delivery failed: the callee no longer has a push endpoint";
            self.store
                .fail_delivery(task_id, Some(&token), error)
                .await?;
            return Ok(JobOutcome::Done);
        };
        let secret = match (&endpoint.auth, &callee.sealed_secret) {
            (Some(_), Some(sealed)) => match self
                .vault
                .unseal(&callee.tenant_id, &callee.id, sealed)
                .await
            {
                Ok(secret) => Some(secret),
                Err(error) => {
                    tracing::warn!(error = %error, "cannot open the endpoint secret; will retry");
                    self.store
                        .release_for_retry(task_id, &token, STORE_RETRY.as_secs())
                        .await?;
                    return Ok(JobOutcome::RetryIn(STORE_RETRY));
                }
            },
            _ => None,
        };
        let message = match self
            .bodies
            .resolve_value(task.latest_caller_message())
            .await
        {
            Ok(message) => message,
            Err(BodyError::Unavailable(cause)) => {
                tracing::warn!(cause = %cause, "body store unavailable; will retry");
                self.store
                    .release_for_retry(task_id, &token, STORE_RETRY.as_secs())
                    .await?;
                return Ok(JobOutcome::RetryIn(STORE_RETRY));
            }
            Err(error) => {
                tracing::error!(error = %error, "the task's content cannot be read; failing it");
                let error = "delivery failed: the task's content could not be read";
                self.store
                    .fail_delivery(task_id, Some(&token), error)
                    .await?;
                return Ok(JobOutcome::Done);
            }
        };
        let mut headers = request_headers(&task, &endpoint, secret.as_deref());
        let body = json!({
            "task_id": task.id,
            "call_id": task.call_id,
            "message": message,
        })
        .to_string();
        match self.signing.active(&self.store, &self.vault).await {
            Ok((_, key)) => {
                let timestamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|since| since.as_secs())
                    .unwrap_or_default();
                sign_delivery(&mut headers, &key, &task.id, timestamp, &body);
            }
            Err(error) => {
                tracing::warn!(error = %error, "cannot open the signing key; will retry");
                self.store
                    .release_for_retry(task_id, &token, STORE_RETRY.as_secs())
                    .await?;
                return Ok(JobOutcome::RetryIn(STORE_RETRY));
            }
        }

        let started = Instant::now();
        let outcome = self
            .dialer
            .post(
                &endpoint.url,
                endpoint.allow_private_network,
                headers,
                body.into_bytes(),
            )
            .await;
        let latency_ms = started.elapsed().as_millis() as u64;
        let verdict = judge(&outcome);
        let record = Attempt {
            number: attempt,
            at: clock::now(),
            status: outcome.as_ref().ok().map(|response| response.status),
            latency_ms,
            error: match &verdict {
                Verdict::Retry { reason, .. } | Verdict::Fail(reason) => Some(reason.clone()),
                _ => None,
            },
        };
        tracing::info!(attempt, status = ?record.status, latency_ms, "delivery attempt");
        self.store
            .record_attempt(task_id, &record, task.expires_at)
            .await?;

        match verdict {
            Verdict::Answered(result) => {
                let result = PackedResult::pack(&task.tenant_id, task_id, &result);
                if task.would_overflow(result.content_bytes()) {
                    let error = format!(
                        "answer too large: the task would hold more than {MAX_TASK_CONTENT_BYTES} \
                         bytes of messages and artifacts"
                    );
                    self.store
                        .fail_delivery(task_id, Some(&token), &error)
                        .await?;
                    return Ok(JobOutcome::Done);
                }
                if let Err(error) = self.bodies.store(&result.bodies()).await {
                    tracing::warn!(error = %error, "cannot store the answer's bodies; will retry");
                    self.store
                        .release_for_retry(task_id, &token, STORE_RETRY.as_secs())
                        .await?;
                    return Ok(JobOutcome::RetryIn(STORE_RETRY));
                }
                match self
                    .store
                    .apply_push_answer(task_id, &token, &result)
                    .await?
                {
                    TaskTransition::Applied(task) => {
                        tracing::info!(state = task.state.as_str(), "task answered by push")
                    }
                    TaskTransition::Refused(current) => tracing::info!(
                        state = current.map(|task| task.state.as_str()).unwrap_or("gone"),
                        "answer discarded: the task moved on during delivery"
                    ),
                }
                Ok(JobOutcome::Done)
            }
            Verdict::Accepted => {
                self.store
                    .accept_push(task_id, &token, task.claim_timeout_seconds)
                    .await?;
                tracing::info!("callee accepted the task to finish later");
                Ok(JobOutcome::Done)
            }
            Verdict::Fail(reason) => {
                self.store
                    .fail_delivery(task_id, Some(&token), &reason)
                    .await?;
                Ok(JobOutcome::Done)
            }
            Verdict::Retry {
                reason,
                retry_after,
            } => match self.schedule.delay_after(attempt, retry_after, jitter()) {
                Some(delay) => {
                    self.store
                        .release_for_retry(task_id, &token, delay.as_secs())
                        .await?;
                    tracing::info!(delay_ms = delay.as_millis() as u64, "retry scheduled");
                    Ok(JobOutcome::RetryIn(delay))
                }
                None => {
                    let error = format!("delivery failed after {attempt} attempts: {reason}");
                    self.store
                        .fail_delivery(task_id, Some(&token), &error)
                        .await?;
                    Ok(JobOutcome::Done)
                }
            },
        }
    }

    /// The lease was refused: finished or accepted meanwhile, attempts used up, or another
    /// attempt holds it.
    async fn not_leased(&self, current: &Task) -> Result<JobOutcome, StoreError> {
        if !matches!(current.state, TaskState::Submitted | TaskState::Working)
            || current.delivered_at.is_some()
        {
            return Ok(JobOutcome::Done);
        }
        if current.delivery_attempts >= self.schedule.max_attempts() {
            let error = format!(
                "delivery failed after {} attempts",
                current.delivery_attempts
            );
            self.store.fail_delivery(&current.id, None, &error).await?;
            return Ok(JobOutcome::Done);
        }
        // Another attempt holds the lease: come back when it lapses, in case that attempt died.
        Ok(JobOutcome::RetryIn(Duration::from_secs(LEASE_SECONDS + 5)))
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
        headers.insert("x-forgebench-task", value);
    }
    if let Ok(value) = HeaderValue::from_str(&task.call_id) {
        headers.insert("x-parent-call", value);
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
