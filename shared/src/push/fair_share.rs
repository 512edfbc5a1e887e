//! Fair share among tenants in the push worker. Every worker serves every tenant, and a job holds
//! its worker as long as its POST is open, so before any POST (a task delivery or a round of
//! notifications) a job must be cleared:
//! - the tenant's breaker at the receiver's registrable domain lets it (`push/breaker.rs`), and
//!   gives it the time it may take (shorter for a domain that timed out lately);
//! - one of the tenant's slots for POSTs in flight is free ([`SlotPool::of_tenant_pushes`]): at
//!   most `FORGEBENCH_TENANT_MAX_PUSHES` across every worker, whatever the tenant opens; a POST
//!   to a domain that answered the tenant in time lately needs none (`Breakers::needs_slot`).
//!
//! A job not cleared is held back ([`JobOutcome::HeldBack`]): before its lease, so it dials
//! nothing and is not counted as an attempt; its message goes back on the queue for later.

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;

use super::breaker::{domain_of, Answer, Gate};
use super::clearance::{Clearance, Cleared};
use super::dial::{DialError, EndpointResponse};
use super::outcome::jitter;
use super::worker::Worker;
use crate::domain::ids::TenantId;
use crate::store::{SlotPool, StoreError};

/// How long a job held back by its tenant's full slots waits: about as long as a POST to a
/// healthy receiver takes to free one, spread so the held jobs do not return together.
fn full_slots_wait() -> Duration {
    Duration::from_millis(1_000 + (jitter() * 1_000.0) as u64)
}

impl Worker {
    /// Clears one of `tenant_id`'s POSTs to `url`: its breaker there lets it, then a slot of its
    /// pushes in flight is taken (a write). Not cleared, nothing is held.
    pub(super) async fn clear(
        &self,
        tenant_id: &TenantId,
        url: &str,
    ) -> Result<Cleared, StoreError> {
        let domain = domain_of(url);
        let now = Instant::now();
        if let Gate::Wait(delay) = self.breakers.gate(tenant_id, &domain, now) {
            return Ok(Cleared::HoldBack(delay));
        }
        let usual = self.dialer.timeout();
        let time = self.breakers.timeout_for(tenant_id, &domain, usual, now);
        let cleared = |slot| {
            Cleared::Go(Clearance {
                tenant_id: tenant_id.clone(),
                domain: domain.clone(),
                slot,
                time,
            })
        };
        if !self.breakers.needs_slot(tenant_id, &domain, now) {
            return Ok(cleared(None));
        }
        let pool = SlotPool::of_tenant_pushes(tenant_id, self.tenant_max_pushes);
        // Held for the POST's time at most; a slot whose job died frees itself after it.
        let seconds = time.as_secs() + 1;
        match self.store.take_poll_slot(&pool, seconds).await {
            Ok(Some(slot)) => Ok(cleared(Some(slot))),
            Ok(None) => {
                self.breakers.untried(tenant_id, &domain);
                tracing::info!(tenant_id = %tenant_id, "the tenant's pushes in flight are at their bound; held back");
                Ok(Cleared::HoldBack(full_slots_wait()))
            }
            Err(error) => {
                self.breakers.untried(tenant_id, &domain);
                Err(error)
            }
        }
    }

    /// POSTs under `clearance`, within its time, and tells the tenant's breaker how it went.
    pub(super) async fn post_cleared(
        &self,
        clearance: &Clearance,
        url: &str,
        allow_private: bool,
        headers: HeaderMap,
        body: Vec<u8>,
    ) -> Result<EndpointResponse, DialError> {
        let started = Instant::now();
        let (tenant_id, domain) = (&clearance.tenant_id, &clearance.domain);
        let sending = self
            .breakers
            .sending(tenant_id, domain, clearance.time, started);
        let outcome = self
            .dialer
            .post(url, allow_private, headers, body, clearance.time)
            .await;
        drop(sending);
        let succeeded = matches!(&outcome, Ok(response) if (200..300).contains(&response.status));
        let timed_out = matches!(outcome, Err(DialError::Timeout));
        let answer = Answer::of(
            succeeded,
            timed_out,
            started.elapsed(),
            clearance.time,
            self.dialer.timeout(),
        );
        if self
            .breakers
            .record(tenant_id, domain, answer, Instant::now())
        {
            tracing::warn!(tenant_id = %tenant_id, domain = %domain, "pushes to a receiver domain failing or slow on every POST are held back for a while");
        }
        outcome
    }

    /// Gives the clearance's slot back once its POSTs are done; `tried` is false when none was
    /// sent (a trial it was does not hold the others back).
    pub(super) async fn release(&self, clearance: Clearance, tried: bool) {
        if !tried {
            self.breakers
                .untried(&clearance.tenant_id, &clearance.domain);
        }
        if let Some(slot) = &clearance.slot {
            self.store.release_poll_slot(slot).await;
        }
    }
}
