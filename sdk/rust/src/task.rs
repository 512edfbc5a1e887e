//! The gateway's Task and its parts, with the shortcuts callers and callees read, and
//! [`TaskReply`], what a callee answers.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The name of the artifact that [`TaskReply::done`] builds (the push path's name too).
pub const RESPONSE_ARTIFACT_NAME: &str = "response";

/// A file reference; the gateway never fetches it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRef {
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
}

/// One part of a message: exactly one of `{"text"}`, `{"data"}`, `{"file"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Part {
    Text(String),
    Data(Value),
    File(FileRef),
}

impl Part {
    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text(text) => Some(text),
            Part::Data(_) | Part::File(_) => None,
        }
    }
}

/// The text parts of `parts`, joined by newlines (data and file parts are left out).
pub fn text_of(parts: &[Part]) -> String {
    parts
        .iter()
        .filter_map(Part::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A message: `role` is `user` (the caller) or `agent` (the callee).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

impl Message {
    /// A message from `role` with a fresh `message_id`, so its write is safe to repeat.
    pub fn new(role: &str, parts: Vec<Part>) -> Message {
        Message {
            role: role.to_owned(),
            parts,
            message_id: Some(new_message_id()),
        }
    }

    /// The text parts, joined by newlines.
    pub fn text(&self) -> String {
        text_of(&self.parts)
    }
}

/// A named output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Artifact {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub parts: Vec<Part>,
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
    /// A state this SDK does not know yet.
    #[serde(other)]
    Unknown,
}

impl TaskState {
    /// The state as the gateway spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
            TaskState::Unknown => "unknown",
        }
    }

    /// Completed, failed or canceled: the task will not change again.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled
        )
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task's `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStatus {
    pub state: TaskState,
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// A task's `input`: the caller's opening message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskInput {
    pub message: Message,
}

