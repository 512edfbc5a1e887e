//! A new task against its binding's contract: its use counted before the task is written (the
//! rate, the daily quota, the open tasks), given back if the task is not written after all, and
//! a finished task taken off its binding's open tasks.

use super::Tasks;
use crate::domain::binding::binding_id;
use crate::domain::contract::{Contract, QuotaExceeded};
use crate::domain::Task;
use crate::store::{StoreError, UseTaken};

/// What an admitted open took from its binding's contract: nothing when the contract counts
/// nothing.
#[derive(Debug, Default)]
pub struct ContractAdmission {
    taken: Option<UseTaken>,
}

impl ContractAdmission {
    /// Whether the task counts among its binding's open tasks.
    pub fn counted_open(&self) -> bool {
        self.taken.as_ref().is_some_and(|taken| taken.open)
    }
}

impl Tasks<'_> {
    /// Counts an open through `binding_id` under `contract` at `now_ms`, or the bound it would
    /// pass.
    pub async fn enter_contract(
        &self,
        binding_id: &str,
        contract: &Contract,
        now_ms: u64,
    ) -> Result<Result<ContractAdmission, QuotaExceeded>, StoreError> {
        if !contract.counts_use() {
            return Ok(Ok(ContractAdmission::default()));
        }
        Ok(self
            .store
            .take_binding_use(binding_id, contract, now_ms)
            .await?
            .map(|taken| ContractAdmission { taken: Some(taken) }))
    }

    /// Gives back what an admitted open took, when its task was not written after all.
    pub async fn leave_contract_unopened(&self, admission: &ContractAdmission) {
        if let Some(taken) = &admission.taken {
            self.store.give_back_binding_use(taken).await;
        }
    }

    /// Takes a task that just finished off its binding's open tasks, if it was on them.
    pub(super) async fn left_its_binding(&self, task: &Task) {
        if !task.counted_on_binding || task.state.is_open() {
            return;
        }
        let binding = binding_id(&task.caller_agent_id, &task.callee_agent_id);
        if let Err(error) = self.store.binding_task_finished(&binding).await {
            tracing::warn!(task_id = %task.id, error = %error, "could not take a finished task off its binding's open tasks");
        }
    }
}
