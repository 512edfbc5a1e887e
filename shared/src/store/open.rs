//! Opening a task: one transaction that writes the task, its conversation, its lineage and its
//! audit entry, and checks the binding and the callee, so nothing is half-written.

use crate::domain::ids::AgentId;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};

use super::audit::AuditEntry;
use super::calls::call_item;
use super::item::{key, n, s, Reader};
use super::task_item::to_item;
use super::tasks::{build, MAX_TASKS_PER_CONTEXT};
use super::{Store, StoreError};
use crate::domain::Task;

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

/// The items of the open transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenSlot {
    Task,
    Binding,
    Callee,
    Context,
    Audit,
    Call,
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

impl Store {
    /// Writes a new task with its conversation, lineage and audit entries in one transaction,
    /// checked against the live binding and the callee's status at the same instant.
    pub async fn open_task(&self, open: &OpenTask) -> Result<Result<(), OpenRefusal>, StoreError> {
        let task = &open.task;
        let context_write = self.context_write(task, &open.context)?;
        let call = call_item(task);

        let items = vec![
            (OpenSlot::Task, self.put_new(to_item(task))?),
            (
                OpenSlot::Binding,
                self.live_binding_check(&open.binding_id)?,
            ),
            (
                OpenSlot::Callee,
                self.active_callee_check(&task.callee_agent_id)?,
            ),
            (OpenSlot::Context, context_write),
            (OpenSlot::Audit, self.put_new(open.audit.to_item())?),
            (OpenSlot::Call, self.put_new(call)?),
        ];
        let Err(failed) = self.transact_slots(items).await? else {
            return Ok(Ok(()));
        };
        Ok(Err(match failed.slot {
            OpenSlot::Task => OpenRefusal::AlreadyOpen,
            OpenSlot::Binding => OpenRefusal::BindingNotLive,
            OpenSlot::Callee => OpenRefusal::CalleeNotActive,
            OpenSlot::Context => {
                let full = failed.item.as_ref().is_some_and(|item| {
                    Reader(item).n("task_count").unwrap_or(0) >= MAX_TASKS_PER_CONTEXT
                        && Reader(item).s("tenant_id").ok().as_deref() == Some(&task.tenant_id)
                });
                if full {
                    OpenRefusal::ContextFull
                } else {
                    OpenRefusal::UnknownContext
                }
            }
            // Fresh ids: a taken audit or call key is the store's fault, not the caller's.
            OpenSlot::Audit | OpenSlot::Call => {
                return Err(StoreError::Rejected(format!(
                    "the open transaction's {:?} key was taken",
                    failed.slot
                )))
            }
        }))
    }

    /// The open transaction's write of the conversation: a new one, or one more task in an
    /// existing one between the same two agents (at most [`MAX_TASKS_PER_CONTEXT`]).
    fn context_write(
        &self,
        task: &Task,
        context: &ContextJoin,
    ) -> Result<TransactWriteItem, StoreError> {
        let context_key = key(format!("CONTEXT#{}", task.context_id), "CONTEXT");
        Ok(match context {
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
        })
    }

    /// A transaction item that holds only while the binding is approved and not revoked.
    pub(crate) fn live_binding_check(
        &self,
        binding_id: &str,
    ) -> Result<TransactWriteItem, StoreError> {
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
    pub(crate) fn active_callee_check(
        &self,
        callee_id: &AgentId,
    ) -> Result<TransactWriteItem, StoreError> {
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
}
