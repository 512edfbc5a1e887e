//! The push worker: one SQS message, one delivery attempt.
//!
//! A message from an open or an answer names the delivery, its tenant and its callee. For it:
//! gather what the POST needs from the callee (the endpoint, its secret, the signing key: each
//! cached once read, `prepare.rs`); take the delivery lease, whose conditional write counts the
//! attempt and returns the task (finished, canceled, accepted or re-delivered meanwhile: nothing
//! to do, so a redelivered message never POSTs a finished task again); POST the task to the
//! callee's endpoint through the SSRF-guarded dialer and act on the answer (`attempt.rs`): apply
//! it, accept an asynchronous `working`, schedule a retry through the message's visibility, or
//! fail the task; then record the attempt. A message from the sweeper names only the task: the
//! task is read first, the rest is the same. Every write after the lease is conditioned on still
//! holding it, so an answer that comes back after the caller canceled is discarded.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::field::Empty;
use tracing::Instrument;

use super::clearance::{Clearance, Cleared};
use super::dial::Dialer;
pub use super::outcome::{JobOutcome, ANSWER_TIME, CUT_RETRY, INVOCATION_TIME, LEASE_SECONDS};
use super::outcome::{Stop, STORE_RETRY};
use super::queue::{Job, Queue};
use super::request::Prepared;
use super::verdict::{RetrySchedule, Verdict};
use crate::bodies::Bodies;
use crate::domain::{AgentId, Task, TaskId, TenantId};
use crate::signing::SigningCache;
use crate::store::{Attempt, Store, StoreError, TaskTransition};
use crate::vault::Vault;

pub struct Worker {
    pub store: Store,
    pub bodies: Bodies,
    pub vault: Vault,
    pub queue: Queue,
    pub dialer: Dialer,
    pub schedule: RetrySchedule,
    /// The webhook-signing key (not the card key), which signs every delivery.
    pub signing: Arc<SigningCache>,
    /// How long a callee agent read is trusted (`FORGEBENCH_KEY_CACHE_SECONDS`): a changed
    /// endpoint reaches a worker in another process within this time.
    pub agent_ttl: Duration,
    /// Receivers failing or slow on every POST, per tenant and domain (`push/breaker.rs`).
    pub breakers: Arc<super::breaker::Breakers>,
    /// The most push POSTs of one tenant in flight across every worker
    /// (`FORGEBENCH_TENANT_MAX_PUSHES`, `push/fair_share.rs`).
    pub tenant_max_pushes: u32,
    /// What this process knows of its endpoints' health (`push/health.rs`).
    pub health: Arc<super::health::HealthBook>,
    /// When an endpoint that keeps failing is disabled (`FORGEBENCH_ENDPOINT_DISABLE_FAILURES`
    /// and `FORGEBENCH_ENDPOINT_DISABLE_SECONDS`).
    pub disable_rule: crate::domain::endpoint_health::DisableRule,
    /// The callees this process marked to have their new push tasks parked at their open
    /// (`push/parking.rs`).
    pub held_at_open: Arc<super::held_at_open::HeldAtOpen>,
}

