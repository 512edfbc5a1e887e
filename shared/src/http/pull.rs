//! The callee's pull side: claim the next task (long poll) and post its result.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use tokio::time::Instant;

use super::service::tasks::{agent_principal, expire_if_overdue};
use super::tasks::task_id_param;
use super::{
    audit_task_action, audited_task_ok, content_too_large, json_body, json_object, only_fields,
    pack_message, wait_param, with_poll_slot, HandlerResult,
};
use crate::app::App;
use crate::domain::content::{PackedBody, MAX_TASK_CONTENT_BYTES};
use crate::domain::ids::{AgentId, TaskId, TenantId};
use crate::domain::message::Role;
use crate::domain::task::{
    PackedResult, ResultRejection, TaskResult, MAX_HISTORY_BEFORE_ANSWER, MAX_TASK_MESSAGES,
};
use crate::domain::transitions::Transition;
use crate::domain::{clock, Message, Task, TenantPrincipal};
use crate::error::ApiError;
use crate::metrics::{self, Metric};
use crate::store::TaskTransition;
use crate::tasks::claim::Claim;

/// Claims in a row that may lose every candidate to other pollers before pausing one interval.
const CONTENDED_RETRIES: u32 = 8;

/// `GET /v1/agents/me/tasks/next?wait=N`: 200 with the claimed task (now `working`), or 204 when
/// nothing arrived within `wait`. A task that is ready is claimed before anything else: only a
/// claim that has to wait takes long-poll slots (see [`with_poll_slot`]), so a busy callee's
/// claims neither pay for slots nor count against its waits. The queue is then read again
/// sooner early in the wait, then at most once per idle ceiling (`PollPace`, quiet since the
/// request began).
pub async fn claim_next(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent_id = agent_principal(&principal, "claiming tasks")?;
    let wait = wait_param(&request, app)?;
    let began = Instant::now();
    let mut claimed = claim_ready(app, &principal, &agent_id, Look::First).await?;
    if claimed.is_none() && !wait.is_zero() {
        claimed = with_poll_slot(
            app,
            &principal,
            wait,
            claim_within(app, &principal, &agent_id, began, wait),
        )
        .await?;
    }
    claim_waited(began);
    match claimed {
        Some(task) => super::ok(&task.to_json()),
        None => {
            let mut response = Response::new(Body::Empty);
            *response.status_mut() = StatusCode::NO_CONTENT;
            Ok(response)
        }
    }
}

/// Looks at the queue again on the claim pace until a task is claimed or `wait` from `began`
/// runs out (with one last look then).
async fn claim_within(
    app: &App,
    principal: &TenantPrincipal,
    agent_id: &AgentId,
    began: Instant,
    wait: std::time::Duration,
) -> Result<Option<Task>, ApiError> {
    let until = began + wait;
    loop {
        let now = Instant::now();
        if now >= until {
            return Ok(None);
        }
        let interval = app.config.claim_pace().after_quiet(began.elapsed());
        tokio::time::sleep_until((now + interval).min(until)).await;
        if let Some(task) = claim_ready(app, principal, agent_id, Look::Again).await? {
            return Ok(Some(task));
        }
    }
}

/// Which look at its queue a claim takes.
#[derive(Clone, Copy)]
enum Look {
    /// The request's first: the queue is read.
    First,
    /// Again while it waits: a read another claim of this process began within the shortest
    /// poll interval serves (`Store::claim_next_waiting`).
    Again,
}

/// Claims a task queued now, handed over in full with its audit entry; `None` when the queue
/// is empty or other pollers won every candidate (after [`CONTENDED_RETRIES`] tries).
async fn claim_ready(
    app: &App,
    principal: &TenantPrincipal,
    agent_id: &AgentId,
    look: Look,
) -> Result<Option<Task>, ApiError> {
    let mut contended = 0;
    loop {
        let waiting = matches!(look, Look::Again);
        let claim = app
            .tasks()
            .claim(&principal.tenant_id, agent_id, waiting)
            .await?;
        match claim {
            Claim::Handed(task) => {
                audit_task_action(app, principal, "task.claim", &task).await;
                return Ok(Some(*task));
            }
            Claim::Undone => return Err(ApiError::Unavailable),
            Claim::Failed => {}
            Claim::Contended if contended < CONTENDED_RETRIES => contended += 1,
            Claim::Contended | Claim::Empty => return Ok(None),
        }
    }
}

/// Counts a claim poll's wait, from `began` until now.
fn claim_waited(began: Instant) {
    metrics::emit(Metric::LongPollWait {
        route: "claim",
        waited: began.elapsed(),
    });
}

/// When a callee's answer carries bodies that must be stored outside the task item, whether the
/// callee holds the task, read first so that nothing is stored for a write that would be refused.
/// A task that has the answer's message already (`key`) is returned: the write is a repeat.
async fn check_held_before_storing(
    app: &App,
    task_id: &TaskId,
    tenant_id: &TenantId,
    agent_id: &AgentId,
    bodies: &[&PackedBody],
    key: Option<&str>,
) -> Result<Option<Task>, ApiError> {
    if bodies.iter().all(|body| body.offload.is_none()) {
        return Ok(None);
    }
    let current = app
        .store
        .get_task(task_id)
        .await?
        .ok_or(ApiError::TaskNotFound)?;
    if is_repeat(&current, tenant_id, agent_id, key) {
        return Ok(Some(current));
    }
    if !held_in_time(&current, tenant_id, agent_id) {
        return Err(refused_to_callee(app, current, tenant_id, agent_id).await?);
    }
    app.bodies.store(bodies).await?;
    Ok(None)
}

