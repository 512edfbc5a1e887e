//! `POST /v1/members` (admin): a person of the tenant with role admin, member or viewer.

use lambda_http::Request;
use serde_json::json;

use super::{created, json_object, only_fields, text_field, HandlerResult};
use crate::app::App;
use crate::domain::keys::{self, KeyKind};
use crate::error::ApiError;
use crate::store::AuditEntry;

pub async fn create(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate(request.headers()).await?;
    if !principal.is_admin() {
        return Err(ApiError::Forbidden("only an admin may add members".into()));
    }
    let body = json_object(&request)?;
    only_fields(&body, &["name", "role"])?;
    let name = text_field(&body, "name", 200)?;
    let (role, kind) = match body.get("role").and_then(|role| role.as_str()) {
        Some("admin") => ("admin", KeyKind::Admin),
        Some("member") => ("member", KeyKind::Member),
        Some("viewer") => ("viewer", KeyKind::Viewer),
        _ => {
            return Err(ApiError::InvalidRequest(
                "role is required: admin, member or viewer".into(),
            ))
        }
    };
    let member_id = uuid::Uuid::new_v4().to_string();
    let key = keys::generate(kind).map_err(|_| ApiError::Internal)?;
    let audit = AuditEntry::new(&principal, &format!("member.create.{role}"), &member_id);
    app.store
        .create_member(
            &principal.tenant_id,
            &member_id,
            &name,
            role,
            &keys::hash(&key),
            &audit,
        )
        .await?;
    created(&json!({"member_id": member_id, "name": name, "role": role, "key": key}))
}
