//! Tasks: reading one, the conditional write every transition is made of, cancel and the claim
//! deadline. Opening (`open.rs`), claiming (`claim.rs`), answers (`answers.rs`), the item
//! mapping (`task_item.rs`) and call lineage (`calls.rs`) sit beside this module.
//!
//! Every state change is one conditional write, so two writers racing on a task cannot both win:
//! a claim only takes a task still on the queue index (`submitted`, or `working` again after its
//! caller answered a question), a result only lands on a `working` task of that callee before its
//! deadline, a cancel only moves an open task.

use crate::domain::clock::Timestamp;
use crate::domain::cursor;
use crate::domain::ids::{AgentId, TaskId, TenantId};
use crate::domain::transitions::Transition;
use crate::domain::TaskState;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::item::{key, s, Item, Reader};
use super::layout::{
    binding_id_of_partition, binding_partition, deadline_shard_partition, BINDING_SORT_KEY,
    TASK_SORT_KEY,
};
use super::task_item::{
    logging, task_id_of, task_key, LOG_CHANGES, PAIR_INDEX, WITHIN_CONTENT_CAP,
};
use super::{classify, Store, StoreError};
use crate::domain::events::Change;
use crate::domain::task::{deadline_error, PackedResult, TaskResult};
use crate::domain::{clock, Task};

/// Most tasks one conversation may hold.
pub const MAX_TASKS_PER_CONTEXT: u64 = 100;
/// The error of a queued task that no claim can take.
pub(crate) const UNCLAIMABLE_ERROR: &str =
    "the task could not be handed to its callee: its stored record is unreadable or too large";
/// How many queued tasks a claim looks at per index read.
pub(crate) const CLAIM_CANDIDATES: i32 = 16;

/// A working task whose claim deadline passed, as the deadline index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverdueEntry {
    pub task_id: TaskId,
    pub deadline_at: Timestamp,
    pub timeout_seconds: u64,
    /// The entry's sort key on the index, to move it aside if it cannot be handled.
    pub index_key: String,
}

/// The outcome of a conditional write on one task.
#[derive(Debug, Clone)]
pub enum TaskTransition {
    Applied(Task),
    /// The condition failed; the task as it stood, if it exists at all.
    Refused(Option<Task>),
}

/// The part of a write's condition the state machine sets: `#state IN (…)` over the states
/// `transition` may start from (`domain/transitions.rs`), and the values of its placeholders,
/// each state under its own name (`:submitted`, `:working`, `:input_required`), which a write
/// that also sets one of those states binds to the same value.
pub(crate) fn from_states(transition: Transition) -> (String, Vec<(String, AttributeValue)>) {
    let states = transition.from();
    let names: Vec<String> = states
        .iter()
        .map(|state| format!(":{}", state.as_str()))
        .collect();
    let values = names
        .iter()
        .zip(states)
        .map(|(name, state)| (name.clone(), s(state.as_str())))
        .collect();
    (format!("#state IN ({})", names.join(", ")), values)
}

/// Binds `:to`, the state `transition` leaves the task in (`asked`, when the write names it),
/// as the table has it (`domain/transitions.rs`); a write the table does not allow is refused
/// before it is sent.
pub(crate) fn target(
    update: UpdateItemFluentBuilder,
    transition: Transition,
    asked: Option<TaskState>,
) -> Result<UpdateItemFluentBuilder, StoreError> {
    Ok(update.expression_attribute_values(":to", target_value(transition, asked)?))
}

/// The value of `:to` for [`target`], for writes built otherwise (a transaction's update).
pub(crate) fn target_value(
    transition: Transition,
    asked: Option<TaskState>,
) -> Result<AttributeValue, StoreError> {
    let state = transition.target(asked).ok_or_else(|| {
        StoreError::Rejected(format!(
            "the state machine has no {transition:?} to {}",
            asked.map_or("an unnamed state", TaskState::as_str)
        ))
    })?;
    Ok(s(state.as_str()))
}

/// Conditions `update` on the task's state allowing `transition`, and `also`.
pub(crate) fn conditioned(
    update: UpdateItemFluentBuilder,
    transition: Transition,
    also: &str,
) -> UpdateItemFluentBuilder {
    let (state, values) = from_states(transition);
    values
        .into_iter()
        .fold(update, |update, (name, value)| {
            update.expression_attribute_values(name, value)
        })
        .condition_expression(format!("{state}{also}"))
}

