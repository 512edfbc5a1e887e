//! `PUT /v1/agents/{agent}/endpoint`: push delivery settings. The secret is sealed with KMS and
//! never returned, logged or echoed in an error.

use lambda_http::Request;
use serde_json::{json, Value};

use super::agents::managed_agent;
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::clock;
use crate::error::ApiError;
use crate::push::endpoint::{parse_auth, Endpoint};
use crate::store::AuditEntry;

pub async fn put(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let mut agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
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
            agent.endpoint = None;
            agent.sealed_secret = None;
            "agent.endpoint.clear"
        }
        Some(Value::String(url)) => {
            let allow_private = match body.get("allow_private_network") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(allow)) => *allow,
                Some(_) => {
                    return Err(ApiError::InvalidRequest(
                        "allow_private_network must be a boolean".into(),
                    ))
                }
            };
            if allow_private && !principal.is_admin() {
                return Err(ApiError::Forbidden(
                    "only an admin may allow a private-network endpoint".into(),
                ));
            }
            let clear_auth = match body.get("clear_auth") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(clear)) => *clear,
                Some(_) => {
                    return Err(ApiError::InvalidRequest(
                        "clear_auth must be a boolean".into(),
                    ))
                }
            };
            let new_auth = match body.get("auth") {
                None | Some(Value::Null) => None,
                Some(auth) => Some(parse_auth(auth)?),
            };
            if clear_auth && new_auth.is_some() {
                return Err(ApiError::InvalidRequest(
                    "send auth or clear_auth, not both".into(),
                ));
            }
            let vetted = app
                .dialer
                .vet(url, allow_private)
                .await
                .map_err(|refusal| ApiError::InvalidRequest(format!("url refused: {refusal}")))?;
            let current = agent.endpoint.as_ref().and_then(Endpoint::from_json);
            let (auth, sealed) = match new_auth {
                Some((scheme, secret)) => {
                    let sealed = app.vault.seal(&agent.tenant_id, &agent.id, &secret).await?;
                    (Some(scheme), Some(sealed))
                }
                None if clear_auth => (None, None),
                None => (
                    current.and_then(|endpoint| endpoint.auth),
                    agent.sealed_secret.clone(),
                ),
            };
            let endpoint = Endpoint {
                url: vetted.url.to_string(),
                auth: auth.filter(|_| sealed.is_some()),
                allow_private_network: allow_private,
            };
            agent.endpoint = Some(endpoint.to_json());
            agent.sealed_secret = sealed;
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
    if !app.store.update_agent(&agent, &audit).await? {
        return Err(ApiError::Conflict(
            "the agent changed while this request was applied; read it again and retry".into(),
        ));
    }
    tracing::info!(agent_id = %agent.id, action, "endpoint changed");
    ok(&json!(agent))
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
