//! A callee's answer to a task: its artifacts, a failure or a question, parsed from the callee's
//! body and packed for the task item (each body inline or stored apart).

use serde::Serialize;
use serde_json::Value;

use super::content::{PackedBody, INLINE_BODY_BYTES};
use super::message::{parse_parts, Message, Part, MAX_MESSAGE_BYTES};
use super::state::TaskState;
use super::Invalid;

/// Most artifacts one result may carry.
pub const MAX_ARTIFACTS: usize = 64;

/// A named output of a task.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub name: String,
    pub parts: Vec<Part>,
}

impl Artifact {
    pub fn parse(value: &Value, at: &str) -> Result<Artifact, Invalid> {
        let object = value
            .as_object()
            .ok_or_else(|| Invalid(format!("{at} must be an object with name? and parts")))?;
        for key in object.keys() {
            if !matches!(key.as_str(), "name" | "parts") {
                return Err(Invalid(format!("{at}.{key} is not an artifact field")));
            }
        }
        let name = match object.get("name") {
            None | Some(Value::Null) => "response".to_owned(),
            Some(Value::String(name)) if !name.is_empty() && name.chars().count() <= 256 => {
                name.clone()
            }
            Some(_) => {
                return Err(Invalid(format!(
                    "{at}.name must be a string of 1 to 256 characters"
                )))
            }
        };
        let parts = parse_parts(object.get("parts"), &format!("{at}.parts"))?;
        Ok(Artifact { name, parts })
    }
}

/// Parses a list of artifacts: at most [`MAX_ARTIFACTS`], and at most [`MAX_MESSAGE_BYTES`]
/// serialized in all, like one message.
pub fn parse_artifacts(value: Option<&Value>, at: &str) -> Result<Vec<Artifact>, Invalid> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_ARTIFACTS => {
            let artifacts = items
                .iter()
                .enumerate()
                .map(|(index, item)| Artifact::parse(item, &format!("{at}[{index}]")))
                .collect::<Result<Vec<Artifact>, Invalid>>()?;
            let bytes = serde_json::to_vec(&artifacts).map_or(usize::MAX, |text| text.len());
            if bytes > MAX_MESSAGE_BYTES {
                return Err(Invalid(format!(
                    "{at} is larger than {MAX_MESSAGE_BYTES} bytes serialized"
                )));
            }
            Ok(artifacts)
        }
        Some(Value::Array(_)) => Err(Invalid(format!(
            "{at} holds more than {MAX_ARTIFACTS} artifacts"
        ))),
        Some(_) => Err(Invalid(format!("{at} must be a list of artifacts"))),
    }
}

/// A callee's answer to a task it holds (the API's TaskResultIn).
#[derive(Debug, Clone, PartialEq)]
pub enum TaskResult {
    Completed {
        artifacts: Vec<Artifact>,
        message: Option<Message>,
    },
    Failed {
        error: String,
    },
    InputRequired {
        question: Message,
    },
}

impl TaskResult {
    /// The message the result carries (a question, or a completed result's message), if any.
    pub fn message(&self) -> Option<&Message> {
        match self {
            TaskResult::Completed { message, .. } => message.as_ref(),
            TaskResult::InputRequired { question } => Some(question),
            TaskResult::Failed { .. } => None,
        }
    }
}

/// Why a result body was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultRejection {
    /// A pull result said `working`: only a push endpoint's immediate answer may.
    WorkingFromPull,
    Invalid(Invalid),
}

impl From<Invalid> for ResultRejection {
    fn from(invalid: Invalid) -> Self {
        ResultRejection::Invalid(invalid)
    }
}

/// Longest error text a failed result may carry.
pub const MAX_ERROR_CHARS: usize = 4096;

