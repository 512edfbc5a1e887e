//! `PUT /v1/agents/{agent}/endpoint`: push delivery settings. The secret is sealed with KMS and
//! never returned, logged or echoed in an error.

use lambda_http::Request;
use serde_json::{json, Map, Value};

use super::agents::managed_agent;
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::{clock, Agent, TenantPrincipal};
use crate::error::ApiError;
use crate::push::endpoint::{parse_auth, AuthScheme, Endpoint};
use crate::push::ssrf::Refusal;
use crate::store::AuditEntry;

pub async fn put(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let mut agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let before = agent.endpoint.clone();
    let body = json_object(&request)?;
    only_fields(
        &body,
        &["url", "auth", "clear_auth", "allow_private_network"],
    )?;
    let action = match body.get("url") {
        None => {
            return Err(ApiError::InvalidRequest(
                "url is required: the endpoint, or null to revert to pull".into(),
            ))
        }
        Some(Value::Null) => {
            // Nothing else applies to a cleared endpoint, but the body holds to its schema.
            flag(&body, "clear_auth")?;
            flag(&body, "allow_private_network")?;
            if let Some(auth) = body.get("auth").filter(|auth| !auth.is_null()) {
                parse_auth(auth)?;
            }
            agent.endpoint = None;
            agent.sealed_secret = None;
            "agent.endpoint.clear"
        }
        Some(Value::String(url)) => {
            let asked = EndpointRequest::read(&body, &principal)?;
            set_endpoint(app, &mut agent, url, asked).await?;
            "agent.endpoint.set"
        }
        Some(_) => {
            return Err(ApiError::InvalidRequest(
                "url must be a string or null".into(),
            ))
        }
    };
    agent.updated_at = clock::now();
    agent.version += 1;
    let audit = AuditEntry::new(&principal, action, &agent.id);
    // Another URL is another endpoint: its health starts afresh.
    let also = if url_of(agent.endpoint.as_ref()) == url_of(before.as_ref()) {
        Vec::new()
    } else {
        vec![app.store.forget_endpoint_health(&agent.id)?]
    };
    if !app.store.update_agent_with(&agent, &audit, also).await? {
        return Err(ApiError::Conflict(
            "the agent changed while this request was applied; read it again and retry".into(),
        ));
    }
    tracing::info!(agent_id = %agent.id, action, "endpoint changed");
    ok(&json!(agent))
}

/// The URL of a stored endpoint.
fn url_of(endpoint: Option<&Value>) -> Option<&str> {
    endpoint?.get("url")?.as_str()
}

/// The settings of an endpoint request beside its URL.
struct EndpointRequest {
    allow_private: bool,
    clear_auth: bool,
    /// A new credential: its scheme and its secret (sealed before it is stored).
    new_auth: Option<(AuthScheme, String)>,
}

impl EndpointRequest {
    fn read(body: &Map<String, Value>, principal: &TenantPrincipal) -> Result<Self, ApiError> {
        let allow_private = flag(body, "allow_private_network")?;
        if allow_private && !principal.is_admin() {
            return Err(ApiError::Forbidden(
                "only an admin may allow a private-network endpoint".into(),
            ));
        }
        let clear_auth = flag(body, "clear_auth")?;
        let new_auth = match body.get("auth") {
            None | Some(Value::Null) => None,
            Some(auth) => Some(parse_auth(auth)?),
        };
        if clear_auth && new_auth.is_some() {
            return Err(ApiError::InvalidRequest(
                "send auth or clear_auth, not both".into(),
            ));
        }
        Ok(EndpointRequest {
            allow_private,
            clear_auth,
            new_auth,
        })
    }
}

/// An optional boolean field (absent or null: `false`).
fn flag(body: &Map<String, Value>, name: &str) -> Result<bool, ApiError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(ApiError::InvalidRequest(format!(
            "{name} must be a boolean"
        ))),
    }
}

/// Why a push URL was not saved: a URL that is not one (its shape, scheme or credentials) is
/// bad input, a `400`; a destination the deployment's guard refuses is a refusal, a `403` that
/// says the rules and never where the host leads (the precise reason goes to the log).
pub(crate) fn refused_url(field: &str, refusal: &Refusal) -> ApiError {
    match refusal {
        Refusal::BadUrl(_) => ApiError::InvalidRequest(format!("{field} refused: {refusal}")),
        Refusal::Blocked(_) | Refusal::Private | Refusal::Unresolvable | Refusal::PlainHttp => {
            ApiError::Forbidden(format!("{field} refused: {refusal}"))
        }
    }
}

/// Points `agent` at `url` once the URL passes the SSRF guard: a new secret sealed for this
/// agent, the current one kept, or none when cleared. A disabled endpoint stays disabled while
/// its URL stays the same.
async fn set_endpoint(
    app: &App,
    agent: &mut Agent,
    url: &str,
    asked: EndpointRequest,
) -> Result<(), ApiError> {
    let vetted = app
        .dialer
        .vet_to_save(url, asked.allow_private)
        .await
        .map_err(|refusal| refused_url("url", &refusal))?;
    let current = agent.endpoint.as_ref().and_then(Endpoint::from_json);
    let disabled = current
        .as_ref()
        .filter(|current| current.url == vetted.url.as_str())
        .and_then(|current| current.disabled.clone());
    let (auth, sealed) = match asked.new_auth {
        Some((scheme, secret)) => {
            let sealed = app.vault.seal(&agent.tenant_id, &agent.id, &secret).await?;
            (Some(scheme), Some(sealed))
        }
        None if asked.clear_auth => (None, None),
        None => (
            current.and_then(|endpoint| endpoint.auth),
            agent.sealed_secret.clone(),
        ),
    };
    let endpoint = Endpoint {
        url: vetted.url.to_string(),
        auth: auth.filter(|_| sealed.is_some()),
        allow_private_network: asked.allow_private,
        disabled,
    };
    agent.endpoint = Some(endpoint.to_json());
    agent.sealed_secret = sealed;
    Ok(())
}

/// `GET /v1/agents/{agent}/tasks/{task_id}/attempts`: the push delivery attempts of a task, for
/// the callee's owner or an admin.
pub async fn attempts(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let callee = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let task_id = super::tasks::task_id_param(&request)?;
    match app.store.get_task(&task_id).await? {
        Some(task) if task.callee_agent_id == callee.id => {}
        _ => return Err(ApiError::TaskNotFound),
    }
    let attempts = app.store.list_attempts(&task_id).await?;
    let items: Vec<Value> = attempts.iter().map(|attempt| attempt.to_json()).collect();
    ok(&json!({ "items": items }))
}
