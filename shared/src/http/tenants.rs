//! `POST /v1/tenants` (operator key): a tenant and its first admin key.

use lambda_http::Request;
use serde_json::json;

use super::{created, json_object, only_fields, text_field, HandlerResult};
use crate::app::App;
use crate::domain::ids::{KeyId, MemberId};
use crate::domain::keys::{self, KeyKind};
use crate::domain::{clock, Principal, TenantId};
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
