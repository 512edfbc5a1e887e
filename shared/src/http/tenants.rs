//! `POST /v1/tenants` (operator key): a tenant and its first admin key.

use lambda_http::Request;
use serde_json::json;

use super::{created, json_object, only_fields, text_field, HandlerResult};
use crate::app::App;
use crate::domain::keys::{self, KeyKind};
use crate::domain::{clock, PrincipalKind};
use crate::error::ApiError;
use crate::store::{AuditEntry, KeyRecord, MemberRecord, NewKey};

pub async fn create(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate(request.headers()).await?;
    if principal.kind != PrincipalKind::Operator {
        return Err(ApiError::Forbidden(
            "only the operator key may create tenants".into(),
        ));
    }
    let body = json_object(&request)?;
    only_fields(&body, &["name"])?;
    let name = text_field(&body, "name", 200)?;
    let tenant_id = uuid::Uuid::new_v4().to_string();
    let admin_id = uuid::Uuid::new_v4().to_string();
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
            principal_id: admin_id.clone(),
            key_id: admin_id,
            suspended: false,
            last_used_at: None,
        },
    };
    let mut audit = AuditEntry::new(&principal, "tenant.create", &tenant_id);
    audit.tenant_id = tenant_id.clone();
    app.store
        .create_tenant(&tenant_id, &name, &admin, &new_key, &audit)
        .await?;
    tracing::info!(tenant_id = %tenant_id, "tenant created");
    created(&json!({"tenant_id": tenant_id, "name": name, "admin_key": admin_key}))
}
