//! The callee's pull side: claim the next task (long poll) and post its result.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use tokio::time::Instant;

use super::tasks::{agent_principal, expire_if_overdue, task_id_param};
use super::{json_body, json_object, only_fields, wait_param, HandlerResult};
use crate::app::App;
use crate::domain::message::Role;
use crate::domain::task::{
    ResultRejection, TaskResult, MAX_HISTORY_BEFORE_ANSWER, MAX_TASK_MESSAGES,
};
use crate::domain::{clock, Message, Task, TaskState};
use crate::error::ApiError;
use crate::store::{ClaimOutcome, TaskTransition};

/// Claims in a row that may lose every candidate to other pollers before pausing one interval.
const CONTENDED_RETRIES: u32 = 8;

/// `GET /v1/agents/me/tasks/next?wait=N`: 200 with the claimed task (now `working`), or 204 when
/// nothing arrived within `wait`. At most one queue read per poll interval while idle.
pub async fn claim_next(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate(request.headers()).await?;
    let agent_id = agent_principal(&principal, "claiming tasks")?;
    let wait = wait_param(&request, app)?;
    let until = Instant::now() + wait;
    let mut contended = 0;
    loop {
        match app.store.claim_next(&agent_id).await? {
            ClaimOutcome::Claimed(task) => {
                tracing::info!(task_id = %task.id, call_id = %task.call_id, "task claimed");
                return super::ok(&task.to_json());
            }
            ClaimOutcome::Contended if contended < CONTENDED_RETRIES => {
                contended += 1;
                continue;
            }
            ClaimOutcome::Contended | ClaimOutcome::Empty => contended = 0,
        }
        if Instant::now() >= until {
            let mut response = Response::new(Body::Empty);
            *response.status_mut() = StatusCode::NO_CONTENT;
            return Ok(response);
        }
        tokio::time::sleep_until((Instant::now() + app.config.claim_poll_interval).min(until))
            .await;
    }
}

/// `POST /v1/agents/me/tasks/{id}/result` with a TaskResultIn: only the callee holding the task,
/// only while it is `working`.
pub async fn post_result(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate(request.headers()).await?;
    let agent_id = agent_principal(&principal, "posting a result")?;
    let task_id = task_id_param(&request)?;
    let body = json_body(&request)?;
    let result = TaskResult::parse_pull(&body).map_err(|rejection| match rejection {
        ResultRejection::WorkingFromPull => ApiError::PullResultWorking,
        ResultRejection::Invalid(invalid) => invalid.into(),
    })?;
    let transition = app
        .store
        .finish_task(&task_id, &principal.tenant_id, &agent_id, &result)
        .await?;
    let current = match transition {
        TaskTransition::Applied(task) => {
            tracing::info!(task_id = %task.id, state = task.state.as_str(), "task answered");
            return super::ok(&task.to_json());
        }
        TaskTransition::Refused(None) => return Err(ApiError::TaskNotFound),
        TaskTransition::Refused(Some(task)) => task,
    };
    Err(refused_to_callee(app, current, &principal.tenant_id, &agent_id).await?)
}

/// Why a callee's write on a task it should hold was refused, as the error to answer with: the
/// task is not this agent's to see (404), it is its caller's (403), or it is not `working`
/// (409 with the current state, a passed claim deadline applied first so the state is true).
async fn refused_to_callee(
    app: &App,
    current: Task,
    tenant_id: &str,
    agent_id: &str,
) -> Result<ApiError, ApiError> {
    if current.tenant_id != tenant_id {
        return Ok(ApiError::TaskNotFound);
    }
    if current.callee_agent_id != agent_id {
        return Ok(if current.caller_agent_id == agent_id {
            ApiError::Forbidden("only the callee may answer a task".into())
        } else {
            ApiError::TaskNotFound
        });
    }
    let current = expire_if_overdue(app, current).await?;
    Ok(ApiError::TaskNotWorking(current.state))
}

/// `POST /v1/agents/me/tasks/{id}/progress` with `{"message": Message}`: the callee holding a
/// working task says what it is doing. The state stays `working`; the message becomes the
/// task's status message and joins its history. The claim deadline is not moved.
pub async fn report_progress(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate(request.headers()).await?;
    let agent_id = agent_principal(&principal, "reporting progress")?;
    let task_id = task_id_param(&request)?;
    let body = json_object(&request)?;
    only_fields(&body, &["message"])?;
    let raw = body
        .get("message")
        .ok_or_else(|| ApiError::InvalidRequest("message is required".into()))?;
    let mut message = Message::parse(raw, "message")?;
    if raw.get("role").is_some() && message.role != Role::Agent {
        return Err(ApiError::InvalidRequest(
            "message.role must be \"agent\" when reporting progress".into(),
        ));
    }
    message.role = Role::Agent;
    let transition = app
        .store
        .report_progress(&task_id, &principal.tenant_id, &agent_id, &message)
        .await?;
    let current = match transition {
        TaskTransition::Applied(task) => {
            tracing::info!(task_id = %task.id, "task progress reported");
            return super::ok(&task.to_json());
        }
        TaskTransition::Refused(None) => return Err(ApiError::TaskNotFound),
        TaskTransition::Refused(Some(task)) => task,
    };
    // Held by this callee and on time, so only the history's room refused it.
    let held = current.tenant_id == principal.tenant_id
        && current.callee_agent_id == agent_id
        && current.state == TaskState::Working
        && !current.is_overdue(&clock::now());
    if held && current.history.len() >= MAX_HISTORY_BEFORE_ANSWER {
        return Err(ApiError::LimitReached(format!(
            "a task holds {MAX_TASK_MESSAGES} messages and the last is kept for the answer; \
             answer this one or open a new task"
        )));
    }
    Err(refused_to_callee(app, current, &principal.tenant_id, &agent_id).await?)
}
