//! `POST /v1/tenants` (operator key): a tenant and its first admin key; `GET` and `PATCH
//! /v1/tenant/settings`: the caller's tenant's settings.

use lambda_http::Request;
use serde_json::json;

use super::{created, json_object, ok, only_fields, text_field, HandlerResult};
use crate::app::App;
use crate::domain::ids::{KeyId, MemberId};
use crate::domain::keys::{self, KeyKind};
use crate::domain::{clock, Principal, TenantId, TenantSettings};
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

/// `PATCH /v1/tenant/settings` (admin) `{word_search}`: changes the caller's tenant's settings,
/// with an audit entry of the change (`tenant.word_search.on` or `.off`).
pub async fn update_settings(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.is_admin() {
        return Err(ApiError::Forbidden(
            "only an admin may change the tenant's settings".into(),
        ));
    }
    let body = json_object(&request)?;
    only_fields(&body, &["word_search"])?;
    let mut settings = app
        .store
        .tenant_settings(&principal.tenant_id)
        .await?
        .unwrap_or_default();
    let Some(word_search) = body.get("word_search") else {
        return ok(&settings_view(&principal.tenant_id, settings));
    };
    settings.word_search = word_search
        .as_bool()
        .ok_or_else(|| ApiError::InvalidRequest("word_search must be true or false".into()))?;
    let action = match settings.word_search {
        true => "tenant.word_search.on",
        false => "tenant.word_search.off",
    };
    let audit = AuditEntry::new(&principal, action, &principal.tenant_id);
    app.store
        .save_tenant_settings(&principal.tenant_id, settings, &audit)
        .await?;
    tracing::info!(tenant_id = %principal.tenant_id, action, "tenant settings changed");
    ok(&settings_view(&principal.tenant_id, settings))
}

fn settings_view(tenant_id: &TenantId, settings: TenantSettings) -> serde_json::Value {
    json!({"tenant_id": tenant_id, "word_search": settings.word_search})
}