/// Whether a callee's write carrying the message keyed `key` was applied to `task` already:
/// then it is answered with the task as it is now, and nothing is written or audited again.
fn is_repeat(task: &Task, tenant_id: &TenantId, agent_id: &AgentId, key: Option<&str>) -> bool {
    task.tenant_id == tenant_id && task.callee_agent_id == agent_id && task.has_message(key)
}

/// The answer to a repeated write: the task as it is now, in full.
async fn repeated(app: &App, task: Task) -> HandlerResult {
    tracing::info!(task_id = %task.id, "a repeated message_id; nothing written");
    super::ok(&super::full_task(app, task, &[]).await?.to_json())
}

/// `POST /v1/agents/me/tasks/{id}/result` with a TaskResultIn: only the callee holding the task,
/// only while it is `working`.
pub async fn post_result(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent_id = agent_principal(&principal, "posting a result")?;
    let task_id = task_id_param(&request)?;
    let body = json_body(&request)?;
    let result = TaskResult::parse_pull(&body).map_err(|rejection| match rejection {
        ResultRejection::WorkingFromPull => ApiError::PullResultWorking,
        ResultRejection::Invalid(invalid) => invalid.into(),
    })?;
    let key = result.message().and_then(Message::idempotency_key);
    let result = PackedResult::pack(&principal.tenant_id, &task_id, &result);
    if result.content_bytes() > MAX_TASK_CONTENT_BYTES {
        return Err(content_too_large());
    }
    let tenant_id = &principal.tenant_id;
    let key = key.as_deref();
    let bodies = result.bodies();
    if let Some(task) =
        check_held_before_storing(app, &task_id, tenant_id, &agent_id, &bodies, key).await?
    {
        return repeated(app, task).await;
    }
    let transition = app
        .tasks()
        .finish(&task_id, tenant_id, &agent_id, &result, key)
        .await?;
    let current = match transition {
        TaskTransition::Applied(task) => {
            let action = format!("task.result.{}", task.state.as_str());
            return audited_task_ok(app, &principal, &action, task, &result.bodies()).await;
        }
        TaskTransition::Refused(None) => return Err(ApiError::TaskNotFound),
        TaskTransition::Refused(Some(task)) => task,
    };
    if is_repeat(&current, tenant_id, &agent_id, key) {
        return repeated(app, current).await;
    }
    if held_in_time(&current, tenant_id, &agent_id)
        && current.would_overflow(result.content_bytes())
    {
        return Err(content_too_large());
    }
    Err(refused_to_callee(app, current, tenant_id, &agent_id).await?)
}

/// Whether `task` is a working task of this callee, before its deadline.
fn held_in_time(task: &Task, tenant_id: &TenantId, agent_id: &AgentId) -> bool {
    task.tenant_id == tenant_id
        && task.callee_agent_id == agent_id
        && Transition::Answer.starts_from(task.state)
        && !task.is_overdue(&clock::now())
}

/// Why a callee's write on a task it should hold was refused, as the error to answer with: the
/// task is not this agent's to see (404), it is its caller's (403), or it is not `working`
/// (409 with the current state, a passed claim deadline applied first so the state is true).
async fn refused_to_callee(
    app: &App,
    current: Task,
    tenant_id: &TenantId,
    agent_id: &AgentId,
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
    let principal = app.authenticate_in_tenant(request.headers()).await?;
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
    let key = message.idempotency_key();
    let key = key.as_deref();
    let tenant_id = &principal.tenant_id;
    let message = pack_message(tenant_id, &task_id, &message)?;
    if let Some(task) =
        check_held_before_storing(app, &task_id, tenant_id, &agent_id, &[&message], key).await?
    {
        return repeated(app, task).await;
    }
    let transition = app
        .tasks()
        .report_progress(&task_id, tenant_id, &agent_id, &message, key)
        .await?;
    let current = match transition {
        TaskTransition::Applied(task) => {
            return audited_task_ok(app, &principal, "task.progress", task, &[&message]).await;
        }
        TaskTransition::Refused(None) => return Err(ApiError::TaskNotFound),
        TaskTransition::Refused(Some(task)) => task,
    };
    if is_repeat(&current, tenant_id, &agent_id, key) {
        return repeated(app, current).await;
    }
    // Held by this callee and on time, so only the history's room or the content cap refused it.
    if held_in_time(&current, tenant_id, &agent_id) {
        if current.history.len() >= MAX_HISTORY_BEFORE_ANSWER {
            return Err(ApiError::LimitReached(format!(
                "a task holds {MAX_TASK_MESSAGES} messages and the last is kept for the answer; \
                 answer this one or open a new task"
            )));
        }
        if current.would_overflow(message.bytes) {
            return Err(content_too_large());
        }
    }
    Err(refused_to_callee(app, current, &principal.tenant_id, &agent_id).await?)
}