/// A failed result's error text: `error` when given, else the message's text, else a default.
fn failure_text(error: Option<&Value>, message: Option<&Message>) -> Result<String, Invalid> {
    match error {
        Some(Value::String(error))
            if !error.is_empty() && error.chars().count() <= MAX_ERROR_CHARS =>
        {
            Ok(error.clone())
        }
        None | Some(Value::Null) => match message.map(Message::text) {
            Some(text) if !text.is_empty() => Ok(text),
            _ => Ok("the callee reported a failure".to_owned()),
        },
        Some(_) => Err(Invalid(format!(
            "error must be a string of 1 to {MAX_ERROR_CHARS} characters"
        ))),
    }
}

impl TaskResult {
    /// Parses a pull callee's result body.
    pub fn parse_pull(body: &Value) -> Result<TaskResult, ResultRejection> {
        let object = body
            .as_object()
            .ok_or_else(|| Invalid::new("the result must be a JSON object"))?;
        for key in object.keys() {
            if !matches!(key.as_str(), "state" | "artifacts" | "message" | "error") {
                return Err(Invalid(format!("{key} is not a TaskResultIn field")).into());
            }
        }
        let state = match object.get("state") {
            Some(Value::String(state)) => state.as_str(),
            _ => {
                return Err(
                    Invalid::new("state is required: completed, failed or input_required").into(),
                )
            }
        };
        let message = match object.get("message") {
            None | Some(Value::Null) => None,
            Some(value) => Some(Message::parse(value, "message")?),
        };
        let artifacts = parse_artifacts(object.get("artifacts"), "artifacts")?;
        // `error` is only used by a failure, but its type holds for every state, as documented.
        let error = failure_text(object.get("error"), message.as_ref())?;
        match TaskState::parse(state) {
            Some(TaskState::Working) => Err(ResultRejection::WorkingFromPull),
            Some(TaskState::Completed) => Ok(TaskResult::Completed { artifacts, message }),
            Some(TaskState::Failed) => Ok(TaskResult::Failed { error }),
            Some(TaskState::InputRequired) => {
                let question = message.ok_or_else(|| {
                    Invalid::new("an input_required result needs message: the question to ask")
                })?;
                Ok(TaskResult::InputRequired { question })
            }
            Some(TaskState::Submitted | TaskState::Canceled) | None => {
                Err(Invalid::new("state must be completed, failed or input_required").into())
            }
        }
    }

    pub fn state(&self) -> TaskState {
        match self {
            TaskResult::Completed { .. } => TaskState::Completed,
            TaskResult::Failed { .. } => TaskState::Failed,
            TaskResult::InputRequired { .. } => TaskState::InputRequired,
        }
    }

    /// The message this result adds to the task's history (the callee's side of the exchange).
    pub fn history_message(&self) -> Message {
        match self {
            TaskResult::Completed { artifacts, message } => {
                let mut parts: Vec<Part> = artifacts
                    .iter()
                    .flat_map(|artifact| artifact.parts.iter().cloned())
                    .collect();
                if parts.is_empty() {
                    if let Some(message) = message {
                        parts = message.parts.clone();
                    }
                }
                Message::agent(parts)
            }
            TaskResult::Failed { error } => Message::agent(vec![Part::Text(error.clone())]),
            TaskResult::InputRequired { question } => Message {
                role: super::message::Role::Agent,
                ..question.clone()
            },
        }
    }

    /// The message shown in `status.message` after this result.
    pub fn status_message(&self) -> Option<Message> {
        match self {
            TaskResult::Completed { message, .. } => message.clone(),
            TaskResult::Failed { .. } => None,
            TaskResult::InputRequired { .. } => Some(self.history_message()),
        }
    }
}

/// A callee's answer ready for the task item: each body inline or a reference to where it is
/// stored, and what it adds to the task's content.
#[derive(Debug, Clone, PartialEq)]
pub struct PackedResult {
    pub state: TaskState,
    pub status_message: Option<PackedBody>,
    pub history_entry: PackedBody,
    pub artifacts: Option<PackedBody>,
    /// How many artifacts `artifacts` holds (each is one event of the task's log).
    pub artifact_count: usize,
    pub error: Option<String>,
}

