//! A2A push notifications: a task's caller-given webhooks receive the task's update events.
//!
//! After every committed change of a task that has configs, [`crate::tasks::notify_changed`] (the task layer) puts one
//! `{"task_id", "kind": "notify"}` message on the push queue. The worker, for such a message,
//! reads the task (bodies resolved) and its configs, and sends each config, in order, every
//! event numbered above its `delivered`: the event's A2A `StreamResponse`, naming its
//! destination in the update's `metadata` ([`super::signature::notification_body`]), signed
//! like a task delivery (`webhook-id` = `{task}:{config}:{event}`), with
//! `Authorization: {scheme} {credentials}` and `X-A2A-Notification-Token` when set, through the
//! SSRF-guarded dialer. One sender per config at a time (a short lease on the config) keeps the
//! order; each 2xx moves `delivered` forward with a conditional write. A failure leaves the
//! message for the push retry schedule; an event whose attempts are spent is skipped with a
//! warning. A tenant's receiver that fails every POST is held back for a while before any write
//! (`push/breaker.rs`).

use std::time::Duration;

use tracing::Instrument;

use ed25519_dalek::SigningKey;
use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION, CONTENT_TYPE};

use super::clearance::{Clearance, Cleared};
use super::outcome::jitter;
use super::outcome::{JobOutcome, LEASE_SECONDS, STORE_RETRY};
use super::signature::{notification_body, sign_delivery, NotificationDestination};
use super::worker::Worker;
use crate::a2a::wire::stream_event_json;
use crate::bodies::BodyError;
use crate::domain::notify::NotifyConfig;
use crate::domain::{Task, TaskId, TaskState};
use crate::store::StoreError;
use crate::vault::NotifySecret;

/// The header that carries a config's token, as A2A receivers read it.
pub const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// A config's delivery lease, as one sender holds it: `held` until a write gives it back.
struct Lease {
    token: String,
    held: bool,
}

/// How one config's round ended.
enum Round {
    /// Everything it had to send is sent (or it is gone).
    Done,
    /// Try again after this long.
    RetryIn(Duration),
    /// Nothing tried (see [`JobOutcome::HeldBack`]): again after this long.
    HeldBack(Duration),
}

impl Worker {
    /// Handles a notify message: every config of the task gets the events it has not had.
    pub(super) async fn notify(&self, task_id: &TaskId) -> Result<JobOutcome, StoreError> {
        let Some(mut task) = self.store.get_task(task_id).await? else {
            return Ok(JobOutcome::Done);
        };
        match self.bodies.resolve(&mut task, &[]).await {
            Ok(()) => {}
            Err(BodyError::Unavailable(cause)) => {
                tracing::warn!(cause = %cause, "body store unavailable; notifications retry");
                return Ok(JobOutcome::RetryIn(STORE_RETRY));
            }
            Err(error) => {
                tracing::error!(error = %error, "the task's content cannot be read; no notifications");
                return Ok(JobOutcome::Done);
            }
        }
        let configs = self.store.list_notify_configs(task_id).await?;
        if configs
            .iter()
            .all(|config| config.delivered >= task.event_count())
        {
            self.retire_if_finished(&task, &configs).await;
            return Ok(JobOutcome::Done);
        }
        let key = match self.signing.active(&self.store, &self.vault).await {
            Ok((_, key)) => key,
            Err(error) => {
                tracing::warn!(error = %error, "cannot open the signing key; notifications retry");
                return Ok(JobOutcome::RetryIn(STORE_RETRY));
            }
        };
        // Every config at once: a receiver that never answers holds its own config for one
        // POST's time, not the others (nor the batch) for one each.
        let rounds = futures::future::join_all(
            configs
                .iter()
                .cloned()
                .map(|config| self.notify_config(&task, config, &key)),
        )
        .await;
        let (mut retry, mut held): (Option<Duration>, Option<Duration>) = (None, None);
        for round in rounds {
            let (soonest, delay) = match round? {
                Round::Done => continue,
                Round::RetryIn(delay) => (&mut retry, delay),
                Round::HeldBack(delay) => (&mut held, delay),
            };
            *soonest = Some(soonest.map_or(delay, |soonest| soonest.min(delay)));
        }
        // A config that tried and failed has its retry counted; when none did, waiting is free.
        Ok(match (retry, held) {
            (Some(retry), held) => JobOutcome::RetryIn(held.map_or(retry, |held| held.min(retry))),
            (None, Some(held)) => JobOutcome::HeldBack(held),
            (None, None) => {
                self.retire_if_finished(&task, &configs).await;
                JobOutcome::Done
            }
        })
    }

    /// Once a finished task's configs have every event, they leave the outbox index: the
    /// sweeper has nothing more to send them. A failure here only costs a sweep that finds
    /// nothing to send.
    async fn retire_if_finished(&self, task: &Task, configs: &[NotifyConfig]) {
        if TaskState::OPEN.contains(&task.state) {
            return;
        }
        for config in configs {
            if let Err(error) = self.store.retire_notify_entry(config).await {
                tracing::warn!(error = %error, config_id = %config.id, "a delivered config stays on the outbox index");
            }
        }
    }

