//! The task routes: open (call), read, cancel, answer a question, search; and the callee's side:
//! claim the next task, report progress, reply.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::client::{segment, Client, Request};
use crate::error::{Error, Result};
use crate::manage::Items;
use crate::task::{new_message_id, IntoReply, Message, Part, Task, TaskReply, TaskState};

/// The most a request may ask the gateway to wait, in seconds.
pub const MAX_WAIT_SECONDS: u32 = 30;

/// What [`Client::call`] sends: the message (text, data, other parts) and how to open it.
///
/// `text` makes a text part, `data` a data part (both: text first), `parts` adds parts as
/// given. `wait` (0–30 s, default 0) blocks for an answer. `message_id` defaults to a fresh
/// UUID reused by every retry of this call, so a retried open never opens a second task.
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    text: Option<String>,
    data: Option<Value>,
    parts: Vec<Part>,
    wait: u32,
    context_id: Option<String>,
    parent_call_id: Option<String>,
    message_id: Option<String>,
    skill: Option<String>,
}

impl CallOptions {
    pub fn new() -> CallOptions {
        CallOptions::default()
    }

    pub fn text(mut self, text: impl Into<String>) -> CallOptions {
        self.text = Some(text.into());
        self
    }

    pub fn data(mut self, data: Value) -> CallOptions {
        self.data = Some(data);
        self
    }

    pub fn part(mut self, part: Part) -> CallOptions {
        self.parts.push(part);
        self
    }

    /// Seconds (0–30) the open may block for the task to leave `submitted`/`working`.
    pub fn wait(mut self, seconds: u32) -> CallOptions {
        self.wait = seconds;
        self
    }

    /// Continue the conversation of an earlier task (e.g. one that asked a question).
    pub fn context_id(mut self, context_id: impl Into<String>) -> CallOptions {
        self.context_id = Some(context_id.into());
        self
    }

    /// The governed call that led to this one (sent as `X-Parent-Call`).
    pub fn parent_call_id(mut self, call_id: impl Into<String>) -> CallOptions {
        self.parent_call_id = Some(call_id.into());
        self
    }

    /// The callee's skill (its card's `skills[].id`) the task is for; a binding's contract
    /// may bound the skills its caller names.
    pub fn skill(mut self, skill: impl Into<String>) -> CallOptions {
        self.skill = Some(skill.into());
        self
    }

    /// Your own message id, to make the open safe to repeat across processes.
    pub fn message_id(mut self, message_id: impl Into<String>) -> CallOptions {
        self.message_id = Some(message_id.into());
        self
    }

    fn message(&self) -> Result<Message> {
        let mut parts = Vec::new();
        parts.extend(self.text.clone().map(Part::Text));
        parts.extend(self.data.clone().map(Part::Data));
        parts.extend(self.parts.iter().cloned());
        if parts.is_empty() {
            return Err(Error::InvalidArgument(
                "a message needs text, data or parts".into(),
            ));
        }
        Ok(Message {
            role: "user".into(),
            parts,
            message_id: Some(self.message_id.clone().unwrap_or_else(new_message_id)),
        })
    }
}

/// Whose tasks a search covers, seen from the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Inbound,
    Outbound,
    Both,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
            Direction::Both => "both",
        }
    }
}

/// The filters of `GET /v1/tasks`; every one optional (an admin or viewer must name `agent`).
#[derive(Debug, Clone, Default)]
pub struct TaskSearch {
    pub direction: Option<Direction>,
    pub agent: Option<String>,
    pub state: Option<TaskState>,
    pub context_id: Option<String>,
    /// Words, every one of which must be in the task (the first 8 distinct ones are read).
    pub q: Option<String>,
    /// RFC 3339: tasks whose latest change is strictly after it.
    pub since: Option<String>,
    /// 1–100, default 50.
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page of the same search.
    pub cursor: Option<String>,
}