impl Worker {
    /// The task layer over this worker's store, body store and queue.
    pub(super) fn tasks(&self) -> crate::tasks::Tasks<'_> {
        crate::tasks::Tasks::new(&self.store, &self.bodies, &self.queue)
    }

    /// Handles a batch as the Lambda event source delivers it: each message on its own, all at
    /// once, each within `time` (what the invocation has left, less what answering takes); returns
    /// the ids of the messages to leave on the queue, their visibility already set. A delivery
    /// held back for long waits on the table's outbox instead (`push/parking.rs`). A job still
    /// running when its time is up is cut and its message comes back, so one slow record never
    /// holds the invocation past its end, which would return every record of the batch.
    pub async fn handle_batch(&self, jobs: &[Job], time: Duration) -> Vec<String> {
        let outcomes =
            futures::future::join_all(jobs.iter().map(|job| self.handle_within(job, time))).await;
        let mut held = Vec::new();
        let mut retries = Vec::new();
        for (job, outcome) in jobs.iter().zip(outcomes) {
            match outcome {
                JobOutcome::Done => {}
                JobOutcome::HeldBack(delay) => {
                    let again = held_again(&job.body, delay, super::outcome::jitter());
                    if !self.parked(job, again.1).await {
                        held.push((job, again));
                    }
                }
                JobOutcome::RetryIn(delay) => retries.push((job, delay)),
            }
        }
        // Held-back jobs go back as new messages, in one request for the batch.
        let again: Vec<(String, Duration)> = held.iter().map(|(_, again)| again.clone()).collect();
        let sent = self.queue.send_again(&again).await;
        for ((job, (_, delay)), sent) in held.into_iter().zip(sent) {
            if !sent {
                retries.push((job, delay));
            }
        }
        let mut failed = Vec::new();
        for (job, delay) in retries {
            if let Err(error) = self.queue.delay(&job.receipt_handle, delay).await {
                tracing::warn!(error = %error, "could not delay a message; it returns after its visibility timeout");
            }
            failed.push(job.message_id.clone());
        }
        failed
    }

    /// [`Worker::handle`] within `time`; past it, the message comes back after [`CUT_RETRY`].
    async fn handle_within(&self, job: &Job, time: Duration) -> JobOutcome {
        match tokio::time::timeout(time, self.handle(job)).await {
            Ok(outcome) => outcome,
            Err(_) => {
                tracing::warn!(message_id = %job.message_id, "the job ran out of the invocation's time; its message comes back");
                JobOutcome::RetryIn(CUT_RETRY)
            }
        }
    }

    /// Handles one message, in a span that names the message, and once the task is read, the
    /// task, its call, its tenant and the callee agent. A body without a `task_id` can never be
    /// delivered: it is logged and dropped, not left to come back.
    pub async fn handle(&self, job: &Job) -> JobOutcome {
        let Some((task_id, kind)) = task_id_of(&job.body) else {
            tracing::error!(message_id = %job.message_id, "push message without a task_id; dropped");
            return JobOutcome::Done;
        };
        let named = match kind {
            MessageKind::Notify => return self.handle_notify(job, &task_id).await,
            MessageKind::Deliver(named) => named,
        };
        let span = tracing::info_span!(
            "push",
            task_id = %task_id,
            message_id = %job.message_id,
            call_id = Empty,
            tenant_id = Empty,
            agent_id = Empty,
        );
        let delivered = self.deliver(&task_id, named.as_ref());
        match delivered.instrument(span.clone()).await {
            Ok(outcome) | Err(Stop::With(outcome)) => outcome,
            Err(Stop::Store(error)) => {
                span.in_scope(
                    || tracing::warn!(error = %error, "store failed during delivery; will retry"),
                );
                JobOutcome::RetryIn(STORE_RETRY)
            }
        }
    }

    /// One attempt at the task's current delivery. The attempt is counted (by the lease) only
    /// when its POST follows, and the attempt record is written before the outcome, so a task
    /// seen finished already shows every attempt that finished it; neither trouble before the
    /// POST nor a failed record costs the task anything.
    async fn deliver(&self, task_id: &TaskId, named: Option<&Named>) -> Result<JobOutcome, Stop> {
        let (task, token, prepared, clearance) = match named {
            Some(named) => self.lease_first(task_id, named).await?,
            None => self.read_first(task_id).await?,
        };
        let span = super::post_span::attempt(&task, &prepared.endpoint.url);
        let (record, verdict) = self
            .attempt(&task, prepared, &clearance)
            .instrument(span)
            .await;
        self.release(clearance, true).await;
        tracing::info!(
            attempt = record.number,
            of_delivery = task.delivery_attempts,
            status = ?record.status,
            latency_ms = record.latency_ms,
            "delivery attempt"
        );
        // A record that cannot be written costs the log a line, never the task its answer.
        self.record(&task, &record).await;
        let verdict = match self.count_attempt(&task, &verdict).await {
            Some(disabled) => Verdict::Fail(format!(
                "delivery failed: the endpoint was disabled after {}",
                disabled.reason
            )),
            None => verdict,
        };
        Ok(self.conclude(&task, &token, verdict).await?)
    }

    /// A message naming the delivery, its tenant and its callee: what the POST needs from the
    /// callee (cached), the clearance to POST, then the lease, whose write returns the task: no
    /// read of the task. A clearance not used is released.
    async fn lease_first(&self, task_id: &TaskId, named: &Named) -> Result<Leased, Stop> {
        let callee = self
            .callee(task_id, &named.tenant_id, &named.callee_id)
            .await?;
        let clearance = self.cleared(&named.tenant_id, &callee.endpoint.url).await?;
        let leased = self.lease_with_message(task_id, &named.delivery_id).await;
        match leased {
            Ok((task, token, message)) => {
                let prepared = callee.post_of(&task, message);
                Ok((task, token, prepared, clearance))
            }
            Err(stop) => {
                self.release(clearance, false).await;
                Err(stop)
            }
        }
    }

    /// The lease of `delivery_id` and the caller's message; a lease taken when the message then
    /// cannot be read is given back.
    async fn lease_with_message(
        &self,
        task_id: &TaskId,
        delivery_id: &str,
    ) -> Result<(Task, String, Value), Stop> {
        let (task, token) = self.lease(task_id, Some(delivery_id)).await?;
        name_span(&task);
        match self.caller_message(&task, Some(&token)).await {
            Ok(message) => Ok((task, token, message)),
            Err(stop) => {
                if matches!(stop, Stop::With(JobOutcome::RetryIn(_))) {
                    self.store.give_back_lease(&task.id, &token).await?;
                }
                Err(stop)
            }
        }
    }

    /// A message naming only the task (the sweeper's): read the task, gather the POST's needs,
    /// clear the POST, then take the lease of the delivery read.
    async fn read_first(&self, task_id: &TaskId) -> Result<Leased, Stop> {
        let task = self.load(task_id).await?;
        let prepared = self.prepare(&task).await?;
        let clearance = self
            .cleared(&task.tenant_id, &prepared.endpoint.url)
            .await?;
        match self.lease(&task.id, task.delivery_id.as_deref()).await {
            Ok((task, token)) => Ok((task, token, prepared, clearance)),
            Err(stop) => {
                self.release(clearance, false).await;
                Err(stop)
            }
        }
    }

    /// The clearance for a POST of `tenant_id`'s to `url`; a job not cleared stops, held back.
    async fn cleared(&self, tenant_id: &TenantId, url: &str) -> Result<Clearance, Stop> {
        match self.clear(tenant_id, url).await? {
            Cleared::Go(clearance) => Ok(clearance),
            Cleared::HoldBack(delay) => Err(Stop::With(JobOutcome::HeldBack(delay))),
        }
    }

    /// Reads the task and names it in the current span; stops when it no longer waits for this
    /// delivery or its attempts are used up.
    async fn load(&self, task_id: &TaskId) -> Result<Task, Stop> {
        let Some(task) = self.store.get_task(task_id).await? else {
            return Err(Stop::With(JobOutcome::Done));
        };
        name_span(&task);
        if !task.awaits_delivery() {
            tracing::info!(state = task.state.as_str(), "nothing to deliver");
            return Err(Stop::With(JobOutcome::Done));
        }
        if task.delivery_attempts >= self.schedule.max_attempts() {
            return Err(Stop::With(self.not_leased(&task).await?));
        }
        Ok(task)
    }

    /// Takes the lease of the task's delivery `delivery_id`, which counts the attempt: the task
    /// as leased and the lease's token, which every later write must still hold. A delivery
    /// that a later one replaced is over: the later one has a message of its own.
    async fn lease(
        &self,
        task_id: &TaskId,
        delivery_id: Option<&str>,
    ) -> Result<(Task, String), Stop> {
        let token = uuid::Uuid::new_v4().to_string();
        let max_attempts = self.schedule.max_attempts();
        match self
            .store
            .lease_delivery(task_id, delivery_id, &token, LEASE_SECONDS, max_attempts)
            .await?
        {
            TaskTransition::Applied(task) => Ok((task, token)),
            TaskTransition::Refused(None) => Err(Stop::With(JobOutcome::Done)),
            TaskTransition::Refused(Some(current))
                if current.delivery_id.as_deref() != delivery_id =>
            {
                tracing::info!("a later delivery replaced this one");
                Err(Stop::With(JobOutcome::Done))
            }
            TaskTransition::Refused(Some(current)) => {
                Err(Stop::With(self.not_leased(&current).await?))
            }
        }
    }

    /// Writes the attempt's record; a failure costs the log a line, nothing else.
    async fn record(&self, task: &Task, record: &Attempt) {
        if let Err(error) = self
            .store
            .record_attempt(&task.id, record, task.expires_at)
            .await
        {
            tracing::warn!(error = %error, attempt = record.number, "the attempt could not be recorded");
        }
    }

    /// The lease was refused: finished or accepted meanwhile, attempts used up, or another
    /// attempt holds it.
    async fn not_leased(&self, current: &Task) -> Result<JobOutcome, StoreError> {
        if !current.awaits_delivery() {
            return Ok(JobOutcome::Done);
        }
        if current.delivery_attempts >= self.schedule.max_attempts() {
            let error = format!(
                "delivery failed after {} attempts",
                current.delivery_attempts
            );
            self.tasks()
                .fail_delivery(&current.id, None, &error)
                .await?;
            return Ok(JobOutcome::Done);
        }
        // Another attempt holds the lease, or a new delivery began since this message read the
        // task: come back when a lease would have lapsed, in case that attempt died.
        Ok(JobOutcome::RetryIn(Duration::from_secs(LEASE_SECONDS + 5)))
    }
}