/// Conditions a callee's write on a task it holds: in a state `transition` may start from
/// (`working`), this tenant and callee, before the claim deadline (or a push task still being
/// delivered, which has none), and `also`. `:now` is the update's own.
pub(crate) fn held_by_callee(
    update: UpdateItemFluentBuilder,
    transition: Transition,
    also: &str,
    tenant_id: &TenantId,
    callee_id: &AgentId,
) -> UpdateItemFluentBuilder {
    let also = format!(
        " AND tenant_id = :tenant AND callee_agent_id = :callee \
         AND (deadline_at > :now OR (delivery = :push AND attribute_not_exists(deadline_at))){also}"
    );
    conditioned(update, transition, &also)
        .expression_attribute_values(":push", s("push"))
        .expression_attribute_values(":tenant", s(tenant_id))
        .expression_attribute_values(":callee", s(callee_id))
}

impl Store {
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

    /// Cancels an open task for its caller. `callee` is the callee's id or name as the route
    /// gave it; a task of another callee is left alone.
    pub async fn cancel_task(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        caller_id: &AgentId,
        callee: &str,
    ) -> Result<TaskTransition, StoreError> {
        let now = clock::now();
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET #state = :to, updated_at = :now, {LOG_CHANGES} \
                 REMOVE status_timestamp, deadline_at, gsi1pk, gsi1sk, gsi2pk, gsi2sk, \
                 lease_token, lease_until",
            ))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(":tenant", s(tenant_id))
            .expression_attribute_values(":caller", s(caller_id))
            .expression_attribute_values(":callee", s(callee));
        let update = conditioned(
            target(update, Transition::Cancel, None)?,
            Transition::Cancel,
            " AND tenant_id = :tenant AND caller_agent_id = :caller \
             AND (callee_agent_id = :callee OR callee_name = :callee)",
        );
        let canceled = Change::state(TaskState::Canceled, false, &now);
        self.transition(logging(update, &[canceled])).await
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
        let update = conditioned(
            self.answer_update(
                Transition::Expire,
                task_id,
                &PackedResult::pack("", task_id, &failure),
            )?,
            Transition::Expire,
            &format!(" AND deadline_at = :deadline{WITHIN_CONTENT_CAP}"),
        )
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
            .query_due("gsi2", deadline_shard_partition(shard), now, limit)
            .await?;
        Ok(items
            .iter()
            .filter_map(|item| {
                let read = Reader(item);
                let task_id = task_id_of(item, "deadline entry").ok()?;
                Some(OverdueEntry {
                    index_key: read.s("gsi2sk").unwrap_or_default(),
                    deadline_at: read.at("deadline_at").unwrap_or_default(),
                    timeout_seconds: read.n("claim_timeout_seconds").unwrap_or_default(),
                    task_id,
                })
            })
            .collect())
    }
}

/// Where a page of a caller's tasks on one callee starts: after the pair index entry this
/// names, newest first (any task of the caller's, since the read keeps only the callee's). A
/// task's entry is `{created}#{id}` (the shape the cursor had when the pair index was keyed by
/// it); the other items the index holds, the caller's bindings (they have its key attributes
/// too), are `{created}#~{pk}~{sk}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairCursor(pub String);

impl PairCursor {
    /// The cursor after the entry of this index key (a page's `LastEvaluatedKey`).
    fn after_entry(key: &Item) -> Result<PairCursor, StoreError> {
        let read = Reader(key);
        let created_at = read.at("created_at")?;
        Ok(PairCursor(match read.s("sk")?.as_str() {
            TASK_SORT_KEY => format!("{created_at}#{}", task_id_of(key, "pair index key")?),
            sk => format!("{created_at}#~{}~{sk}", read.s("pk")?),
        }))
    }

    /// The cursor as a `ListTasks` page token: `{createdAt}_{taskId}` after a task,
    /// `{createdAt}_binding-{bindingId}` after the pair's binding, which the index also holds.
    pub fn to_token(&self) -> Option<String> {
        let (created_at, entry) = self.0.split_once('#')?;
        let binding = entry.strip_prefix('~').and_then(binding_id_of_partition);
        let id = match binding {
            Some(binding) => format!(
                "binding-{}",
                binding.strip_suffix(BINDING_SORT_KEY)?.strip_suffix('~')?
            ),
            None => entry.to_owned(),
        };
        Some(cursor::entry_cursor(created_at, &id))
    }

    /// The cursor a page token of [`PairCursor::to_token`]'s shape names; any such token is a
    /// place in the index's order.
    pub fn from_token(token: &str) -> Option<PairCursor> {
        let (created_at, id) = token.split_once('_')?;
        if !cursor::is_moment(created_at) {
            return None;
        }
        match id.strip_prefix("binding-") {
            Some(binding) if cursor::is_id(binding) => Some(PairCursor(format!(
                "{created_at}#~{}~{BINDING_SORT_KEY}",
                binding_partition(binding)
            ))),
            None if cursor::is_id(id) => Some(PairCursor(format!("{created_at}#{id}"))),
            _ => None,
        }
    }