    /// Sends one config the events it has not had, holding its lease.
    async fn notify_config(
        &self,
        task: &Task,
        config: NotifyConfig,
        key: &SigningKey,
    ) -> Result<Round, StoreError> {
        if config.delivered >= task.event_count() {
            return Ok(Round::Done);
        }
        let clearance = match self.clear(&config.tenant_id, &config.url).await? {
            Cleared::Go(clearance) => clearance,
            // Not tried, nothing written.
            Cleared::HoldBack(delay) => return Ok(Round::HeldBack(delay)),
        };
        let token = uuid::Uuid::new_v4().to_string();
        let leased = self
            .store
            .lease_notify(&config, &token, LEASE_SECONDS)
            .await;
        let Ok(Some(config)) = leased else {
            self.release(clearance, false).await;
            // Another sender is at it; come back for what it may not have read.
            return leased.map(|_| Round::RetryIn(Duration::from_secs(1)));
        };
        // What the previous holder delivered, read with the lease: a copy read before it may be
        // behind and would send an event twice.
        let mut lease = Lease { token, held: true };
        let round = self
            .send_events(task, &config, &clearance, key, &mut lease)
            .await;
        self.release(clearance, true).await;
        if lease.held {
            if let Err(error) = self.store.release_notify(&config, &lease.token).await {
                tracing::warn!(error = %error, config_id = %config.id, "could not release a notification lease");
            }
        }
        round
    }

    /// Posts the config's pending events to its receiver in order under `clearance`, moving
    /// `delivered` after each 2xx.
    async fn send_events(
        &self,
        task: &Task,
        config: &NotifyConfig,
        clearance: &Clearance,
        key: &SigningKey,
        lease: &mut Lease,
    ) -> Result<Round, StoreError> {
        let Some(headers) = self.notify_headers(config).await else {
            return Ok(Round::RetryIn(STORE_RETRY));
        };
        let mut delivered = config.delivered;
        for event in task.events_after(config.delivered) {
            let body = notification_body(
                stream_event_json(task, &event),
                NotificationDestination::of(config),
            );
            let mut headers = headers.clone();
            let id = config.notification_id(event.number);
            sign_delivery(&mut headers, key, &id, unix_seconds(), &body);
            let span = super::post_span::notification(task, &config.url, config.id.as_str());
            let outcome = async {
                crate::trace::add_headers(&mut headers, task.trace_context().as_ref());
                let outcome = self
                    .post_cleared(clearance, &config.url, false, headers, body.into_bytes())
                    .await;
                super::post_span::record_answer(outcome.as_ref().ok().map(|answer| answer.status));
                outcome
            }
            .instrument(span)
            .await;
            let succeeded =
                matches!(&outcome, Ok(response) if (200..300).contains(&response.status));
            let retry_after = match outcome {
                Ok(_) if succeeded => {
                    if !self.store.advance_notify(config, event.number).await? {
                        // Deleted meanwhile, or another sender went past it.
                        return Ok(Round::Done);
                    }
                    delivered = event.number;
                    continue;
                }
                Ok(response) => response.retry_after,
                Err(_) => None,
            };
            return self
                .failed(config, lease, delivered, event.number, retry_after)
                .await;
        }
        Ok(Round::Done)
    }

    /// A POST of event `number` failed: count the attempt (which gives the lease back), and
    /// retry on the schedule, or skip the event once its attempts are spent.
    async fn failed(
        &self,
        config: &NotifyConfig,
        lease: &mut Lease,
        delivered: u64,
        number: u64,
        retry_after: Option<Duration>,
    ) -> Result<Round, StoreError> {
        let Some(attempts) = self
            .store
            .count_notify_attempt(config, delivered, &lease.token)
            .await?
        else {
            return Ok(Round::Done);
        };
        lease.held = false;
        match self.schedule.delay_after(attempts, retry_after, jitter()) {
            Some(delay) => Ok(Round::RetryIn(delay)),
            None => {
                tracing::warn!(
                    task_id = %config.task_id,
                    config_id = %config.id,
                    event = number,
                    attempts,
                    "push notification skipped: its attempts are spent"
                );
                self.store.advance_notify(config, number).await?;
                // Go on with the next event at once.
                Ok(Round::RetryIn(Duration::ZERO))
            }
        }
    }

    /// The headers every notification of `config` carries; `None` when its credentials cannot
    /// be opened for now.
    async fn notify_headers(&self, config: &NotifyConfig) -> Option<HeaderMap> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let mut config = config.clone();
        if let Err(error) = self.vault.open_notify_token(&mut config).await {
            tracing::warn!(error = %error, config_id = %config.id, "cannot open a notification config's token; will retry");
            return None;
        }
        if let Some(token) = &config.token {
            if let Ok(mut value) = HeaderValue::from_str(token) {
                value.set_sensitive(true);
                headers.insert(NOTIFICATION_TOKEN_HEADER, value);
            }
        }
        if let (Some(scheme), Some(sealed)) = (&config.scheme, &config.sealed_credentials) {
            let credentials = match self
                .vault
                .unseal_notify(
                    (&config.tenant_id, &config.task_id, &config.id),
                    NotifySecret::Credentials,
                    sealed,
                )
                .await
            {
                Ok(credentials) => credentials,
                Err(error) => {
                    tracing::warn!(error = %error, config_id = %config.id, "cannot open a notification config's credentials; will retry");
                    return None;
                }
            };
            if let Ok(mut value) = HeaderValue::from_str(&format!("{scheme} {credentials}")) {
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
            }
        }
        Some(headers)
    }
}

fn unix_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or_default()
}