impl TaskSearch {
    fn request(&self) -> Request {
        let mut request = Request::get("/v1/tasks".into());
        let filters = [
            ("direction", self.direction.map(|d| d.as_str().to_owned())),
            ("agent", self.agent.clone()),
            ("state", self.state.map(|s| s.as_str().to_owned())),
            ("context_id", self.context_id.clone()),
            ("q", self.q.clone()),
            ("since", self.since.clone()),
            ("limit", self.limit.map(|l| l.to_string())),
            ("cursor", self.cursor.clone()),
        ];
        for (name, value) in filters {
            if let Some(value) = value {
                request = request.query(name, value);
            }
        }
        request
    }
}

/// One page of a task search, most recently changed first.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct TaskPage {
    pub items: Vec<Task>,
    pub next_cursor: Option<String>,
}

/// One push delivery attempt of a task (`GET /v1/agents/{callee}/tasks/{id}/attempts`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct DeliveryAttempt {
    /// 1 for the first delivery, then one more per retry.
    pub attempt: u32,
    pub at: String,
    /// The endpoint's HTTP status; `None` when no answer came (a timeout, a refused
    /// connection).
    #[serde(default)]
    pub status: Option<u16>,
    pub latency_ms: u64,
    #[serde(default)]
    pub error: Option<String>,
}

fn checked_wait(wait: u32) -> Result<u32> {
    if wait > MAX_WAIT_SECONDS {
        return Err(Error::InvalidArgument(format!(
            "wait is at most {MAX_WAIT_SECONDS} seconds, not {wait}"
        )));
    }
    Ok(wait)
}

fn task_path(callee: &str, task_id: &str) -> Result<String> {
    Ok(format!(
        "/v1/agents/{}/tasks/{}",
        segment(callee)?,
        segment(task_id)?
    ))
}

impl Client {
    /// Opens a task on `callee` (its name or its id): `POST /v1/agents/{callee}/tasks`.
    ///
    /// The message always carries a `message_id`, so the open is retried after a broken
    /// connection and the gateway answers the retry with the task the first attempt opened.
    pub async fn call(&self, callee: &str, options: CallOptions) -> Result<Task> {
        let mut body = json!({ "message": options.message()? });
        if let Some(context_id) = &options.context_id {
            body["context_id"] = json!(context_id);
        }
        if let Some(skill) = &options.skill {
            body["skill"] = json!(skill);
        }
        let mut request = Request::post(format!("/v1/agents/{}/tasks", segment(callee)?), body)
            .wait(checked_wait(options.wait)?)
            .repeatable(true);
        if let Some(parent) = options.parent_call_id {
            request.headers.push(("x-parent-call", parent));
        }
        self.send_json(request).await
    }

    /// Reads a task, long-polling up to `wait` seconds (0–30) for it to leave
    /// `submitted`/`working`: `GET /v1/agents/{callee}/tasks/{id}`.
    pub async fn task(&self, callee: &str, task_id: &str, wait: u32) -> Result<Task> {
        let request = Request::get(task_path(callee, task_id)?).wait(checked_wait(wait)?);
        self.send_json(request).await
    }

    /// Cancels a task (only its caller may). A finished task comes back unchanged, not as an
    /// error.
    pub async fn cancel(&self, callee: &str, task_id: &str) -> Result<Task> {
        let path = format!("{}/cancel", task_path(callee, task_id)?);
        self.send_json(Request::post(path, json!({})).repeatable(true))
            .await
    }

    /// The caller answers an `input_required` task in place; it goes back to `working`.
    pub async fn answer(
        &self,
        callee: &str,
        task_id: &str,
        text: impl Into<String>,
    ) -> Result<Task> {
        let message = Message::new("user", vec![Part::Text(text.into())]);
        let path = format!("{}/messages", task_path(callee, task_id)?);
        self.send_json(Request::post(path, json!({ "message": message })).repeatable(true))
            .await
    }

