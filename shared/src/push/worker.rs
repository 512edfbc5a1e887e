//! The push worker: one SQS message, one delivery attempt.
//!
//! For each message: read the task (finished, canceled or already accepted: nothing to do, so a
//! redelivered message never POSTs a finished task again); gather what the POST needs (the
//! endpoint, its secret from KMS, the message, the signing key); take the delivery lease, which
//! counts the attempt; POST the task to the callee's endpoint through the SSRF-guarded dialer;
//! apply the answer, accept an asynchronous `working`, schedule a retry through the message's
//! visibility, or fail the task; then record the attempt. Every write after the lease is
//! conditioned on still holding it, so an answer that comes back after the caller canceled is
//! discarded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use serde_json::Value;
use tracing::Instrument;

use super::dial::Dialer;
use super::endpoint::{AuthScheme, Endpoint};
use super::queue::{Job, Queue};
use super::signature::{delivery_body, sign_delivery, Destination};
use super::verdict::{judge, RetrySchedule, Verdict};
use crate::bodies::{Bodies, BodyError};
use crate::domain::content::MAX_TASK_CONTENT_BYTES;
use crate::domain::task::{Delivery, PackedResult, TaskResult};
use crate::domain::{clock, AgentRef, Task, TaskId, TaskState};
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
            .and_then(|body| body.get("task_id")?.as_str().map(TaskId::from))
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

    /// One attempt at the task's current delivery. The attempt is counted (by the lease) only
    /// once everything the POST needs is in hand, and the attempt record is written after the
    /// outcome, so neither trouble before the POST nor a failed record costs the task anything.
    async fn deliver(&self, task_id: &TaskId) -> Result<JobOutcome, StoreError> {
        let Some(task) = self.store.get_task(task_id).await? else {
            return Ok(JobOutcome::Done);
        };
        if !awaits_delivery(&task) {
            tracing::info!(state = task.state.as_str(), "nothing to deliver");
            return Ok(JobOutcome::Done);
        }
        if task.delivery_attempts >= self.schedule.max_attempts() {
            return self.not_leased(&task).await;
        }
        let prepared = match self.prepare(&task).await? {
            Ok(prepared) => prepared,
            Err(outcome) => return Ok(outcome),
        };
        let token = uuid::Uuid::new_v4().to_string();
        let max_attempts = self.schedule.max_attempts();
        let task = match self
            .store
            .lease_delivery(&task, &token, LEASE_SECONDS, max_attempts)
            .await?
        {
            TaskTransition::Applied(task) => task,
            TaskTransition::Refused(None) => return Ok(JobOutcome::Done),
            TaskTransition::Refused(Some(current)) => return self.not_leased(&current).await,
        };
        let (record, verdict) = self.attempt(&task, prepared).await;
        tracing::info!(
            attempt = record.number,
            of_delivery = task.delivery_attempts,
            status = ?record.status,
            latency_ms = record.latency_ms,
            "delivery attempt"
        );
        // The answer first: a store failure before the record costs the log a line, never the
        // task its answer.
        let concluded = self.conclude(&task, &token, verdict).await;
        if let Err(error) = self
            .store
            .record_attempt(task_id, &record, task.expires_at)
            .await
        {
            tracing::warn!(error = %error, attempt = record.number, "the attempt could not be recorded");
        }
        concluded
    }

    /// Gathers everything the POST needs before the lease is taken, so trouble on the way (the
    /// store, KMS opening the endpoint secret, the body store, the signing key) costs no attempt
    /// and writes nothing: the message comes back after [`STORE_RETRY`]. A delivery that cannot
    /// succeed at all (no endpoint, unreadable content) fails the task. `Err` is what to do with
    /// the message instead.
    async fn prepare(&self, task: &Task) -> Result<Result<Prepared, JobOutcome>, StoreError> {
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
            self.store.fail_delivery(&task.id, None, error).await?;
            return Ok(Err(JobOutcome::Done));
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
                    return Ok(Err(JobOutcome::RetryIn(STORE_RETRY)));
                }
            },
            _ => None,
        };
        let message = match self
            .bodies
            .resolve_message(task.latest_caller_message())
            .await
        {
            Ok(message) => message,
            Err(BodyError::Unavailable(cause)) => {
                tracing::warn!(cause = %cause, "body store unavailable; will retry");
                return Ok(Err(JobOutcome::RetryIn(STORE_RETRY)));
            }
            Err(error) => {
                tracing::error!(error = %error, "the task's content cannot be read; failing it");
                let error = "delivery failed: the task's content could not be read";
                self.store.fail_delivery(&task.id, None, error).await?;
                return Ok(Err(JobOutcome::Done));
            }
        };
        let key = match self.signing.active(&self.store, &self.vault).await {
            Ok((_, key)) => key,
            Err(error) => {
                tracing::warn!(error = %error, "cannot open the signing key; will retry");
                return Ok(Err(JobOutcome::RetryIn(STORE_RETRY)));
            }
        };
        let headers = request_headers(task, &endpoint, secret.as_deref());
        Ok(Ok(Prepared {
            endpoint,
            headers,
            message,
            key,
        }))
    }

    /// Signs and POSTs the delivery of a leased task; the attempt's record and what it means.
    async fn attempt(&self, task: &Task, prepared: Prepared) -> (Attempt, Verdict) {
        let Prepared {
            endpoint,
            mut headers,
            message,
            key,
        } = prepared;
        let destination = Destination {
            tenant_id: &task.tenant_id,
            agent_id: &task.callee_agent_id,
            url: &endpoint.url,
        };
        let body = delivery_body(&task.id, &task.call_id, &message, destination);
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_secs())
            .unwrap_or_default();
        sign_delivery(&mut headers, &key, task.webhook_id(), timestamp, &body);
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
        let verdict = judge(&outcome);
        let record = Attempt {
            number: task.attempt_number,
            at: clock::now(),
            status: outcome.as_ref().ok().map(|response| response.status),
            latency_ms: started.elapsed().as_millis() as u64,
            error: match &verdict {
                Verdict::Retry { reason, .. } | Verdict::Fail(reason) => Some(reason.clone()),
                _ => None,
            },
        };
        (record, verdict)
    }

    /// Acts on an attempt's verdict while holding the lease: applies the answer, accepts a
    /// `working`, fails the task, or releases the lease until the retry (or fails the task when
    /// the delivery's attempts are used up).
    async fn conclude(
        &self,
        task: &Task,
        token: &str,
        verdict: Verdict,
    ) -> Result<JobOutcome, StoreError> {
        let task_id = &task.id;
        match verdict {
            Verdict::Answered(result) => self.apply_answer(task, token, &result).await,
            Verdict::Accepted => {
                self.store
                    .accept_push(task_id, token, task.claim_timeout_seconds)
                    .await?;
                tracing::info!("callee accepted the task to finish later");
                Ok(JobOutcome::Done)
            }
            Verdict::Fail(reason) => {
                self.store
                    .fail_delivery(task_id, Some(token), &reason)
                    .await?;
                Ok(JobOutcome::Done)
            }
            Verdict::Retry {
                reason,
                retry_after,
            } => {
                let attempts = task.delivery_attempts;
                match self.schedule.delay_after(attempts, retry_after, jitter()) {
                    Some(delay) => {
                        self.store
                            .release_for_retry(task_id, token, delay.as_secs())
                            .await?;
                        tracing::info!(delay_ms = delay.as_millis() as u64, "retry scheduled");
                        Ok(JobOutcome::RetryIn(delay))
                    }
                    None => {
                        let error = format!("delivery failed after {attempts} attempts: {reason}");
                        self.store
                            .fail_delivery(task_id, Some(token), &error)
                            .await?;
                        Ok(JobOutcome::Done)
                    }
                }
            }
        }
    }

    /// Applies the endpoint's answer to the task this attempt leased.
    async fn apply_answer(
        &self,
        task: &Task,
        token: &str,
        result: &TaskResult,
    ) -> Result<JobOutcome, StoreError> {
        let task_id = &task.id;
        let result = PackedResult::pack(&task.tenant_id, task_id, result);
        if task.would_overflow(result.content_bytes()) {
            let error = format!(
                "answer too large: the task would hold more than {MAX_TASK_CONTENT_BYTES} \
                 bytes of messages and artifacts"
            );
            self.store
                .fail_delivery(task_id, Some(token), &error)
                .await?;
            return Ok(JobOutcome::Done);
        }
        if let Err(error) = self.bodies.store(&result.bodies()).await {
            tracing::warn!(error = %error, "cannot store the answer's bodies; will retry");
            self.store
                .release_for_retry(task_id, token, STORE_RETRY.as_secs())
                .await?;
            return Ok(JobOutcome::RetryIn(STORE_RETRY));
        }
        match self
            .store
            .apply_push_answer(task_id, token, &result)
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

    /// The lease was refused: finished or accepted meanwhile, attempts used up, or another
    /// attempt holds it.
    async fn not_leased(&self, current: &Task) -> Result<JobOutcome, StoreError> {
        if !awaits_delivery(current) {
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
        // Another attempt holds the lease, or a new delivery began since this message read the
        // task: come back when a lease would have lapsed, in case that attempt died.
        Ok(JobOutcome::RetryIn(Duration::from_secs(LEASE_SECONDS + 5)))
    }
}

/// Everything one POST needs: the endpoint, the headers so far (with the credential), the
/// caller's newest message and the signing key.
struct Prepared {
    endpoint: Endpoint,
    headers: HeaderMap,
    message: Value,
    key: SigningKey,
}

/// Whether the task still waits for a push delivery: a push task, open, not yet accepted.
fn awaits_delivery(task: &Task) -> bool {
    task.delivery == Delivery::Push
        && matches!(task.state, TaskState::Submitted | TaskState::Working)
        && task.delivered_at.is_none()
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
