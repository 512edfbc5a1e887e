//! Counting each delivery attempt on its endpoint's health, and disabling an endpoint whose
//! failures in a row reach the deployment's rule (docs/api.md, "Operating deliveries"): the
//! agent's `endpoint` is marked `disabled` in the agent's own transaction, with the audit entry
//! `agent.endpoint.disable`, and the attempt that disabled it fails its task.

use std::time::{Duration, Instant};

use time::OffsetDateTime;

use super::health::Observed;
use super::verdict::Verdict;
use super::worker::Worker;
use crate::domain::endpoint_health::{day_of, Disabled};
use crate::domain::{clock, Task};
use crate::push::endpoint::Endpoint;
use crate::store::{AuditEntry, HealthCount};

impl Worker {
    /// Counts the attempt on its endpoint's health; when that disables the endpoint, the
    /// disabling, which ends the task's delivery. A count that cannot be written costs the
    /// health a line, never the task anything.
    pub(super) async fn count_attempt(&self, task: &Task, verdict: &Verdict) -> Option<Disabled> {
        let agent = &task.callee_agent_id;
        let observed = Observed::of(verdict);
        let failed = observed != Observed::Success;
        let write = self.health.note(agent, observed, Instant::now())?;
        let now = OffsetDateTime::now_utc();
        let count = HealthCount {
            day: day_of(now),
            at: clock::format(now).to_string(),
            ok: write.ok,
            failure: write.failure,
            ends_failures: write.ends_failures,
        };
        match self.store.count_endpoint_attempts(agent, &count).await {
            Ok(counters) => {
                self.health.written(agent, &counters, Instant::now());
                let disabled = self
                    .disable_rule
                    .disables(&counters, now)
                    .filter(|_| failed)?;
                self.disable_endpoint(task, disabled).await
            }
            Err(error) => {
                tracing::warn!(error = %error, "the endpoint's health could not be counted");
                self.health.not_written(agent, count.ok, Instant::now());
                None
            }
        }
    }

    /// Disables the task's callee endpoint, with its audit entry, unless it is disabled already
    /// (the disabling returned either way) or changed meanwhile (nothing: the next failure judges
    /// it again).
    async fn disable_endpoint(&self, task: &Task, disabled: Disabled) -> Option<Disabled> {
        let read = self
            .store
            .recent_agent(&task.callee_agent_id, Duration::ZERO)
            .await;
        let mut agent = match read {
            Ok(Some(agent)) if agent.tenant_id == task.tenant_id => agent,
            Ok(_) => return None,
            Err(error) => {
                tracing::warn!(error = %error, "cannot read the agent to disable its endpoint");
                return None;
            }
        };
        let mut endpoint = agent.endpoint.as_ref().and_then(Endpoint::from_json)?;
        if let Some(already) = endpoint.disabled {
            return Some(already);
        }
        endpoint.disabled = Some(disabled.clone());
        agent.endpoint = Some(endpoint.to_json());
        agent.updated_at = clock::now();
        agent.version += 1;
        let audit = AuditEntry::by_gateway(
            task.tenant_id.clone(),
            "agent.endpoint.disable",
            agent.id.as_str(),
            &disabled.reason,
        );
        match self.store.update_agent(&agent, &audit).await {
            Ok(true) => {
                tracing::warn!(agent_id = %agent.id, reason = %disabled.reason, "push endpoint disabled");
                Some(disabled)
            }
            Ok(false) => None,
            Err(error) => {
                tracing::warn!(error = %error, "the endpoint could not be disabled");
                None
            }
        }
    }
}
