//! `GET /v1/agents/{callee}/tasks/{id}/events`: a task's updates as server-sent events, for
//! the task's readers (the same as `GET …/tasks/{id}`).
//!
//! The first event (`task`) is the task as it is, with the number of its latest change as its
//! id; then one event per change (`status`, `progress`, `question`, `answer`, `artifact`,
//! `final`), each with its number as its id. The stream ends after `final`. A client that
//! reconnects with `Last-Event-ID` gets every event after that number and no `task` event.

use std::sync::Arc;

use bytes::Bytes;
use lambda_http::Request;
use serde_json::{json, Value};

use super::feed::{event_stream, sse_frame, Feed, Follower, Render};
use super::reply::Reply;
use super::service::tasks::{expire_if_overdue, readable_task};
use super::tasks::task_id_param;
use super::{full_task, path_param};
use crate::app::App;
use crate::domain::content::Stored;
use crate::domain::events::{EventKind, TaskEvent};
use crate::domain::{Task, TaskState};
use crate::error::ApiError;

/// The REST event stream's format.
struct RestEvents;

impl Render for RestEvents {
    fn event(&self, task: &Task, event: &TaskEvent<'_>) -> Bytes {
        sse_frame(
            Some(event.kind.name()),
            Some(event.number),
            &event_json(task, event),
        )
    }

    fn ends_at(&self, state: TaskState) -> bool {
        !TaskState::OPEN.contains(&state)
    }

    fn failure(&self, error: &ApiError) -> Bytes {
        sse_frame(Some("error"), None, &error.body())
    }
}

/// One event's data: the task, the change and what it added.
fn event_json(task: &Task, event: &TaskEvent<'_>) -> Value {
    let mut data = json!({
        "task_id": task.id,
        "event": event.number,
        "state": event.state,
        "timestamp": event.timestamp,
    });
    let message = if event.kind == EventKind::Final {
        task.status_message.as_ref()
    } else {
        event.message.map(|(_, message)| message)
    };
    if let Some(message) = message {
        data["message"] = Stored::to_value(message);
    }
    if let Some((index, artifact)) = event.artifact {
        data["artifact"] = json!(artifact);
        data["artifact_index"] = json!(index);
    }
    if let Some(error) = event.error {
        data["error"] = json!(error);
    }
    data
}

/// The number in `Last-Event-ID`, if the client sent one.
fn last_event_id(request: &Request) -> Result<Option<u64>, ApiError> {
    let Some(value) = request.headers().get("last-event-id") else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|text| text.trim().parse::<u64>().ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::InvalidRequest(
                "Last-Event-ID must be the id of an event this stream sent".into(),
            )
        })
}

/// `GET /v1/agents/{callee}/tasks/{id}/events`.
pub async fn stream(app: &Arc<App>, request: Request) -> Result<Reply, ApiError> {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let segment = path_param(&request, "agent")?;
    let task_id = task_id_param(&request)?;
    let resume_after = last_event_id(&request)?;
    let task = readable_task(app, &principal, &task_id, &segment).await?;
    let task = expire_if_overdue(app, task).await?;
    let task = full_task(app, task, &[]).await?;
    let first = match resume_after {
        None => vec![sse_frame(
            Some("task"),
            Some(task.event_count()),
            &task.to_json(),
        )],
        Some(after) => task
            .events_after(after)
            .iter()
            .map(|event| RestEvents.event(&task, event))
            .collect(),
    };
    let follower = Follower {
        principal,
        credentials: crate::http::auth::credentials_of(request.headers()),
        segment,
    };
    let feed = Feed::open(app, follower, &task, task.event_count()).await?;
    Ok(event_stream(feed, RestEvents, first, &task))
}