impl PackedResult {
    /// Packs `result` for task `task_id` of `tenant_id`. A failure stays inline: its text is
    /// bounded ([`MAX_ERROR_CHARS`], longer texts cut there) and it ends the task, so a task item
    /// holds at most one.
    pub fn pack(tenant_id: &str, task_id: &str, result: &TaskResult) -> PackedResult {
        let pack = |value: &Value| PackedBody::pack(tenant_id, task_id, value, INLINE_BODY_BYTES);
        let as_value = |message: &Message| serde_json::to_value(message).unwrap_or_default();
        match result {
            TaskResult::Failed { error } => {
                let error: String = error.chars().take(MAX_ERROR_CHARS).collect();
                let entry = Message::agent(vec![Part::Text(error.clone())]);
                PackedResult {
                    state: TaskState::Failed,
                    status_message: None,
                    history_entry: PackedBody::inline(&as_value(&entry)),
                    artifacts: None,
                    artifact_count: 0,
                    error: Some(error),
                }
            }
            TaskResult::InputRequired { .. } => {
                let entry = pack(&as_value(&result.history_message()));
                PackedResult {
                    state: TaskState::InputRequired,
                    status_message: Some(entry.clone()),
                    history_entry: entry,
                    artifacts: None,
                    artifact_count: 0,
                    error: None,
                }
            }
            TaskResult::Completed { artifacts, message } => PackedResult {
                state: TaskState::Completed,
                status_message: message.as_ref().map(|message| pack(&as_value(message))),
                history_entry: pack(&as_value(&result.history_message())),
                artifacts: Some(pack(&serde_json::to_value(artifacts).unwrap_or_default())),
                artifact_count: artifacts.len(),
                error: None,
            },
        }
    }

    /// Every body to write to the body store before the item.
    pub fn bodies(&self) -> Vec<&PackedBody> {
        let mut bodies = vec![&self.history_entry];
        bodies.extend(self.status_message.iter());
        bodies.extend(self.artifacts.iter());
        bodies
    }

    /// The bytes this answer adds to the task's content (a question is its history entry and
    /// its status message at once, counted once). A failure adds none: it is bounded and final.
    pub fn content_bytes(&self) -> u64 {
        match self.state {
            TaskState::Failed => 0,
            TaskState::InputRequired => self.history_entry.bytes,
            _ => {
                self.history_entry.bytes
                    + self.status_message.as_ref().map_or(0, |body| body.bytes)
                    + self.artifacts.as_ref().map_or(0, |body| body.bytes)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pull_result_may_not_say_working() {
        let body = json!({"state": "working"});
        assert_eq!(
            TaskResult::parse_pull(&body),
            Err(ResultRejection::WorkingFromPull)
        );
    }

    #[test]
    fn each_final_answer_parses_to_its_state() {
        let done =
            json!({"state": "completed", "artifacts": [{"name": "r", "parts": [{"text": "ok"}]}]});
        let done = TaskResult::parse_pull(&done).unwrap();
        assert_eq!(done.state(), TaskState::Completed);
        assert_eq!(done.history_message().text(), "ok");

        let failed = TaskResult::parse_pull(&json!({"state": "failed", "error": "boom"})).unwrap();
        assert_eq!(
            failed,
            TaskResult::Failed {
                error: "boom".into()
            }
        );

        let ask = json!({"state": "input_required", "message": {"role": "agent", "parts": [{"text": "which?"}]}});
        let ask = TaskResult::parse_pull(&ask).unwrap();
        assert_eq!(ask.state(), TaskState::InputRequired);
        assert_eq!(ask.status_message().unwrap().text(), "which?");
    }

    #[test]
    fn malformed_results_are_invalid_not_working() {
        for body in [
            json!({"state": "done"}),
            json!({}),
            json!({"state": "input_required"}),
            json!({"state": "completed", "artifacts": "x"}),
            json!({"state": "completed", "artifacts": [{"parts": []}]}),
            json!({"state": "failed", "error": 7}),
            json!({"state": "completed", "surprise": true}),
            json!("completed"),
        ] {
            assert!(
                matches!(
                    TaskResult::parse_pull(&body),
                    Err(ResultRejection::Invalid(_))
                ),
                "{body}"
            );
        }
    }
}