/// A task as the gateway returned it. Fields the SDK does not model are kept in `extra`, so
/// serializing a `Task` gives back every field the gateway sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub context_id: String,
    #[serde(default)]
    pub caller_agent_id: Option<String>,
    #[serde(default)]
    pub callee_agent_id: Option<String>,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<TaskInput>,
    #[serde(default)]
    pub artifacts: Vec<Artifact>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<Message>>,
    #[serde(default)]
    pub call_id: Option<String>,
    #[serde(default)]
    pub parent_call_id: Option<String>,
    #[serde(default)]
    pub root_call_id: Option<String>,
    /// The callee's skill the open named, if any.
    #[serde(default)]
    pub skill: Option<String>,
    /// The W3C trace context of the task's open: a span of the trace its call tree is; a pull
    /// callee's work on the task joins the trace under it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// The W3C `tracestate` the open brought, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    /// `submitted`, `working`, `input_required`, `completed`, `failed` or `canceled`.
    pub fn state(&self) -> TaskState {
        self.status.state
    }

    /// The callee's question (the text of `status.message`) while `input_required`.
    pub fn question(&self) -> Option<String> {
        match (&self.status.state, &self.status.message) {
            (TaskState::InputRequired, Some(message)) => Some(message.text()),
            _ => None,
        }
    }

    /// The task's error, when it failed.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The conversation: pass it to [`crate::CallOptions::context_id`] to continue it.
    pub fn context_id(&self) -> &str {
        &self.context_id
    }

    /// This task's own call: pass it as `parent_call_id` on calls made while working on it.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The caller's opening message (`input.message`).
    pub fn message(&self) -> Option<&Message> {
        self.input.as_ref().map(|input| &input.message)
    }

    /// The parts of the opening message.
    pub fn parts(&self) -> &[Part] {
        self.message().map_or(&[], |message| &message.parts)
    }

    /// The text parts of the opening message, joined by newlines.
    pub fn text(&self) -> String {
        text_of(self.parts())
    }

    /// The first data part of the opening message that is a JSON object; an empty object when
    /// there is none.
    pub fn data(&self) -> Map<String, Value> {
        self.parts()
            .iter()
            .find_map(|part| match part {
                Part::Data(Value::Object(object)) => Some(object.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// Every artifact's text parts, in order, joined by `separator`.
    pub fn artifact_text_with(&self, separator: &str) -> String {
        self.artifacts
            .iter()
            .flat_map(|artifact| artifact.parts.iter().filter_map(Part::as_text))
            .collect::<Vec<_>>()
            .join(separator)
    }

    /// Every artifact's text parts, in order, joined by newlines.
    pub fn artifact_text(&self) -> String {
        self.artifact_text_with("\n")
    }

    /// Answer `completed`; see [`TaskReply::done`].
    pub fn done(&self) -> TaskReply {
        TaskReply::done()
    }

    /// Answer `input_required` with `question`; see [`TaskReply::ask`].
    pub fn ask(&self, question: impl Into<String>) -> TaskReply {
        TaskReply::ask(question)
    }

    /// Answer `failed` with `error`.
    pub fn fail(&self, error: impl Into<String>) -> TaskReply {
        TaskReply::fail(error)
    }
}

/// A message id for one logical write, reused on every retry of it.
pub fn new_message_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A callee's answer to a claimed task: the body of `POST /v1/agents/me/tasks/{id}/result`
/// (TaskResultIn).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReply {
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl TaskReply {
    /// `completed`, with no artifacts yet: add them with [`TaskReply::text`],
    /// [`TaskReply::data`] and [`TaskReply::artifact`].
    pub fn done() -> TaskReply {
        TaskReply {
            state: TaskState::Completed,
            artifacts: Vec::new(),
            message: None,
            error: None,
        }
    }

    /// `input_required`: the callee asks `question` back. The question carries a fresh
    /// `message_id`, so posting the same reply again lands once.
    pub fn ask(question: impl Into<String>) -> TaskReply {
        TaskReply {
            state: TaskState::InputRequired,
            artifacts: Vec::new(),
            message: Some(Message::new("agent", vec![Part::Text(question.into())])),
            error: None,
        }
    }

    /// `working`, for a push endpoint only ([`crate::PushEndpoint`]): the task is answered later
    /// with [`crate::Client::reply`], before its claim deadline. The pull result route refuses it
    /// (`422`), so `serve` fails a task that gets it.
    pub fn working() -> TaskReply {
        TaskReply {
            state: TaskState::Working,
            artifacts: Vec::new(),
            message: None,
            error: None,
        }
    }

    /// `failed`, with `error` as the task's error.
    pub fn fail(error: impl Into<String>) -> TaskReply {
        TaskReply {
            state: TaskState::Failed,
            artifacts: Vec::new(),
            message: None,
            error: Some(error.into()),
        }
    }

    /// Adds a text part to the `response` artifact (made first when missing).
    pub fn text(self, text: impl Into<String>) -> TaskReply {
        self.with_response_part(Part::Text(text.into()))
    }

    /// Adds a data part to the `response` artifact (made first when missing).
    pub fn data(self, data: Value) -> TaskReply {
        self.with_response_part(Part::Data(data))
    }

    /// Adds `artifact` after those already there.
    pub fn artifact(mut self, artifact: Artifact) -> TaskReply {
        self.artifacts.push(artifact);
        self
    }

    fn with_response_part(mut self, part: Part) -> TaskReply {
        let response = self
            .artifacts
            .iter_mut()
            .find(|artifact| artifact.name.as_deref() == Some(RESPONSE_ARTIFACT_NAME));
        match response {
            Some(artifact) => artifact.parts.push(part),
            None => self.artifacts.insert(
                0,
                Artifact {
                    name: Some(RESPONSE_ARTIFACT_NAME.to_owned()),
                    parts: vec![part],
                },
            ),
        }
        self
    }

    /// The reply a JSON value stands for, by the push path's rules: an object with a `state`
    /// or `artifacts` key is a TaskResultIn (without `state` it is `completed`); `null` is
    /// `completed` with no artifacts; any other value is one data part.
    pub fn from_json(value: Value) -> Result<TaskReply, serde_json::Error> {
        match value {
            Value::Null => Ok(TaskReply::done()),
            Value::Object(mut object)
                if object.contains_key("state") || object.contains_key("artifacts") =>
            {
                object
                    .entry("state")
                    .or_insert_with(|| Value::String("completed".into()));
                serde_json::from_value(Value::Object(object))
            }
            other => Ok(TaskReply::done().data(other)),
        }
    }
}

/// What a [`crate::Agents::serve`] handler may return: it becomes the task's reply.
///
/// A [`TaskReply`] is sent as it is; a `String`/`&str` completes the task with one text part;
/// `()` completes it with no artifacts; a [`Value`] follows [`TaskReply::from_json`] (a JSON
/// value it cannot read fails the task); `Vec<Artifact>` is the artifacts of a completed task;
/// `Result<R, E>` is `R`'s reply, or a failure with `E`'s message.
pub trait IntoReply {
    fn into_reply(self) -> TaskReply;
}

impl IntoReply for TaskReply {
    fn into_reply(self) -> TaskReply {
        self
    }
}

impl IntoReply for String {
    fn into_reply(self) -> TaskReply {
        TaskReply::done().text(self)
    }
}

impl IntoReply for &str {
    fn into_reply(self) -> TaskReply {
        TaskReply::done().text(self)
    }
}

impl IntoReply for () {
    fn into_reply(self) -> TaskReply {
        TaskReply::done()
    }
}

impl IntoReply for Value {
    fn into_reply(self) -> TaskReply {
        TaskReply::from_json(self).unwrap_or_else(|error| {
            TaskReply::fail(format!(
                "the handler's reply is not a TaskResultIn: {error}"
            ))
        })
    }
}

impl IntoReply for Vec<Artifact> {
    fn into_reply(self) -> TaskReply {
        TaskReply {
            artifacts: self,
            ..TaskReply::done()
        }
    }
}

impl<R: IntoReply, E: std::fmt::Display> IntoReply for Result<R, E> {
    fn into_reply(self) -> TaskReply {
        match self {
            Ok(reply) => reply.into_reply(),
            Err(error) => TaskReply::fail(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(body: Value) -> Task {
        serde_json::from_value(body).expect("a task")
    }

    fn sample() -> Value {
        json!({
            "id": "t1", "context_id": "c1", "caller_agent_id": "a", "callee_agent_id": "b",
            "status": {"state": "input_required", "timestamp": "now",
                       "message": {"role": "agent", "parts": [{"text": "which one?"}]}},
            "input": {"message": {"role": "user", "parts": [
                {"text": "classify"}, {"data": [1]}, {"data": {"invoice_id": "INV-1"}}]}},
            "artifacts": [{"name": "a", "parts": [{"text": "x"}, {"data": 1}]},
                          {"name": "b", "parts": [{"text": "y"}]}],
            "error": null, "history": [], "call_id": "k", "parent_call_id": null,
            "root_call_id": "k", "skill": "classify", "delivery": "pull", "created_at": "then"
        })
    }

    #[test]
    fn a_task_reads_its_question_data_and_artifact_text() {
        let task = task(sample());
        assert_eq!(task.state(), TaskState::InputRequired);
        assert_eq!(task.question().as_deref(), Some("which one?"));
        assert_eq!(task.data().get("invoice_id"), Some(&json!("INV-1")));
        assert_eq!(task.artifact_text(), "x\ny");
        assert_eq!(task.call_id(), Some("k"));
    }

    #[test]
    fn a_task_without_a_data_object_has_empty_data() {
        let mut body = sample();
        body["input"]["message"]["parts"] = json!([{"text": "hi"}]);
        assert!(task(body).data().is_empty());
    }

    #[test]
    fn a_task_serializes_back_every_field_it_was_read_from() {
        let back = serde_json::to_value(task(sample())).expect("serialize");
        assert_eq!(back, sample());
    }

    #[test]
    fn done_puts_text_then_data_in_one_response_artifact() {
        let reply = TaskReply::done().text("ok").data(json!({"n": 1}));
        assert_eq!(
            serde_json::to_value(&reply).expect("serialize"),
            json!({"state": "completed", "artifacts": [
                {"name": "response", "parts": [{"text": "ok"}, {"data": {"n": 1}}]}]})
        );
    }

    #[test]
    fn each_question_carries_its_own_message_id() {
        let first = TaskReply::ask("which?");
        let second = TaskReply::ask("which?");
        let id = |reply: &TaskReply| reply.message.as_ref().and_then(|m| m.message_id.clone());
        assert!(id(&first).is_some());
        assert_ne!(id(&first), id(&second));
    }

    #[test]
    fn json_replies_follow_the_push_rules() {
        let result = TaskReply::from_json(json!({"state": "failed", "error": "no"})).expect("ok");
        assert_eq!(result, TaskReply::fail("no"));
        let wrapped = TaskReply::from_json(json!({"category": "x"})).expect("ok");
        assert_eq!(wrapped, TaskReply::done().data(json!({"category": "x"})));
        let artifacts_only = TaskReply::from_json(json!({"artifacts": []})).expect("ok");
        assert_eq!(artifacts_only, TaskReply::done());
    }

    #[test]
    fn an_error_result_fails_the_task_with_its_message() {
        let result: Result<String, String> = Err("boom".into());
        assert_eq!(result.into_reply(), TaskReply::fail("boom"));
    }
}
