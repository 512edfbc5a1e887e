//! Bindings: grant (two-sided approval), list both directions, approve, revoke.

use std::collections::BTreeSet;

use lambda_http::Request;
use serde_json::{json, Value};

use super::agents::{managed_agent, visible_agent};
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::binding::binding_id;
use crate::domain::ids::AgentId;
use crate::domain::{clock, AgentRef, Binding};
use crate::error::ApiError;
use crate::store::{AuditEntry, BindingWrite};

/// Most callees one grant may name.
pub const MAX_CALLEES_PER_GRANT: usize = 25;

fn changed_concurrently() -> ApiError {
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
    let references: Vec<&str> = match body.get("callees") {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_CALLEES_PER_GRANT => {
            items
                .iter()
                .map(|item| item.as_str())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    ApiError::InvalidRequest("callees must be agent names or ids".into())
                })?
        }
        _ => {
            return Err(ApiError::InvalidRequest(format!(
                "callees is required: a list of 1 to {MAX_CALLEES_PER_GRANT} agent names or ids"
            )))
        }
    };
    let mut seen = BTreeSet::new();
    let mut writes = Vec::new();
    let mut audit = Vec::new();
    let mut response = Vec::new();
    let now = clock::now();
    for reference in references {
        let callee = app
            .store
            .find_agent(&principal.tenant_id, &AgentRef::parse(reference))
            .await?
            .filter(|callee| callee.tenant_id == principal.tenant_id)
            .ok_or_else(|| ApiError::NotFound(format!("no agent {reference:?} in this tenant")))?;
        if callee.id == caller.id {
            return Err(ApiError::InvalidRequest(
                "an agent cannot be bound to itself".into(),
            ));
        }
        if !seen.insert(callee.id.clone()) {
            continue;
        }
        let approve_now = principal.speaks_for(&callee);
        let id = binding_id(&caller.id, &callee.id);
        let existing = app.store.get_binding(&id).await?;
        let (binding, previous) = match existing {
            None => (
                Binding {
                    id,
                    tenant_id: principal.tenant_id.clone(),
                    caller_agent_id: caller.id.clone(),
                    callee_agent_id: callee.id.clone(),
                    source: "api".into(),
                    revoked: false,
                    approved_at: approve_now.then(|| now.clone()),
                    created_at: now.clone(),
                    updated_at: now.clone(),
                },
                None,
            ),
            Some(mut binding) => {
                let previous = binding.updated_at.clone();
                if binding.revoked {
                    binding.revoked = false;
                    binding.approved_at = approve_now.then(|| now.clone());
                } else if binding.approved_at.is_none() && approve_now {
                    binding.approved_at = Some(now.clone());
                } else {
                    response.push(binding);
                    continue;
                }
                binding.updated_at = now.clone();
                (binding, Some(previous))
            }
        };
        let action = if binding.approved_at.is_some() {
            "binding.grant"
        } else {
            "binding.grant.pending"
        };
        audit.push(AuditEntry::new(&principal, action, &binding.id));
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

/// `GET /v1/agents/{agent}/agents` → `{"outbound": [...], "inbound": [...]}`.
pub async fn list(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = visible_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let outbound = app.store.list_bindings(&agent.id, true).await?;
    let inbound = app.store.list_bindings(&agent.id, false).await?;
    ok(&json!({"outbound": outbound, "inbound": inbound}))
}

/// The binding `{binding_id}` if it involves the route's agent on the given side(s).
async fn binding_of(
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
    let audit = AuditEntry::new(&principal, "binding.approve", &binding.id);
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
    let audit = AuditEntry::new(&principal, "binding.revoke", &binding.id);
    let write = BindingWrite {
        binding: binding.clone(),
        previous_updated_at: Some(previous),
    };
    if !app.store.save_bindings(&[write], &[audit]).await? {
        return Err(changed_concurrently());
    }
    ok(&json!(binding))
}
