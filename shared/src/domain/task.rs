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

use super::clock::Timestamp;
use serde_json::{json, Value};

use super::call_tree::TreePlace;
use super::change::Change;
use super::clock;
use super::content::{BodyRef, Stored, MAX_TASK_CONTENT_BYTES};
use super::ids::{AgentId, CallId, ContextId, TaskId, TenantId};
use super::message::{Message, Role};
use super::principal::SignedInWith;
pub use super::result::{
    parse_artifacts, Artifact, PackedResult, ResultRejection, TaskResult, MAX_ARTIFACTS,
    MAX_ERROR_CHARS,
};
pub use super::state::{Delivery, TaskState, MAX_HISTORY_BEFORE_ANSWER, MAX_TASK_MESSAGES};
use super::trace::TraceContext;
use super::transitions::Transition;
use super::Agent;

/// A task as stored and as every task route returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: TaskId,
    pub tenant_id: TenantId,
    pub context_id: ContextId,
    /// Whether an A2A client named the conversation (`context_id` is its name, which the store
    /// keeps within the tenant), rather than the gate issuing its id.
    pub context_named: bool,
    pub caller_agent_id: AgentId,
    /// The OpenID Connect identity the caller opened the task with, when it used a token.
    pub caller_signed_in_with: Option<SignedInWith>,
    pub callee_agent_id: AgentId,
    /// The callee's name, so a route naming the callee by name needs no agent lookup.
    pub callee_name: String,
    pub state: TaskState,
    pub status_message: Option<Stored<Message>>,
    pub status_timestamp: Timestamp,
    /// The opening message.
    pub input: Stored<Message>,
    pub artifacts: Stored<Vec<Artifact>>,
    pub error: Option<String>,
    /// Every message of the exchange, oldest first: the opening message, progress reports,
    /// questions and answers, and the final answer.
    pub history: Vec<Stored<Message>>,
    pub call_id: CallId,
    pub parent_call_id: Option<CallId>,
    pub root_call_id: CallId,
    /// Where the call sits in its tree as its open placed it: written to the call's item, not
    /// the task's, so `None` on a task read back from the store.
    pub tree_place: Option<TreePlace>,
    /// Whether the task is counted among its tree's open tasks (`max_open_in_tree`), so that
    /// its finish takes it off the count.
    pub counted_in_tree: bool,
    /// Whether the task is counted among its binding's open tasks (a contract's
    /// `max_concurrent`), so that its finish takes it off the count.
    pub counted_on_binding: bool,
    /// The callee's skill the open named (REST body `skill`, A2A `message.metadata.skill`).
    pub skill: Option<String>,
    /// The W3C trace context of the open's span when the open brought one, or its parent call
    /// kept one (`domain/trace.rs`); `None` when it is the call's own ([`Task::trace_context`]).
    pub trace: Option<TraceContext>,
    pub delivery: Delivery,
    pub claim_timeout_seconds: u64,
    /// When a claimed task fails for want of an answer; set while `working`.
    pub deadline_at: Option<Timestamp>,
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
    pub delivered_at: Option<Timestamp>,
    /// Bytes of message and artifact bodies the task holds, against [`MAX_TASK_CONTENT_BYTES`].
    pub content_bytes: u64,
    /// When the task (and every body stored for it) expires, in seconds since the epoch; `None`
    /// for tasks written before retention was set.
    pub expires_at: Option<u64>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// The task's change log, oldest first: where its update events come from
    /// ([`super::events`]).
    pub changes: Vec<Change>,
    /// How many push notification configs the task has ([`super::notify`]), kept by the same
    /// transaction as each config's write: whether a change of the task has anyone to notify.
    pub notify_configs: u64,
    /// The idempotency keys ([`Message::idempotency_key`]) of the progress reports, results and
    /// answers written to the task, so a write repeated with the same `message_id` is told
    /// apart from a new one, even after the task has moved on.
    pub message_keys: Vec<String>,
    /// The partition of its tenant's spread logs (audit entries, word postings) that the task's
    /// entries and postings go to (`domain/shards.rs`), chosen at its open from the tenant's
    /// count then; `0`, each log's first partition, for a task of logs never spread.
    pub log_shard: u16,
}

/// Where a task sits in the call ledger: its own call, the call that caused it (sent as
/// `X-Parent-Call`), and the first call of the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLineage {
    pub call_id: CallId,
    pub parent_call_id: Option<CallId>,
    pub root_call_id: CallId,
}

