//! Tasks: the unit of work a caller opens on a callee, its states, and the callee's answer.
//!
//! ```text
//! submitted ─claim─► working ─result─► completed | failed | input_required
//!     │                 ▲  └─deadline─► failed                    │
//!     │                 └──── the caller's message (claimable / delivered again)
//!     └──── any open state ─cancel (caller)─► canceled
//! ```
//! `completed`, `failed` and `canceled` are final; `input_required` waits for the caller's
//! answer on the same task (or a new task in the same conversation).

use serde::Serialize;
use serde_json::{json, Value};

use super::content::{PackedBody, INLINE_BODY_BYTES, MAX_TASK_CONTENT_BYTES};
use super::ids::{AgentId, TaskId, TenantId};
use super::message::{parse_parts, Message, Part, MAX_MESSAGE_BYTES};
use super::Invalid;

/// Most artifacts one result may carry.
pub const MAX_ARTIFACTS: usize = 64;

/// The most messages a task's history holds (the opening message, progress reports, answers).
pub const MAX_TASK_MESSAGES: usize = 500;

/// The history length up to which a progress report is taken: the last place is kept for the
/// answer, so a task full of progress can still be answered.
pub const MAX_HISTORY_BEFORE_ANSWER: usize = MAX_TASK_MESSAGES - 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input_required",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
        }
    }

    pub fn parse(text: &str) -> Option<TaskState> {
        Some(match text {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input_required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "canceled" => TaskState::Canceled,
            _ => return None,
        })
    }

    /// States the caller may still cancel.
    pub const OPEN: [TaskState; 3] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::InputRequired,
    ];

    /// Whether a caller waiting on the task should keep waiting.
    pub fn is_pending(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }
}

/// How the callee receives its tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    Pull,
    Push,
}

/// A named output of a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
            Some(Value::String(name)) if !name.is_empty() && name.len() <= 256 => name.clone(),
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
        match state {
            "working" => Err(ResultRejection::WorkingFromPull),
            "completed" => Ok(TaskResult::Completed { artifacts, message }),
            "failed" => {
                let error = match object.get("error") {
                    Some(Value::String(error))
                        if !error.is_empty() && error.chars().count() <= MAX_ERROR_CHARS =>
                    {
                        error.clone()
                    }
                    None | Some(Value::Null) => match message.as_ref().map(Message::text) {
                        Some(text) if !text.is_empty() => text,
                        _ => "the callee reported a failure".to_owned(),
                    },
                    Some(_) => {
                        return Err(Invalid(format!(
                            "error must be a string of 1 to {MAX_ERROR_CHARS} characters"
                        ))
                        .into())
                    }
                };
                Ok(TaskResult::Failed { error })
            }
            "input_required" => {
                let question = message.ok_or_else(|| {
                    Invalid::new("an input_required result needs message: the question to ask")
                })?;
                Ok(TaskResult::InputRequired { question })
            }
            _ => Err(Invalid::new("state must be completed, failed or input_required").into()),
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
                    error: None,
                }
            }
            TaskResult::Completed { artifacts, message } => PackedResult {
                state: TaskState::Completed,
                status_message: message.as_ref().map(|message| pack(&as_value(message))),
                history_entry: pack(&as_value(&result.history_message())),
                artifacts: Some(pack(&serde_json::to_value(artifacts).unwrap_or_default())),
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

/// A task as stored and as every task route returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: TaskId,
    pub tenant_id: TenantId,
    pub context_id: String,
    pub caller_agent_id: AgentId,
    pub callee_agent_id: AgentId,
    /// The callee's name, so a route naming the callee by name needs no agent lookup.
    pub callee_name: String,
    pub state: TaskState,
    pub status_message: Option<Value>,
    pub status_timestamp: String,
    pub input: Value,
    pub artifacts: Value,
    pub error: Option<String>,
    pub history: Vec<Value>,
    pub call_id: String,
    pub parent_call_id: Option<String>,
    pub root_call_id: String,
    pub delivery: Delivery,
    pub claim_timeout_seconds: u64,
    /// When a claimed task fails for want of an answer; set while `working`.
    pub deadline_at: Option<String>,
    /// Push only: attempts made for the current delivery, the retry budget's count. It starts
    /// again when the caller's answer to a question begins a new delivery.
    pub delivery_attempts: u64,
    /// Push only: the number of the task's latest attempt, counted across all its deliveries,
    /// so the attempt log never restarts or overwrites an entry.
    pub attempt_number: u64,
    /// Push only: the current delivery's id, sent as `webhook-id`: the same on every retry of
    /// one delivery, new for each delivery. `None` on tasks stored before deliveries had ids.
    pub delivery_id: Option<String>,
    /// Push only: when the callee accepted the task to finish later.
    pub delivered_at: Option<String>,
    /// Bytes of message and artifact bodies the task holds, against [`MAX_TASK_CONTENT_BYTES`].
    pub content_bytes: u64,
    /// When the task (and every body stored for it) expires, in seconds since the epoch; `None`
    /// for tasks written before retention was set.
    pub expires_at: Option<u64>,
    pub created_at: String,
    pub updated_at: String,
}

