//! One attempt at a leased task: the signed POST and its record, then what the verdict does to
//! the task while the lease is held (apply the answer, accept a `working`, release the lease
//! until the retry, or fail the task).

use std::time::{Duration, Instant};

use super::clearance::Clearance;
use super::outcome::{jitter, JobOutcome, STORE_RETRY};
use super::request::Prepared;
use super::signature::{delivery_body, sign_delivery, Delivered, Destination};
use super::verdict::{judge, Verdict};
use super::worker::Worker;
use crate::domain::content::MAX_TASK_CONTENT_BYTES;
use crate::domain::task::{PackedResult, TaskResult};
use crate::domain::{clock, Task};
use crate::metrics::{self, Metric, PushOutcome};
use crate::store::{Attempt, StoreError, TaskTransition};

impl Worker {
    /// Signs and POSTs the delivery of a leased task; the attempt's record and what it means.
    pub(super) async fn attempt(
        &self,
        task: &Task,
        prepared: Prepared,
        clearance: &Clearance,
    ) -> (Attempt, Verdict) {
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
        let delivered = Delivered {
            task_id: &task.id,
            call_id: &task.call_id,
            skill: task.skill.as_deref(),
        };
        let body = delivery_body(delivered, &message, destination);
        let timestamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|since| since.as_secs())
            .unwrap_or_default();
        sign_delivery(&mut headers, &key, task.webhook_id(), timestamp, &body);
        crate::trace::add_headers(&mut headers, task.trace_context().as_ref());
        let started = Instant::now();
        let outcome = self
            .post_cleared(
                clearance,
                &endpoint.url,
                endpoint.allow_private_network,
                headers,
                body.into_bytes(),
            )
            .await;
        super::post_span::record_answer(outcome.as_ref().ok().map(|response| response.status));
        let verdict = judge(&outcome);
        metrics::emit(Metric::PushAttempt {
            outcome: match verdict {
                Verdict::Answered(_) | Verdict::Accepted => PushOutcome::Delivered,
                Verdict::Retry { .. } => PushOutcome::Retried,
                Verdict::Fail(_) => PushOutcome::Refused,
            },
            latency: started.elapsed(),
        });
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
    /// `working`, fails the task, or releases the lease until the retry.
    pub(super) async fn conclude(
        &self,
        task: &Task,
        token: &str,
        verdict: Verdict,
    ) -> Result<JobOutcome, StoreError> {
        let task_id = &task.id;
        match verdict {
            Verdict::Answered(result) => self.apply_answer(task, token, &result).await,
            Verdict::Accepted => {
                self.tasks()
                    .accept_push(task_id, token, task.claim_timeout_seconds)
                    .await?;
                tracing::info!("callee accepted the task to finish later");
                Ok(JobOutcome::Done)
            }
            Verdict::Fail(reason) => {
                self.tasks()
                    .fail_delivery(task_id, Some(token), &reason)
                    .await?;
                Ok(JobOutcome::Done)
            }
            Verdict::Retry {
                reason,
                retry_after,
            } => self.retry_later(task, token, &reason, retry_after).await,
        }
    }

    /// Releases the lease until the next attempt, or fails the task when the delivery's
    /// attempts are used up.
    async fn retry_later(
        &self,
        task: &Task,
        token: &str,
        reason: &str,
        retry_after: Option<Duration>,
    ) -> Result<JobOutcome, StoreError> {
        let attempts = task.delivery_attempts;
        match self.schedule.delay_after(attempts, retry_after, jitter()) {
            Some(delay) => {
                self.store
                    .release_for_retry(&task.id, token, delay.as_secs())
                    .await?;
                tracing::info!(delay_ms = delay.as_millis() as u64, "retry scheduled");
                Ok(JobOutcome::RetryIn(delay))
            }
            None => {
                let error = format!("delivery failed after {attempts} attempts: {reason}");
                self.tasks()
                    .fail_delivery(&task.id, Some(token), &error)
                    .await?;
                Ok(JobOutcome::Done)
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
            self.tasks()
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
        let applied = self
            .tasks()
            .apply_push_answer(task_id, token, &result)
            .await?;
        match applied {
            TaskTransition::Applied(task) => {
                metrics::emit(Metric::TaskAnswered {
                    state: task.state,
                    delivery: task.delivery,
                });
                tracing::info!(state = task.state.as_str(), "task answered by push")
            }
            TaskTransition::Refused(current) => tracing::info!(
                state = current.map(|task| task.state.as_str()).unwrap_or("gone"),
                "answer discarded: the task moved on during delivery"
            ),
        }
        Ok(JobOutcome::Done)
    }
}
