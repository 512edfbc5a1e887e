//! A task's events, read from its change log ([`super::change`]): the one source of the task's
//! update events (the REST event stream, A2A streams and A2A push notifications), so every
//! reader numbers the events alike: an event's number is its place in the log, from 1.

use time::OffsetDateTime;

pub use super::change::{Change, MAX_LOGGED_CHANGES};
use super::clock;
use super::content::Stored;
use super::message::{Message, Role};
use super::task::{Artifact, Task, TaskState};

/// What an event tells a reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The state changed without a message (a claim, an accepted delivery).
    Status,
    /// The callee reported progress.
    Progress,
    /// The callee asked the caller a question (`input_required`).
    Question,
    /// The caller answered the callee's question.
    Answer,
    /// One artifact of the result.
    Artifact,
    /// The task finished: completed, failed or canceled.
    Final,
}

impl EventKind {
    /// The name an event stream gives the event.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Status => "status",
            EventKind::Progress => "progress",
            EventKind::Question => "question",
            EventKind::Answer => "answer",
            EventKind::Artifact => "artifact",
            EventKind::Final => "final",
        }
    }
}

/// One event of a task, read from its log.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskEvent<'t> {
    /// Its place in the log, from 1: the event stream's `id`.
    pub number: u64,
    pub kind: EventKind,
    /// The state the change left the task in (for an artifact, the final state that follows).
    pub state: TaskState,
    /// When the change was made (stored form).
    pub timestamp: String,
    /// The message the change added, with its place in the history.
    pub message: Option<(usize, &'t Stored<Message>)>,
    /// The artifact, with its place in the result.
    pub artifact: Option<(usize, &'t Artifact)>,
    /// A final failure's error.
    pub error: Option<&'t str>,
}

impl TaskEvent<'_> {
    /// Whether the task is finished after this event.
    pub fn is_final(&self) -> bool {
        self.kind == EventKind::Final
    }
}

impl Task {
    /// How many changes the task's log holds: the number of its latest event (0 for none).
    pub fn event_count(&self) -> u64 {
        self.changes.len() as u64
    }

    /// The state the task was in before its latest logged change: that of the change before it,
    /// or `submitted` when the latest is the first.
    pub fn state_before_latest_change(&self) -> TaskState {
        self.changes
            .iter()
            .rev()
            .skip(1)
            .find_map(|change| match change {
                Change::State { state, .. } => Some(*state),
                Change::Artifact { .. } => None,
            })
            .unwrap_or(TaskState::Submitted)
    }

    /// The task's events numbered above `after`, oldest first.
    pub fn events_after(&self, after: u64) -> Vec<TaskEvent<'_>> {
        let messages = self.changes.iter().filter(|c| c.with_message()).count();
        let mut message_at = self.history.len().saturating_sub(messages);
        let mut events = Vec::new();
        for (place, change) in self.changes.iter().enumerate() {
            let number = place as u64 + 1;
            let message = change.with_message().then(|| {
                let at = message_at;
                message_at += 1;
                at
            });
            if number > after {
                events.push(self.event(number, change, message));
            }
        }
        events
    }

    fn event(&self, number: u64, change: &Change, message_at: Option<usize>) -> TaskEvent<'_> {
        let (state, at, artifact) = match change {
            Change::State { state, at, .. } => (*state, Some(*at), None),
            Change::Artifact { index } => {
                let artifact = match &self.artifacts {
                    Stored::Inline(artifacts) => artifacts.get(*index),
                    Stored::Ref { .. } => None,
                };
                (
                    self.state,
                    None,
                    artifact.map(|artifact| (*index, artifact)),
                )
            }
        };
        let message = message_at.and_then(|at| Some((at, self.history.get(at)?)));
        let kind = match (change, state, message.and_then(|(_, m)| m.role())) {
            (Change::Artifact { .. }, ..) => EventKind::Artifact,
            (_, TaskState::Completed | TaskState::Failed | TaskState::Canceled, _) => {
                EventKind::Final
            }
            (_, TaskState::InputRequired, _) => EventKind::Question,
            (_, _, Some(Role::User)) => EventKind::Answer,
            (_, _, Some(Role::Agent)) => EventKind::Progress,
            (_, _, None) => EventKind::Status,
        };
        TaskEvent {
            number,
            kind,
            state,
            timestamp: at
                .map(format_micros)
                .unwrap_or_else(|| self.status_timestamp.to_string()),
            message,
            artifact,
            error: (kind == EventKind::Final && state == TaskState::Failed)
                .then_some(self.error.as_deref())
                .flatten(),
        }
    }
}

