//! Admitting an open its binding let through: the tenant's policies, then its place in its tree
//! under the call-tree limits and its count against the binding's contract; what it took is
//! given back if its task is not written after all.

use super::policy::{place_of_open, refusing_policies, tenant_book, GovernedCall};
use crate::app::App;
use crate::domain::binding::RefusalReason;
use crate::domain::contract::QuotaExceeded;
use crate::domain::policy::PolicyAction;
use crate::domain::{clock, Binding, TenantPrincipal};
use crate::error::ApiError;
use crate::tasks::contract::ContractAdmission;
use crate::tasks::tree::{TreeAdmission, TreeCall};

/// Why the gate refuses an open after its binding admitted it: a call-tree limit or a skill (the
/// one `403`), or a bound of the binding's contract (a `429`).
pub(super) enum Refusal {
    Gate(RefusalReason),
    Quota(QuotaExceeded),
    /// The enforced tenant policies that forbid it (the one `403`).
    Policies(Vec<String>),
}

/// What an admitted open took: its place in its tree and the counts there, and its use of the
/// binding's contract.
pub(super) struct Admission {
    pub tree: TreeAdmission,
    pub contract: ContractAdmission,
    /// How many partitions the tenant's logs are spread over, as its settings stood.
    pub log_shards: crate::domain::shards::ShardCount,
}

impl Admission {
    /// Gives back the counts, when the task was not written after all.
    pub(super) async fn give_back(&self, app: &App) {
        let tasks = app.tasks();
        tasks.leave_tree_unopened(&self.tree).await;
        tasks.leave_contract_unopened(&self.contract).await;
    }
}

/// Judges the call by the tenant's policies, then places it in its tree under the tenant's
/// call-tree limits (the binding's in their place) and counts it against the binding's contract;
/// or the refusal (nothing stays counted for it).
pub(super) async fn admit(
    app: &App,
    principal: &TenantPrincipal,
    binding: &Binding,
    call: &TreeCall<'_>,
    skill: Option<&str>,
) -> Result<Result<Admission, Refusal>, ApiError> {
    if let Some(names) = policy_refusal(app, principal, call, skill).await? {
        return Ok(Err(Refusal::Policies(names)));
    }
    enter_counts(app, binding, call).await
}

/// The enforced tenant policies that forbid this open, if any (what tried ones would refuse is
/// noted on the way); nothing is read for a tenant without policies.
async fn policy_refusal(
    app: &App,
    principal: &TenantPrincipal,
    call: &TreeCall<'_>,
    skill: Option<&str>,
) -> Result<Option<Vec<String>>, ApiError> {
    let Some(book) = tenant_book(app, call.tenant_id).await? else {
        return Ok(None);
    };
    let (tenant_id, caller_id) = (call.tenant_id, call.caller_id);
    let place = place_of_open(app, &book, tenant_id, caller_id, call.parent, call.lineage).await?;
    let governed = GovernedCall {
        action: PolicyAction::Open,
        caller_id,
        callee_id: call.callee_id,
        skill,
        lineage: Some(call.lineage),
        task_id: None,
    };
    refusing_policies(app, principal, &book, &governed, place).await
}

/// Places the call in its tree under the tenant's call-tree limits (the binding's in their
/// place), then counts it against the binding's contract; or the refusal (nothing stays
/// counted for it).
async fn enter_counts(
    app: &App,
    binding: &Binding,
    call: &TreeCall<'_>,
) -> Result<Result<Admission, Refusal>, ApiError> {
    let settings = app.store.recent_tenant_settings(call.tenant_id).await?;
    let limits = binding.limits.applied_to(&settings.call_tree);
    let tasks = app.tasks();
    let tree = match tasks.enter_tree(&limits, call).await? {
        Ok(tree) => tree,
        Err(reason) => return Ok(Err(Refusal::Gate(reason))),
    };
    let now_ms = clock::unix_now_ms();
    let contract = match tasks
        .enter_contract(&binding.id, &binding.contract, now_ms)
        .await
    {
        Ok(Ok(contract)) => contract,
        Ok(Err(exceeded)) => {
            tasks.leave_tree_unopened(&tree).await;
            return Ok(Err(Refusal::Quota(exceeded)));
        }
        Err(error) => {
            tasks.leave_tree_unopened(&tree).await;
            return Err(error.into());
        }
    };
    Ok(Ok(Admission {
        tree,
        contract,
        log_shards: settings.log_shards,
    }))
}
