//! Opening a task: the conversation it continues takes one more task, then the task item is
//! written in one conditional put; the items that only follow from the task (its conversation
//! when it starts one, its call, its audit entry) are written right after, with its word postings,
//! in one batch (`store/words.rs`), and rewritten by the sweeper when that batch fails.
//!
//! No transaction: each item of a transaction is billed twice, and so is every index entry it
//! writes (docs/design.md, "What a task costs"). The binding and the callee are read, strongly
//! consistent, before the open (`http/gate.rs`).

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};

use super::audit::AuditEntry;
use super::calls::call_item;
use super::item::{key, n, s, Item, Reader};
use super::layout::{context_partition, due_sort_key, stored_context, CONTEXT_SORT_KEY};
use super::task_item::to_item;
use super::tasks::MAX_TASKS_PER_CONTEXT;
use super::{classify, committed, Store, StoreError};
use crate::domain::clock::Timestamp;
use crate::domain::task::Delivery;
use crate::domain::{AgentId, Task, TenantId};

/// The conversation a new task joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextJoin {
    /// A new conversation whose id is the task's `context_id`.
    Start,
    /// An existing conversation between the same two agents (either direction).
    Continue,
    /// A conversation an A2A client named (the task's `context_named`): the two agents'
    /// conversation of that name in the tenant when there is one, else a new one by that name.
    Name,
}

/// A task to open, and the conversation it joins.
pub struct OpenTask {
    pub task: Task,
    pub context: ContextJoin,
    /// A push task whose callee's deliveries are held back (`Agent::push_held_until`): its
    /// outbox entry falls due then, and no message is sent for it meanwhile.
    pub parked_until: Option<Timestamp>,
}

/// The task item an open writes: a push task parked at its open falls due on the outbox when
/// its callee's hold ends.
fn opened_task_item(open: &OpenTask) -> Item {
    let mut item = to_item(&open.task);
    if let Some(until) = &open.parked_until {
        if item.contains_key("gsi1sk") && open.task.delivery == Delivery::Push {
            item.insert("gsi1sk".into(), s(due_sort_key(until, &open.task.id)));
        }
    }
    item
}

/// Why the open wrote no task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenRefusal {
    /// A task with this id exists: an open repeated with the same `message_id`.
    AlreadyOpen,
    /// `context_id` names no conversation between these two agents.
    UnknownContext,
    /// The conversation already holds the most tasks it may.
    ContextFull,
}

/// The key of a task's conversation item (a named one's within its tenant).
fn context_key(task: &Task) -> Item {
    let stored = stored_context(&task.tenant_id, &task.context_id, task.context_named);
    key(context_partition(&stored), CONTEXT_SORT_KEY)
}

/// What joining a conversation found.
enum Joined {
    Yes,
    Full,
    /// No conversation has that id (in the tenant, for a named one).
    Absent,
    /// A conversation of other agents has it.
    Others,
}

/// Whether a conversation item is one of `tenant` between these two agents (either direction).
fn is_between(item: &Item, tenant: &str, agents: [&str; 2]) -> bool {
    let read = Reader(item);
    read.s("tenant_id").ok().as_deref() == Some(tenant)
        && agents.iter().all(|agent| {
            ["agent_a", "agent_b"]
                .iter()
                .any(|side| read.s(side).ok().as_deref() == Some(*agent))
        })
}

/// The conversation item a task that starts one leaves: its two agents, and one task so far.
fn context_item(task: &Task) -> Item {
    let mut item = context_key(task);
    item.insert("kind".into(), s("context"));
    item.insert("tenant_id".into(), s(&task.tenant_id));
    item.insert("agent_a".into(), s(&task.caller_agent_id));
    item.insert("agent_b".into(), s(&task.callee_agent_id));
    item.insert("task_count".into(), n(1));
    item.insert("created_at".into(), s(&task.created_at));
    item
}

/// The items that follow from an opened task, but the conversation: its call and its audit
/// entry, each keyed by the task, so writing them again writes the same items.
pub(crate) fn ledger_items(task: &Task) -> [Item; 2] {
    [call_item(task), AuditEntry::task_opened(task).to_item()]
}

/// What the batch after an open writes besides the word postings: the ledger items, and the
/// conversation when the task starts one.
pub(crate) fn opened_items(task: &Task, context: ContextJoin) -> Vec<Item> {
    let mut items = Vec::from(ledger_items(task));
    if context == ContextJoin::Start {
        items.push(context_item(task));
    }
    items
}

