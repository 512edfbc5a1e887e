//! Operating push deliveries (docs/api.md, "Operating deliveries"): an endpoint's health,
//! enabling it again after it was disabled, replaying one task's waiting delivery now,
//! redriving every waiting delivery of the tasks opened since a moment, and replaying a push
//! notification config's latest event.

use lambda_http::http::StatusCode;
use lambda_http::Request;
use serde_json::{json, Value};

use super::agents::{managed_agent, visible_agent};
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::endpoint_health::health_json;
use crate::domain::task::Delivery;
use crate::domain::{clock, Agent, Task, TaskId};
use crate::error::{json_response, ApiError};
use crate::push::endpoint::Endpoint;
use crate::store::{AuditEntry, RewindRefusal, TaskTransition};

/// The most tasks one redrive replays.
pub const REDRIVE_PAGE: usize = 100;

/// The agent's push endpoint; `404` for an agent without one.
fn endpoint_of(agent: &Agent) -> Result<Endpoint, ApiError> {
    agent
        .endpoint
        .as_ref()
        .and_then(Endpoint::from_json)
        .ok_or_else(|| ApiError::NotFound("the agent has no push endpoint".into()))
}

/// The agent's endpoint, unless it is disabled (`409`).
fn enabled_endpoint_of(agent: &Agent) -> Result<Endpoint, ApiError> {
    let endpoint = endpoint_of(agent)?;
    match endpoint.disabled {
        Some(_) => Err(ApiError::Conflict(
            "the endpoint is disabled: an admin enables it first".into(),
        )),
        None => Ok(endpoint),
    }
}

/// The health of `agent`'s `endpoint`, as the API shows it.
async fn health_of(app: &App, agent: &Agent, endpoint: &Endpoint) -> HandlerResult {
    let counters = app.store.endpoint_health(&agent.id).await?;
    ok(&health_json(
        agent.id.as_str(),
        &endpoint.url,
        &counters,
        endpoint.disabled.as_ref(),
        &app.config.endpoint_disable,
        time::OffsetDateTime::now_utc(),
    ))
}

/// `GET /v1/agents/{agent}/endpoint/health`: for whoever may read the agent.
pub async fn health(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = visible_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let endpoint = endpoint_of(&agent)?;
    health_of(app, &agent, &endpoint).await
}

/// `POST /v1/agents/{agent}/endpoint/enable`: an admin clears the endpoint's disabling and its
/// run of failures, with an audit entry; an endpoint that is not disabled is left as it is.
pub async fn enable(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.is_admin() {
        return Err(ApiError::Forbidden(
            "only an admin may enable a disabled endpoint".into(),
        ));
    }
    let mut agent = visible_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let mut endpoint = endpoint_of(&agent)?;
    if endpoint.disabled.take().is_none() {
        return health_of(app, &agent, &endpoint).await;
    }
    agent.endpoint = Some(endpoint.to_json());
    agent.updated_at = clock::now();
    agent.version += 1;
    let audit = AuditEntry::new(&principal, "agent.endpoint.enable", &agent.id);
    let also = vec![app.store.end_endpoint_failures(&agent.id)?];
    if !app.store.update_agent_with(&agent, &audit, also).await? {
        return Err(ApiError::Conflict(
            "the agent changed while this request was applied; read it again and retry".into(),
        ));
    }
    tracing::info!(agent_id = %agent.id, "push endpoint enabled");
    health_of(app, &agent, &endpoint).await
}

/// `POST /v1/agents/{agent}/tasks/{task_id}/replay`: the task's waiting delivery attempted now,
/// with a fresh retry budget and its own `webhook-id`; for the callee's owner or an admin.
pub async fn replay(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let callee = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let task_id = super::tasks::task_id_param(&request)?;
    match app.store.get_task(&task_id).await? {
        Some(task) if task.callee_agent_id == callee.id => {}
        _ => return Err(ApiError::TaskNotFound),
    }
    enabled_endpoint_of(&callee)?;
    match app.tasks().redeliver(&task_id).await? {
        TaskTransition::Applied(task) => {
            super::audit_task_action(app, &principal, "task.delivery.replay", &task).await;
            tracing::info!(task_id = %task.id, "delivery replayed");
            let body = json!({"task_id": task.id, "webhook_id": task.webhook_id()});
            Ok(json_response(StatusCode::ACCEPTED, &body))
        }
        TaskTransition::Refused(Some(current)) => Err(not_waiting(&current)),
        TaskTransition::Refused(None) => Err(ApiError::TaskNotFound),
    }
}