/// What a caller's open decides about a new task; everything else about it follows.
#[derive(Debug, Clone)]
pub struct TaskOpening<'a> {
    pub id: TaskId,
    pub caller_agent_id: AgentId,
    /// The callee as read for this open (it decides delivery and the claim timeout).
    pub callee: &'a Agent,
    pub context_id: ContextId,
    /// The opening message, inline or packed to the body store, and its size.
    pub input: Stored<Message>,
    pub input_bytes: u64,
    pub lineage: CallLineage,
    pub now: Timestamp,
    /// When the task expires, in seconds since the epoch.
    pub expires_at: u64,
}

impl Task {
    /// A new task: `submitted`, its opening message its whole history, delivered by push when
    /// the callee has an endpoint (with a fresh delivery id) and by pull otherwise.
    pub fn open(opening: TaskOpening<'_>) -> Task {
        let TaskOpening {
            id,
            caller_agent_id,
            callee,
            context_id,
            input,
            input_bytes,
            lineage,
            now,
            expires_at,
        } = opening;
        let push = callee.endpoint.is_some();
        Task {
            id,
            tenant_id: callee.tenant_id.clone(),
            context_id,
            caller_agent_id,
            caller_signed_in_with: None,
            callee_agent_id: callee.id.clone(),
            callee_name: callee.name.clone(),
            state: TaskState::Submitted,
            status_message: None,
            status_timestamp: now.clone(),
            history: vec![input.clone()],
            input,
            artifacts: Stored::Inline(Vec::new()),
            error: None,
            call_id: lineage.call_id,
            parent_call_id: lineage.parent_call_id,
            root_call_id: lineage.root_call_id,
            tree_place: None,
            counted_in_tree: false,
            counted_on_binding: false,
            skill: None,
            trace: None,
            delivery: if push { Delivery::Push } else { Delivery::Pull },
            claim_timeout_seconds: callee.claim_timeout_seconds,
            deadline_at: None,
            delivery_attempts: 0,
            attempt_number: 0,
            delivery_id: push.then(|| uuid::Uuid::new_v4().to_string()),
            delivered_at: None,
            content_bytes: input_bytes,
            expires_at: Some(expires_at),
            created_at: now.clone(),
            updated_at: now,
            changes: Vec::new(),
            notify_configs: 0,
            context_named: false,
            message_keys: Vec::new(),
            log_shard: 0,
        }
    }

    /// The task after its caller answered its question with `answer` (of `bytes` bytes) at
    /// `now`: `working` again, the answer last in its history, no status message. The store
    /// makes the same change with a write conditioned on the task still waiting.
    pub fn answered(mut self, answer: Stored<Message>, bytes: u64, now: &str) -> Task {
        let working = Transition::Reply.target(None).unwrap_or(TaskState::Working);
        self.history.push(answer);
        self.state = working;
        self.status_message = None;
        self.status_timestamp = now.into();
        self.updated_at = now.into();
        self.content_bytes += bytes;
        self.changes.push(Change::state(working, true, now));
        self
    }

    /// Whether a write carrying the message keyed `key` was applied to the task already.
    pub fn has_message(&self, key: Option<&str>) -> bool {
        key.is_some_and(|key| self.message_keys.iter().any(|known| known == key))
    }

    /// Whether adding `bytes` of bodies would take the task past [`MAX_TASK_CONTENT_BYTES`].
    pub fn would_overflow(&self, bytes: u64) -> bool {
        self.content_bytes.saturating_add(bytes) > MAX_TASK_CONTENT_BYTES
    }

    /// Whether the task still waits for a push delivery: a push task, open, not yet accepted.
    pub fn awaits_delivery(&self) -> bool {
        self.delivery == Delivery::Push
            && Transition::Lease.starts_from(self.state)
            && self.delivered_at.is_none()
    }

    /// The `webhook-id` of the current delivery: its delivery id, or for a task stored before
    /// deliveries had ids the task id, which is stable across that delivery's retries (the
    /// caller's next answer gives the task a delivery id).
    pub fn webhook_id(&self) -> &str {
        self.delivery_id.as_deref().unwrap_or(&self.id)
    }

    /// The caller's newest message: the opening message, or its answer to the callee's latest
    /// question. A push delivery carries this one.
    pub fn latest_caller_message(&self) -> &Stored<Message> {
        self.history
            .iter()
            .rev()
            .find(|message| message.role() == Some(Role::User))
            .unwrap_or(&self.input)
    }

