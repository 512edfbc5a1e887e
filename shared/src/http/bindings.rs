//! Bindings: grant (two-sided approval), list both directions, approve, revoke.

use std::collections::BTreeSet;

use lambda_http::Request;
use serde_json::{json, Map, Value};

use super::agents::{managed_agent, visible_agent};
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::binding::binding_id;
use crate::domain::contract::UseWindows;
use crate::domain::ids::AgentId;
use crate::domain::{clock, Agent, AgentRef, Binding, TenantPrincipal};
use crate::error::ApiError;
use crate::store::{AuditEntry, BindingWrite};

/// Most callees one grant may name.
pub const MAX_CALLEES_PER_GRANT: usize = 25;

pub(super) fn changed_concurrently() -> ApiError {
    ApiError::Conflict("the binding changed while this request was applied; retry".into())
}

/// `POST /v1/agents/{agent}/agents` `{"callees": [name or id, ...]}`: the caller's owner or an
/// admin grants caller → callee for each callee, all or nothing. A grant is approved at once when
/// the granter also speaks for the callee, and pending otherwise. Re-granting a revoked pair
/// reuses its row.
pub async fn grant(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let caller = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let body = json_object(&request)?;
    only_fields(&body, &["callees"])?;
    let mut seen = BTreeSet::new();
    let mut writes = Vec::new();
    let mut audit = Vec::new();
    let mut response = Vec::new();
    let now = clock::now();
    for reference in callee_references(&body)? {
        let callee = grantable_callee(app, &principal, &caller, reference).await?;
        if !seen.insert(callee.id.clone()) {
            continue;
        }
        let existing = app
            .store
            .get_binding(&binding_id(&caller.id, &callee.id))
            .await?;
        let previous = existing.as_ref().map(|binding| binding.updated_at.clone());
        let approve_now = principal.speaks_for(&callee);
        let Some(binding) = Binding::grant(existing.clone(), &caller, &callee, approve_now, &now)
        else {
            response.extend(existing);
            continue;
        };
        let action = if binding.approved_at.is_some() {
            "binding.grant"
        } else {
            "binding.grant.pending"
        };
        audit.push(AuditEntry::for_binding(&principal, action, &binding));
        response.push(binding.clone());
        writes.push(BindingWrite {
            binding,
            previous_updated_at: previous,
        });
    }
    if !writes.is_empty() && !app.store.save_bindings(&writes, &audit).await? {
        return Err(changed_concurrently());
    }
    ok(&json!(response))
}

/// The body's `callees`: 1 to [`MAX_CALLEES_PER_GRANT`] agent names or ids.
fn callee_references(body: &Map<String, Value>) -> Result<Vec<&str>, ApiError> {
    match body.get("callees") {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_CALLEES_PER_GRANT => {
            items
                .iter()
                .map(|item| item.as_str())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    ApiError::InvalidRequest("callees must be agent names or ids".into())
                })
        }
        _ => Err(ApiError::InvalidRequest(format!(
            "callees is required: a list of 1 to {MAX_CALLEES_PER_GRANT} agent names or ids"
        ))),
    }
}

/// The agent `reference` names in the granter's tenant, other than the caller itself: naming the
/// caller is a `409 conflict`, since whether a name or id is the caller's depends on the
/// tenant's agents, not on the request's shape, which the API document allows.
async fn grantable_callee(
    app: &App,
    principal: &TenantPrincipal,
    caller: &Agent,
    reference: &str,
) -> Result<Agent, ApiError> {
    let callee = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::parse(reference))
        .await?
        .filter(|callee| callee.tenant_id == principal.tenant_id)
        .ok_or_else(|| ApiError::NotFound(format!("no agent {reference:?} in this tenant")))?;
    if callee.id == caller.id {
        return Err(ApiError::Conflict(format!(
            "{reference:?} is the caller itself: an agent cannot be bound to itself"
        )));
    }
    Ok(callee)
}

/// `GET /v1/agents/{agent}/agents` → `{"outbound": [...], "inbound": [...]}`.
pub async fn list(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = visible_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let outbound = app.store.list_bindings(&agent.id, true).await?;
    let inbound = app.store.list_bindings(&agent.id, false).await?;
    ok(&json!({
        "outbound": all_with_usage(app, &outbound).await?,
        "inbound": all_with_usage(app, &inbound).await?,
    }))
}

/// Each binding with its use against its contract, read at once.
async fn all_with_usage(app: &App, bindings: &[Binding]) -> Result<Vec<Value>, ApiError> {
    futures::future::try_join_all(bindings.iter().map(|binding| with_usage(app, binding))).await
}

/// The binding `{binding_id}` if it involves the route's agent on the given side(s).
pub(super) async fn binding_of(
    app: &App,
    request: &Request,
    agent_id: &AgentId,
    as_callee_only: bool,
) -> Result<Binding, ApiError> {
    let id = path_param(request, "binding_id")?;
    let binding = app.store.get_binding(&id).await?;
    match binding {
        Some(binding)
            if binding.callee_agent_id == agent_id
                || (!as_callee_only && binding.caller_agent_id == agent_id) =>
        {
            Ok(binding)
        }
        _ => Err(ApiError::NotFound("binding not found".into())),
    }
}

/// `POST /v1/agents/{agent}/agents/{binding_id}/approve`: `{agent}` is the callee; its owner or
/// an admin approves.
pub async fn approve(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let callee = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let mut binding = binding_of(app, &request, &callee.id, true).await?;
    if binding.revoked {
        return Err(ApiError::Conflict(
            "the binding is revoked; grant it again to reopen it".into(),
        ));
    }
    if binding.approved_at.is_some() {
        return ok(&json!(binding));
    }
    let previous = binding.updated_at.clone();
    let now = clock::now();
    binding.approved_at = Some(now.clone());
    binding.updated_at = now;
    let audit = AuditEntry::for_binding(&principal, "binding.approve", &binding);
    let write = BindingWrite {
        binding: binding.clone(),
        previous_updated_at: Some(previous),
    };
    if !app.store.save_bindings(&[write], &[audit]).await? {
        return Err(changed_concurrently());
    }
    ok(&json!(binding))
}

/// `DELETE /v1/agents/{agent}/agents/{binding_id}`: from either side; the row is kept and marked
/// revoked.
pub async fn revoke(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let mut binding = binding_of(app, &request, &agent.id, false).await?;
    if binding.revoked {
        return ok(&json!(binding));
    }
    let previous = binding.updated_at.clone();
    binding.revoked = true;
    binding.updated_at = clock::now();
    let audit = AuditEntry::for_binding(&principal, "binding.revoke", &binding);
    let write = BindingWrite {
        binding: binding.clone(),
        previous_updated_at: Some(previous),
    };
    if !app.store.save_bindings(&[write], &[audit]).await? {
        return Err(changed_concurrently());
    }
    ok(&json!(binding))
}

/// The binding as answered with its use against its contract (`usage`).
pub(super) async fn with_usage(app: &App, binding: &Binding) -> Result<Value, ApiError> {
    let mut answer = json!(binding);
    let counted = if binding.contract.counts_use() {
        app.store.binding_use(&binding.id).await?
    } else {
        None
    };
    let now = UseWindows::at(clock::unix_now_ms());
    let current = counted.unwrap_or_default().in_windows(now);
    let counts_use = binding.contract.counts_use();
    answer["usage"] = json!({
        "minute": counts_use.then_some(current.minute_count),
        "day": counts_use.then_some(current.day_count),
        "open": binding.contract.counts_open().then_some(current.open),
    });
    Ok(answer)
}
