//! Tasks: the open transaction, the claim, the callee's result, cancel and the claim deadline.
//!
//! Every state change is one conditional write, so two writers racing on a task cannot both win:
//! a claim only takes a task still on the queue index (`submitted`, or `working` again after its
//! caller answered a question), a result only lands on a `working` task of that callee before its
//! deadline, a cancel only moves an open task.

use crate::domain::ids::{AgentId, TaskId, TenantId};
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, ReturnValue, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};

use super::audit::AuditEntry;
use super::item::{json, key, n, opt_s, s, Item, Reader};
use super::{classify, Store, StoreError, TransactError};
use crate::domain::binding::binding_id;
use crate::domain::content::{PackedBody, MAX_TASK_CONTENT_BYTES};
use crate::domain::task::{
    deadline_error, Delivery, PackedResult, TaskResult, MAX_HISTORY_BEFORE_ANSWER,
};
use crate::domain::{clock, Task, TaskState};

/// Most tasks one conversation may hold.
pub const MAX_TASKS_PER_CONTEXT: u64 = 100;
/// The error of a queued task that no claim can take.
const UNCLAIMABLE_ERROR: &str =
    "the task could not be handed to its callee: its stored record is unreadable or too large";
/// How many queued tasks a claim looks at per index read.
const CLAIM_CANDIDATES: i32 = 16;

pub(crate) fn task_key(task_id: &TaskId) -> Item {
    key(format!("TASK#{task_id}"), "TASK")
}

/// How long a push task may wait for its first delivery attempt before the sweeper re-enqueues it.
pub const OUTBOX_GRACE_SECONDS: u64 = 60;

pub(crate) fn outbox_shard(task_id: &TaskId) -> String {
    format!("OUTBOX#{}", task_id.chars().next().unwrap_or('0'))
}

pub(crate) fn deadline_shard(task_id: &TaskId) -> String {
    format!("DEADLINE#{}", task_id.chars().next().unwrap_or('0'))
}

/// Every shard of the deadline index, for the sweeper.
pub const DEADLINE_SHARDS: [char; 16] = [
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd', 'e', 'f',
];

/// A packed body as the item stores it: its JSON text, inline or a reference.
pub(crate) fn body_text(body: &PackedBody) -> AttributeValue {
    s(body.text())
}

/// The condition that keeps a task's bodies within [`MAX_TASK_CONTENT_BYTES`] after a write adds
/// `added` bytes (`:room` is bound by [`with_content_room`]).
pub(crate) const WITHIN_CONTENT_CAP: &str =
    " AND (attribute_not_exists(content_bytes) OR content_bytes <= :room)";

/// Binds `:room` and `:added` for a write that adds `added` bytes of bodies under
/// [`WITHIN_CONTENT_CAP`]. Callers refuse an `added` over the cap before writing.
fn with_content_room(update: UpdateItemFluentBuilder, added: u64) -> UpdateItemFluentBuilder {
    update
        .expression_attribute_values(":room", n(MAX_TASK_CONTENT_BYTES.saturating_sub(added)))
        .expression_attribute_values(":added", n(added))
}

fn to_item(task: &Task) -> Item {
    let mut item = task_key(&task.id);
    item.insert("kind".into(), s("task"));
    item.insert("id".into(), s(&task.id));
    item.insert("tenant_id".into(), s(&task.tenant_id));
    item.insert("context_id".into(), s(&task.context_id));
    item.insert("caller_agent_id".into(), s(&task.caller_agent_id));
    item.insert("callee_agent_id".into(), s(&task.callee_agent_id));
    item.insert("callee_name".into(), s(&task.callee_name));
    item.insert("state".into(), s(task.state.as_str()));
    item.insert(
        "status_message".into(),
        match &task.status_message {
            Some(message) => json(message),
            None => AttributeValue::Null(true),
        },
    );
    item.insert("status_timestamp".into(), s(&task.status_timestamp));
    item.insert("input".into(), json(&task.input));
    item.insert("artifacts".into(), json(&task.artifacts));
    item.insert("error".into(), opt_s(task.error.as_deref()));
    item.insert(
        "history".into(),
        AttributeValue::L(task.history.iter().map(json).collect()),
    );
    item.insert("call_id".into(), s(&task.call_id));
    item.insert(
        "parent_call_id".into(),
        opt_s(task.parent_call_id.as_deref()),
    );
    item.insert("root_call_id".into(), s(&task.root_call_id));
    item.insert(
        "delivery".into(),
        s(match task.delivery {
            Delivery::Pull => "pull",
            Delivery::Push => "push",
        }),
    );
    item.insert(
        "claim_timeout_seconds".into(),
        n(task.claim_timeout_seconds),
    );
    item.insert("content_bytes".into(), n(task.content_bytes));
    if let Some(delivery_id) = &task.delivery_id {
        item.insert("delivery_id".into(), s(delivery_id));
    }
    if let Some(expires_at) = task.expires_at {
        item.insert("expires_at".into(), n(expires_at));
    }
    item.insert("created_at".into(), s(&task.created_at));
    item.insert("updated_at".into(), s(&task.updated_at));
    if task.state == TaskState::Submitted {
        let (queue, order) = queue_entry(task, &task.created_at);
        item.insert("gsi1pk".into(), s(queue));
        item.insert("gsi1sk".into(), s(order));
    }
    item
}