impl Task {
    /// Whether adding `bytes` of bodies would take the task past [`MAX_TASK_CONTENT_BYTES`].
    pub fn would_overflow(&self, bytes: u64) -> bool {
        self.content_bytes.saturating_add(bytes) > MAX_TASK_CONTENT_BYTES
    }

    /// The `webhook-id` of the current delivery: its delivery id, or for a task stored before
    /// deliveries had ids the task id, which is stable across that delivery's retries (the
    /// caller's next answer gives the task a delivery id).
    pub fn webhook_id(&self) -> &str {
        self.delivery_id.as_deref().unwrap_or(&self.id)
    }

    /// The caller's newest message: the opening message, or its answer to the callee's latest
    /// question. A push delivery carries this one.
    pub fn latest_caller_message(&self) -> &Value {
        self.history
            .iter()
            .rev()
            .find(|message| message["role"] == "user")
            .unwrap_or(&self.input)
    }

    /// The API view of the task.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "context_id": self.context_id,
            "caller_agent_id": self.caller_agent_id,
            "callee_agent_id": self.callee_agent_id,
            "status": {
                "state": self.state,
                "message": self.status_message,
                "timestamp": self.status_timestamp,
            },
            "input": {"message": self.input},
            "artifacts": self.artifacts,
            "error": self.error,
            "history": self.history,
            "call_id": self.call_id,
            "parent_call_id": self.parent_call_id,
            "root_call_id": self.root_call_id,
            "delivery": self.delivery,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        })
    }

    /// Whether the claim deadline of a working task has passed at `now` (formatted time).
    pub fn is_overdue(&self, now: &str) -> bool {
        self.state == TaskState::Working
            && self
                .deadline_at
                .as_deref()
                .is_some_and(|deadline| deadline <= now)
    }
}

/// Namespace for the ids of tasks opened with a `message.message_id`.
const KEYED_TASK_NAMESPACE: uuid::Uuid =
    uuid::Uuid::from_u128(0x2c8e_71d0_94b3_4a5f_8e16_53f0_a7c9_d402);

/// The id a task gets when its opening message carries `message_id`: derived from the caller,
/// the callee and the message id, so a repeated open addresses the task the first one wrote
/// (the write is conditional on the id being new) and can never make a second one.
pub fn keyed_task_id(caller_id: &AgentId, callee_id: &AgentId, message_id: &str) -> TaskId {
    uuid::Uuid::new_v5(
        &KEYED_TASK_NAMESPACE,
        format!("{caller_id}->{callee_id}#{message_id}").as_bytes(),
    )
    .to_string()
    .into()
}

/// The error a task carries when its claim deadline passes.
pub fn deadline_error(seconds: u64) -> String {
    format!("claim deadline exceeded: the callee did not answer within {seconds} seconds of claiming the task")
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn sample_task() -> Task {
        Task {
            id: "t".into(),
            tenant_id: "x".into(),
            context_id: "c".into(),
            caller_agent_id: "a".into(),
            callee_agent_id: "b".into(),
            callee_name: "b".into(),
            state: TaskState::Working,
            status_message: None,
            status_timestamp: String::new(),
            input: json!({}),
            artifacts: json!([]),
            error: None,
            history: vec![],
            call_id: "c1".into(),
            parent_call_id: None,
            root_call_id: "c1".into(),
            delivery: Delivery::Pull,
            claim_timeout_seconds: 5,
            deadline_at: Some("2026-01-01T00:00:05.000000Z".into()),
            delivery_attempts: 0,
            attempt_number: 0,
            delivery_id: None,
            delivered_at: None,
            content_bytes: 0,
            expires_at: None,
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn overdue_means_working_past_the_deadline() {
        let mut task = sample_task();
        assert!(!task.is_overdue("2026-01-01T00:00:04.999999Z"));
        assert!(task.is_overdue("2026-01-01T00:00:05.000000Z"));
        task.state = TaskState::Completed;
        assert!(!task.is_overdue("2027-01-01T00:00:00.000000Z"));
    }

    #[test]
    fn the_webhook_id_is_the_delivery_id_or_for_older_tasks_the_task_id() {
        let mut task = Task {
            delivery: Delivery::Push,
            ..sample_task()
        };
        assert_eq!(task.webhook_id(), "t");
        task.delivery_id = Some("d-2".into());
        assert_eq!(task.webhook_id(), "d-2");
    }
}