/// The longest a held-back message waits before it is handled again.
const MAX_HOLD: Duration = Duration::from_secs(300);

/// A held-back message's body as it goes back on the queue, counting how often it was held
/// (`held`), and when it is due: after `delay`, and after longer each time it is held again
/// (1 s, 2 s, 4 s, ... up to [`MAX_HOLD`], 5 minutes), so a tenant whose receivers stay stuck costs the
/// queue and the worker less and less; then up to half again, by `spread` (a draw from [0, 1]),
/// so messages held back together (a breaker's whole backlog) do not all return at one moment
/// and queue up ahead of other tenants' messages.
fn held_again(body: &str, delay: Duration, spread: f64) -> (String, Duration) {
    let spread = |delay: Duration| delay.mul_f64(1.0 + spread.clamp(0.0, 1.0) / 2.0);
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(body) else {
        return (body.to_owned(), spread(delay));
    };
    let held = fields.get("held").and_then(Value::as_u64).unwrap_or(0) + 1;
    fields.insert("held".into(), Value::from(held));
    let backoff = Duration::from_secs(1 << (held - 1).min(9)).min(MAX_HOLD);
    (
        Value::Object(fields).to_string(),
        spread(delay.max(backoff)),
    )
}

/// A leased task, its lease's token, its POST and the clearance to send it.
type Leased = (Task, String, Prepared, Clearance);

