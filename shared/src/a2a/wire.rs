//! The A2A 1.0 wire format of tasks and messages (camelCase, `TASK_STATE_*`, `ROLE_*`, parts as
//! one of `text`/`raw`/`url`/`data`), mapped to and from the gateway's own.
//!
//! Into the gateway, an A2A message is rewritten into the REST shape and read by the same parser
//! as a REST request, so both edges keep the same rules and limits; what the gateway cannot carry
//! (raw bytes, metadata, extensions, a text part of another media type) is refused by name rather
//! than dropped. Out of the gateway, a message without a `message_id` and an artifact (which has
//! no id of its own) get ids derived from the task and their place in it, stable across reads.

use serde_json::{json, Value};
use uuid::Uuid;

use super::error::A2aError;
use super::incoming::raw_bytes;
use crate::domain::content::Stored;
use crate::domain::events::TaskEvent;
use crate::domain::message::Role;
use crate::domain::task::{Artifact, Shown};
use crate::domain::{Message, Part, Task, TaskState};

/// The A2A name of a task state.
pub fn state_name(state: TaskState) -> &'static str {
    match state {
        TaskState::Submitted => "TASK_STATE_SUBMITTED",
        TaskState::Working => "TASK_STATE_WORKING",
        TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
        TaskState::Completed => "TASK_STATE_COMPLETED",
        TaskState::Failed => "TASK_STATE_FAILED",
        TaskState::Canceled => "TASK_STATE_CANCELED",
    }
}

/// The task state an A2A state name filters on; `Ok(None)` for a state the gateway never gives
/// a task (rejected, auth-required), which no task matches.
pub fn parse_state(name: &str) -> Result<Option<TaskState>, A2aError> {
    Ok(Some(match name {
        "TASK_STATE_SUBMITTED" => TaskState::Submitted,
        "TASK_STATE_WORKING" => TaskState::Working,
        "TASK_STATE_INPUT_REQUIRED" => TaskState::InputRequired,
        "TASK_STATE_COMPLETED" => TaskState::Completed,
        "TASK_STATE_FAILED" => TaskState::Failed,
        "TASK_STATE_CANCELED" => TaskState::Canceled,
        "TASK_STATE_REJECTED" | "TASK_STATE_AUTH_REQUIRED" => return Ok(None),
        other => {
            return Err(A2aError::invalid_params(format!(
                "status {other:?} is not a task state"
            )))
        }
    }))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "ROLE_USER",
        Role::Agent => "ROLE_AGENT",
    }
}

/// Namespace of the ids derived for messages and artifacts that have none.
const DERIVED_ID_NAMESPACE: Uuid = Uuid::from_u128(0x8d3a_0f4e_51b7_4c29_a6e8_2b94_d1c0_7f35);

fn derived_id(task: &Task, what: &str, index: usize) -> String {
    Uuid::new_v5(
        &DERIVED_ID_NAMESPACE,
        format!("{}#{what}#{index}", task.id).as_bytes(),
    )
    .to_string()
}

/// One part on the wire.
fn part_json(part: &Part) -> Value {
    match part {
        Part::Text(text) => json!({"text": text}),
        Part::Data(data) => json!({"data": data}),
        Part::File(file) => {
            let mut out = match raw_bytes(&file.uri) {
                Some(raw) => json!({"raw": raw}),
                None => json!({"url": file.uri}),
            };
            if let Some(name) = &file.name {
                out["filename"] = json!(name);
            }
            if let Some(mime) = &file.mime {
                out["mediaType"] = json!(mime);
            }
            out
        }
    }
}

/// A message of `task` on the wire; `index` is its place in the task's history (for a derived
/// id when it has none of its own).
pub fn message_json(task: &Task, message: &Message, index: usize) -> Value {
    let message_id = message
        .message_id
        .clone()
        .unwrap_or_else(|| derived_id(task, "message", index));
    json!({
        "messageId": message_id,
        "contextId": task.context_id,
        "taskId": task.id,
        "role": role_name(message.role),
        "parts": message.parts.iter().map(part_json).collect::<Vec<_>>(),
    })
}

