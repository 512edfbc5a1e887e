//! Members (admin): add a person with role admin, member or viewer; list them with their keys;
//! issue and revoke their keys. The tenant's last live admin key cannot be revoked.

use lambda_http::Request;
use serde_json::{json, Value};

use super::{created, json_object, ok, only_fields, path_param, text_field, HandlerResult};
use crate::app::App;
use crate::domain::ids::MemberId;
use crate::domain::ids::{KeyId, TenantId};
use crate::domain::keys::{self, KeyKind};
use crate::domain::{clock, TenantPrincipal};
use crate::error::ApiError;
use crate::store::{AuditEntry, KeyInfo, KeyOwner, KeyRecord, MemberRecord, NewKey, RevokeRefusal};

pub(super) fn require_admin(principal: &TenantPrincipal, what: &str) -> Result<(), ApiError> {
    if principal.is_admin() {
        Ok(())
    } else {
        Err(ApiError::Forbidden(format!("only an admin may {what}")))
    }
}

fn key_kind(role: &str) -> Option<KeyKind> {
    match role {
        "admin" => Some(KeyKind::Admin),
        "member" => Some(KeyKind::Member),
        "viewer" => Some(KeyKind::Viewer),
        _ => None,
    }
}

/// A new key for `member`, with its one-time secret.
fn new_member_key(
    tenant_id: &TenantId,
    member: &MemberRecord,
    key_id: &KeyId,
) -> Result<(NewKey, String), ApiError> {
    let kind = key_kind(&member.role)
        .ok_or_else(|| ApiError::internal(format!("member of role {:?}", member.role)))?;
    let key = super::new_key(kind)?;
    let new = NewKey {
        hash: keys::hash(&key),
        record: KeyRecord {
            tenant_id: tenant_id.clone(),
            principal_kind: member.role.clone(),
            principal_id: member.member_id.to_string(),
            key_id: key_id.clone(),
            suspended: false,
            last_used_at: None,
        },
    };
    Ok((new, key))
}

/// `POST /v1/members` `{name, role}`.
pub async fn create(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    require_admin(&principal, "add members")?;
    let body = json_object(&request)?;
    only_fields(&body, &["name", "role"])?;
    let name = text_field(&body, "name", 200)?;
    let role = body
        .get("role")
        .and_then(|role| role.as_str())
        .filter(|role| key_kind(role).is_some())
        .ok_or_else(|| {
            ApiError::InvalidRequest("role is required: admin, member or viewer".into())
        })?;
    let member = MemberRecord {
        member_id: MemberId::generate(),
        name,
        role: role.to_owned(),
        created_at: clock::now(),
    };
    // A member's first key has the member's id, as before keys could be listed.
    let first_key_id = KeyId::from(member.member_id.as_str());
    let (new, key) = new_member_key(&principal.tenant_id, &member, &first_key_id)?;
    let audit = AuditEntry::new(
        &principal,
        &format!("member.create.{role}"),
        &member.member_id,
    );
    app.store
        .create_member(&principal.tenant_id, &member, &new, &audit)
        .await?;
    created(&json!({
        "member_id": member.member_id,
        "name": member.name,
        "role": member.role,
        "key_id": member.member_id,
        "key": key,
    }))
}

/// `GET /v1/members`: every member with every key it ever held (never a secret).
pub async fn list(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    require_admin(&principal, "list members")?;
    let members = app.store.list_members(&principal.tenant_id).await?;
    let listed = members.iter().map(|member| async move {
        let keys = app
            .store
            .owner_keys(KeyOwner::Member(&member.member_id))
            .await?;
        let keys: Vec<Value> = keys.iter().map(KeyInfo::to_json).collect();
        Ok::<_, ApiError>(json!({
            "member_id": member.member_id,
            "name": member.name,
            "role": member.role,
            "created_at": member.created_at,
            "keys": keys,
        }))
    });
    let items = futures::future::try_join_all(listed).await?;
    ok(&json!({ "items": items }))
}

async fn member_of(
    app: &App,
    principal: &TenantPrincipal,
    request: &Request,
) -> Result<MemberRecord, ApiError> {
    let member_id = MemberId::from(path_param(request, "member_id")?);
    app.store
        .find_member(&principal.tenant_id, &member_id)
        .await?
        .ok_or_else(|| ApiError::NotFound("member not found".into()))
}

/// `POST /v1/members/{member_id}/keys`: another key for a member.
pub async fn create_key(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    require_admin(&principal, "issue member keys")?;
    let member = member_of(app, &principal, &request).await?;
    super::agents::room_for_another_key(app, KeyOwner::Member(&member.member_id)).await?;
    let key_id = KeyId::generate();
    let (new, key) = new_member_key(&principal.tenant_id, &member, &key_id)?;
    let audit = AuditEntry::new(&principal, "member.key.issue", &member.member_id);
    app.store.put_member_key(&new, &audit).await?;
    created(&json!({"key_id": key_id, "key": key}))
}

/// `DELETE /v1/members/{member_id}/keys/{key_id}`: revokes a member's key; never the tenant's
/// last live admin key (`409 conflict`), so a tenant cannot lock itself out.
pub async fn revoke_key(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    require_admin(&principal, "revoke member keys")?;
    let member = member_of(app, &principal, &request).await?;
    let key_id = KeyId::from(path_param(&request, "key_id")?);
    let admin_of = (member.role == "admin").then_some(&principal.tenant_id);
    let audit = AuditEntry::new(&principal, "member.key.revoke", &member.member_id);
    match app
        .store
        .revoke_key(
            KeyOwner::Member(&member.member_id),
            &key_id,
            &audit,
            admin_of,
        )
        .await?
    {
        Ok(hash) => {
            app.forget_key(&hash);
            ok(&json!({"key_id": key_id, "revoked": true}))
        }
        Err(RevokeRefusal::NoSuchKey) => Err(ApiError::NotFound(
            "no live key with that id on this member".into(),
        )),
        Err(RevokeRefusal::LastAdminKey) => Err(ApiError::Conflict(
            "this is the tenant's last live admin key; issue another admin key first".into(),
        )),
    }
}