/// Where a task waits for its callee on the queue index (`gsi1pk`, `gsi1sk`): on the callee's
/// queue in order of `since` (pull), or on the outbox until a delivery attempt takes it, so a
/// lost enqueue is redone (push).
fn queue_entry(task: &Task, since: &str) -> (String, String) {
    match task.delivery {
        Delivery::Pull => (
            format!("QUEUE#{}", task.callee_agent_id),
            format!("{since}#{}", task.id),
        ),
        Delivery::Push => (
            outbox_shard(&task.id),
            format!("{}#{}", clock::after(OUTBOX_GRACE_SECONDS), task.id),
        ),
    }
}

impl TryFrom<&Item> for Task {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<Task, StoreError> {
        let read = Reader(item);
        let state = read.s("state")?;
        let delivery = match read.s("delivery")?.as_str() {
            "push" => Delivery::Push,
            _ => Delivery::Pull,
        };
        let delivery_attempts = match item.get("delivery_attempts") {
            Some(_) => read.n("delivery_attempts")?,
            None => 0,
        };
        Ok(Task {
            id: read.id("id")?,
            tenant_id: read.id("tenant_id")?,
            context_id: read.id("context_id")?,
            caller_agent_id: read.id("caller_agent_id")?,
            callee_agent_id: read.id("callee_agent_id")?,
            callee_name: read.s("callee_name")?,
            state: TaskState::parse(&state)
                .ok_or_else(|| StoreError::Corrupt(format!("task state {state:?}")))?,
            status_message: read.opt_json("status_message")?,
            status_timestamp: read.s("status_timestamp")?,
            input: read.json("input")?,
            artifacts: read.json("artifacts")?,
            error: read.opt_s("error")?,
            history: read.json_list("history")?,
            call_id: read.s("call_id")?,
            parent_call_id: read.opt_s("parent_call_id")?,
            root_call_id: read.s("root_call_id")?,
            delivery,
            claim_timeout_seconds: read.n("claim_timeout_seconds")?,
            deadline_at: read.opt_s("deadline_at")?,
            delivery_attempts,
            // Stored before attempts were numbered across deliveries: the task's only delivery
            // so far has records 1 to `delivery_attempts`.
            attempt_number: match item.get("attempt_number") {
                Some(_) => read.n("attempt_number")?,
                None => delivery_attempts,
            },
            delivery_id: read.opt_s("delivery_id")?,
            delivered_at: read.opt_s("delivered_at")?,
            content_bytes: match item.get("content_bytes") {
                Some(_) => read.n("content_bytes")?,
                None => 0,
            },
            expires_at: match item.get("expires_at") {
                Some(_) => Some(read.n("expires_at")?),
                None => None,
            },
            created_at: read.s("created_at")?,
            updated_at: read.s("updated_at")?,
        })
    }
}

/// A working task whose claim deadline passed, as the deadline index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverdueEntry {
    pub task_id: TaskId,
    pub deadline_at: String,
    pub timeout_seconds: u64,
    /// The entry's sort key on the index, to move it aside if it cannot be handled.
    pub index_key: String,
}

/// The conversation a new task joins.
#[derive(Debug, Clone)]
pub enum ContextJoin {
    /// A new conversation whose id is the task's `context_id`.
    Start,
    /// An existing conversation between the same two agents (either direction).
    Continue,
}

/// Everything the open transaction writes or checks.
pub struct OpenTask {
    pub task: Task,
    pub binding_id: String,
    pub context: ContextJoin,
    pub audit: AuditEntry,
}

/// Why the open transaction did not commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenRefusal {
    /// A task with this id exists: an open repeated with the same `message_id`.
    AlreadyOpen,
    /// The binding is missing, pending or revoked (read it to learn which).
    BindingNotLive,
    /// The callee stopped being active between the read and the write.
    CalleeNotActive,
    /// `context_id` names no conversation between these two agents.
    UnknownContext,
    /// The conversation already holds the most tasks it may.
    ContextFull,
}

