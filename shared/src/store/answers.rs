//! Answers on a task: the callee's result and progress, and the caller's answer to a question,
//! each a conditional write on the task as its writer holds it.

use crate::domain::ids::{AgentId, TaskId, TenantId};
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ConditionCheck, TransactWriteItem, Update};

use super::audit::AuditEntry;
use super::item::build;
use super::item::{key, n, s};
use super::layout::{agent_partition, binding_partition, AGENT_SORT_KEY, BINDING_SORT_KEY};
use super::task_item::{
    body_text, change_entries, logging, queue_entry, remember_key, remembering, task_key,
    with_content_room, LOG_CHANGES, WITHIN_CONTENT_CAP,
};
use super::tasks::{from_states, held_by_callee, target, target_value, TaskTransition};
use super::{Store, StoreError};
use crate::domain::binding::binding_id;
use crate::domain::content::{PackedBody, MAX_TASK_CONTENT_BYTES};
use crate::domain::events::Change;
use crate::domain::task::{Delivery, PackedResult, MAX_HISTORY_BEFORE_ANSWER};
use crate::domain::transitions::Transition;
use crate::domain::{clock, Task, TaskState};

/// The items of the transaction that takes a caller's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputSlot {
    Task,
    Binding,
    Callee,
    Audit,
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

impl Store {
    /// The write that applies a callee's answer to a working task: its state, status, error,
    /// history entry and (when completed) artifacts, its bodies added to the task's content, with
    /// every queue, deadline and delivery bookkeeping attribute removed. `:now` and `:working`
    /// are bound for the caller's condition, which it adds (with [`WITHIN_CONTENT_CAP`], whose
    /// `:room` this binds).
    pub(crate) fn answer_update(
        &self,
        transition: Transition,
        task_id: &TaskId,
        result: &PackedResult,
    ) -> Result<UpdateItemFluentBuilder, StoreError> {
        self.answer_update_keyed(transition, task_id, result, None)
    }

    /// [`Store::answer_update`], remembering the idempotency key `key` when there is one (the
    /// caller binds it with [`remembering`]).
    fn answer_update_keyed(
        &self,
        transition: Transition,
        task_id: &TaskId,
        result: &PackedResult,
        key: Option<&str>,
    ) -> Result<UpdateItemFluentBuilder, StoreError> {
        let (add_key, _) = remember_key(key);
        let now = clock::now();
        let changes = Change::answer(result.state, result.artifact_count, &now);
        let mut update = self
            .task_update(task_id)
            .update_expression(answer_expression(result, add_key))
            .expression_attribute_names("#error", "error")
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(
                ":entry",
                AttributeValue::L(vec![body_text(&result.history_entry)]),
            );
        if let Some(message) = &result.status_message {
            update = update.expression_attribute_values(":status_message", body_text(message));
        }
        if let Some(error) = &result.error {
            update = update.expression_attribute_values(":error", s(error));
        }
        if let Some(artifacts) = &result.artifacts {
            update = update.expression_attribute_values(":artifacts", body_text(artifacts));
        }
        let update = target(update, transition, Some(result.state))?;
        Ok(logging(
            with_content_room(update, result.content_bytes()),
            &changes,
        ))
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
            self.answer_update(Transition::Answer, task_id, result)?,
            Transition::Answer,
            WITHIN_CONTENT_CAP,
            tenant_id,
            callee_id,
        );
        self.transition(update).await
    }

    /// [`Store::finish_task`] for a result whose message has the idempotency key `key`: it is
    /// remembered with the result, and refused when the task has it already.
    pub async fn finish_task_keyed(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        callee_id: &AgentId,
        result: &PackedResult,
        key: &str,
    ) -> Result<TaskTransition, StoreError> {
        let (_, new_key) = remember_key(Some(key));
        let update = held_by_callee(
            self.answer_update_keyed(Transition::Answer, task_id, result, Some(key))?,
            Transition::Answer,
            &format!("{WITHIN_CONTENT_CAP}{new_key}"),
            tenant_id,
            callee_id,
        );
        self.transition(remembering(update, Some(key))).await
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
        key: Option<&str>,
    ) -> Result<TaskTransition, StoreError> {
        let now = clock::now();
        let (add_key, new_key) = remember_key(key);
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET status_message = :message, updated_at = :now, \
                 history = list_append(history, :entry), {LOG_CHANGES} \
                 REMOVE status_timestamp ADD content_bytes :added{add_key}",
            ))
            .expression_attribute_values(":message", body_text(message))
            .expression_attribute_values(":entry", AttributeValue::L(vec![body_text(message)]))
            .expression_attribute_values(":max", n(MAX_HISTORY_BEFORE_ANSWER as u64))
            .expression_attribute_values(":now", s(&now));
        let progress = Change::state(TaskState::Working, true, &now);
        let update = logging(with_content_room(update, message.bytes), &[progress]);
        let also = format!(" AND size(history) < :max{WITHIN_CONTENT_CAP}{new_key}");
        let update = held_by_callee(update, Transition::Progress, &also, tenant_id, callee_id);
        self.transition(remembering(update, key)).await
    }

    /// The caller's answer to the callee's question: an `input_required` task of this caller
    /// goes back to `working` with the message in its history, back on the callee's queue (pull)
    /// or the push outbox for a new delivery (push). Checked in one transaction against the live
    /// binding and the callee's status, like an open, with its audit entry.
    ///
    /// A new push delivery gets a new delivery id (its `webhook-id`) and a fresh retry budget;
    /// the task-wide attempt number carries on, so the attempt log keeps every earlier attempt.
    /// Applied, it returns that delivery's id (`None` for a pull task).
    pub async fn answer_input(
        &self,
        task: &Task,
        message: &PackedBody,
        key: Option<&str>,
        audit: &AuditEntry,
    ) -> Result<Result<Option<String>, InputRefusal>, StoreError> {
        let now = clock::now();
        let delivery_id =
            (task.delivery == Delivery::Push).then(|| uuid::Uuid::new_v4().to_string());
        let update = self.reply_update(task, message, key, delivery_id.as_deref(), &now)?;
        let binding = binding_id(&task.caller_agent_id, &task.callee_agent_id);
        let items = vec![
            (InputSlot::Task, update),
            (InputSlot::Binding, self.live_binding_check(&binding)?),
            (
                InputSlot::Callee,
                self.active_callee_check(&task.callee_agent_id)?,
            ),
            (InputSlot::Audit, self.put_new(audit.to_item())?),
        ];
        let Err(failed) = self.transact_slots(items).await? else {
            return Ok(Ok(delivery_id));
        };
        Ok(Err(match failed.slot {
            InputSlot::Task => InputRefusal::NotWaiting,
            InputSlot::Binding => InputRefusal::BindingNotLive,
            InputSlot::Callee => InputRefusal::CalleeNotActive,
            InputSlot::Audit => {
                return Err(StoreError::Rejected(
                    "the answer's fresh audit key was taken".into(),
                ))
            }
        }))
    }

    /// The answer's update of the task: back to `working` with the message, on the callee's
    /// queue (pull) or with a new delivery (push, `delivery_id`).
    fn reply_update(
        &self,
        task: &Task,
        message: &PackedBody,
        key: Option<&str>,
        delivery_id: Option<&str>,
        now: &str,
    ) -> Result<TransactWriteItem, StoreError> {
        let (add_key, new_key) = remember_key(key);
        let (queue, order) = queue_entry(task, now);
        let redelivery = match task.delivery {
            Delivery::Pull => " REMOVE status_timestamp, status_message",
            Delivery::Push => {
                ", delivery_attempts = :zero, delivery_id = :delivery, \
                 attempt_number = if_not_exists(attempt_number, :numbered) \
                 REMOVE status_timestamp, status_message, delivered_at, lease_token, lease_until"
            }
        };
        let (in_state, state_values) = from_states(Transition::Reply);
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(task_key(&task.id)))
            .update_expression(format!(
                "SET #state = :to, \
                 updated_at = :now, history = list_append(history, :entry), {LOG_CHANGES}, \
                 gsi1pk = :queue, gsi1sk = :order{redelivery} ADD content_bytes :added{add_key}"
            ))
            .condition_expression(format!(
                "{in_state} AND tenant_id = :tenant AND caller_agent_id = :caller \
                 AND size(history) < :max{WITHIN_CONTENT_CAP}{new_key}"
            ))
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":to", target_value(Transition::Reply, None)?)
            .expression_attribute_values(":now", s(now))
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
            .expression_attribute_values(":added", n(message.bytes))
            .expression_attribute_values(":no_changes", AttributeValue::L(Vec::new()))
            .expression_attribute_values(
                ":changes",
                change_entries(&[Change::state(TaskState::Working, true, now)]),
            );
        for (name, value) in state_values {
            update = update.expression_attribute_values(name, value);
        }
        if let Some(key) = key {
            update = update
                .expression_attribute_values(
                    ":message_keys",
                    AttributeValue::Ss(vec![key.to_owned()]),
                )
                .expression_attribute_values(":message_key", s(key));
        }
        if let Some(delivery_id) = delivery_id {
            update = update
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":delivery", s(delivery_id))
                .expression_attribute_values(":numbered", n(task.attempt_number));
        }
        Ok(TransactWriteItem::builder()
            .update(build(update.build())?)
            .build())
    }
}

