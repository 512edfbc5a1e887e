//! The REST edge of reading a task (`GET …/tasks/{id}`), canceling it and answering its question
//! (`POST …/cancel`, `POST …/messages`); the task service does each (`http/service/tasks.rs`).

use lambda_http::Request;

use super::service::tasks::caller_message;
use super::service::tasks::{answer_task, cancel_task, read_task, Canceled};
use super::{json_object, only_fields, path_param, wait_param, HandlerResult};
use crate::app::App;
use crate::domain::TaskId;
use crate::error::ApiError;

pub(super) fn task_id_param(request: &Request) -> Result<TaskId, ApiError> {
    let text = path_param(request, "task_id")?;
    // A malformed id names no task: the same 404 as any task the reader may not see.
    uuid::Uuid::parse_str(&text)
        .map(|id| TaskId::from(id.to_string()))
        .map_err(|_| ApiError::TaskNotFound)
}

/// `GET /v1/agents/{callee}/tasks/{id}?wait=N`.
pub async fn get(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let segment = path_param(&request, "agent")?;
    let wait = wait_param(&request, app)?;
    let task_id = task_id_param(&request)?;
    let task = read_task(app, &principal, &segment, &task_id, wait).await?;
    super::ok(&task.to_json())
}

/// `POST /v1/agents/{callee}/tasks/{id}/cancel`: only the caller; canceling a finished task
/// returns it unchanged.
pub async fn cancel(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let segment = path_param(&request, "agent")?;
    let task_id = task_id_param(&request)?;
    let (Canceled::Now(task) | Canceled::AlreadyFinished(task)) =
        cancel_task(app, &principal, &segment, &task_id).await?;
    super::ok(&task.to_json())
}

/// `POST /v1/agents/{agent}/tasks/{task_id}/messages` with `{"message": Message}`: the caller
/// answers the callee's question in place. The `input_required` task goes back to `working` with
/// the message in its history, claimable again (pull) or delivered again (push). Like an open, it
/// holds only over a live binding to an active callee; a refusal is the one 403 with the reason
/// on the audit log.
pub async fn add_message(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let segment = path_param(&request, "agent")?;
    let task_id = task_id_param(&request)?;
    let body = json_object(&request)?;
    only_fields(&body, &["message"])?;
    let message = caller_message(&body, "answering a task")?;
    let answered = answer_task(app, &principal, &segment, &task_id, message).await?;
    super::ok(&answered.to_json())
}