    /// The trace the task's delivery, claim and child tasks join: the context its open kept,
    /// else its call's own in its root call's trace ([`TraceContext::of_call`]).
    pub fn trace_context(&self) -> Option<TraceContext> {
        self.trace
            .clone()
            .or_else(|| TraceContext::of_call(&self.root_call_id, &self.call_id))
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
                "message": self.status_message.as_ref().map(Stored::to_value),
                "timestamp": self.status_timestamp,
            },
            "input": {"message": self.input.to_value()},
            "artifacts": self.artifacts.to_value(),
            "error": self.error,
            "history": self.history.iter().map(Stored::to_value).collect::<Vec<_>>(),
            "call_id": self.call_id,
            "parent_call_id": self.parent_call_id,
            "root_call_id": self.root_call_id,
            "skill": self.skill,
            "traceparent": self.trace_context().map(|trace| trace.traceparent()),
            "tracestate": self.trace.as_ref().and_then(|trace| trace.state.as_deref()),
            "delivery": self.delivery,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        })
    }

    /// Whether the claim deadline of a working task has passed at `now` (formatted time).
    pub fn is_overdue(&self, now: &str) -> bool {
        super::transitions::Transition::Expire.starts_from(self.state)
            && self
                .deadline_at
                .as_deref()
                .is_some_and(|deadline| deadline <= now)
    }

    /// How long the task has gone unchanged at `now` (zero when its last change is unreadable
    /// or, by a clock ahead of `now`, later): what a waiter's [`PollPace`] reads.
    ///
    /// [`PollPace`]: super::pace::PollPace
    pub fn quiet_for(&self, now: time::OffsetDateTime) -> std::time::Duration {
        clock::elapsed_since(&self.updated_at, now)
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

/// The most bytes one listing page (`ListTasks`, a search) shows, its stored bodies counted in:
/// a page stops short of the task that would pass it (with the cursor to go on), so that any
/// page fits the 6 MB a Lambda response may carry and the memory of the function that builds
/// it, whatever its tasks hold. A page always shows at least one task.
pub const PAGE_BYTES: u64 = 4 * 1024 * 1024;

/// Which parts of a task a reader shows, and so which of its stored bodies are read: a view
/// that leaves the history or the artifacts out reads none of theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shown {
    pub input: bool,
    /// The newest history messages shown; `None` for all of them.
    pub history: Option<usize>,
    pub artifacts: bool,
}

impl Shown {
    /// The whole task.
    pub const ALL: Shown = Shown {
        input: true,
        history: None,
        artifacts: true,
    };
}

impl Task {
    /// The task's call and its place in the ledger.
    pub fn lineage(&self) -> CallLineage {
        CallLineage {
            call_id: self.call_id.clone(),
            parent_call_id: self.parent_call_id.clone(),
            root_call_id: self.root_call_id.clone(),
        }
    }

    /// Every body reference of the parts `shown` shows (the status message always), each once.
    pub fn body_references(&self, shown: Shown) -> Vec<BodyRef> {
        let first_shown = shown
            .history
            .map_or(0, |newest| self.history.len().saturating_sub(newest));
        let all = [
            self.input.reference().filter(|_| shown.input),
            self.artifacts.reference().filter(|_| shown.artifacts),
        ]
        .into_iter()
        .chain(self.status_message.iter().map(Stored::reference))
        .chain(self.history[first_shown..].iter().map(Stored::reference))
        .flatten();
        let mut found: Vec<BodyRef> = Vec::new();
        for reference in all {
            if !found.contains(reference) {
                found.push(reference.clone());
            }
        }
        found
    }