impl Store {
    /// A transaction item that holds only while the binding is approved and not revoked.
    pub(crate) fn live_binding_check(
        &self,
        binding_id: &str,
    ) -> Result<TransactWriteItem, StoreError> {
        let check = build(
            ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(key(binding_partition(binding_id), BINDING_SORT_KEY)))
                .condition_expression("revoked = :false AND approved = :true")
                .expression_attribute_values(":false", AttributeValue::Bool(false))
                .expression_attribute_values(":true", AttributeValue::Bool(true))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// A transaction item that holds only while the agent is active.
    pub(crate) fn active_callee_check(
        &self,
        callee_id: &AgentId,
    ) -> Result<TransactWriteItem, StoreError> {
        let check = build(
            ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(key(agent_partition(callee_id), AGENT_SORT_KEY)))
                .condition_expression("#status = :active")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":active", s("active"))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }
}

/// The update expression of an answer: what the result says is set, what it leaves out is
/// removed rather than stored as null (the item stays within its write unit: docs/design.md,
/// "What a task costs"), and the claim's queue, deadline and lease entries go.
fn answer_expression(result: &PackedResult, add_key: &str) -> String {
    let mut set = format!(
        "#state = :to, updated_at = :now, \
         history = list_append(history, :entry), {LOG_CHANGES}"
    );
    let mut remove = String::from(
        "status_timestamp, deadline_at, gsi1pk, gsi1sk, gsi2pk, gsi2sk, lease_token, lease_until",
    );
    let fields = [
        (
            result.status_message.is_some(),
            "status_message",
            ":status_message",
        ),
        (result.error.is_some(), "#error", ":error"),
    ];
    for (given, name, value) in fields {
        match given {
            true => set.push_str(&format!(", {name} = {value}")),
            false => remove.push_str(&format!(", {name}")),
        }
    }
    if result.artifacts.is_some() {
        set.push_str(", artifacts = :artifacts");
    }
    format!("SET {set} ADD content_bytes :added{add_key} REMOVE {remove}")
}