fn artifact_json(task: &Task, artifact: &Artifact, index: usize) -> Value {
    json!({
        "artifactId": derived_id(task, "artifact", index),
        "name": artifact.name,
        "parts": artifact.parts.iter().map(part_json).collect::<Vec<_>>(),
    })
}

/// How much of a task a reader asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskView {
    /// The newest messages to show; `None` for all.
    pub history_length: Option<usize>,
    pub include_artifacts: bool,
}

impl TaskView {
    /// The parts of a task this view shows, for reading only their bodies.
    pub fn shown(self) -> Shown {
        Shown {
            input: false,
            history: self.history_length,
            artifacts: self.include_artifacts,
        }
    }

    /// What showing `task` in this view costs a page: the view as the task item alone renders
    /// it, and the stored bodies it reads.
    pub fn bytes_of(self, task: &Task) -> u64 {
        task_json(task, self).to_string().len() as u64 + task.stored_bytes(self.shown())
    }
}

impl Default for TaskView {
    fn default() -> TaskView {
        TaskView {
            history_length: None,
            include_artifacts: true,
        }
    }
}

/// A task read in full (every body in hand) on the wire. A body still held by reference is a
/// bug of the caller, shown as an empty message rather than a broken one.
pub fn task_json(task: &Task, view: TaskView) -> Value {
    let history: Vec<Value> = task
        .history
        .iter()
        .enumerate()
        .filter_map(|(index, stored)| Some(message_json(task, stored.inline()?, index)))
        .collect();
    let shown = match view.history_length {
        Some(length) => &history[history.len().saturating_sub(length)..],
        None => &history[..],
    };
    let mut status = json!({
        "state": state_name(task.state),
        "timestamp": task.status_timestamp,
    });
    if let Some(message) = status_message(task) {
        status["message"] = message;
    }
    let mut out = json!({
        "id": task.id,
        "contextId": task.context_id,
        "status": status,
        "history": shown,
    });
    if view.include_artifacts {
        let artifacts = match &task.artifacts {
            Stored::Inline(artifacts) => artifacts
                .iter()
                .enumerate()
                .map(|(index, artifact)| artifact_json(task, artifact, index))
                .collect(),
            Stored::Ref { .. } => Vec::new(),
        };
        out["artifacts"] = Value::Array(artifacts);
    }
    out
}

/// One event of `task` (its bodies resolved) as an A2A `StreamResponse`: a `statusUpdate` for
/// a change of state or a message (the caller's answer too, as the status's message), an
/// `artifactUpdate` for each artifact of the result. A final status carries the message a
/// `GetTask` would show.
pub fn stream_event_json(task: &Task, event: &TaskEvent<'_>) -> Value {
    if let Some((index, artifact)) = event.artifact {
        return json!({"artifactUpdate": {
            "taskId": task.id,
            "contextId": task.context_id,
            "artifact": artifact_json(task, artifact, index),
            "append": false,
            "lastChunk": true,
        }});
    }
    let mut status = json!({
        "state": state_name(event.state),
        "timestamp": event.timestamp,
    });
    let message = if event.is_final() {
        status_message(task)
    } else {
        event
            .message
            .and_then(|(index, stored)| Some(message_json(task, stored.inline()?, index)))
    };
    if let Some(message) = message {
        status["message"] = message;
    }
    json!({"statusUpdate": {
        "taskId": task.id,
        "contextId": task.context_id,
        "status": status,
    }})
}

