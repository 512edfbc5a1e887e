//! `GET` and `PATCH /v1/tenant/policies`: the tenant's policies, and `POST
//! /v1/tenant/policies/check`: whether a call would be allowed now, and why (docs/api.md,
//! "Tenant policies").

use lambda_http::Request;
use serde_json::{json, Map, Value};

use super::service::policy::{judgement, tenant_book, CallPlace, GovernedCall};
use super::{json_object, ok, only_fields, HandlerResult};
use crate::app::App;
use crate::domain::binding::{admit, binding_id};
use crate::domain::call_tree::MAX_CALL_DEPTH_CEILING;
use crate::domain::policy::{
    is_policy_name, PolicyAction, PolicyBook, PolicyMode, TenantPolicy, MAX_DESCRIPTION_CHARS,
    MAX_POLICIES, MAX_POLICY_CHARS,
};
use crate::domain::{clock, Agent, AgentRef, TenantPrincipal};
use crate::error::ApiError;
use crate::store::{AuditEntry, StoredPolicies};

/// `GET /v1/tenant/policies` (admin, viewer): `{version, items}`, by name.
pub async fn list(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.reads_all_tasks() {
        return Err(ApiError::Forbidden(
            "the tenant's policies are for admins and viewers".into(),
        ));
    }
    let stored = app.store.tenant_policies(&principal.tenant_id).await?;
    ok(&view(&stored))
}

/// `PATCH /v1/tenant/policies` (admin) `{"policies": {name: {policy?, mode?, description?} |
/// null}}`: a merge patch of the tenant's policies by name, the whole set checked against the
/// schema before it is saved, with an audit entry per policy set or removed.
pub async fn update(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.is_admin() {
        return Err(ApiError::Forbidden(
            "only an admin may change the tenant's policies".into(),
        ));
    }
    let body = json_object(&request)?;
    only_fields(&body, &["policies"])?;
    let patch = match body.get("policies") {
        Some(Value::Object(patch)) => patch,
        _ => {
            return Err(ApiError::InvalidRequest(
                "policies must be an object of policies by name".into(),
            ))
        }
    };
    for _ in 0..SAVE_ATTEMPTS {
        let seen = app.store.tenant_policies(&principal.tenant_id).await?;
        let (next, changed) = patched(&seen.policies, patch)?;
        if changed.is_empty() {
            return ok(&view(&seen));
        }
        PolicyBook::new(&next).map_err(|error| ApiError::InvalidRequest(error.0))?;
        let audit = changed
            .iter()
            .map(|(name, action)| AuditEntry::new(&principal, action, name))
            .collect::<Vec<_>>();
        let tenant = &principal.tenant_id;
        if app
            .store
            .save_tenant_policies(tenant, seen.version, &next, &audit)
            .await?
        {
            tracing::info!(tenant_id = %tenant, changes = audit.len(), "tenant policies changed");
            let saved = StoredPolicies {
                version: seen.version + 1,
                policies: next,
            };
            return ok(&view(&saved));
        }
    }
    Err(ApiError::Conflict(
        "the policies kept changing while this request was applied; retry".into(),
    ))
}

/// How often a change is read again after another change landed first.
const SAVE_ATTEMPTS: usize = 4;