/// Why `task`'s delivery is not waiting to be replayed: for good, or (an attempt under way)
/// for a moment.
fn not_waiting(task: &Task) -> ApiError {
    let final_reason = if task.delivery != Delivery::Push {
        "the task is delivered by pull: its callee claims it".to_owned()
    } else if !task.state.is_open() {
        format!(
            "the task is {}: a finished task is not delivered again",
            task.state.as_str()
        )
    } else if task.delivered_at.is_some() {
        "the callee accepted the task: it answers through the result route".to_owned()
    } else {
        return ApiError::InProgress(
            "an attempt at this delivery is under way: replay once it has ended".into(),
        );
    };
    ApiError::Conflict(final_reason)
}

/// `POST /v1/agents/{agent}/endpoint/redrive` `{"since"}`: every task of the agent opened since
/// then whose delivery waits after a failed attempt, replayed, oldest first, at most
/// [`REDRIVE_PAGE`] a call.
pub async fn redrive(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let callee = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let body = json_object(&request)?;
    only_fields(&body, &["since"])?;
    let since = match body.get("since").and_then(Value::as_str).map(clock::parse) {
        Some(Some(since)) => clock::format(since),
        Some(None) => {
            return Err(ApiError::InvalidRequest(
                "since must be an RFC 3339 moment, e.g. 2026-12-07T09:00:00Z".into(),
            ))
        }
        None => {
            return Err(ApiError::InvalidRequest(
                "since is required: an RFC 3339 moment, e.g. 2026-12-07T09:00:00Z".into(),
            ))
        }
    };
    enabled_endpoint_of(&callee)?;
    let (waiting, next_since) = app
        .store
        .deliveries_waiting(&callee.id, &since, REDRIVE_PAGE)
        .await?;
    let mut task_ids: Vec<TaskId> = Vec::new();
    for task_id in waiting {
        if let TaskTransition::Applied(task) = app.tasks().redeliver(&task_id).await? {
            task_ids.push(task.id);
        }
    }
    let entry = AuditEntry::new(&principal, "agent.endpoint.redrive", &callee.id);
    if let Err(error) = app.store.record_audit(&entry).await {
        tracing::error!(agent_id = %callee.id, error = %error, "audit entry not written");
    }
    tracing::info!(agent_id = %callee.id, redriven = task_ids.len(), "deliveries redriven");
    ok(&json!({
        "redriven": task_ids.len(),
        "task_ids": task_ids,
        "next_since": next_since,
    }))
}

/// `POST /v1/agents/{agent}/tasks/{task_id}/notifications/{config_id}/replay`: the latest event
/// a push notification config received, sent to it again now under its own `webhook-id`
/// (`{task}:{config}:{event}`); for the task's caller, which manages its configs, or an admin.
pub async fn replay_notification(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let task_id = super::tasks::task_id_param(&request)?;
    let segment = path_param(&request, "agent")?;
    let task = super::service::tasks::readable_task(app, &principal, &task_id, &segment).await?;
    if !principal.is_admin() && principal.agent_id() != Some(&task.caller_agent_id) {
        return Err(ApiError::Forbidden(
            "only the task's caller or an admin replays its notifications".into(),
        ));
    }
    let config_id = path_param(&request, "config_id")?;
    let event = match app.store.rewind_notify(&task_id, &config_id).await? {
        Ok(event) => event,
        Err(RewindRefusal::Gone) => {
            return Err(ApiError::NotFound(
                "the task has no such notification config".into(),
            ))
        }
        Err(RewindRefusal::NothingSent) => {
            return Err(ApiError::Conflict(
                "the config has received no event yet: nothing to send again".into(),
            ))
        }
        Err(RewindRefusal::Busy) => {
            return Err(ApiError::InProgress(
                "an event is being sent to the config: replay once it has been".into(),
            ))
        }
    };
    super::audit_task_action(app, &principal, "task.push_config.replay", &task).await;
    if let Err(error) = app
        .queue
        .enqueue_notify(&task_id, Some(&task.tenant_id))
        .await
    {
        tracing::warn!(task_id = %task_id, error = %error, "could not enqueue the replayed notification; the sweeper will");
    }
    tracing::info!(task_id = %task_id, config_id = %config_id, event, "notification replayed");
    let body = json!({
        "task_id": task_id,
        "config_id": config_id,
        "event": event,
        "webhook_id": format!("{task_id}:{config_id}:{event}"),
    });
    Ok(json_response(StatusCode::ACCEPTED, &body))
}