/// The status message on the wire: the task's own, or for a failed task its error as the
/// agent's message.
fn status_message(task: &Task) -> Option<Value> {
    let index = task.history.len();
    match (&task.status_message, &task.error) {
        (Some(stored), _) => Some(message_json(task, stored.inline()?, index)),
        (None, Some(error)) => {
            let failure = Message::agent(vec![Part::Text(error.clone())]);
            Some(message_json(task, &failure, index))
        }
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::incoming::incoming_message;
    use crate::domain::{task::CallLineage, task::TaskOpening, Agent};

    fn task() -> Task {
        let callee = Agent {
            claim_timeout_seconds: 60,
            ..Agent::sample("callee", "tenant", "billing")
        };
        let input = incoming_message(&json!({
            "messageId": "m-1", "role": "ROLE_USER",
            "parts": [{"text": "classify"}, {"url": "https://x.test/a.pdf", "filename": "a.pdf",
                       "mediaType": "application/pdf"}, {"data": {"n": 1}}],
        }))
        .unwrap()
        .message;
        Task::open(TaskOpening {
            id: "task-1".into(),
            caller_agent_id: "caller".into(),
            callee: &callee,
            context_id: "context-1".into(),
            input: Stored::Inline(input),
            input_bytes: 10,
            lineage: CallLineage {
                call_id: "call".into(),
                parent_call_id: None,
                root_call_id: "call".into(),
            },
            now: "2026-01-01T00:00:00.000000Z".into(),
            expires_at: 0,
        })
    }

    #[test]
    fn an_a2a_message_maps_onto_the_gateway_s_parts_and_back() {
        let task = task();
        let shown = task_json(&task, TaskView::default());
        assert_eq!(shown["id"], "task-1");
        assert_eq!(shown["contextId"], "context-1");
        assert_eq!(shown["status"]["state"], "TASK_STATE_SUBMITTED");
        let message = &shown["history"][0];
        assert_eq!(message["messageId"], "m-1");
        assert_eq!(message["role"], "ROLE_USER");
        assert_eq!(message["taskId"], "task-1");
        assert_eq!(
            message["parts"],
            json!([{"text": "classify"},
                   {"url": "https://x.test/a.pdf", "filename": "a.pdf", "mediaType": "application/pdf"},
                   {"data": {"n": 1}}])
        );
        assert_eq!(shown["artifacts"], json!([]));
    }

    #[test]
    fn raw_bytes_travel_as_a_data_uri_and_come_back_raw() {
        let incoming = incoming_message(&json!({
            "messageId": "m", "role": "ROLE_USER",
            "parts": [
                {"raw": "dGNr", "mediaType": "Text/Plain; charset=utf-8", "filename": "a.txt"},
                {"raw": "_-8"},
                {"raw": "AB", "mediaType": "pdf"},
            ],
        }))
        .unwrap();
        let Part::File(file) = &incoming.message.parts[0] else {
            panic!("{:?}", incoming.message.parts)
        };
        assert_eq!(file.uri, "data:text/plain;base64,dGNr");
        assert_eq!(file.name.as_deref(), Some("a.txt"));
        assert_eq!(file.mime.as_deref(), Some("Text/Plain; charset=utf-8"));
        let Part::File(unnamed) = &incoming.message.parts[1] else {
            panic!("{:?}", incoming.message.parts)
        };
        // URL-safe and unpadded on the way in; standard base64 in the stored URI.
        assert_eq!(unnamed.uri, "data:application/octet-stream;base64,/+8=");
        assert_eq!(unnamed.mime, None);
        let Part::File(odd) = &incoming.message.parts[2] else {
            panic!("{:?}", incoming.message.parts)
        };
        assert_eq!(odd.uri, "data:application/octet-stream;base64,AA==");
        assert_eq!(odd.mime.as_deref(), Some("pdf"));
        assert_eq!(
            incoming
                .message
                .parts
                .iter()
                .map(part_json)
                .collect::<Vec<_>>(),
            [
                json!({"raw": "dGNr", "filename": "a.txt", "mediaType": "Text/Plain; charset=utf-8"}),
                json!({"raw": "/+8="}),
                json!({"raw": "AA==", "mediaType": "pdf"}),
            ]
        );
        let url_encoded = Part::File(crate::domain::message::FileRef {
            uri: "data:,hello".into(),
            name: None,
            mime: None,
        });
        assert_eq!(part_json(&url_encoded), json!({"url": "data:,hello"}));
    }

    #[test]
    fn history_length_keeps_the_newest_and_artifacts_can_be_left_out() {
        let mut task = task();
        task.history
            .push(Stored::Inline(Message::agent(vec![Part::Text(
                "which?".into(),
            )])));
        let view = TaskView {
            history_length: Some(1),
            include_artifacts: false,
        };
        let shown = task_json(&task, view);
        assert_eq!(shown["history"].as_array().unwrap().len(), 1);
        assert_eq!(shown["history"][0]["role"], "ROLE_AGENT");
        assert_eq!(shown["history"][0]["parts"][0]["text"], "which?");
        let again = task_json(&task, view);
        assert_eq!(
            shown["history"][0]["messageId"], again["history"][0]["messageId"],
            "a derived id is stable"
        );
        assert!(shown.get("artifacts").is_none());
        assert_eq!(
            task_json(
                &task,
                TaskView {
                    history_length: Some(0),
                    ..view
                }
            )["history"],
            json!([])
        );
    }

    #[test]
    fn a_failed_task_s_error_is_its_status_message() {
        let mut task = task();
        task.state = TaskState::Failed;
        task.error = Some("boom".into());
        let shown = task_json(&task, TaskView::default());
        assert_eq!(shown["status"]["state"], "TASK_STATE_FAILED");
        assert_eq!(shown["status"]["message"]["role"], "ROLE_AGENT");
        assert_eq!(shown["status"]["message"]["parts"][0]["text"], "boom");
    }

    #[test]
    fn what_the_gateway_cannot_carry_is_refused_by_name() {
        use super::super::error::A2aErrorKind::*;
        let base = |parts: Value| json!({"messageId": "m", "role": "ROLE_USER", "parts": parts});
        #[rustfmt::skip]
        let table = [
            (base(json!([{"raw": "not base64!"}])), InvalidParams, "message.parts[0].raw must be base64"),
            (base(json!([{"raw": 7}])), InvalidParams, "message.parts[0].raw must be base64"),
            (base(json!([{"raw": "A"}])), InvalidParams, "message.parts[0].raw must be base64"),
            (base(json!([{"raw": "AA+_"}])), InvalidParams, "message.parts[0].raw must be base64"),
            (base(json!([{"text": "x", "mediaType": "text/html"}])), ContentTypeNotSupported, "message.parts[0].mediaType"),
            (base(json!([{"text": "x", "metadata": {"k": 1}}])), InvalidParams, "message.parts[0].metadata"),
            (base(json!([{"filename": "a"}])), InvalidParams, "message.parts[0] must have one of"),
            (base(json!("x")), InvalidParams, "message.parts must be a list"),
            (base(json!([])), InvalidParams, "message.parts must hold at least one part"),
            (json!({"role": "ROLE_AGENT", "messageId": "m", "parts": [{"text": "x"}]}), InvalidParams, "ROLE_USER"),
            (json!({"role": "ROLE_USER", "parts": [{"text": "x"}]}), InvalidParams, "messageId is required"),
            (json!({"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}], "extensions": ["e"]}), InvalidParams, "message.extensions"),
            (json!({"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}], "taskId": 7}), InvalidParams, "message.taskId must be a string"),
        ];
        for (message, kind, says) in table {
            let error = incoming_message(&message).unwrap_err();
            assert_eq!(error.kind, kind, "{message}");
            assert!(error.message.contains(says), "{message}: {}", error.message);
        }
    }

    #[test]
    fn empty_values_count_as_absent_and_ids_are_read() {
        let incoming = incoming_message(&json!({
            "messageId": "m", "role": "ROLE_USER", "metadata": {}, "extensions": [],
            "taskId": "t-1", "contextId": "",
            "parts": [{"text": "x", "mediaType": "text/plain", "metadata": {}}],
        }))
        .unwrap();
        assert_eq!(incoming.task_id.as_deref(), Some("t-1"));
        assert_eq!(incoming.context_id, None);
        assert_eq!(incoming.message.message_id.as_deref(), Some("m"));
        assert_eq!(incoming.message.parts, vec![Part::Text("x".into())]);
        assert_eq!(incoming.message.role, Role::User);
    }

    #[test]
    fn state_names_round_trip_and_foreign_states_match_nothing() {
        for state in TaskState::ALL {
            assert_eq!(parse_state(state_name(state)).unwrap(), Some(state));
        }
        assert_eq!(parse_state("TASK_STATE_REJECTED").unwrap(), None);
        assert!(parse_state("done").is_err());
    }
}