/// Why the caller's answer to a question was not taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputRefusal {
    /// The task is no longer (or never was) waiting for this caller's input, or its history is
    /// full; read it to learn which.
    NotWaiting,
    /// The binding is missing, pending or revoked.
    BindingNotLive,
    /// The callee is paused or retired.
    CalleeNotActive,
}

/// The outcome of a conditional write on one task.
#[derive(Debug, Clone)]
pub enum TaskTransition {
    Applied(Task),
    /// The condition failed; the task as it stood, if it exists at all.
    Refused(Option<Task>),
}

/// The outcome of one claim attempt.
#[derive(Debug, Clone)]
pub enum ClaimOutcome {
    Claimed(Box<Task>),
    /// Candidates were queued but other pollers took every one: look again at once.
    Contended,
    Empty,
}

/// Conditions a callee's write on a task it holds: `working`, this tenant and callee, before
/// the claim deadline (or a push task still being delivered, which has none), and `also`.
/// `:now` and `:working` are the update's own.
fn held_by_callee(
    update: UpdateItemFluentBuilder,
    also: &str,
    tenant_id: &TenantId,
    callee_id: &AgentId,
) -> UpdateItemFluentBuilder {
    update
        .condition_expression(format!(
            "#state = :working AND tenant_id = :tenant AND callee_agent_id = :callee \
             AND (deadline_at > :now OR (delivery = :push AND attribute_not_exists(deadline_at))){also}"
        ))
        .expression_attribute_values(":push", s("push"))
        .expression_attribute_values(":tenant", s(tenant_id))
        .expression_attribute_values(":callee", s(callee_id))
}

fn build<T, E: std::fmt::Display>(built: Result<T, E>) -> Result<T, StoreError> {
    built.map_err(|error| StoreError::Rejected(error.to_string()))
}

impl Store {
    /// Writes a new task with its conversation, lineage and audit entries in one transaction,
    /// checked against the live binding and the callee's status at the same instant.
    pub async fn open_task(&self, open: &OpenTask) -> Result<Result<(), OpenRefusal>, StoreError> {
        let task = &open.task;
        let context_key = key(format!("CONTEXT#{}", task.context_id), "CONTEXT");
        let context_write = match open.context {
            ContextJoin::Start => {
                let mut item = context_key;
                item.insert("kind".into(), s("context"));
                item.insert("tenant_id".into(), s(&task.tenant_id));
                item.insert("agent_a".into(), s(&task.caller_agent_id));
                item.insert("agent_b".into(), s(&task.callee_agent_id));
                item.insert("task_count".into(), n(1));
                item.insert("created_at".into(), s(&task.created_at));
                self.put_new(item)?
            }
            ContextJoin::Continue => {
                let update = build(
                    Update::builder()
                        .table_name(&self.table)
                        .set_key(Some(context_key))
                        .update_expression("ADD task_count :one")
                        .condition_expression(
                            "tenant_id = :tenant AND task_count < :max AND \
                             ((agent_a = :caller AND agent_b = :callee) OR \
                              (agent_a = :callee AND agent_b = :caller))",
                        )
                        .expression_attribute_values(":one", n(1))
                        .expression_attribute_values(":max", n(MAX_TASKS_PER_CONTEXT))
                        .expression_attribute_values(":tenant", s(&task.tenant_id))
                        .expression_attribute_values(":caller", s(&task.caller_agent_id))
                        .expression_attribute_values(":callee", s(&task.callee_agent_id))
                        .return_values_on_condition_check_failure(
                            ReturnValuesOnConditionCheckFailure::AllOld,
                        )
                        .build(),
                )?;
                TransactWriteItem::builder().update(update).build()
            }
        };
        let mut call = key(format!("CALL#{}", task.call_id), "CALL");
        call.insert("kind".into(), s("call"));
        call.insert("tenant_id".into(), s(&task.tenant_id));
        call.insert("call_id".into(), s(&task.call_id));
        call.insert(
            "parent_call_id".into(),
            opt_s(task.parent_call_id.as_deref()),
        );
        call.insert("root_call_id".into(), s(&task.root_call_id));
        call.insert("task_id".into(), s(&task.id));
        call.insert("caller_agent_id".into(), s(&task.caller_agent_id));
        call.insert("callee_agent_id".into(), s(&task.callee_agent_id));
        call.insert("at".into(), s(&task.created_at));
        call.insert("gsi1pk".into(), s(format!("ROOT#{}", task.root_call_id)));
        call.insert(
            "gsi1sk".into(),
            s(format!("{}#{}", task.created_at, task.call_id)),
        );

        let items = vec![
            self.put_new(to_item(task))?,
            self.live_binding_check(&open.binding_id)?,
            self.active_callee_check(&task.callee_agent_id)?,
            context_write,
            self.put_new(open.audit.to_item())?,
            self.put_new(call)?,
        ];
        match self.transact_checked(items).await {
            Ok(()) => Ok(Ok(())),
            Err(TransactError::Store(error)) => Err(error),
            Err(TransactError::Canceled(reasons)) => {
                let failed =
                    |index: usize| reasons.get(index).is_some_and(|r| r.condition_failed());
                if failed(0) {
                    Ok(Err(OpenRefusal::AlreadyOpen))
                } else if failed(1) {
                    Ok(Err(OpenRefusal::BindingNotLive))
                } else if failed(2) {
                    Ok(Err(OpenRefusal::CalleeNotActive))
                } else if failed(3) {
                    let full = reasons[3].item.as_ref().is_some_and(|item| {
                        Reader(item).n("task_count").unwrap_or(0) >= MAX_TASKS_PER_CONTEXT
                            && Reader(item).s("tenant_id").ok().as_deref() == Some(&task.tenant_id)
                    });
                    Ok(Err(if full {
                        OpenRefusal::ContextFull
                    } else {
                        OpenRefusal::UnknownContext
                    }))
                } else {
                    Err(TransactError::Canceled(reasons).into())
                }
            }
        }
    }

