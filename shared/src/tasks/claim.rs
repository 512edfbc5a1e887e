//! A pull callee's claim: the conditional write that takes a queued task (`store/claim.rs`),
//! then the task handed over in full. When its stored bodies cannot be read for now, the claim
//! is undone (the task goes back on the queue); when they are gone for good, the task fails and
//! the claim looks for the next one.

use super::Tasks;
use crate::bodies::BodyError;
use crate::domain::task::{PackedResult, TaskResult};
use crate::domain::{AgentId, Task, TenantId};
use crate::metrics::{self, Metric};
use crate::store::{ClaimOutcome, StoreError};

/// What one claim came to.
#[derive(Debug)]
pub enum Claim {
    /// The task, claimed and whole, its change handed on.
    Handed(Box<Task>),
    /// The body store cannot be read for now: the claim was undone.
    Undone,
    /// The claimed task's content is gone: the task failed; look again.
    Failed,
    /// Candidates were queued but other pollers took every one: look again at once.
    Contended,
    Empty,
}

impl Tasks<'_> {
    /// Claims the callee's next queued task; `waiting` when a poll looks again while it waits
    /// (a queue read another claim of this process began within the shortest poll interval
    /// serves, `Store::claim_next_waiting`).
    pub async fn claim(
        &self,
        tenant_id: &TenantId,
        callee_id: &AgentId,
        waiting: bool,
    ) -> Result<Claim, StoreError> {
        let outcome = match waiting {
            false => self.store.claim_next(callee_id).await?,
            true => self.store.claim_next_waiting(callee_id).await?,
        };
        let task = match outcome {
            ClaimOutcome::Claimed(task) => task,
            ClaimOutcome::Contended => return Ok(Claim::Contended),
            ClaimOutcome::Empty => return Ok(Claim::Empty),
        };
        tracing::info!(task_id = %task.id, call_id = %task.call_id, "task claimed");
        let claim = self.hand_over(*task, tenant_id, callee_id).await?;
        if let Claim::Handed(task) = &claim {
            metrics::emit(Metric::TaskClaimed);
            self.changed_wordless(task).await;
        }
        Ok(claim)
    }

    /// A claimed task in full, ready to hand to its callee, or the claim undone or failed.
    async fn hand_over(
        &self,
        mut task: Task,
        tenant_id: &TenantId,
        callee_id: &AgentId,
    ) -> Result<Claim, StoreError> {
        let error = match self.bodies.resolve(&mut task, &[]).await {
            Ok(()) => return Ok(Claim::Handed(Box::new(task))),
            Err(error) => error,
        };
        if let BodyError::Unavailable(cause) = &error {
            tracing::warn!(task_id = %task.id, cause = %cause, "body store unavailable; claim undone");
            self.store.unclaim(&task).await?;
            return Ok(Claim::Undone);
        }
        tracing::error!(task_id = %task.id, error = %error, "a claimed task's content cannot be read; failing it");
        let failure = TaskResult::Failed {
            error: "the task's content could not be read".into(),
        };
        let failure = PackedResult::pack(tenant_id, &task.id, &failure);
        // Failed by the gateway, not answered by the callee: no answer metric.
        let failed = self
            .store
            .finish_task(&task.id, tenant_id, callee_id, &failure)
            .await?;
        self.handed_on(failed).await;
        Ok(Claim::Failed)
    }
}