/// What a queue message asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum MessageKind {
    /// Deliver the task to its callee's endpoint: the delivery named, or (a body with only the
    /// task's id, as the sweeper sends) the task's current one.
    Deliver(Option<Named>),
    /// Send the task's push notification configs their new events.
    Notify,
}

/// What a delivery message names besides its task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Named {
    delivery_id: String,
    tenant_id: TenantId,
    callee_id: AgentId,
}

/// The task a message names (the `task_id` of its JSON body) and what it asks for.
pub(super) fn task_id_of(body: &str) -> Option<(TaskId, MessageKind)> {
    let body = serde_json::from_str::<Value>(body).ok()?;
    let field = |name: &str| body.get(name).and_then(Value::as_str);
    let task_id = TaskId::from(field("task_id")?);
    let kind = match field("kind") {
        Some("notify") => MessageKind::Notify,
        _ => MessageKind::Deliver(
            match (field("delivery_id"), field("tenant_id"), field("callee_id")) {
                (Some(delivery), Some(tenant), Some(callee)) => Some(Named {
                    delivery_id: delivery.to_owned(),
                    tenant_id: TenantId::from(tenant),
                    callee_id: AgentId::from(callee),
                }),
                _ => None,
            },
        ),
    };
    Some((task_id, kind))
}

