//! The tenant's policies on a caller's call, for either edge: an open, an answer to the task's
//! question, a cancel, a read. A tenant without policies reads nothing more (its settings, from
//! this process's cache, say so); otherwise the call is judged by the compiled policies (read once
//! per version per process). An enforced policy that forbids the call refuses it (the one `403`,
//! the policies on the audit log); a tried one (`dry_run`) puts `would_refuse` on the audit log
//! and lets the call go on.

use crate::app::App;
use crate::domain::call_tree::Parent;
use crate::domain::policy::{Judgement, PolicyAction, PolicyCall};
use crate::domain::task::CallLineage;
use crate::domain::{clock, AgentId, CallId, Task, TaskId, TenantId, TenantPrincipal};
use crate::error::ApiError;
use crate::store::AuditEntry;

/// Where a call sits in its tree, as the policies read it.
pub(crate) struct CallPlace {
    /// The call's depth, the root call being 1.
    pub depth: u32,
    /// The agent that made the tree's root call, when the ledger knows it.
    pub root_caller: Option<AgentId>,
}

impl CallPlace {
    /// The place of a call no policy asks about: not read, and never seen by a policy.
    fn unread() -> CallPlace {
        CallPlace {
            depth: 1,
            root_caller: None,
        }
    }
}

/// A caller's call the policies judge.
pub(crate) struct GovernedCall<'a> {
    pub action: PolicyAction,
    pub caller_id: &'a AgentId,
    pub callee_id: &'a AgentId,
    pub skill: Option<&'a str>,
    /// The call's lineage, for its audit entry (none for a check, which records nothing).
    pub lineage: Option<&'a CallLineage>,
    pub task_id: Option<&'a TaskId>,
}

/// The audit action of a governed call.
fn audit_action(action: PolicyAction) -> &'static str {
    match action {
        PolicyAction::Open => "task.open",
        PolicyAction::Answer => "task.message",
        PolicyAction::Cancel => "task.cancel",
        PolicyAction::Read => "task.read",
    }
}

/// Whether the caller's tenant has policies at all (from the settings this process read
/// lately).
pub(crate) async fn tenant_has_policies(app: &App, tenant_id: &TenantId) -> Result<bool, ApiError> {
    Ok(app
        .store
        .recent_tenant_settings(tenant_id)
        .await?
        .policies_version
        > 0)
}

/// Judges `call`, placed at `place`, by the tenant's policies: `Ok` to go on, or the gate's
/// refusal.
pub(crate) async fn judged(
    app: &App,
    principal: &TenantPrincipal,
    call: &GovernedCall<'_>,
    place: CallPlace,
) -> Result<(), ApiError> {
    match refusing_policies(app, principal, call, place).await? {
        None => Ok(()),
        Some(names) => Err(refuse_by_policies(app, principal, call, &names).await),
    }
}

/// The enforced policies that forbid `call`, if any; what tried policies would refuse goes to
/// the audit log (`would_refuse`) on the way.
pub(crate) async fn refusing_policies(
    app: &App,
    principal: &TenantPrincipal,
    call: &GovernedCall<'_>,
    place: CallPlace,
) -> Result<Option<Vec<String>>, ApiError> {
    let settings = app
        .store
        .recent_tenant_settings(&principal.tenant_id)
        .await?;
    if settings.policies_version == 0 {
        return Ok(None);
    }
    let judgement = judgement(app, principal, call, place, settings.policies_version).await?;
    if !judgement.would_refuse.is_empty() {
        let tried = entry(principal, call).by_policies(&judgement.would_refuse, false);
        tracing::info!(policies = ?judgement.would_refuse, "tried policies would refuse the call");
        if let Err(error) = app.store.record_refusal(&tried).await {
            tracing::warn!(error = %error, "could not record what tried policies would refuse");
        }
    }
    Ok((!judgement.refused_by.is_empty()).then_some(judgement.refused_by))
}

/// Refuses `call`, which the enforced policies `names` forbid: the policies to the audit log,
/// the one `403` to the caller.
pub(crate) async fn refuse_by_policies(
    app: &App,
    principal: &TenantPrincipal,
    call: &GovernedCall<'_>,
    names: &[String],
) -> ApiError {
    let refused = entry(principal, call).by_policies(names, true);
    tracing::info!(policies = ?names, "call refused by a tenant policy");
    crate::metrics::emit(crate::metrics::Metric::Refused {
        reason: crate::domain::binding::RefusalReason::Policy,
    });
    match app.store.record_refusal(&refused).await {
        Ok(()) => ApiError::NotPermitted,
        Err(error) => error.into(),
    }
}

/// The audit entry of `call`, before its outcome.
fn entry(principal: &TenantPrincipal, call: &GovernedCall<'_>) -> AuditEntry {
    let mut entry = AuditEntry::new(principal, audit_action(call.action), call.callee_id);
    if let Some(lineage) = call.lineage {
        entry = entry.of_call(lineage);
    }
    entry.task_id = call.task_id.cloned();
    entry.caller_agent_id = Some(call.caller_id.clone());
    entry.callee_agent_id = Some(call.callee_id.clone());
    entry
}