    /// The `pattern` of a page token in the OpenAPI document (empty: the first page).
    pub fn token_pattern() -> String {
        format!(
            "^({}_(binding-)?{})?$",
            cursor::MOMENT_PATTERN,
            cursor::ID_PATTERN
        )
    }

    /// The creation moment and table key of the entry the cursor names.
    fn place(&self) -> (&str, Item) {
        let (created_at, entry) = self.0.split_once('#').unwrap_or_default();
        let table_key = match entry
            .strip_prefix('~')
            .and_then(|keys| keys.split_once('~'))
        {
            Some((pk, sk)) => key(pk, sk),
            None => task_key(&TaskId::from(entry.to_owned())),
        };
        (created_at, table_key)
    }
}

impl Store {
    /// Of the next `limit` of `caller`'s tasks, newest first, from after `after`, those on
    /// `callee`; with the cursor after the last one read when more may follow. Each page costs
    /// one query of `limit` entries of the caller's side index (`outbound_tasks`, which holds the
    /// callee: a filter keeps the callee's) and one strongly consistent batch read of the tasks;
    /// a task past its retention is left out.
    pub async fn tasks_of_pair(
        &self,
        caller: &AgentId,
        callee: &AgentId,
        after: Option<&PairCursor>,
        limit: i32,
    ) -> Result<(Vec<Task>, Option<PairCursor>), StoreError> {
        let mut query = self
            .client()
            .query()
            .table_name(self.table())
            .index_name(PAIR_INDEX)
            .key_condition_expression("caller_agent_id = :caller")
            .filter_expression("callee_agent_id = :callee")
            .expression_attribute_values(":caller", s(caller))
            .expression_attribute_values(":callee", s(callee))
            .scan_index_forward(false)
            .limit(limit);
        if let Some(cursor) = after {
            let (created_at, table_key) = cursor.place();
            let mut start = table_key;
            start.insert("caller_agent_id".into(), s(caller));
            start.insert("created_at".into(), s(created_at));
            query = query.set_exclusive_start_key(Some(start));
        }
        let output = query.send().await.map_err(classify)?;
        // The pair's binding has the index's key attributes too: its entry is passed over.
        let task_entries = output
            .items()
            .iter()
            .filter(|entry| Reader(entry).s("sk").is_ok_and(|sk| sk == TASK_SORT_KEY));
        let ids: Vec<TaskId> = super::page::decoded(task_entries, "pair index", |entry| {
            task_id_of(entry, "pair index entry")
        });
        let (mut found, _) = self.get_tasks(&ids).await?;
        let tasks = ids.iter().filter_map(|id| found.remove(id)).collect();
        let next = match &output.last_evaluated_key {
            Some(key) => Some(PairCursor::after_entry(key)?),
            None => None,
        };
        Ok((tasks, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_cursor_names_a_task_or_the_binding_the_pair_index_also_holds() {
        let created = "2026-12-04T10:00:00.000001Z";
        let mut task = task_key(&TaskId::from(
            "9f0c7a9e-1111-4222-8333-444455556666".to_owned(),
        ));
        task.insert("created_at".into(), s(created));
        let cursor = PairCursor::after_entry(&task).unwrap();
        assert_eq!(
            cursor.0,
            format!("{created}#9f0c7a9e-1111-4222-8333-444455556666")
        );
        assert_eq!(
            cursor.place(),
            (
                created,
                task_key(&"9f0c7a9e-1111-4222-8333-444455556666".to_owned().into())
            )
        );

        let mut binding = key(binding_partition("b1"), BINDING_SORT_KEY);
        binding.insert("created_at".into(), s(created));
        let cursor = PairCursor::after_entry(&binding).unwrap();
        assert_eq!(
            cursor.place(),
            (created, key(binding_partition("b1"), BINDING_SORT_KEY))
        );
    }

    #[test]
    fn a_page_token_names_the_task_or_the_binding_its_page_ended_on() {
        let created = "2026-12-04T10:00:00.000001Z";
        let id = "9f0c7a9e-1111-4222-8333-444455556666";
        for entry in [
            task_key(&TaskId::from(id)),
            key(binding_partition(id), BINDING_SORT_KEY),
        ] {
            let mut entry = entry;
            entry.insert("created_at".into(), s(created));
            let cursor = PairCursor::after_entry(&entry).unwrap();
            let token = cursor.to_token().unwrap();
            assert_eq!(PairCursor::from_token(&token), Some(cursor));
        }
        for other in [
            "0",
            created,
            &format!("{created}_binding-x"),
            &format!("{created}#{id}"),
        ] {
            assert_eq!(PairCursor::from_token(other), None, "{other}");
        }
    }
}
