//! `POST /v1/tenants` (operator key): a tenant and its first admin key; `GET` and `PATCH
//! /v1/tenant/settings`: the caller's tenant's settings.

use lambda_http::Request;
use serde_json::{json, Map, Value};

use super::{created, json_object, ok, only_fields, text_field, HandlerResult};
use crate::app::App;
use crate::domain::call_tree::{MAX_CALL_DEPTH_CEILING, MAX_COUNT_LIMIT};
use crate::domain::ids::{KeyId, MemberId};
use crate::domain::keys::{self, KeyKind};
use crate::domain::{clock, Principal, TenantId, TenantPrincipal, TenantSettings};
use crate::error::ApiError;
use crate::store::{AuditEntry, KeyRecord, MemberRecord, NewKey};

pub async fn create(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate(request.headers()).await?;
    if principal != Principal::Operator {
        return Err(ApiError::Forbidden(
            "only the operator key may create tenants".into(),
        ));
    }
    let body = json_object(&request)?;
    only_fields(&body, &["name"])?;
    let name = text_field(&body, "name", 200)?;
    let tenant_id = TenantId::generate();
    let admin_id = MemberId::generate();
    let admin_key = super::new_key(KeyKind::Admin)?;
    let admin = MemberRecord {
        member_id: admin_id.clone(),
        name: "admin".into(),
        role: "admin".into(),
        created_at: clock::now(),
    };
    let new_key = NewKey {
        hash: keys::hash(&admin_key),
        record: KeyRecord {
            tenant_id: tenant_id.clone(),
            principal_kind: "admin".into(),
            principal_id: admin_id.to_string(),
            key_id: KeyId::from(admin_id.as_str()),
            suspended: false,
            last_used_at: None,
        },
    };
    let audit = AuditEntry::by_operator(tenant_id.clone(), "tenant.create", &tenant_id);
    app.store
        .create_tenant(&tenant_id, &name, &admin, &new_key, &audit)
        .await?;
    tracing::info!(tenant_id = %tenant_id, "tenant created");
    created(&json!({"tenant_id": tenant_id, "name": name, "admin_key": admin_key}))
}

/// `GET /v1/tenant/settings` (admin, viewer): the caller's tenant's settings.
pub async fn get_settings(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.reads_all_tasks() {
        return Err(ApiError::Forbidden(
            "the tenant's settings are for admins and viewers".into(),
        ));
    }
    let settings = app
        .store
        .tenant_settings(&principal.tenant_id)
        .await?
        .unwrap_or_default();
    ok(&settings_view(&principal.tenant_id, settings))
}

/// `PATCH /v1/tenant/settings` (admin) `{word_search?, max_call_depth?, refuse_cycles?,
/// max_fan_out?, max_open_in_tree?}`: changes the caller's tenant's settings, with an audit
/// entry of each change (`tenant.word_search.on` or `.off`, `tenant.call_tree`), in one
/// transaction.
pub async fn update_settings(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.is_admin() {
        return Err(ApiError::Forbidden(
            "only an admin may change the tenant's settings".into(),
        ));
    }
    let body = json_object(&request)?;
    only_fields(&body, SETTINGS_FIELDS)?;
    // Applied to the settings as they stand when written: another change landing between the
    // read and the write has this one read again (a merge patch applies as well to either).
    for _ in 0..SETTINGS_ATTEMPTS {
        let seen = app
            .store
            .tenant_settings(&principal.tenant_id)
            .await?
            .unwrap_or_default();
        let settings = changed_settings(seen, &body)?;
        let audit = settings_audit(&principal, &seen, &settings);
        if audit.is_empty() {
            return ok(&settings_view(&principal.tenant_id, settings));
        }
        let saved = app
            .store
            .save_tenant_settings(&principal.tenant_id, &seen, settings, &audit)
            .await?;
        if saved {
            tracing::info!(tenant_id = %principal.tenant_id, changes = audit.len(), "tenant settings changed");
            return ok(&settings_view(&principal.tenant_id, settings));
        }
    }
    Err(ApiError::Conflict(
        "the settings kept changing while this request was applied; retry".into(),
    ))
}

