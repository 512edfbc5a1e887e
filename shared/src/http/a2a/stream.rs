//! A2A streams: `SendStreamingMessage` and `SubscribeToTask`, on both bindings. The first event
//! is the `Task`, then one `StreamResponse` per change of the task's log (a `statusUpdate` or an
//! `artifactUpdate`), until the task is final or interrupted (`input_required`). On the JSON-RPC
//! binding each event is a JSON-RPC response carrying the request's id; on HTTP+JSON it is the
//! `StreamResponse` itself. Each event's SSE `id` is its number in the task's log.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};

use super::{object, required_text, task_id_of, A2aCall, Failure, Sending};
use crate::a2a::jsonrpc;
use crate::a2a::wire::{stream_event_json, task_json, TaskView};
use crate::a2a::{A2aError, A2aErrorKind};
use crate::app::App;
use crate::domain::events::TaskEvent;
use crate::domain::{Task, TaskState};
use crate::error::ApiError;
use crate::http::feed::{event_stream, sse_frame, Feed, Follower, Render};
use crate::http::reply::Reply;
use crate::http::service::tasks::read_task;

/// How a stream's events are framed.
#[derive(Debug, Clone)]
pub(in crate::http) enum Framing {
    /// JSON-RPC responses to the request with this id.
    JsonRpc(Value),
    /// `StreamResponse`s as they are (HTTP+JSON).
    HttpJson,
}

impl Framing {
    fn frame(&self, number: Option<u64>, response: Value) -> Bytes {
        match self {
            Framing::JsonRpc(id) => sse_frame(None, number, &jsonrpc::success(id, response)),
            Framing::HttpJson => sse_frame(None, number, &response),
        }
    }
}

struct A2aEvents(Framing);

impl Render for A2aEvents {
    fn event(&self, task: &Task, event: &TaskEvent<'_>) -> Bytes {
        self.0
            .frame(Some(event.number), stream_event_json(task, event))
    }

    fn ends_at(&self, state: TaskState) -> bool {
        ends_a2a_stream(state)
    }

    fn failure(&self, error: &ApiError) -> Bytes {
        // The cause is logged where the stream failed; the client learns what it can do.
        let error = match error {
            ApiError::TaskNotFound => A2aError::task_not_found(),
            ApiError::Unavailable => A2aError::new(
                A2aErrorKind::Internal,
                "a backing service is unavailable; subscribe again",
            ),
            _ => A2aError::new(A2aErrorKind::Internal, "internal error"),
        };
        match &self.0 {
            Framing::JsonRpc(id) => sse_frame(None, None, &jsonrpc::failure(id, &error)),
            Framing::HttpJson => sse_frame(Some("error"), None, &error.status_body()),
        }
    }
}

/// A2A streams end at a final state and at an interrupted one (the callee asked a question).
fn ends_a2a_stream(state: TaskState) -> bool {
    !state.is_pending()
}

impl A2aCall<'_> {
    /// `SendStreamingMessage`: sends without waiting, then follows the task.
    pub async fn stream_message(
        &self,
        app: &Arc<App>,
        params: &Value,
        framing: Framing,
    ) -> Result<Reply, Failure> {
        let (task, _) = Box::pin(self.send(params, Sending::ForAStream)).await?;
        Ok(self.follow(app, task, framing).await?)
    }

    /// `SubscribeToTask`: follows a task that is not finished.
    pub async fn subscribe(
        &self,
        app: &Arc<App>,
        params: &Value,
        framing: Framing,
    ) -> Result<Reply, Failure> {
        let params = object(params, "params")?;
        let task_id = task_id_of(required_text(params, "id")?)?;
        let task = read_task(
            self.app,
            &self.principal,
            &self.callee_segment,
            &task_id,
            std::time::Duration::ZERO,
        )
        .await?;
        if !TaskState::OPEN.contains(&task.state) {
            return Err(A2aError::unsupported(format!(
                "the task is {} already; read it with GetTask",
                task.state.as_str()
            ))
            .into());
        }
        Ok(self.follow(app, task, framing).await?)
    }

    /// The stream of `task` (read in full): the task first, then its events.
    async fn follow(
        &self,
        app: &Arc<App>,
        task: Task,
        framing: Framing,
    ) -> Result<Reply, ApiError> {
        let first = framing.frame(
            Some(task.event_count()),
            json!({ "task": task_json(&task, TaskView::default()) }),
        );
        let follower = Follower {
            principal: self.principal.clone(),
            credentials: self.credentials.clone(),
            segment: self.callee_segment.clone(),
        };
        let feed = Feed::open(app, follower, &task, task.event_count()).await?;
        Ok(event_stream(feed, A2aEvents(framing), vec![first], &task))
    }
}
