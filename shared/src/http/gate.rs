//! The gate's refusals on the A2A edge: whatever the reason a caller may not reach a callee, the
//! caller sees one `403 not_permitted` and the precise reason goes to the audit log.

use crate::app::App;
use crate::domain::binding::{admit, binding_id, RefusalReason};
use crate::domain::contract::QuotaExceeded;
use crate::domain::task::CallLineage;
use crate::domain::{Agent, AgentId, AgentRef, Binding, TaskId, TenantPrincipal};
use crate::error::ApiError;
use crate::store::AuditEntry;

/// Refuses a task open, the call `lineage` names: the precise reason to the audit log, one 403
/// to the caller.
pub(super) async fn refuse(
    app: &App,
    principal: &TenantPrincipal,
    target: &str,
    reason: RefusalReason,
    lineage: &CallLineage,
) -> ApiError {
    refuse_action(app, principal, "task.open", target, reason, lineage, None).await
}

/// Refuses a governed call (`action`): the precise reason to the audit log, one 403 to the
/// caller.
pub(super) async fn refuse_action(
    app: &App,
    principal: &TenantPrincipal,
    action: &str,
    target: &str,
    reason: RefusalReason,
    lineage: &CallLineage,
    task_id: Option<&TaskId>,
) -> ApiError {
    let mut entry = AuditEntry::new(principal, action, target)
        .refused(reason.as_str())
        .of_call(lineage);
    entry.task_id = task_id.cloned();
    tracing::info!(action, reason = reason.as_str(), "call refused");
    recorded_refusal(app, &entry, reason, ApiError::NotPermitted).await
}

/// Puts a refusal's `entry` on the audit log and counts it (`reason`): `answer` once it is
/// recorded. The refusal must be on the record; if it cannot be written, the answer says so
/// instead.
pub(super) async fn recorded_refusal(
    app: &App,
    entry: &AuditEntry,
    reason: RefusalReason,
    answer: ApiError,
) -> ApiError {
    crate::metrics::emit(crate::metrics::Metric::Refused { reason });
    match app.store.record_refusal(entry).await {
        Ok(()) => answer,
        Err(error) => error.into(),
    }
}

/// The refusal reason for a caller whose open failed the binding or callee check.
pub(super) async fn refusal_reason(
    app: &App,
    principal: &TenantPrincipal,
    caller_id: &AgentId,
    callee_id: &AgentId,
) -> Result<RefusalReason, ApiError> {
    Ok(refusal_now(app, principal, caller_id, callee_id)
        .await?
        .unwrap_or(RefusalReason::NoBinding))
}

/// Why the gate would refuse `caller_id` reaching `callee_id` now, read from the store: the
/// callee and the binding; `None` when it would admit the call.
pub(super) async fn refusal_now(
    app: &App,
    principal: &TenantPrincipal,
    caller_id: &AgentId,
    callee_id: &AgentId,
) -> Result<Option<RefusalReason>, ApiError> {
    let callee = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::Id(parse_uuid(callee_id)?))
        .await?;
    let binding = app
        .store
        .get_binding(&binding_id(caller_id, callee_id))
        .await?;
    Ok(admit(&principal.tenant_id, callee.as_ref(), binding.as_ref()).err())
}

/// The binding that admits this caller now, or why the gate refuses it, read before anything is
/// stored for it; the open transaction checks the same again at the instant it writes.
pub(super) async fn admitting_binding(
    app: &App,
    principal: &TenantPrincipal,
    caller_id: &AgentId,
    callee: &Agent,
) -> Result<Result<Binding, RefusalReason>, ApiError> {
    let binding = app
        .store
        .get_binding(&binding_id(caller_id, &callee.id))
        .await?;
    Ok(
        match admit(&principal.tenant_id, Some(callee), binding.as_ref()) {
            Err(reason) => Err(reason),
            Ok(()) => binding.ok_or(RefusalReason::NoBinding),
        },
    )
}

/// Refuses a task open past its binding's rate, concurrency or daily quota: the reason to the
/// audit log, and a `429` saying which bound and when to come back.
pub(super) async fn refuse_over_quota(
    app: &App,
    principal: &TenantPrincipal,
    target: &str,
    exceeded: QuotaExceeded,
    lineage: &CallLineage,
) -> ApiError {
    let reason = RefusalReason::QuotaExceeded;
    let entry = AuditEntry::new(principal, "task.open", target)
        .refused(reason.as_str())
        .of_call(lineage);
    tracing::info!(reason = reason.as_str(), quota = ?exceeded, "call over its binding's contract");
    let answer = ApiError::QuotaExceeded {
        message: exceeded.message(),
        retry_after_seconds: exceeded.retry_after_seconds(crate::domain::clock::unix_now_ms()),
    };
    recorded_refusal(app, &entry, reason, answer).await
}

pub(super) fn parse_uuid(text: &str) -> Result<uuid::Uuid, ApiError> {
    uuid::Uuid::parse_str(text).map_err(ApiError::internal)
}
