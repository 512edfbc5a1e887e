//! A task's push notification configs as the service keeps them: vetted (the push SSRF guard),
//! their credentials sealed, stored for the task (A2A's config routes and an open that carries
//! one).

use serde_json::Value;

use crate::app::App;
use crate::domain::notify::{NotifyConfig, NotifyRequest, MAX_CONFIGS_PER_TASK};
use crate::domain::{clock, Task, TenantPrincipal};
use crate::error::ApiError;
use crate::http::endpoint::refused_url;
use crate::store::{AuditEntry, NotifyRefusal};
use crate::vault::NotifySecret;

/// Where a new config's delivery starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// Sent with the message that opened the task: every event of the task.
    FromOpen,
    /// Made for an existing task: the events after its creation.
    Now,
}

/// Parses a config and vets its URL with the push SSRF guard (private networks never allowed).
pub(crate) async fn vetted_request(
    app: &App,
    value: &Value,
    at: &str,
) -> Result<NotifyRequest, ApiError> {
    let mut asked = NotifyRequest::parse(value, at)?;
    let vetted = app
        .dialer
        .vet_to_save(&asked.url, false)
        .await
        .map_err(|refusal| refused_url(&format!("{at}.url"), &refusal))?;
    asked.url = vetted.url.to_string();
    Ok(asked)
}

/// Seals one secret of a new config, when it was given.
async fn seal_if_given(
    app: &App,
    names: (&str, &str, &str),
    secret: NotifySecret,
    value: Option<&str>,
) -> Result<Option<String>, ApiError> {
    match value {
        Some(value) => Ok(Some(app.vault.seal_notify(names, secret, value).await?)),
        None => Ok(None),
    }
}

/// A task's configs are at their bound.
fn task_full() -> ApiError {
    ApiError::InvalidRequest(format!(
        "a task holds at most {MAX_CONFIGS_PER_TASK} push notification configs; delete one first"
    ))
}

/// The tenant's configs with updates still to send are at their bound.
fn tenant_full(tenant_max: u64) -> ApiError {
    ApiError::TooManyRequests(format!(
        "the tenant holds {tenant_max} push notification configs with updates still to send; \
         one frees its place when its task has finished and every update is sent, or when it is \
         deleted"
    ))
}

/// Stores `asked` as a config of `task` (replacing one of the same id), its credentials sealed.
pub(crate) async fn save_config(
    app: &App,
    principal: &TenantPrincipal,
    task: &Task,
    asked: NotifyRequest,
    start: Start,
) -> Result<NotifyConfig, ApiError> {
    let id = asked
        .id
        .clone()
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let names = (task.tenant_id.as_str(), task.id.as_str(), id.as_str());
    let credentials = asked
        .authentication
        .as_ref()
        .map(|(_, credentials)| credentials.as_str());
    let (sealed_token, sealed_credentials) = tokio::try_join!(
        seal_if_given(app, names, NotifySecret::Token, asked.token.as_deref()),
        seal_if_given(app, names, NotifySecret::Credentials, credentials),
    )?;
    let scheme = asked
        .authentication
        .as_ref()
        .map(|(scheme, _)| scheme.clone());
    let mut seen = task.clone();
    for _ in 0..3 {
        let config = NotifyConfig {
            tenant_id: seen.tenant_id.clone(),
            task_id: seen.id.clone(),
            id: id.clone(),
            url: asked.url.clone(),
            token: asked.token.clone(),
            sealed_token: sealed_token.clone(),
            scheme: scheme.clone(),
            sealed_credentials: sealed_credentials.clone(),
            created_at: clock::now(),
            delivered: match start {
                Start::FromOpen => 0,
                Start::Now => seen.event_count(),
            },
            attempts: 0,
            expires_at: seen.expires_at,
        };
        let tenant_max = app.config.tenant_max_configs;
        let created = config_audit(principal, "task.push_config.create", &seen, &id);
        match app
            .store
            .add_notify_config(&seen, &config, tenant_max, &created)
            .await?
        {
            Ok(()) => {
                tracing::info!(task_id = %seen.id, config_id = %config.id, "push notification config added");
                if start == Start::FromOpen && seen.event_count() > 0 {
                    seen.notify_configs += 1;
                    app.tasks().changed_wordless(&seen).await;
                }
                return Ok(config);
            }
            Err(NotifyRefusal::Full) => return Err(task_full()),
            Err(NotifyRefusal::TenantFull) => return Err(tenant_full(tenant_max)),
            Err(NotifyRefusal::Exists) => {
                let replaced = config_audit(principal, "task.push_config.replace", &seen, &id);
                if app.store.replace_notify_config(&config, &replaced).await? {
                    tracing::info!(task_id = %seen.id, config_id = %config.id, "push notification config replaced");
                    return Ok(config);
                }
            }
            Err(NotifyRefusal::TaskMoved) => {}
        }
        seen = app
            .store
            .get_task(&seen.id)
            .await?
            .ok_or(ApiError::TaskNotFound)?;
    }
    Err(ApiError::Unavailable)
}

/// The audit entry of a change (`action`) to the config `config_id` of `task`: the task, its
/// agents and its lineage, the config as the target.
pub(crate) fn config_audit(
    principal: &TenantPrincipal,
    action: &str,
    task: &Task,
    config_id: &str,
) -> AuditEntry {
    let mut entry = AuditEntry::for_task(principal, action, task);
    entry.target = config_id.to_owned();
    entry
}
