//! Trusted issuers (admin): the OpenID Connect providers whose tokens sign the tenant's agents
//! and members in (`POST`/`GET /v1/issuers`, `PATCH`/`DELETE /v1/issuers/{issuer_id}`), each
//! for one audience and with the subjects it lists. Signing in is `sign_in.rs`.

use lambda_http::Request;
use serde_json::{json, Map, Value};

use super::members::require_admin;
use super::{created, json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::issuer::{
    check_subjects, parse_audience, parse_issuer, parse_subject, SignsInAs, SubjectGrant,
    TrustedIssuer, MAX_ISSUERS_PER_TENANT,
};
use crate::domain::{clock, AgentRef, TenantPrincipal};
use crate::error::ApiError;
use crate::oidc::{Discovery, OidcError};
use crate::store::{AuditEntry, IssuerChange, TenantIssuers};

/// How often a change reads the issuers again after losing to a concurrent one.
const WRITE_ATTEMPTS: usize = 8;

/// The API view of a trusted issuer.
pub(crate) fn issuer_json(issuer: &TrustedIssuer) -> Value {
    let subjects: Vec<Value> = issuer
        .subjects
        .iter()
        .map(|grant| match &grant.signs_in_as {
            SignsInAs::Agent(agent_id) => json!({"subject": grant.subject, "agent_id": agent_id}),
            SignsInAs::Member(member_id) => {
                json!({"subject": grant.subject, "member_id": member_id})
            }
        })
        .collect();
    json!({
        "id": issuer.id,
        "issuer": issuer.issuer,
        "audience": issuer.audience,
        "discovery_url": issuer.discovery_url(),
        "subjects": subjects,
        "created_at": issuer.created_at,
        "updated_at": issuer.updated_at,
    })
}

/// `GET /v1/issuers`: the tenant's trusted issuers (any member; not agents).
pub async fn list(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if principal.agent_id().is_some() {
        return Err(ApiError::Forbidden(
            "trusted issuers are read by the tenant's members".into(),
        ));
    }
    let issuers = app.store.tenant_issuers(&principal.tenant_id).await?;
    ok(&json!({"items": issuers.issuers.iter().map(issuer_json).collect::<Vec<_>>()}))
}

/// `POST /v1/issuers` `{issuer, audience, subjects?}` (admin): trusts an issuer for an
/// audience. Its discovery document is read at once and the answer says how that went; one that
/// cannot be read now does not stop the trust (the provider may come up later, as a push URL's
/// host may resolve later), an address the outbound guard refuses does.
pub async fn create(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    require_admin(&principal, "change the trusted issuers")?;
    let body = json_object(&request)?;
    only_fields(&body, &["issuer", "audience", "subjects"])?;
    let issuer = parse_issuer(required_text(&body, "issuer")?)?;
    let audience = parse_audience(required_text(&body, "audience")?)?;
    let subjects = subjects_of(app, &principal, body.get("subjects")).await?;
    let discovery = discovery_json(app.oidc.discover(&issuer).await)?;
    let now = clock::now();
    let trusted = TrustedIssuer {
        id: uuid::Uuid::new_v4().to_string(),
        issuer,
        audience,
        subjects,
        created_at: now.clone(),
        updated_at: now,
    };
    let audit = AuditEntry::new(&principal, "issuer.trust", &trusted.id);
    for _ in 0..WRITE_ATTEMPTS {
        let seen = app.store.tenant_issuers(&principal.tenant_id).await?;
        refuse_to_add(app, &seen, &trusted).await?;
        let mut next = seen.issuers.clone();
        next.push(trusted.clone());
        let change = IssuerChange::Added(&trusted);
        if app
            .store
            .save_issuers(&principal.tenant_id, &seen, &next, change, &audit)
            .await?
        {
            let mut answer = issuer_json(&trusted);
            answer["discovery"] = discovery;
            return created(&answer);
        }
    }
    Err(issuers_changed())
}

/// What reading the issuer's discovery document at trust time found (`discovery` of the
/// answer), or the refusal of an issuer whose address the outbound guard never dials.
fn discovery_json(read: Result<Discovery, OidcError>) -> Result<Value, ApiError> {
    match read {
        Ok(_) => Ok(json!({"read": true})),
        Err(OidcError::Refused) => Err(ApiError::Forbidden(
            "issuer refused: the gateway reads no issuer at a private, loopback or metadata \
             address (unless the operator allows the range)"
                .into(),
        )),
        Err(problem) => Ok(json!({"read": false, "problem": problem.to_string()})),
    }
}

/// Why `trusted` cannot join the issuers `seen`: the tenant's bound, or its pair already
/// trusted here or by another tenant.
async fn refuse_to_add(
    app: &App,
    seen: &TenantIssuers,
    trusted: &TrustedIssuer,
) -> Result<(), ApiError> {
    if seen.issuers.len() >= MAX_ISSUERS_PER_TENANT {
        return Err(ApiError::LimitReached(format!(
            "a tenant trusts at most {MAX_ISSUERS_PER_TENANT} issuers; remove one first"
        )));
    }
    if app
        .store
        .trust_claim(&trusted.issuer, &trusted.audience)
        .await?
        .is_some()
    {
        return Err(ApiError::Conflict(
            "this issuer is already trusted for this audience, here or in another tenant; \
             ask the issuer for an audience of this tenant's own"
                .into(),
        ));
    }
    Ok(())
}

/// `PATCH /v1/issuers/{issuer_id}` `{subjects}` (admin): replaces the subjects it lists.
pub async fn update(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    require_admin(&principal, "change the trusted issuers")?;
    let id = path_param(&request, "issuer_id")?;
    let body = json_object(&request)?;
    only_fields(&body, &["subjects"])?;
    let Some(listed) = body.get("subjects") else {
        return Err(ApiError::InvalidRequest("subjects is required".into()));
    };
    let subjects = subjects_of(app, &principal, Some(listed)).await?;
    let audit = AuditEntry::new(&principal, "issuer.subjects", &id);
    for _ in 0..WRITE_ATTEMPTS {
        let seen = app.store.tenant_issuers(&principal.tenant_id).await?;
        let mut next = seen.issuers.clone();
        let issuer = next
            .iter_mut()
            .find(|issuer| issuer.id == id)
            .ok_or_else(no_such_issuer)?;
        issuer.subjects.clone_from(&subjects);
        issuer.updated_at = clock::now();
        let changed = issuer.clone();
        if app
            .store
            .save_issuers(
                &principal.tenant_id,
                &seen,
                &next,
                IssuerChange::Changed,
                &audit,
            )
            .await?
        {
            app.forget_tokens();
            return ok(&issuer_json(&changed));
        }
    }
    Err(issuers_changed())
}

/// `DELETE /v1/issuers/{issuer_id}` (admin): its tokens sign in no more.
pub async fn delete(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    require_admin(&principal, "change the trusted issuers")?;
    let id = path_param(&request, "issuer_id")?;
    let audit = AuditEntry::new(&principal, "issuer.distrust", &id);
    for _ in 0..WRITE_ATTEMPTS {
        let seen = app.store.tenant_issuers(&principal.tenant_id).await?;
        let gone = seen
            .issuers
            .iter()
            .find(|issuer| issuer.id == id)
            .cloned()
            .ok_or_else(no_such_issuer)?;
        let next: Vec<TrustedIssuer> = seen
            .issuers
            .iter()
            .filter(|issuer| issuer.id != id)
            .cloned()
            .collect();
        let change = IssuerChange::Removed(&gone);
        if app
            .store
            .save_issuers(&principal.tenant_id, &seen, &next, change, &audit)
            .await?
        {
            app.forget_tokens();
            return ok(&json!({"id": id, "removed": true}));
        }
    }
    Err(issuers_changed())
}

fn required_text<'a>(body: &'a Map<String, Value>, name: &str) -> Result<&'a str, ApiError> {
    body.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::InvalidRequest(format!("{name} is required, a string")))
}