/// Names the task, its call, its tenant and its callee in the current span and trace.
fn name_span(task: &Task) {
    tracing::Span::current()
        .record("call_id", task.call_id.as_str())
        .record("tenant_id", task.tenant_id.as_str())
        .record("agent_id", task.callee_agent_id.as_str());
}

impl Worker {
    /// A notify message, in a span naming the task and the message.
    async fn handle_notify(&self, job: &Job, task_id: &TaskId) -> JobOutcome {
        let span = tracing::info_span!("notify", task_id = %task_id, message_id = %job.message_id);
        match self.notify(task_id).instrument(span.clone()).await {
            Ok(outcome) => outcome,
            Err(error) => {
                span.in_scope(
                    || tracing::warn!(error = %error, "store failed during notifications; will retry"),
                );
                JobOutcome::RetryIn(STORE_RETRY)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_held_again_and_again_waits_longer_each_time() {
        let body = r#"{"task_id": "t", "delivery_id": "d", "tenant_id": "n", "callee_id": "a"}"#;
        let mut body = body.to_owned();
        let mut waits = Vec::new();
        for _ in 0..12 {
            let (next, wait) = held_again(&body, Duration::from_millis(1_500), 0.0);
            waits.push(wait.as_millis());
            body = next;
        }
        assert_eq!(
            waits,
            [
                1_500, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000,
                300_000, 300_000
            ]
        );
        // What the message asks for is unchanged.
        assert_eq!(
            task_id_of(&body).map(|(task, _)| task),
            Some(TaskId::from("t"))
        );
        assert_eq!(
            held_again("not json", Duration::from_secs(3), 0.0),
            ("not json".to_owned(), Duration::from_secs(3))
        );
        // Spread by up to half again.
        let (_, spread) = held_again(&body, Duration::from_secs(2), 1.0);
        assert_eq!(spread, Duration::from_secs(450));
        let (_, spread) = held_again("{}", Duration::from_secs(2), 0.5);
        assert_eq!(spread, Duration::from_millis(2_500));
    }

    #[test]
    fn a_delivery_message_names_its_delivery_tenant_and_callee_or_only_its_task() {
        let named = r#"{"task_id": "t", "delivery_id": "d", "tenant_id": "n", "callee_id": "a"}"#;
        assert_eq!(
            task_id_of(named),
            Some((
                TaskId::from("t"),
                MessageKind::Deliver(Some(Named {
                    delivery_id: "d".into(),
                    tenant_id: TenantId::from("n"),
                    callee_id: AgentId::from("a"),
                }))
            ))
        );
        let swept = r#"{"task_id": "t"}"#;
        assert_eq!(
            task_id_of(swept),
            Some((TaskId::from("t"), MessageKind::Deliver(None)))
        );
        // A task stored before deliveries had ids: `delivery_id` null, read first.
        let unnamed =
            r#"{"task_id": "t", "delivery_id": null, "tenant_id": "n", "callee_id": "a"}"#;
        assert_eq!(
            task_id_of(unnamed),
            Some((TaskId::from("t"), MessageKind::Deliver(None)))
        );
        let notify = r#"{"task_id": "t", "kind": "notify", "delivery_id": "d"}"#;
        assert_eq!(
            task_id_of(notify),
            Some((TaskId::from("t"), MessageKind::Notify))
        );
        assert_eq!(task_id_of(r#"{"delivery_id": "d"}"#), None);
        assert_eq!(task_id_of("not json"), None);
    }
}