    /// A transaction item that holds only while the binding is approved and not revoked.
    fn live_binding_check(&self, binding_id: &str) -> Result<TransactWriteItem, StoreError> {
        let check = build(
            ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(key(format!("BINDING#{binding_id}"), "BINDING")))
                .condition_expression("revoked = :false AND approved = :true")
                .expression_attribute_values(":false", AttributeValue::Bool(false))
                .expression_attribute_values(":true", AttributeValue::Bool(true))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// A transaction item that holds only while the agent is active.
    fn active_callee_check(&self, callee_id: &AgentId) -> Result<TransactWriteItem, StoreError> {
        let check = build(
            ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(key(format!("AGENT#{callee_id}"), "AGENT")))
                .condition_expression("#status = :active")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":active", s("active"))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// The task, unless it does not exist or is past its retention (the store's time to live
    /// deletes such items some time later; until then they are already gone to every reader).
    pub async fn get_task(&self, task_id: &TaskId) -> Result<Option<Task>, StoreError> {
        let output = self.get(task_key(task_id)).await?;
        let task = output.as_ref().map(Task::try_from).transpose()?;
        let now = clock::unix_now();
        Ok(task.filter(|task| task.expires_at.is_none_or(|at| at > now)))
    }

    /// Runs a conditional update on a task and returns the new task, or the old one when the
    /// condition failed.
    pub(crate) async fn transition(
        &self,
        update: UpdateItemFluentBuilder,
    ) -> Result<TaskTransition, StoreError> {
        match update
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await
        {
            Ok(output) => match output.attributes() {
                Some(item) => Ok(TaskTransition::Applied(Task::try_from(item)?)),
                None => Err(StoreError::Corrupt("update returned no attributes".into())),
            },
            Err(error) => match error.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(failed)) => {
                    let old = failed.item().map(Task::try_from).transpose()?;
                    Ok(TaskTransition::Refused(old))
                }
                _ => Err(classify(error)),
            },
        }
    }

    pub(crate) fn task_update(&self, task_id: &TaskId) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(task_key(task_id)))
            .expression_attribute_names("#state", "state")
    }

    /// Claims one queued task of `callee_id`, trying the oldest candidates in a rotated order so
    /// that concurrent pollers mostly try different tasks. A candidate that cannot be taken (an
    /// unreadable or oversized item left by an older version) is failed and passed over, so one
    /// task never stops its callee's queue.
    pub async fn claim_next(&self, callee_id: &AgentId) -> Result<ClaimOutcome, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("gsi1")
            .key_condition_expression("gsi1pk = :queue")
            .expression_attribute_values(":queue", s(format!("QUEUE#{callee_id}")))
            .limit(CLAIM_CANDIDATES)
            .send()
            .await
            .map_err(classify)?;
        let candidates = output.items();
        if candidates.is_empty() {
            return Ok(ClaimOutcome::Empty);
        }
        let mut offset = [0u8; 4];
        let _ = getrandom::fill(&mut offset);
        let start = u32::from_le_bytes(offset) as usize % candidates.len();
        for index in 0..candidates.len() {
            let candidate = Reader(&candidates[(start + index) % candidates.len()]);
            let Ok(task_id) = candidate.id::<TaskId>("id") else {
                tracing::error!("a queue entry without a task id; skipped");
                continue;
            };
            match self.claim_candidate(callee_id, &task_id, &candidate).await {
                Ok(Some(task)) => return Ok(ClaimOutcome::Claimed(Box::new(task))),
                Ok(None) => {}
                Err(error @ StoreError::Unavailable(_)) => return Err(error),
                Err(error) => {
                    tracing::error!(task_id = %task_id, error = %error, "a queued task cannot be claimed; failing it and passing over");
                    if let Err(error) = self.fail_unclaimable(callee_id, &task_id).await {
                        tracing::error!(task_id = %task_id, error = %error, "could not fail an unclaimable task");
                    }
                }
            }
        }
        Ok(ClaimOutcome::Contended)
    }

    /// One claim attempt on one candidate: the task, or `None` when another poller took it.
    async fn claim_candidate(
        &self,
        callee_id: &AgentId,
        task_id: &TaskId,
        candidate: &Reader<'_>,
    ) -> Result<Option<Task>, StoreError> {
        let timeout = candidate.n("claim_timeout_seconds")?;
        let now = clock::now();
        let deadline = clock::after(timeout);
        let update = self
            .task_update(task_id)
            .update_expression(
                "SET #state = :working, status_timestamp = :now, updated_at = :now, \
                 deadline_at = :deadline, gsi2pk = :shard, gsi2sk = :deadline_key \
                 REMOVE gsi1pk, gsi1sk",
            )
            .condition_expression("#state IN (:submitted, :working) AND gsi1pk = :queue")
            .expression_attribute_values(":working", s(TaskState::Working.as_str()))
            .expression_attribute_values(":submitted", s(TaskState::Submitted.as_str()))
            .expression_attribute_values(":queue", s(format!("QUEUE#{callee_id}")))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(":deadline", s(&deadline))
            .expression_attribute_values(":shard", s(deadline_shard(task_id)))
            .expression_attribute_values(":deadline_key", s(format!("{deadline}#{task_id}")));
        match self.transition(update).await? {
            TaskTransition::Applied(task) => Ok(Some(task)),
            TaskTransition::Refused(_) => Ok(None),
        }
    }

    /// Fails a queued task no claim can take, with a write that does not grow it.
    async fn fail_unclaimable(
        &self,
        callee_id: &AgentId,
        task_id: &TaskId,
    ) -> Result<(), StoreError> {
        self.task_update(task_id)
            .update_expression(
                "SET #state = :failed, #error = :error, status_timestamp = :now, updated_at = :now \
                 REMOVE gsi1pk, gsi1sk",
            )
            .condition_expression("gsi1pk = :queue")
            .expression_attribute_names("#error", "error")
            .expression_attribute_values(":failed", s(TaskState::Failed.as_str()))
            .expression_attribute_values(":error", s(UNCLAIMABLE_ERROR))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":queue", s(format!("QUEUE#{callee_id}")))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    /// Puts a task this claim took back on its callee's queue, in its old place, while the claim
    /// still holds (its deadline unchanged): the claim could not hand the task over.
    pub async fn unclaim(&self, task: &Task) -> Result<(), StoreError> {
        let (queue, order) = queue_entry(task, &task.created_at);
        let update = self
            .task_update(&task.id)
            .update_expression(
                "SET gsi1pk = :queue, gsi1sk = :order REMOVE deadline_at, gsi2pk, gsi2sk",
            )
            .condition_expression("#state = :working AND deadline_at = :deadline")
            .expression_attribute_values(":queue", s(queue))
            .expression_attribute_values(":order", s(order))
            .expression_attribute_values(":working", s(TaskState::Working.as_str()))
            .expression_attribute_values(
                ":deadline",
                s(task.deadline_at.clone().unwrap_or_default()),
            );
        self.transition(update).await.map(|_| ())
    }

    /// The write that applies a callee's answer to a working task: its state, status, error,
    /// history entry and (when completed) artifacts, its bodies added to the task's content, with
    /// every queue, deadline and delivery bookkeeping attribute removed. `:now` and `:working`
    /// are bound for the caller's condition, which it adds (with [`WITHIN_CONTENT_CAP`], whose
    /// `:room` this binds).
    pub(crate) fn answer_update(
        &self,
        task_id: &TaskId,
        result: &PackedResult,
    ) -> UpdateItemFluentBuilder {
        let status_message = match &result.status_message {
            Some(message) => body_text(message),
            None => AttributeValue::Null(true),
        };
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET #state = :state, status_message = :status_message, status_timestamp = :now, \
                 updated_at = :now, #error = :error, history = list_append(history, :entry){} \
                 ADD content_bytes :added \
                 REMOVE deadline_at, gsi1pk, gsi1sk, gsi2pk, gsi2sk, lease_token, lease_until",
                if result.artifacts.is_some() {
                    ", artifacts = :artifacts"
                } else {
                    ""
                }
            ))
            .expression_attribute_names("#error", "error")
            .expression_attribute_values(":state", s(result.state.as_str()))
            .expression_attribute_values(":status_message", status_message)
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":error", opt_s(result.error.as_deref()))
            .expression_attribute_values(
                ":entry",
                AttributeValue::L(vec![body_text(&result.history_entry)]),
            )
            .expression_attribute_values(":working", s(TaskState::Working.as_str()));
        let update = with_content_room(update, result.content_bytes());
        match &result.artifacts {
            Some(artifacts) => {
                update.expression_attribute_values(":artifacts", body_text(artifacts))
            }
            None => update,
        }
    }

    /// Applies a callee's result to a task it holds: only a `working` task of this callee, in
    /// this tenant, before its deadline (or a push task still being delivered).
    pub async fn finish_task(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        callee_id: &AgentId,
        result: &PackedResult,
    ) -> Result<TaskTransition, StoreError> {
        let update = held_by_callee(
            self.answer_update(task_id, result),
            WITHIN_CONTENT_CAP,
            tenant_id,
            callee_id,
        );
        self.transition(update).await
    }

    /// Adds a callee's progress message to a working task it holds: the state stays `working`,
    /// the message becomes the status message and joins the history, which must have room for
    /// it and the answer still to come, and its body joins the task's content within the cap.
    pub async fn report_progress(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        callee_id: &AgentId,
        message: &PackedBody,
    ) -> Result<TaskTransition, StoreError> {
        let update = self
            .task_update(task_id)
            .update_expression(
                "SET status_message = :message, status_timestamp = :now, updated_at = :now, \
                 history = list_append(history, :entry) ADD content_bytes :added",
            )
            .expression_attribute_values(":message", body_text(message))
            .expression_attribute_values(":entry", AttributeValue::L(vec![body_text(message)]))
            .expression_attribute_values(":max", n(MAX_HISTORY_BEFORE_ANSWER as u64))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":working", s(TaskState::Working.as_str()));
        let update = with_content_room(update, message.bytes);
        let also = format!(" AND size(history) < :max{WITHIN_CONTENT_CAP}");
        let update = held_by_callee(update, &also, tenant_id, callee_id);
        self.transition(update).await
    }

    /// The caller's answer to the callee's question: an `input_required` task of this caller
    /// goes back to `working` with the message in its history, back on the callee's queue (pull)
    /// or the push outbox for a new delivery (push). Checked in one transaction against the live
    /// binding and the callee's status, like an open, with its audit entry.
    ///
    /// A new push delivery gets a new delivery id (its `webhook-id`) and a fresh retry budget;
    /// the task-wide attempt number carries on, so the attempt log keeps every earlier attempt.
    pub async fn answer_input(
        &self,
        task: &Task,
        message: &PackedBody,
        audit: &AuditEntry,
    ) -> Result<Result<(), InputRefusal>, StoreError> {
        let now = clock::now();
        let (queue, order) = queue_entry(task, &now);
        let redelivery = match task.delivery {
            Delivery::Pull => "",
            Delivery::Push => {
                ", delivery_attempts = :zero, delivery_id = :delivery, \
                 attempt_number = if_not_exists(attempt_number, :numbered) \
                 REMOVE delivered_at, lease_token, lease_until"
            }
        };
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(task_key(&task.id)))
            .update_expression(format!(
                "SET #state = :working, status_message = :none, status_timestamp = :now, \
                 updated_at = :now, history = list_append(history, :entry), \
                 gsi1pk = :queue, gsi1sk = :order{redelivery} ADD content_bytes :added"
            ))
            .condition_expression(format!(
                "#state = :input_required AND tenant_id = :tenant AND caller_agent_id = :caller \
                 AND size(history) < :max{WITHIN_CONTENT_CAP}"
            ))
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":working", s("working"))
            .expression_attribute_values(":input_required", s("input_required"))
            .expression_attribute_values(":none", AttributeValue::Null(true))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(":entry", AttributeValue::L(vec![body_text(message)]))
            .expression_attribute_values(":queue", s(queue))
            .expression_attribute_values(":order", s(order))
            .expression_attribute_values(":tenant", s(&task.tenant_id))
            .expression_attribute_values(":caller", s(&task.caller_agent_id))
            .expression_attribute_values(":max", n(MAX_HISTORY_BEFORE_ANSWER as u64))
            .expression_attribute_values(
                ":room",
                n(MAX_TASK_CONTENT_BYTES.saturating_sub(message.bytes)),
            )
            .expression_attribute_values(":added", n(message.bytes));
        if task.delivery == Delivery::Push {
            update = update
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":delivery", s(uuid::Uuid::new_v4().to_string()))
                .expression_attribute_values(":numbered", n(task.attempt_number));
        }
        let items = vec![
            TransactWriteItem::builder()
                .update(build(update.build())?)
                .build(),
            self.live_binding_check(&binding_id(&task.caller_agent_id, &task.callee_agent_id))?,
            self.active_callee_check(&task.callee_agent_id)?,
            self.put_new(audit.to_item())?,
        ];
        match self.transact_checked(items).await {
            Ok(()) => Ok(Ok(())),
            Err(TransactError::Store(error)) => Err(error),
            Err(TransactError::Canceled(reasons)) => {
                let failed =
                    |index: usize| reasons.get(index).is_some_and(|r| r.condition_failed());
                if failed(0) {
                    Ok(Err(InputRefusal::NotWaiting))
                } else if failed(1) {
                    Ok(Err(InputRefusal::BindingNotLive))
                } else if failed(2) {
                    Ok(Err(InputRefusal::CalleeNotActive))
                } else {
                    Err(TransactError::Canceled(reasons).into())
                }
            }
        }
    }

    /// Cancels an open task for its caller. `callee` is the callee's id or name as the route
    /// gave it; a task of another callee is left alone.
    pub async fn cancel_task(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        caller_id: &AgentId,
        callee: &str,
    ) -> Result<TaskTransition, StoreError> {
        let update = self
            .task_update(task_id)
            .update_expression(
                "SET #state = :canceled, status_timestamp = :now, updated_at = :now \
                 REMOVE deadline_at, gsi1pk, gsi1sk, gsi2pk, gsi2sk, lease_token, lease_until",
            )
            .condition_expression(
                "#state IN (:submitted, :working, :input_required) AND tenant_id = :tenant \
                 AND caller_agent_id = :caller AND (callee_agent_id = :callee OR callee_name = :callee)",
            )
            .expression_attribute_values(":canceled", s("canceled"))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":submitted", s("submitted"))
            .expression_attribute_values(":working", s("working"))
            .expression_attribute_values(":input_required", s("input_required"))
            .expression_attribute_values(":tenant", s(tenant_id))
            .expression_attribute_values(":caller", s(caller_id))
            .expression_attribute_values(":callee", s(callee));
        self.transition(update).await
    }

    /// Fails a working task whose claim deadline `deadline_at` has passed. A task that was
    /// answered, canceled or re-claimed in the meantime is left alone.
    pub async fn expire_task(
        &self,
        task_id: &TaskId,
        deadline_at: &str,
        timeout_seconds: u64,
    ) -> Result<TaskTransition, StoreError> {
        let failure = TaskResult::Failed {
            error: deadline_error(timeout_seconds),
        };
        let update = self
            .answer_update(task_id, &PackedResult::pack("", task_id, &failure))
            .condition_expression(format!(
                "#state = :working AND deadline_at = :deadline{WITHIN_CONTENT_CAP}"
            ))
            .expression_attribute_values(":deadline", s(deadline_at));
        self.transition(update).await
    }

    /// Working tasks whose deadline passed before `now`, from one shard of the deadline index.
    /// An entry without a task id is left out (nothing could be done with it).
    pub async fn overdue_tasks(
        &self,
        shard: char,
        now: &str,
        limit: i32,
    ) -> Result<Vec<OverdueEntry>, StoreError> {
        let items = self
            .query_due("gsi2", format!("DEADLINE#{shard}"), now, limit)
            .await?;
        Ok(items
            .iter()
            .filter_map(|item| {
                let read = Reader(item);
                let task_id = read.id("id").ok()?;
                Some(OverdueEntry {
                    index_key: read.s("gsi2sk").unwrap_or_default(),
                    deadline_at: read.s("deadline_at").unwrap_or_default(),
                    timeout_seconds: read.n("claim_timeout_seconds").unwrap_or_default(),
                    task_id,
                })
            })
            .collect())
    }

    /// The root of a call, if the call is on this ledger in this tenant.
    pub async fn call_root(
        &self,
        tenant_id: &TenantId,
        call_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let output = self.get(key(format!("CALL#{call_id}"), "CALL")).await?;
        match output.as_ref() {
            Some(item) if Reader(item).id::<TenantId>("tenant_id")? == tenant_id => {
                Ok(Some(Reader(item).s("root_call_id")?))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::content::{PackedBody, INLINE_BODY_BYTES};
    use crate::domain::task::{MAX_ERROR_CHARS, MAX_TASK_MESSAGES};
    use serde_json::{json, Value};

    /// DynamoDB's item size: attribute names plus values, lists with their per-element overhead.
    fn value_size(value: &AttributeValue) -> usize {
        match value {
            AttributeValue::S(text) => text.len(),
            AttributeValue::N(number) => number.len().div_ceil(2) + 1,
            AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
            AttributeValue::L(items) => {
                3 + items.iter().map(|item| 1 + value_size(item)).sum::<usize>()
            }
            AttributeValue::M(map) => {
                3 + map
                    .iter()
                    .map(|(name, item)| 1 + name.len() + value_size(item))
                    .sum::<usize>()
            }
            _ => usize::MAX / 2,
        }
    }

    fn item_size(item: &Item) -> usize {
        item.iter()
            .map(|(name, value)| name.len() + value_size(value))
            .sum()
    }

    /// A body of exactly `bytes` bytes serialized, the largest that still stays inline.
    fn inline_body(bytes: usize) -> Value {
        let envelope = json!({"role": "agent", "parts": [{"text": ""}]})
            .to_string()
            .len();
        json!({"role": "agent", "parts": [{"text": "é".repeat((bytes - envelope) / 2)}]})
    }

    #[test]
    fn the_largest_task_any_sequence_of_writes_can_make_fits_the_item_limit_with_headroom() {
        // DynamoDB's limit is 400 KB; 50 KB of it stay spare for attributes yet to come.
        const CAP: usize = 350_000;
        let uuid = "9f0c7a9e-1111-4222-8333-444455556666";
        let largest_inline = inline_body(INLINE_BODY_BYTES);
        let packed = PackedBody::pack(uuid, uuid, &largest_inline, INLINE_BODY_BYTES);
        assert!(
            packed.offload.is_none(),
            "the body is the largest that stays inline"
        );
        let reference = PackedBody::pack(uuid, uuid, &inline_body(4096), INLINE_BODY_BYTES);
        assert!(
            reference.text().len() <= INLINE_BODY_BYTES,
            "a reference is never larger"
        );

        // The one failure a task can end with: the longest error, every character escaped.
        let error: String = "\u{1}".repeat(MAX_ERROR_CHARS);
        let failure = PackedResult::pack(
            uuid,
            uuid,
            &TaskResult::Failed {
                error: error.clone(),
            },
        );
        let mut history = vec![largest_inline.clone(); MAX_TASK_MESSAGES - 1];
        history.push(failure.history_entry.stored.clone());
        let task = Task {
            id: uuid.into(),
            tenant_id: uuid.into(),
            context_id: uuid.into(),
            caller_agent_id: uuid.into(),
            callee_agent_id: uuid.into(),
            callee_name: "n".repeat(63),
            state: TaskState::Submitted,
            status_message: Some(largest_inline.clone()),
            status_timestamp: clock::now(),
            input: largest_inline.clone(),
            artifacts: inline_body(INLINE_BODY_BYTES),
            error: Some("\u{10ffff}".repeat(MAX_ERROR_CHARS)),
            history,
            call_id: uuid.into(),
            parent_call_id: Some(uuid.into()),
            root_call_id: uuid.into(),
            delivery: Delivery::Push,
            claim_timeout_seconds: 86_400,
            deadline_at: None,
            delivery_attempts: 0,
            attempt_number: 0,
            delivery_id: Some(uuid.into()),
            delivered_at: None,
            content_bytes: MAX_TASK_CONTENT_BYTES,
            expires_at: Some(u64::from(u32::MAX)),
            created_at: clock::now(),
            updated_at: clock::now(),
        };
        let mut item = to_item(&task);
        // Every bookkeeping attribute a later write may set, at its longest.
        for (name, value) in [
            ("deadline_at", clock::now()),
            ("delivered_at", clock::now()),
            ("lease_until", clock::now()),
            ("lease_token", uuid.to_owned()),
            ("gsi2pk", "DEADLINE#f".to_owned()),
            ("gsi2sk", format!("{}#{uuid}", clock::now())),
        ] {
            item.insert(name.into(), s(value));
        }
        item.insert("delivery_attempts".into(), n(u64::MAX));
        item.insert("attempt_number".into(), n(u64::MAX));
        let size = item_size(&item);
        assert!(size <= CAP, "{size} bytes");
    }
}
