//! Agents and their keys: create, list, read, update status, `me`, issue and revoke keys.

use lambda_http::Request;
use serde_json::{json, Value};

use super::{created, json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::agent::{parse_claim_timeout, parse_description, DEFAULT_CLAIM_TIMEOUT_SECONDS};
use crate::domain::ids::{KeyId, MemberId};
use crate::domain::keys::{self, KeyKind};
use crate::domain::media;
use crate::domain::{
    clock, Agent, AgentId, AgentName, AgentRef, AgentStatus, PrincipalKind, TenantPrincipal,
};
use crate::error::ApiError;
use crate::store::{AgentRefusal, AuditEntry, KeyInfo, KeyOwner, KeyRecord, NewKey, MAX_LIVE_KEYS};

/// The agent a route's `{agent}` names, if this principal may see it; 404 otherwise, whether it
/// does not exist or belongs to someone the principal may not see.
pub(crate) async fn visible_agent(
    app: &App,
    principal: &TenantPrincipal,
    segment: &str,
) -> Result<Agent, ApiError> {
    let agent = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::parse(segment))
        .await?;
    match agent {
        Some(agent) if principal.may_read_agent(&agent) => Ok(agent),
        _ => Err(ApiError::NotFound("agent not found".into())),
    }
}

/// The agent a route's `{agent}` names, if this principal speaks for it (admin or owner).
pub(crate) async fn managed_agent(
    app: &App,
    principal: &TenantPrincipal,
    segment: &str,
) -> Result<Agent, ApiError> {
    let agent = visible_agent(app, principal, segment).await?;
    if principal.speaks_for(&agent) {
        Ok(agent)
    } else {
        Err(ApiError::Forbidden(
            "only the agent's owner or an admin may do this".into(),
        ))
    }
}

fn person_id(principal: &TenantPrincipal) -> Option<&str> {
    match &principal.kind {
        PrincipalKind::Admin { member_id } | PrincipalKind::Member { member_id } => Some(member_id),
        _ => None,
    }
}

pub async fn create(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let creator = person_id(&principal)
        .ok_or_else(|| ApiError::Forbidden("only an admin or a member may create agents".into()))?
        .to_owned();
    let body = json_object(&request)?;
    only_fields(
        &body,
        &[
            "name",
            "description",
            "owner_member_id",
            "claim_timeout_seconds",
            "input_modes",
        ],
    )?;
    let name = match body.get("name") {
        Some(Value::String(name)) => AgentName::parse(name)?,
        _ => return Err(ApiError::InvalidRequest("name is required".into())),
    };
    let description = parse_description(body.get("description"))?;
    let claim_timeout_seconds = match body.get("claim_timeout_seconds") {
        None | Some(Value::Null) => DEFAULT_CLAIM_TIMEOUT_SECONDS,
        Some(value) => parse_claim_timeout(value)?,
    };
    let input_modes = parse_declared_modes(body.get("input_modes"))?;
    let owner = owner_of(app, &principal, creator, body.get("owner_member_id")).await?;
    let now = clock::now();
    let agent = Agent {
        id: AgentId::generate(),
        tenant_id: principal.tenant_id.clone(),
        name: name.as_str().to_owned(),
        description,
        owner_member_id: Some(owner.into()),
        status: AgentStatus::Active,
        endpoint: None,
        sealed_secret: None,
        claim_timeout_seconds,
        input_modes,
        created_at: now.clone(),
        updated_at: now,
        version: 1,
        push_held_until: None,
    };
    let audit = AuditEntry::new(&principal, "agent.create", &agent.id);
    let max_agents = app.config.tenant_max_agents;
    match app.store.create_agent(&agent, &audit, max_agents).await? {
        Ok(()) => created(&json!(agent)),
        Err(AgentRefusal::NameTaken) => Err(ApiError::Conflict(format!(
            "an agent named {:?} already exists in this tenant",
            agent.name
        ))),
        Err(AgentRefusal::TenantFull) => Err(ApiError::LimitReached(format!(
            "a tenant holds at most {max_agents} agents that are not retired; retire one first"
        ))),
    }
}

/// The new agent's owner: its creator, or the member an admin names (`owner_member_id`).
async fn owner_of(
    app: &App,
    principal: &TenantPrincipal,
    creator: String,
    owner_member_id: Option<&Value>,
) -> Result<String, ApiError> {
    match owner_member_id {
        None | Some(Value::Null) => Ok(creator),
        Some(Value::String(owner)) if *owner == creator => Ok(creator),
        Some(Value::String(owner)) if principal.is_admin() => {
            if !app
                .store
                .member_exists(&principal.tenant_id, &MemberId::from(owner.as_str()))
                .await?
            {
                // An unknown member is a missing resource, as an unknown callee is.
                return Err(ApiError::NotFound(
                    "owner_member_id names no member of this tenant".into(),
                ));
            }
            Ok(owner.clone())
        }
        Some(Value::String(_)) => Err(ApiError::Forbidden(
            "only an admin may name another owner".into(),
        )),
        Some(_) => Err(ApiError::InvalidRequest(
            "owner_member_id must be a string".into(),
        )),
    }
}

pub async fn list(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if matches!(principal.kind, PrincipalKind::Agent { .. }) {
        return Err(ApiError::Forbidden(
            "listing agents needs a member key".into(),
        ));
    }
    let agents = app.store.list_agents(&principal.tenant_id).await?;
    ok(&json!({ "items": agents }))
}