    /// How many bytes of stored bodies showing the parts `shown` shows reads.
    pub fn stored_bytes(&self, shown: Shown) -> u64 {
        self.body_references(shown)
            .iter()
            .map(|reference| reference.bytes)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Part;

    fn sample_task() -> Task {
        Task {
            id: "t".into(),
            tenant_id: "x".into(),
            context_id: "c".into(),
            caller_agent_id: "a".into(),
            caller_signed_in_with: None,
            callee_agent_id: "b".into(),
            callee_name: "b".into(),
            state: TaskState::Working,
            status_message: None,
            status_timestamp: crate::domain::clock::Timestamp::default(),
            input: Stored::Inline(Message::agent(vec![Part::Text("hi".into())])),
            artifacts: Stored::Inline(Vec::new()),
            error: None,
            history: vec![],
            call_id: "c1".into(),
            parent_call_id: None,
            root_call_id: "c1".into(),
            tree_place: None,
            counted_in_tree: false,
            counted_on_binding: false,
            skill: None,
            trace: None,
            delivery: Delivery::Pull,
            claim_timeout_seconds: 5,
            deadline_at: Some("2026-01-01T00:00:05.000000Z".into()),
            delivery_attempts: 0,
            attempt_number: 0,
            delivery_id: None,
            delivered_at: None,
            content_bytes: 0,
            expires_at: None,
            created_at: crate::domain::clock::Timestamp::default(),
            updated_at: crate::domain::clock::Timestamp::default(),
            changes: Vec::new(),
            message_keys: Vec::new(),
            log_shard: 0,
            notify_configs: 0,
            context_named: false,
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
    fn a_task_is_quiet_since_its_last_change_and_never_less_than_not_at_all() {
        let mut task = sample_task();
        task.updated_at = "2026-01-01T00:00:00.000000Z".into();
        let at = clock::parse("2026-01-01T00:00:01.500000Z").unwrap();
        assert_eq!(task.quiet_for(at), std::time::Duration::from_millis(1_500));
        let before = clock::parse("2025-12-31T23:59:59.000000Z").unwrap();
        assert_eq!(task.quiet_for(before), std::time::Duration::ZERO);
        task.updated_at = "yesterday".into();
        assert_eq!(task.quiet_for(at), std::time::Duration::ZERO);
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

    fn callee(endpoint: Option<serde_json::Value>) -> Agent {
        Agent {
            endpoint,
            claim_timeout_seconds: 120,
            ..Agent::sample("callee", "tenant", "billing")
        }
    }

    fn opening(callee: &Agent) -> TaskOpening<'_> {
        TaskOpening {
            id: "task".into(),
            caller_agent_id: "caller".into(),
            callee,
            context_id: "context".into(),
            input: Stored::Inline(
                Message::parse(&json!({"parts": [{"text": "hi"}]}), "m").unwrap(),
            ),
            input_bytes: 40,
            lineage: CallLineage {
                call_id: "call".into(),
                parent_call_id: Some("parent".into()),
                root_call_id: "root".into(),
            },
            now: "2026-01-01T00:00:00.000000Z".into(),
            expires_at: 1_800_000_000,
        }
    }

    #[test]
    fn a_new_task_is_submitted_with_its_message_as_its_history_and_the_callee_s_terms() {
        let pull_callee = callee(None);
        let task = Task::open(opening(&pull_callee));
        assert_eq!(task.state, TaskState::Submitted);
        assert_eq!(task.tenant_id, "tenant");
        assert_eq!(
            (&*task.callee_agent_id, &*task.callee_name),
            ("callee", "billing")
        );
        assert_eq!(task.history, vec![task.input.clone()]);
        assert_eq!(task.latest_caller_message(), &task.input);
        assert_eq!(task.artifacts, Stored::Inline(Vec::new()));
        assert_eq!(
            (task.call_id.as_str(), task.root_call_id.as_str()),
            ("call", "root")
        );
        assert_eq!(task.claim_timeout_seconds, 120);
        assert_eq!(task.content_bytes, 40);
        assert_eq!(task.expires_at, Some(1_800_000_000));
        assert_eq!(task.delivery, Delivery::Pull);
        assert_eq!(task.delivery_id, None, "a pull task has no deliveries");

        let push_callee = callee(Some(json!({"url": "https://example.com"})));
        let first = Task::open(opening(&push_callee));
        let second = Task::open(opening(&push_callee));
        assert_eq!(first.delivery, Delivery::Push);
        assert!(first.delivery_id.is_some());
        assert_ne!(
            first.delivery_id, second.delivery_id,
            "each task's delivery has its own id"
        );
    }

    #[test]
    fn an_answer_puts_the_task_back_to_work_with_the_answer_as_the_newest_caller_message() {
        let pull_callee = callee(None);
        let mut task = Task::open(opening(&pull_callee));
        let question = Message::agent(vec![Part::Text("which?".into())]);
        task.state = TaskState::InputRequired;
        task.status_message = Some(Stored::Inline(question.clone()));
        task.history.push(Stored::Inline(question));
        let answer = Message::parse(&json!({"parts": [{"text": "INV-7"}]}), "m").unwrap();
        let later = "2026-01-01T00:01:00.000000Z";
        let task = task.answered(Stored::Inline(answer.clone()), 30, later);
        assert_eq!(task.state, TaskState::Working);
        assert_eq!(task.status_message, None);
        assert_eq!(task.history.len(), 3);
        assert_eq!(task.latest_caller_message(), &Stored::Inline(answer));
        assert_eq!(task.content_bytes, 70);
        assert_eq!(
            (task.status_timestamp.as_str(), task.updated_at.as_str()),
            (later, later)
        );
    }
}
