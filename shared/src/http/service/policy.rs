//! The tenant's policies on a caller's call, for either edge: an open, an answer to the task's
//! question, a cancel, a read. A tenant without policies reads nothing more (its settings, from
//! this process's cache, say so); otherwise the call is judged by the compiled policies (read once
//! per version per process). An enforced policy that forbids the call refuses it (the one `403`,
//! the policies on the audit log); a tried one (`dry_run`) puts `would_refuse` on the audit log
//! and lets the call go on.

use std::sync::Arc;

use crate::app::App;
use crate::domain::binding::RefusalReason;
use crate::domain::call_tree::{Parent, TreePlace};
use crate::domain::policy::{Judgement, PolicyAction, PolicyBook, PolicyCall};
use crate::domain::task::CallLineage;
use crate::domain::{clock, AgentId, CallId, Task, TaskId, TenantId, TenantPrincipal};
use crate::error::ApiError;
use crate::http::gate::recorded_refusal;
use crate::store::AuditEntry;

/// Where a call sits in its tree, as the policies read it.
pub(crate) struct CallPlace {
    /// The call's depth, the root call being 1.
    pub depth: u32,
    /// The agent that made the tree's root call, when the ledger knows it.
    pub root_caller: Option<AgentId>,
}

impl CallPlace {
    /// The place of a call no policy asks about (not read, never seen by a policy), or of one
    /// the ledger does not hold.
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

/// The tenant's policies, compiled, as of the version its settings (from this process's cache)
/// name; `None` for a tenant without policies, which then reads nothing more. Looked up once per
/// governed call, so the whole call is judged by one version.
pub(crate) async fn tenant_book(
    app: &App,
    tenant_id: &TenantId,
) -> Result<Option<Arc<PolicyBook>>, ApiError> {
    let version = app
        .store
        .recent_tenant_settings(tenant_id)
        .await?
        .policies_version;
    if version == 0 {
        return Ok(None);
    }
    Ok(Some(app.store.policy_book(tenant_id, version).await?))
}

/// Judges `call`, placed at `place`, by `book`: `Ok` to go on, or the gate's refusal.
async fn judged(
    app: &App,
    principal: &TenantPrincipal,
    book: &PolicyBook,
    call: &GovernedCall<'_>,
    place: CallPlace,
) -> Result<(), ApiError> {
    match refusing_policies(app, principal, book, call, place).await? {
        None => Ok(()),
        Some(names) => Err(refuse_by_policies(app, principal, call, &names).await),
    }
}

/// The enforced policies of `book` that forbid `call`, if any; what tried policies would refuse
/// goes to the audit log (`would_refuse`) on the way.
pub(crate) async fn refusing_policies(
    app: &App,
    principal: &TenantPrincipal,
    book: &PolicyBook,
    call: &GovernedCall<'_>,
    place: CallPlace,
) -> Result<Option<Vec<String>>, ApiError> {
    let judgement = judgement(app, principal, book, call, place).await?;
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
    recorded_refusal(app, &refused, RefusalReason::Policy, ApiError::NotPermitted).await
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

/// `book`'s judgement of `call`, its agents named.
pub(crate) async fn judgement(
    app: &App,
    principal: &TenantPrincipal,
    book: &PolicyBook,
    call: &GovernedCall<'_>,
    place: CallPlace,
) -> Result<Judgement, ApiError> {
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

/// The place of the existing call `call_id` (a task's), read from the ledger when `book` reads
/// it.
async fn place_of_call(
    app: &App,
    book: &PolicyBook,
    tenant_id: &TenantId,
    call_id: &CallId,
) -> Result<CallPlace, ApiError> {
    if !book.reads_the_place() {
        return Ok(CallPlace::unread());
    }
    let Some(call) = app.store.parent_call(tenant_id, call_id).await? else {
        // Not on the ledger (yet): placed as a root of its own, its root caller unknown.
        return Ok(CallPlace::unread());
    };
    let (place, caller) = (&call.place, &call.caller_agent_id);
    Ok(CallPlace {
        depth: place.depth,
        root_caller: root_caller_of(app, tenant_id, place, caller, &call.root_call_id).await?,
    })
}

/// The agent that made the root call of the tree a call at `place`, made by `caller`, is in: the
/// first on its path when it keeps one, its caller when it is the root, else the root call's
/// caller as the ledger has it (one read).
async fn root_caller_of(
    app: &App,
    tenant_id: &TenantId,
    place: &TreePlace,
    caller: &AgentId,
    root_call_id: &CallId,
) -> Result<Option<AgentId>, ApiError> {
    if let Some(first) = place.path.as_ref().and_then(|path| path.first()) {
        return Ok(Some(first.clone()));
    }
    if place.depth <= 1 {
        return Ok(Some(caller.clone()));
    }
    Ok(app
        .store
        .parent_call(tenant_id, root_call_id)
        .await?
        .map(|root| root.caller_agent_id))
}

/// Judges a caller's `action` on its existing `task` by the tenant's policies, if it has any.
pub(crate) async fn judged_on_task(
    app: &App,
    principal: &TenantPrincipal,
    action: PolicyAction,
    task: &Task,
) -> Result<(), ApiError> {
    let Some(book) = tenant_book(app, &principal.tenant_id).await? else {
        return Ok(());
    };
    let place = place_of_call(app, &book, &principal.tenant_id, &task.call_id).await?;
    let lineage = task.lineage();
    let call = GovernedCall {
        action,
        caller_id: &task.caller_agent_id,
        callee_id: &task.callee_agent_id,
        skill: task.skill.as_deref(),
        lineage: Some(&lineage),
        task_id: Some(&task.id),
    };
    judged(app, principal, &book, &call, place).await
}

/// The place of a new call below `parent` (its lineage `lineage`), made by `caller_id`, when
/// `book` reads it.
pub(crate) async fn place_of_open(
    app: &App,
    book: &PolicyBook,
    tenant_id: &TenantId,
    caller_id: &AgentId,
    parent: &Parent,
    lineage: &CallLineage,
) -> Result<CallPlace, ApiError> {
    if !book.reads_the_place() {
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
        Parent::Known { place, caller, .. } => CallPlace {
            depth: place.depth.saturating_add(1),
            // The parent's tree is the new call's.
            root_caller: root_caller_of(app, tenant_id, place, caller, &lineage.root_call_id)
                .await?,
        },
    })
}