    /// The push delivery attempts of a task, in order, across all its deliveries (empty for a
    /// pull callee's task); the callee's owner or an admin:
    /// `GET /v1/agents/{callee}/tasks/{id}/attempts`.
    pub async fn attempts(&self, callee: &str, task_id: &str) -> Result<Items<DeliveryAttempt>> {
        let path = format!("{}/attempts", task_path(callee, task_id)?);
        self.send_json(Request::get(path)).await
    }

    /// One page of the tasks this key may search: `GET /v1/tasks`.
    pub async fn search_tasks(&self, search: &TaskSearch) -> Result<TaskPage> {
        self.send_json(search.request()).await
    }

    /// Claims the next task for this agent, waiting up to `wait` seconds (0–30); `None` when
    /// nothing arrived: `GET /v1/agents/me/tasks/next`.
    pub async fn next_task(&self, wait: u32) -> Result<Option<Task>> {
        let mut request = Request::get("/v1/agents/me/tasks/next".into()).wait(checked_wait(wait)?);
        request.no_content_ok = true;
        match self.send(request).await? {
            Some(body) => serde_json::from_value(body)
                .map(Some)
                .map_err(|error| Error::Decode(error.to_string())),
            None => Ok(None),
        }
    }

    /// Reports progress on a claimed task; it stays `working`.
    pub async fn progress(&self, task_id: &str, text: impl Into<String>) -> Result<Task> {
        self.progress_parts(task_id, vec![Part::Text(text.into())])
            .await
    }

    /// Reports progress on a claimed task as any parts (text, data); it stays `working`:
    /// `POST /v1/agents/me/tasks/{id}/progress`.
    pub async fn progress_parts(&self, task_id: &str, parts: Vec<Part>) -> Result<Task> {
        let message = Message::new("agent", parts);
        let path = format!("/v1/agents/me/tasks/{}/progress", segment(task_id)?);
        self.send_json(Request::post(path, json!({ "message": message })).repeatable(true))
            .await
    }

    /// Answers a claimed task and returns the task as the reply left it:
    /// `POST /v1/agents/me/tasks/{id}/result`. Takes anything a handler may return.
    ///
    /// Retried after a broken connection only when its message carries a `message_id` (a
    /// question built by [`TaskReply::ask`]): a repeat is then answered with the task.
    pub async fn reply(&self, task_id: &str, reply: impl IntoReply) -> Result<Task> {
        self.post_reply(task_id, &reply.into_reply()).await
    }

    pub(crate) async fn post_reply(&self, task_id: &str, reply: &TaskReply) -> Result<Task> {
        let repeatable = reply
            .message
            .as_ref()
            .is_some_and(|message| message.message_id.is_some());
        let body = serde_json::to_value(reply).map_err(|error| Error::Decode(error.to_string()))?;
        let path = format!("/v1/agents/me/tasks/{}/result", segment(task_id)?);
        self.send_json(Request::post(path, body).repeatable(repeatable))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_message_has_text_then_data_and_a_message_id() {
        let message = CallOptions::new()
            .data(json!({"invoice_id": "INV-1"}))
            .text("Classify")
            .message()
            .expect("a message");
        assert_eq!(message.parts[0], Part::Text("Classify".into()));
        assert_eq!(message.parts[1], Part::Data(json!({"invoice_id": "INV-1"})));
        assert!(message.message_id.is_some());
    }

    #[test]
    fn a_call_without_parts_is_refused_before_sending() {
        assert!(matches!(
            CallOptions::new().message(),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn a_search_sends_only_the_filters_given() {
        let search = TaskSearch {
            state: Some(TaskState::InputRequired),
            limit: Some(5),
            ..TaskSearch::default()
        };
        let request = search.request();
        assert_eq!(
            request.query,
            vec![
                ("state", "input_required".to_owned()),
                ("limit", "5".to_owned())
            ]
        );
    }
}