/// How often a settings change is read again after another change landed first.
const SETTINGS_ATTEMPTS: usize = 4;

/// The audit entries of a change from `seen` to `settings`: one per kind of setting changed.
fn settings_audit(
    principal: &TenantPrincipal,
    seen: &TenantSettings,
    settings: &TenantSettings,
) -> Vec<AuditEntry> {
    let mut audit = Vec::new();
    if settings.word_search != seen.word_search {
        let action = match settings.word_search {
            true => "tenant.word_search.on",
            false => "tenant.word_search.off",
        };
        audit.push(AuditEntry::new(principal, action, &principal.tenant_id));
    }
    if settings.call_tree != seen.call_tree {
        audit.push(AuditEntry::new(
            principal,
            "tenant.call_tree",
            &principal.tenant_id,
        ));
    }
    audit
}

const SETTINGS_FIELDS: &[&str] = &[
    "word_search",
    "max_call_depth",
    "refuse_cycles",
    "max_fan_out",
    "max_open_in_tree",
];

/// `seen` with the changes `body` asks for, each checked.
fn changed_settings(
    seen: TenantSettings,
    body: &Map<String, Value>,
) -> Result<TenantSettings, ApiError> {
    let mut settings = seen;
    if let Some(value) = body.get("word_search") {
        settings.word_search = flag(value, "word_search")?;
    }
    let mut next = seen.call_tree;
    let limits = &mut next;
    if let Some(value) = body.get("max_call_depth") {
        limits.max_call_depth = bounded(value, "max_call_depth", MAX_CALL_DEPTH_CEILING)?;
    }
    if let Some(value) = body.get("refuse_cycles") {
        limits.refuse_cycles = flag(value, "refuse_cycles")?;
    }
    if let Some(value) = body.get("max_fan_out") {
        limits.max_fan_out = optional_bound(value, "max_fan_out")?;
    }
    if let Some(value) = body.get("max_open_in_tree") {
        limits.max_open_in_tree = optional_bound(value, "max_open_in_tree")?;
    }
    settings.call_tree = seen.call_tree.changed_to(next, clock::unix_now_ms());
    Ok(settings)
}

pub(super) fn flag(value: &Value, name: &str) -> Result<bool, ApiError> {
    value
        .as_bool()
        .ok_or_else(|| ApiError::InvalidRequest(format!("{name} must be true or false")))
}

pub(super) fn bounded(value: &Value, name: &str, max: u32) -> Result<u32, ApiError> {
    // JSON does not tell 3 from 3.0, and neither does an integer schema.
    let whole = value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|number| number.fract() == 0.0 && (0.0..=f64::from(max)).contains(number))
            .map(|number| number as u64)
    });
    whole
        .and_then(|number| u32::try_from(number).ok())
        .filter(|number| (1..=max).contains(number))
        .ok_or_else(|| {
            ApiError::InvalidRequest(format!("{name} must be an integer from 1 to {max}"))
        })
}

/// A count limit: `null` for none, else 1 to [`MAX_COUNT_LIMIT`].
fn optional_bound(value: &Value, name: &str) -> Result<Option<u32>, ApiError> {
    match value {
        Value::Null => Ok(None),
        value => bounded(value, name, MAX_COUNT_LIMIT)
            .map(Some)
            .map_err(|_| {
                ApiError::InvalidRequest(format!(
                    "{name} must be null (no limit) or an integer from 1 to {MAX_COUNT_LIMIT}"
                ))
            }),
    }
}

fn settings_view(tenant_id: &TenantId, settings: TenantSettings) -> Value {
    let limits = settings.call_tree;
    json!({
        "tenant_id": tenant_id,
        "word_search": settings.word_search,
        "max_call_depth": limits.max_call_depth,
        "refuse_cycles": limits.refuse_cycles,
        "max_fan_out": limits.max_fan_out,
        "max_open_in_tree": limits.max_open_in_tree,
    })
}