/// The policies a patch changed, each with its audit action.
type Changes = Vec<(String, &'static str)>;

/// `policies` with `patch` applied, and the audit action of each policy it changed.
fn patched(
    policies: &[TenantPolicy],
    patch: &Map<String, Value>,
) -> Result<(Vec<TenantPolicy>, Changes), ApiError> {
    if patch.len() > MAX_POLICIES {
        return Err(ApiError::InvalidRequest(format!(
            "a change names at most {MAX_POLICIES} policies"
        )));
    }
    let mut next = policies.to_vec();
    let mut changed = Vec::new();
    for (name, change) in patch {
        if !is_policy_name(name) {
            return Err(ApiError::InvalidRequest(format!(
                "{name:?} is not a policy name: 1 to 64 lowercase letters, digits, - and _"
            )));
        }
        let at = next.iter().position(|policy| &policy.name == name);
        match (change, at) {
            (Value::Null, Some(at)) => {
                next.remove(at);
                changed.push((name.clone(), "tenant.policy.remove"));
            }
            (Value::Null, None) => {}
            (Value::Object(fields), at) => {
                let current = at.map(|at| next[at].clone());
                let policy = patched_policy(name, current.as_ref(), fields)?;
                if current
                    .as_ref()
                    .is_some_and(|current| same(current, &policy))
                {
                    continue;
                }
                match at {
                    Some(at) => next[at] = policy,
                    None => next.push(policy),
                }
                changed.push((name.clone(), "tenant.policy.set"));
            }
            _ => {
                return Err(ApiError::InvalidRequest(format!(
                    "policies.{name} must be an object, or null to remove it"
                )))
            }
        }
    }
    if next.len() > MAX_POLICIES {
        return Err(ApiError::InvalidRequest(format!(
            "a tenant holds at most {MAX_POLICIES} policies"
        )));
    }
    next.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((next, changed))
}

fn same(a: &TenantPolicy, b: &TenantPolicy) -> bool {
    a.policy == b.policy && a.mode == b.mode && a.description == b.description
}

/// One policy with its merge patch `fields`: a new one needs its `policy` and is tried
/// (`dry_run`) unless its `mode` says otherwise.
fn patched_policy(
    name: &str,
    current: Option<&TenantPolicy>,
    fields: &Map<String, Value>,
) -> Result<TenantPolicy, ApiError> {
    only_fields(fields, &["policy", "mode", "description"])?;
    let invalid = |what: &str| ApiError::InvalidRequest(format!("policies.{name}.{what}"));
    let policy = match (fields.get("policy"), current) {
        (Some(Value::String(text)), _)
            if !text.trim().is_empty() && text.chars().count() <= MAX_POLICY_CHARS =>
        {
            text.clone()
        }
        (Some(_), _) => {
            return Err(invalid(&format!(
                "policy must be one Cedar policy of 1 to {MAX_POLICY_CHARS} characters"
            )))
        }
        (None, Some(current)) => current.policy.clone(),
        (None, None) => return Err(invalid("policy is required for a new policy")),
    };
    let mode = match (fields.get("mode"), current) {
        (Some(Value::String(mode)), _) => PolicyMode::parse(mode)
            .ok_or_else(|| invalid("mode must be \"enforce\" or \"dry_run\""))?,
        (Some(_), _) => return Err(invalid("mode must be \"enforce\" or \"dry_run\"")),
        (None, Some(current)) => current.mode,
        (None, None) => PolicyMode::DryRun,
    };
    let description = match (fields.get("description"), current) {
        (Some(Value::Null), _) => None,
        (Some(Value::String(text)), _) if text.chars().count() <= MAX_DESCRIPTION_CHARS => {
            Some(text.clone())
        }
        (Some(_), _) => {
            return Err(invalid(&format!(
                "description must be null or a string of at most {MAX_DESCRIPTION_CHARS} characters"
            )))
        }
        (None, current) => current.and_then(|current| current.description.clone()),
    };
    Ok(TenantPolicy {
        name: name.to_owned(),
        policy,
        mode,
        description,
        updated_at: clock::now().to_string(),
    })
}

fn view(stored: &StoredPolicies) -> Value {
    json!({"version": stored.version, "items": stored.policies})
}

/// `POST /v1/tenant/policies/check` (admin, viewer) `{caller, callee, skill?, action?, depth?,
/// root_caller?}`: whether the gate would allow the call now, and why: `{allowed, reason,
/// policies, would_refuse}`. Nothing is recorded.
pub async fn check(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.reads_all_tasks() {
        return Err(ApiError::Forbidden(
            "checking calls is for admins and viewers".into(),
        ));
    }
    let body = json_object(&request)?;
    only_fields(
        &body,
        &[
            "caller",
            "callee",
            "skill",
            "action",
            "depth",
            "root_caller",
        ],
    )?;
    let asked = CheckRequest::read(app, &principal, &body).await?;
    ok(&asked.verdict(app, &principal).await?)
}

/// A call to check, its agents found.
struct CheckRequest {
    caller: Agent,
    callee: Agent,
    skill: Option<String>,
    action: PolicyAction,
    depth: u32,
    root_caller: Option<Agent>,
}

impl CheckRequest {
    async fn read(
        app: &App,
        principal: &TenantPrincipal,
        body: &Map<String, Value>,
    ) -> Result<CheckRequest, ApiError> {
        let caller = named_agent(app, principal, body, "caller").await?;
        let callee = named_agent(app, principal, body, "callee").await?;
        let skill = crate::domain::contract::named_skill(body.get("skill")).map_err(|_| {
            ApiError::InvalidRequest(
                "skill must be a skill id (a string of 1 to 128 characters)".into(),
            )
        })?;
        let action = match body.get("action") {
            None | Some(Value::Null) => PolicyAction::Open,
            Some(Value::String(action)) => PolicyAction::parse(action).ok_or_else(|| {
                ApiError::InvalidRequest("action must be one of open, answer, cancel, read".into())
            })?,
            Some(_) => return Err(ApiError::InvalidRequest("action must be a string".into())),
        };
        let depth = match body.get("depth") {
            None | Some(Value::Null) => 1,
            Some(value) => super::tenants::bounded(value, "depth", MAX_CALL_DEPTH_CEILING)?,
        };
        let root_caller = match body.get("root_caller") {
            None | Some(Value::Null) if depth == 1 => Some(caller.clone()),
            None | Some(Value::Null) => None,
            Some(_) => Some(named_agent(app, principal, body, "root_caller").await?),
        };
        Ok(CheckRequest {
            caller,
            callee,
            skill,
            action,
            depth,
            root_caller,
        })
    }

    /// The gate's answer: the binding and the callee, the contract's skills, then the
    /// policies.
    async fn verdict(&self, app: &App, principal: &TenantPrincipal) -> Result<Value, ApiError> {
        let binding = app
            .store
            .get_binding(&binding_id(&self.caller.id, &self.callee.id))
            .await?;
        let gate = match admit(&principal.tenant_id, Some(&self.callee), binding.as_ref()) {
            Err(reason) => Some(reason.as_str()),
            Ok(())
                if self.action == PolicyAction::Open
                    && !binding.as_ref().is_some_and(|binding| {
                        binding.contract.allows_skill(self.skill.as_deref())
                    }) =>
            {
                Some("skill_not_allowed")
            }
            Ok(()) => None,
        };
        let judged = match tenant_book(app, &principal.tenant_id).await? {
            None => Default::default(),
            Some(book) => {
                let call = GovernedCall {
                    action: self.action,
                    caller_id: &self.caller.id,
                    callee_id: &self.callee.id,
                    skill: self.skill.as_deref(),
                    lineage: None,
                    task_id: None,
                };
                let place = CallPlace {
                    depth: self.depth,
                    root_caller: self.root_caller.as_ref().map(|agent| agent.id.clone()),
                };
                judgement(app, principal, &book, &call, place).await?
            }
        };
        let reason = gate.or((!judged.refused_by.is_empty()).then_some("policy"));
        Ok(json!({
            "allowed": reason.is_none(),
            "reason": reason,
            "policies": judged.refused_by,
            "would_refuse": judged.would_refuse,
        }))
    }
}

/// The agent of the tenant the body's `field` names (by name or id): `404` when there is none.
async fn named_agent(
    app: &App,
    principal: &TenantPrincipal,
    body: &Map<String, Value>,
    field: &str,
) -> Result<Agent, ApiError> {
    let Some(Value::String(reference)) = body.get(field) else {
        return Err(ApiError::InvalidRequest(format!(
            "{field} must name an agent (its name or id)"
        )));
    };
    app.store
        .find_agent(&principal.tenant_id, &AgentRef::parse(reference))
        .await?
        .filter(|agent| agent.tenant_id == principal.tenant_id)
        .ok_or_else(|| ApiError::NotFound(format!("{field} names no agent of this tenant")))
}