/// The subjects of a body: `[{subject, agent}|{subject, member_id}]`, each naming an agent (by
/// name or id) or a member of the tenant.
async fn subjects_of(
    app: &App,
    principal: &TenantPrincipal,
    listed: Option<&Value>,
) -> Result<Vec<SubjectGrant>, ApiError> {
    let listed = match listed {
        None => return Ok(Vec::new()),
        Some(Value::Array(listed)) => listed,
        Some(_) => {
            return Err(ApiError::InvalidRequest(
                "subjects is a list of {subject, agent} or {subject, member_id}".into(),
            ))
        }
    };
    let mut subjects = Vec::with_capacity(listed.len());
    for entry in listed {
        subjects.push(subject_of(app, principal, entry).await?);
        check_subjects(&subjects)?;
    }
    Ok(subjects)
}

async fn subject_of(
    app: &App,
    principal: &TenantPrincipal,
    entry: &Value,
) -> Result<SubjectGrant, ApiError> {
    let shape = || {
        ApiError::InvalidRequest(
            "each subject is {subject, agent} or {subject, member_id}, and nothing else".into(),
        )
    };
    let entry = entry.as_object().ok_or_else(shape)?;
    let subject = parse_subject(
        entry
            .get("subject")
            .and_then(Value::as_str)
            .ok_or_else(shape)?,
    )?;
    let agent = entry.get("agent").and_then(Value::as_str);
    let member = entry.get("member_id").and_then(Value::as_str);
    let signs_in_as = match (agent, member, entry.len()) {
        (Some(agent), None, 2) => {
            let found = app
                .store
                .find_agent(&principal.tenant_id, &AgentRef::parse(agent))
                .await?
                .filter(|found| found.tenant_id == principal.tenant_id)
                .ok_or_else(|| ApiError::NotFound(format!("no agent {agent:?} in this tenant")))?;
            SignsInAs::Agent(found.id)
        }
        (None, Some(member), 2) => {
            let member_id = member.into();
            if !app
                .store
                .member_exists(&principal.tenant_id, &member_id)
                .await?
            {
                return Err(ApiError::NotFound(format!(
                    "no member {member:?} in this tenant"
                )));
            }
            SignsInAs::Member(member_id)
        }
        _ => return Err(shape()),
    };
    Ok(SubjectGrant {
        subject,
        signs_in_as,
    })
}

fn no_such_issuer() -> ApiError {
    ApiError::NotFound("the tenant trusts no such issuer".into())
}

fn issuers_changed() -> ApiError {
    ApiError::Conflict("the trusted issuers changed meanwhile; retry".into())
}