fn format_micros(at: u64) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000)
        .map(|at| clock::format(at).into())
        .unwrap_or_default()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::domain::task::{CallLineage, TaskOpening};
    use crate::domain::{Agent, Part};

    /// A task as opened at 2026-12-01T10:00:00Z (a fixture for this crate's tests).
    pub(crate) fn opened() -> Task {
        let callee = Agent {
            claim_timeout_seconds: 60,
            ..Agent::sample("callee", "tenant", "billing")
        };
        Task::open(TaskOpening {
            id: "task".into(),
            caller_agent_id: "caller".into(),
            callee: &callee,
            context_id: "context".into(),
            input: Stored::Inline(user_says("classify")),
            input_bytes: 10,
            lineage: CallLineage {
                call_id: "call".into(),
                parent_call_id: None,
                root_call_id: "call".into(),
            },
            now: "2026-12-01T10:00:00.000000Z".into(),
            expires_at: 0,
        })
    }

    fn user_says(text: &str) -> Message {
        Message {
            role: Role::User,
            parts: vec![Part::Text(text.into())],
            message_id: None,
        }
    }

    fn agent_says(task: &mut Task, text: &str, state: TaskState, now: &str) {
        task.history
            .push(Stored::Inline(Message::agent(vec![Part::Text(
                text.into(),
            )])));
        task.state = state;
        task.changes.push(Change::state(state, true, now));
    }

    fn text(event: &TaskEvent<'_>) -> String {
        let (_, message) = event.message.expect("a message");
        match &message.inline().expect("inline").parts[0] {
            Part::Text(text) => text.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn entries_read_back_as_written() {
        for change in [
            Change::state(TaskState::Working, false, "2026-12-01T10:00:01.250000Z"),
            Change::state(
                TaskState::InputRequired,
                true,
                "2026-12-01T10:00:02.000001Z",
            ),
            Change::state(TaskState::Canceled, false, "2026-12-01T10:00:03.000000Z"),
            Change::Artifact { index: 63 },
        ] {
            assert_eq!(Change::decode(&change.encode()), Some(change.clone()));
        }
        assert_eq!(Change::decode("q12"), None);
        assert_eq!(Change::decode(""), None);
        assert_eq!(
            Change::state(TaskState::Working, true, "2026-12-01T10:00:01.250000Z").encode(),
            "W1796119201250000"
        );
    }

    #[test]
    fn a_conversation_reads_as_numbered_events_with_their_messages() {
        let mut task = opened();
        task.state = TaskState::Working;
        task.changes.push(Change::state(
            TaskState::Working,
            false,
            "2026-12-01T10:00:01.000000Z",
        ));
        agent_says(
            &mut task,
            "half way",
            TaskState::Working,
            "2026-12-01T10:00:02.000000Z",
        );
        agent_says(
            &mut task,
            "which one?",
            TaskState::InputRequired,
            "2026-12-01T10:00:03.000000Z",
        );
        let task = task.answered(
            Stored::Inline(user_says("the second")),
            10,
            "2026-12-01T10:00:04.000000Z",
        );
        let mut task = task;
        task.artifacts = Stored::Inline(vec![Artifact {
            name: "answer".into(),
            parts: vec![Part::Text("42".into())],
        }]);
        task.history
            .push(Stored::Inline(Message::agent(vec![Part::Text(
                "done".into(),
            )])));
        task.state = TaskState::Completed;
        task.changes.extend(Change::answer(
            TaskState::Completed,
            1,
            "2026-12-01T10:00:05.000000Z",
        ));

        let events = task.events_after(0);
        let kinds: Vec<EventKind> = events.iter().map(|event| event.kind).collect();
        assert_eq!(
            kinds,
            [
                EventKind::Status,
                EventKind::Progress,
                EventKind::Question,
                EventKind::Answer,
                EventKind::Artifact,
                EventKind::Final
            ]
        );
        assert_eq!(
            events.iter().map(|event| event.number).collect::<Vec<_>>(),
            [1, 2, 3, 4, 5, 6]
        );
        assert_eq!(text(&events[1]), "half way");
        assert_eq!(text(&events[2]), "which one?");
        assert_eq!(text(&events[3]), "the second");
        assert_eq!(text(&events[5]), "done");
        assert_eq!(
            events[4]
                .artifact
                .map(|(index, a)| (index, a.name.as_str())),
            Some((0, "answer"))
        );
        assert_eq!(events[2].timestamp, "2026-12-01T10:00:03.000000Z");
        assert!(events[5].is_final() && !events[4].is_final());
        assert_eq!(task.event_count(), 6);
        let resumed: Vec<u64> = task.events_after(3).iter().map(|e| e.number).collect();
        assert_eq!(resumed, [4, 5, 6]);
        assert!(task.events_after(6).is_empty());
    }

    #[test]
    fn a_log_begun_after_its_task_finds_its_messages_from_the_end_of_the_history() {
        let mut task = opened();
        // Two messages written before the task had a log.
        task.history
            .push(Stored::Inline(Message::agent(vec![Part::Text(
                "old".into(),
            )])));
        task.history
            .push(Stored::Inline(Message::agent(vec![Part::Text(
                "older".into(),
            )])));
        agent_says(
            &mut task,
            "logged",
            TaskState::Working,
            "2026-12-01T10:00:02.000000Z",
        );
        let events = task.events_after(0);
        assert_eq!(events.len(), 1);
        assert_eq!(text(&events[0]), "logged");
        assert_eq!(events[0].message.map(|(at, _)| at), Some(3));
    }

    #[test]
    fn the_state_before_a_claim_is_the_one_its_previous_change_left() {
        let mut task = opened();
        task.changes.push(Change::state(
            TaskState::Working,
            false,
            "2026-12-01T10:00:01.000000Z",
        ));
        assert_eq!(task.state_before_latest_change(), TaskState::Submitted);
        agent_says(
            &mut task,
            "which?",
            TaskState::InputRequired,
            "2026-12-01T10:00:02.000000Z",
        );
        let mut task = task.answered(
            Stored::Inline(user_says("this one")),
            8,
            "2026-12-01T10:00:03.000000Z",
        );
        task.changes.push(Change::state(
            TaskState::Working,
            false,
            "2026-12-01T10:00:04.000000Z",
        ));
        assert_eq!(task.state_before_latest_change(), TaskState::Working);
    }

    #[test]
    fn a_failure_carries_its_error_and_a_cancel_ends_the_stream() {
        let mut task = opened();
        task.state = TaskState::Canceled;
        task.changes.push(Change::state(
            TaskState::Canceled,
            false,
            "2026-12-01T10:00:02.000000Z",
        ));
        let events = task.events_after(0);
        assert_eq!(events[0].kind, EventKind::Final);
        assert_eq!(events[0].error, None);

        let mut task = opened();
        task.error = Some("too slow".into());
        agent_says(
            &mut task,
            "too slow",
            TaskState::Failed,
            "2026-12-01T10:00:02.000000Z",
        );
        let events = task.events_after(0);
        assert_eq!(events[0].kind, EventKind::Final);
        assert_eq!(events[0].error, Some("too slow"));
    }
}
