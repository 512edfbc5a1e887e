//! The tasks a redrive replays: a callee's tasks opened since a moment whose push delivery
//! waits after a failed attempt, found on the callee's side of the task indexes
//! (`inbound_tasks`, by creation) and judged on the tasks themselves; and the write that
//! renews such a delivery (a redrive's, a replay's).

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{n, s, Item, Reader};
use super::layout::{due_sort_key, outbox_shard_partition, task_shard, TASK_SORT_KEY};
use super::push::waiting_delivery;
use super::task_item::{task_id_of, KEEP_STATUS_TIME};
use super::{classify, Store, StoreError, TaskTransition};
use crate::domain::task::Delivery;
use crate::domain::{clock, AgentId, Task, TaskId, TaskState};

/// The most index entries one redrive reads, whatever it finds.
const MAX_ENTRIES_READ: usize = 1_000;

/// Whether `task`'s push delivery waits after a failed attempt: it awaits its delivery (open,
/// not yet accepted) with an attempt made.
pub fn waits_after_a_failure(task: &Task) -> bool {
    task.awaits_delivery() && task.delivery_attempts > 0
}

/// One page of a callee's open tasks by creation, from `start`.
struct Entries {
    /// Task ids with their creation, in order.
    tasks: Vec<(TaskId, String)>,
    next: Option<Item>,
}

impl Store {
    /// Makes push task `task_id`'s waiting delivery due now with a fresh retry budget (a replay
    /// or a redrive): while the task is open, not yet accepted, and no attempt holds a live
    /// lease. Its outbox entry falls due soon after, should the enqueue that follows be lost.
    /// The delivery keeps its id, so its `webhook-id`; attempt numbers run on.
    pub async fn renew_delivery(&self, task_id: &TaskId) -> Result<TaskTransition, StoreError> {
        let due = clock::after(90);
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET delivery_attempts = :zero, {KEEP_STATUS_TIME}, updated_at = :now, \
                 gsi1pk = :outbox, gsi1sk = :due",
            ))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":push", s(Delivery::Push.as_str()))
            .expression_attribute_values(":outbox", s(outbox_shard_partition(task_shard(task_id))))
            .expression_attribute_values(":due", s(due_sort_key(&due, task_id)));
        self.transition(waiting_delivery(update, "")).await
    }

    /// Up to `limit` tasks of `callee_id` opened at or after `since`, oldest first, whose
    /// delivery waits after a failed attempt; and, when more may follow, the `since` of the next
    /// read (the creation of the last task it read: that task may be read again).
    pub async fn deliveries_waiting(
        &self,
        callee_id: &AgentId,
        since: &str,
        limit: usize,
    ) -> Result<(Vec<TaskId>, Option<String>), StoreError> {
        let mut found = Vec::new();
        let mut start = None;
        let mut read = 0;
        loop {
            let entries = self.open_entries(callee_id, since, start).await?;
            read += entries.tasks.len();
            let ids: Vec<TaskId> = entries.tasks.iter().map(|(id, _)| id.clone()).collect();
            let (tasks, _) = self.get_tasks(&ids).await?;
            for (id, created_at) in &entries.tasks {
                if tasks.get(id).is_some_and(waits_after_a_failure) {
                    found.push(id.clone());
                }
                if found.len() == limit {
                    return Ok((found, Some(created_at.clone())));
                }
            }
            match entries.next {
                None => return Ok((found, None)),
                Some(_) if read >= MAX_ENTRIES_READ => {
                    let last = entries.tasks.last().map(|(_, at)| at.clone());
                    return Ok((found, last.or_else(|| Some(since.to_owned()))));
                }
                next => start = next,
            }
        }
    }

    /// One page of `callee_id`'s tasks opened at or after `since` that are still pending.
    async fn open_entries(
        &self,
        callee_id: &AgentId,
        since: &str,
        start: Option<Item>,
    ) -> Result<Entries, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("inbound_tasks")
            .key_condition_expression("callee_agent_id = :callee AND created_at >= :since")
            .filter_expression("#state IN (:submitted, :working)")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":callee", s(callee_id))
            .expression_attribute_values(":since", s(since))
            .expression_attribute_values(":submitted", s(TaskState::Submitted.as_str()))
            .expression_attribute_values(":working", s(TaskState::Working.as_str()))
            .scan_index_forward(true)
            .limit(100)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(classify)?;
        let mut tasks = Vec::new();
        for item in output.items() {
            let is_task =
                matches!(item.get("sk"), Some(AttributeValue::S(sk)) if sk == TASK_SORT_KEY);
            if is_task {
                let created_at = Reader(item).s("created_at")?;
                tasks.push((task_id_of(item, "inbound task entry")?, created_at));
            }
        }
        Ok(Entries {
            tasks,
            next: output.last_evaluated_key,
        })
    }
}