impl Store {
    /// Writes a new task: first the conversation it continues counts it (refused when there is
    /// no such conversation between the two agents, or it is full), then the task item, refused
    /// when its id is taken. A repeated open gives its conversation's count back.
    pub async fn open_task(&self, open: &OpenTask) -> Result<Result<(), OpenRefusal>, StoreError> {
        let task = &open.task;
        let joined = match open.context {
            ContextJoin::Start => Ok(()),
            ContextJoin::Continue => match self.join_context(task).await? {
                Joined::Yes => Ok(()),
                Joined::Full => Err(OpenRefusal::ContextFull),
                Joined::Absent | Joined::Others => Err(OpenRefusal::UnknownContext),
            },
            ContextJoin::Name => self.join_or_name_context(task).await?,
        };
        if let Err(refusal) = joined {
            return Ok(Err(refusal));
        }
        if self.put_if_absent(opened_task_item(open)).await? {
            return Ok(Ok(()));
        }
        if open.context != ContextJoin::Start {
            if let Err(error) = self.leave_context(task).await {
                tracing::warn!(task_id = %task.id, error = %error, "a repeated open's conversation keeps the count it took");
            }
        }
        Ok(Err(OpenRefusal::AlreadyOpen))
    }

    /// Joins the two agents' conversation of the task's name, or starts it: its item is written
    /// before the task (with this task counted), so opens naming it at once share one.
    async fn join_or_name_context(
        &self,
        task: &Task,
    ) -> Result<Result<(), OpenRefusal>, StoreError> {
        for _ in 0..2 {
            match self.join_context(task).await? {
                Joined::Yes => return Ok(Ok(())),
                Joined::Full => return Ok(Err(OpenRefusal::ContextFull)),
                Joined::Others => return Ok(Err(OpenRefusal::UnknownContext)),
                Joined::Absent => {
                    if self.put_if_absent(context_item(task)).await? {
                        return Ok(Ok(()));
                    }
                }
            }
        }
        Ok(Err(OpenRefusal::UnknownContext))
    }

    /// Whether `context_id` is a conversation the gate issued to these two agents (either
    /// direction) in `tenant`.
    pub async fn is_conversation_of(
        &self,
        tenant: &TenantId,
        context_id: &str,
        agents: [&AgentId; 2],
    ) -> Result<bool, StoreError> {
        let found = self
            .client()
            .get_item()
            .table_name(self.table())
            .set_key(Some(key(context_partition(context_id), CONTEXT_SORT_KEY)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let agents = agents.map(AgentId::as_str);
        Ok(found
            .item()
            .is_some_and(|item| is_between(item, tenant, agents)))
    }

    /// Counts one more task in the existing conversation between the task's two agents.
    async fn join_context(&self, task: &Task) -> Result<Joined, StoreError> {
        let sent = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(context_key(task)))
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
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        let error = match sent {
            Ok(_) => return Ok(Joined::Yes),
            Err(error) => error,
        };
        let Some(failed) = error
            .as_service_error()
            .and_then(|service| match service {
                aws_sdk_dynamodb::operation::update_item::UpdateItemError::ConditionalCheckFailedException(failed) => Some(failed),
                _ => None,
            })
        else {
            return Err(classify(error));
        };
        let Some(item) = failed.item() else {
            return Ok(Joined::Absent);
        };
        let agents = [&task.caller_agent_id, &task.callee_agent_id].map(AgentId::as_str);
        Ok(match is_between(item, &task.tenant_id, agents) {
            true => Joined::Full,
            false => Joined::Others,
        })
    }

    /// Gives back the count a repeated open took from its conversation.
    async fn leave_context(&self, task: &Task) -> Result<(), StoreError> {
        self.client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(context_key(task)))
            .update_expression("ADD task_count :minus_one")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()))
            .return_values(ReturnValue::None)
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    /// Writes `item` unless an item has its key: `false` when one had.
    pub(crate) async fn put_if_absent(&self, item: Item) -> Result<bool, StoreError> {
        let sent = self
            .client()
            .put_item()
            .table_name(self.table())
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await;
        committed(sent)
    }

    /// The sweeper's repair of what follows from an opened task: its ledger items again, and its
    /// conversation if the task started one that was never written (a conversation it continued
    /// existed before it; one that exists is left as it is).
    pub async fn restore_opened(&self, task: &Task) -> Result<(), StoreError> {
        self.put_if_absent(context_item(task)).await?;
        let puts = ledger_items(task)
            .into_iter()
            .map(super::item::put_request)
            .collect::<Result<_, _>>()?;
        self.batch_write(puts).await
    }
}