/// The tenant's policies of `version` on `call`, its agents named.
pub(crate) async fn judgement(
    app: &App,
    principal: &TenantPrincipal,
    call: &GovernedCall<'_>,
    place: CallPlace,
    version: u64,
) -> Result<Judgement, ApiError> {
    let book = app.store.policy_book(&principal.tenant_id, version).await?;
    let root_caller = match &place.root_caller {
        Some(root) => Some(agent_name(app, root).await?),
        None => None,
    };
    let asked = PolicyCall {
        action: call.action,
        caller: agent_name(app, call.caller_id).await?,
        callee: agent_name(app, call.callee_id).await?,
        skill: call.skill.map(str::to_owned),
        depth: place.depth,
        root_caller,
        tenant: principal.tenant_id.to_string(),
        now_unix: i64::try_from(clock::unix_now_ms() / 1000).unwrap_or(i64::MAX),
    };
    book.judge(&asked).map_err(ApiError::internal)
}

/// An agent's name (which policies name it by), from this process's recent reads.
async fn agent_name(app: &App, id: &AgentId) -> Result<String, ApiError> {
    let agent = app
        .store
        .recent_agent(id, app.config.key_cache_ttl)
        .await?
        .ok_or_else(|| ApiError::internal(format!("agent {id} of a governed call is gone")))?;
    Ok(agent.name)
}

/// The place of the existing call `call_id` (a task's), read from the ledger.
pub(crate) async fn place_of_call(
    app: &App,
    tenant_id: &TenantId,
    call_id: &CallId,
) -> Result<CallPlace, ApiError> {
    let Some(call) = app.store.parent_call(tenant_id, call_id).await? else {
        return Ok(CallPlace {
            depth: 1,
            root_caller: None,
        });
    };
    let root_caller = root_caller_of(app, tenant_id, &call).await?;
    Ok(CallPlace {
        depth: call.place.depth,
        root_caller,
    })
}

/// The agent that made the root call of the tree `call` is in: the first on its path when it
/// keeps one, itself when it is the root, else the root call's caller as the ledger has it.
pub(crate) async fn root_caller_of(
    app: &App,
    tenant_id: &TenantId,
    call: &crate::store::ParentCall,
) -> Result<Option<AgentId>, ApiError> {
    if let Some(first) = call.place.path.as_ref().and_then(|path| path.first()) {
        return Ok(Some(first.clone()));
    }
    if call.place.depth <= 1 {
        return Ok(Some(call.caller_agent_id.clone()));
    }
    Ok(app
        .store
        .parent_call(tenant_id, &call.root_call_id)
        .await?
        .map(|root| root.caller_agent_id))
}

/// Judges a caller's `action` on its existing `task`.
pub(crate) async fn judged_on_task(
    app: &App,
    principal: &TenantPrincipal,
    action: PolicyAction,
    task: &Task,
) -> Result<(), ApiError> {
    let version = app
        .store
        .recent_tenant_settings(&principal.tenant_id)
        .await?
        .policies_version;
    if version == 0 {
        return Ok(());
    }
    let book = app.store.policy_book(&principal.tenant_id, version).await?;
    let place = match book.reads_the_place() {
        true => place_of_call(app, &principal.tenant_id, &task.call_id).await?,
        // No policy reads it: nothing is read for it.
        false => CallPlace::unread(),
    };
    let lineage = task.lineage();
    let call = GovernedCall {
        action,
        caller_id: &task.caller_agent_id,
        callee_id: &task.callee_agent_id,
        skill: task.skill.as_deref(),
        lineage: Some(&lineage),
        task_id: Some(&task.id),
    };
    judged(app, principal, &call, place).await
}

/// The place of a new call below `parent` (its lineage `lineage`), made by `caller_id`.
pub(crate) async fn place_of_open(
    app: &App,
    tenant_id: &TenantId,
    caller_id: &AgentId,
    parent: &Parent,
    lineage: &CallLineage,
) -> Result<CallPlace, ApiError> {
    let version = app
        .store
        .recent_tenant_settings(tenant_id)
        .await?
        .policies_version;
    if !app
        .store
        .policy_book(tenant_id, version)
        .await?
        .reads_the_place()
    {
        return Ok(CallPlace::unread());
    }
    Ok(match parent {
        Parent::None => CallPlace {
            depth: 1,
            root_caller: Some(caller_id.clone()),
        },
        Parent::Unknown => CallPlace {
            depth: 2,
            root_caller: None,
        },
        Parent::Known { place, caller, .. } => {
            // The first on the path when it is kept, the parent's caller when the parent is the
            // root, else the root call's caller as the ledger has it.
            let root_caller = match place.path.as_ref().and_then(|path| path.first()) {
                Some(first) => Some(first.clone()),
                None if place.depth <= 1 => Some(caller.clone()),
                None => app
                    .store
                    .parent_call(tenant_id, &lineage.root_call_id)
                    .await?
                    .map(|root| root.caller_agent_id),
            };
            CallPlace {
                depth: place.depth.saturating_add(1),
                root_caller,
            }
        }
    })
}