pub async fn get(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = visible_agent(app, &principal, &path_param(&request, "agent")?).await?;
    ok(&json!(agent))
}

pub async fn me(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent_id = principal
        .agent_id()
        .ok_or_else(|| ApiError::Forbidden("GET /v1/agents/me needs an agent key".into()))?
        .to_owned();
    let agent = visible_agent(app, &principal, &agent_id).await?;
    ok(&json!(agent))
}

pub async fn update(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let mut agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let body = json_object(&request)?;
    only_fields(
        &body,
        &[
            "status",
            "description",
            "claim_timeout_seconds",
            "input_modes",
        ],
    )?;
    if body.is_empty() {
        return Err(ApiError::InvalidRequest(
            "nothing to change: send status, description, claim_timeout_seconds or input_modes"
                .into(),
        ));
    }
    let mut action = "agent.update".to_owned();
    let before = agent.status;
    if let Some(status) = body.get("status") {
        let status = AgentStatus::parse(status.as_str().unwrap_or_default())?;
        if !agent.status.may_become(status) {
            return Err(ApiError::Conflict("a retired agent stays retired".into()));
        }
        action = format!("agent.status.{}", status.as_str());
        agent.status = status;
    }
    if body.contains_key("description") {
        agent.description = parse_description(body.get("description"))?;
    }
    if let Some(seconds) = body.get("claim_timeout_seconds") {
        agent.claim_timeout_seconds = parse_claim_timeout(seconds)?;
    }
    if body.contains_key("input_modes") {
        agent.input_modes = parse_declared_modes(body.get("input_modes"))?;
    }
    agent.updated_at = clock::now();
    agent.version += 1;
    let audit = AuditEntry::new(&principal, &action, &agent.id);
    let changed_status = (agent.status != before).then_some(agent.status);
    let Some(touched) = app
        .store
        .update_agent_and_keys(&agent, &audit, changed_status)
        .await?
    else {
        return Err(ApiError::Conflict(
            "the agent changed while this request was applied; read it again and retry".into(),
        ));
    };
    touched.iter().for_each(|hash| app.forget_key(hash));
    if changed_status.is_some() {
        // Tokens that sign in as the agent are checked again, as its keys are.
        app.forget_tokens();
    }
    ok(&json!(agent))
}

/// `Ok` while `owner` holds fewer than [`MAX_LIVE_KEYS`] live keys; the `409` otherwise.
pub(crate) async fn room_for_another_key(app: &App, owner: KeyOwner<'_>) -> Result<(), ApiError> {
    let keys = app.store.owner_keys(owner).await?;
    if keys.iter().filter(|info| info.is_live()).count() < MAX_LIVE_KEYS {
        return Ok(());
    }
    Err(ApiError::LimitReached(format!(
        "at most {MAX_LIVE_KEYS} live keys may be held at once; revoke one first"
    )))
}

pub async fn create_key(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    if agent.status == AgentStatus::Retired {
        return Err(ApiError::Conflict("a retired agent gets no keys".into()));
    }
    room_for_another_key(app, KeyOwner::Agent(&agent.id)).await?;
    let key_id = KeyId::generate();
    let key = super::new_key(KeyKind::Agent)?;
    let audit = AuditEntry::new(&principal, "agent.key.issue", &agent.id);
    let new = NewKey {
        hash: keys::hash(&key),
        record: KeyRecord {
            tenant_id: agent.tenant_id.clone(),
            principal_kind: "agent".into(),
            principal_id: agent.id.to_string(),
            key_id: key_id.clone(),
            // A key issued while its agent is paused waits, like the others, until it is active.
            suspended: agent.status == AgentStatus::Paused,
            last_used_at: None,
        },
    };
    if !app.store.put_agent_key(&new, &audit, &agent).await? {
        return Err(ApiError::Conflict(
            "the agent changed while the key was issued; read it again and retry".into(),
        ));
    }
    created(&json!({"key_id": key_id, "key": key}))
}

pub async fn revoke_key(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let key_id = KeyId::from(path_param(&request, "key_id")?);
    let audit = AuditEntry::new(&principal, "agent.key.revoke", &agent.id);
    match app
        .store
        .revoke_key(KeyOwner::Agent(&agent.id), &key_id, &audit, None)
        .await?
    {
        Ok(hash) => {
            app.forget_key(&hash);
            ok(&json!({"key_id": key_id, "revoked": true}))
        }
        Err(_) => Err(ApiError::NotFound(
            "no live key with that id on this agent".into(),
        )),
    }
}

/// `GET /v1/agents/{agent}/keys` (the agent's owner or an admin): every key the agent ever held,
/// with when it was made, last used and revoked; never a secret.
pub async fn list_keys(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let keys = app.store.owner_keys(KeyOwner::Agent(&agent.id)).await?;
    let items: Vec<Value> = keys.iter().map(KeyInfo::to_json).collect();
    ok(&json!({ "items": items }))
}

/// The media ranges an agent accepts, as a create or an update declares them: absent or `null`
/// is the gateway's defaults.
fn parse_declared_modes(value: Option<&Value>) -> Result<Vec<String>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(media::default_input_modes()),
        Some(modes) => Ok(media::parse_input_modes(modes, "input_modes")?),
    }
}
