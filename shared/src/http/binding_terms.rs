//! `PATCH /v1/agents/{agent}/agents/{binding_id}`: an admin sets a binding's own call-tree
//! limits and its contract; and the binding's use against its contract, as the list of
//! bindings and this route show it.

use lambda_http::Request;
use serde_json::{Map, Value};

use super::agents::visible_agent;
use super::bindings::{binding_of, changed_concurrently, with_usage};
use super::tenants::{bounded, flag};
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::call_tree::{MAX_CALL_DEPTH_CEILING, MAX_COUNT_LIMIT};
use crate::domain::contract::{
    is_skill_id, BindingLimits, Contract, MAX_CONTRACT_RATE, MAX_CONTRACT_SKILLS, MAX_DAILY_QUOTA,
    MAX_SKILL_CHARS,
};
use crate::domain::{clock, Binding};
use crate::error::ApiError;
use crate::store::{AuditEntry, BindingWrite, TrackingChange};

/// Changes a binding's `limits` and `contract` (each a merge patch; `null` removes a value);
/// audited as `binding.contract`. `{agent}` is either side of the binding.
pub async fn update(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.is_admin() {
        return Err(ApiError::Forbidden(
            "only an admin may set a binding's limits and contract".into(),
        ));
    }
    let agent = visible_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let binding = binding_of(app, &request, &agent.id, false).await?;
    let body = json_object(&request)?;
    only_fields(&body, &["limits", "contract"])?;
    let mut next = binding.clone();
    if let Some(patch) = body.get("limits") {
        next.limits = patched_limits(binding.limits, patch)?;
    }
    if let Some(patch) = body.get("contract") {
        next.contract = patched_contract(binding.contract.clone(), patch)?;
    }
    if next.limits == binding.limits && next.contract == binding.contract {
        return ok(&with_usage(app, &binding).await?);
    }
    next.updated_at = clock::now();
    let tracking = tracking_change(app, &binding, &next).await?;
    let audit = AuditEntry::for_binding(&principal, "binding.contract", &next);
    let write = BindingWrite {
        binding: next.clone(),
        previous_updated_at: Some(binding.updated_at.clone()),
    };
    if !app
        .store
        .save_binding_terms(&write, &audit, tracking)
        .await?
    {
        return Err(changed_concurrently());
    }
    ok(&with_usage(app, &next).await?)
}

/// The tenant's count of bindings whose limits track every call, moved when this change starts
/// or stops the binding's tracking.
async fn tracking_change(
    app: &App,
    before: &Binding,
    after: &Binding,
) -> Result<Option<TrackingChange>, ApiError> {
    let (was, is) = (
        before.limits.needs_tracking(),
        after.limits.needs_tracking(),
    );
    if was == is {
        return Ok(None);
    }
    let seen = app.store.bindings_tracking(&after.tenant_id).await?;
    let next = if is { seen + 1 } else { seen.saturating_sub(1) };
    Ok(Some(TrackingChange {
        seen,
        next,
        now_ms: clock::unix_now_ms(),
    }))
}

fn patch_object<'a>(patch: &'a Value, name: &str) -> Result<&'a Map<String, Value>, ApiError> {
    patch
        .as_object()
        .ok_or_else(|| ApiError::InvalidRequest(format!("{name} must be an object")))
}

/// `null` for none, else what `read` makes of the value.
fn nullable<T>(
    value: &Value,
    read: impl FnOnce(&Value) -> Result<T, ApiError>,
) -> Result<Option<T>, ApiError> {
    match value {
        Value::Null => Ok(None),
        value => read(value).map(Some),
    }
}

fn patched_limits(mut limits: BindingLimits, patch: &Value) -> Result<BindingLimits, ApiError> {
    let fields = patch_object(patch, "limits")?;
    only_fields(
        fields,
        &[
            "max_call_depth",
            "refuse_cycles",
            "max_fan_out",
            "max_open_in_tree",
        ],
    )?;
    let named = |name: &str| format!("limits.{name}");
    for (name, value) in fields {
        let field = named(name);
        match name.as_str() {
            "max_call_depth" => {
                limits.max_call_depth =
                    nullable(value, |v| bounded(v, &field, MAX_CALL_DEPTH_CEILING))?
            }
            "refuse_cycles" => limits.refuse_cycles = nullable(value, |v| flag(v, &field))?,
            "max_fan_out" => {
                limits.max_fan_out = nullable(value, |v| bounded(v, &field, MAX_COUNT_LIMIT))?
            }
            _ => {
                limits.max_open_in_tree = nullable(value, |v| bounded(v, &field, MAX_COUNT_LIMIT))?
            }
        }
    }
    Ok(limits)
}

fn patched_contract(mut contract: Contract, patch: &Value) -> Result<Contract, ApiError> {
    let fields = patch_object(patch, "contract")?;
    only_fields(
        fields,
        &["skills", "rate_per_minute", "max_concurrent", "daily_quota"],
    )?;
    for (name, value) in fields {
        let field = format!("contract.{name}");
        match name.as_str() {
            "skills" => contract.skills = nullable(value, skills)?,
            "rate_per_minute" => {
                contract.rate_per_minute =
                    nullable(value, |v| bounded(v, &field, MAX_CONTRACT_RATE))?
            }
            "max_concurrent" => {
                contract.max_concurrent =
                    nullable(value, |v| bounded(v, &field, MAX_CONTRACT_RATE))?
            }
            _ => contract.daily_quota = nullable(value, |v| bounded(v, &field, MAX_DAILY_QUOTA))?,
        }
    }
    Ok(contract)
}

/// `contract.skills`: 1 to [`MAX_CONTRACT_SKILLS`] distinct skill ids.
fn skills(value: &Value) -> Result<Vec<String>, ApiError> {
    let invalid = || {
        ApiError::InvalidRequest(format!(
            "contract.skills must be null or a list of 1 to {MAX_CONTRACT_SKILLS} distinct skill \
             ids of 1 to {MAX_SKILL_CHARS} characters"
        ))
    };
    let items = value.as_array().ok_or_else(invalid)?;
    if items.is_empty() || items.len() > MAX_CONTRACT_SKILLS {
        return Err(invalid());
    }
    let mut skills: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        match item.as_str() {
            Some(skill) if is_skill_id(skill) && !skills.iter().any(|seen| seen == skill) => {
                skills.push(skill.to_owned())
            }
            _ => return Err(invalid()),
        }
    }
    Ok(skills)
}
