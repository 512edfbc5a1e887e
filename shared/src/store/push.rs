//! Push delivery bookkeeping on the task item: the delivery lease, the answer, the attempts log
//! and the outbox index that recovers tasks whose enqueue or delivery was lost.
//!
//! A delivery attempt first takes a lease (a conditional write naming a fresh token), so two
//! copies of one SQS message never POST the same task at once, and every write that follows is
//! conditioned on still holding that lease: an answer that arrives after a cancel is discarded.

use crate::domain::clock::Timestamp;
use crate::domain::ids::{AgentId, TaskId, TenantId};
use crate::domain::transitions::Transition;
use crate::domain::{Task, TaskState};
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::{json, Value};

use super::item::Item;
use super::item::{key, n, opt_s, s, Reader};
use super::layout::{
    attempt_sort_key, config_id_of_sort_key, deadline_shard_partition, due_sort_key,
    notify_outbox_shard_partition, outbox_shard_partition, task_partition, task_shard,
    ATTEMPT_SORT_PREFIX,
};
use super::notify::config_key;
use super::task_item::KEEP_STATUS_TIME;
use super::task_item::{logging, task_id_of, task_key, LOG_CHANGES, WITHIN_CONTENT_CAP};
use super::tasks::{conditioned, target_value};
use super::{classify, committed, Store, StoreError, TaskTransition};
use crate::domain::clock;
use crate::domain::events::Change;
use crate::domain::task::{Delivery, PackedResult, TaskResult};

/// One recorded delivery attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub number: u64,
    pub at: Timestamp,
    pub status: Option<u16>,
    pub latency_ms: u64,
    pub error: Option<String>,
}

impl Attempt {
    pub fn to_json(&self) -> Value {
        json!({
            "attempt": self.number,
            "at": self.at,
            "status": self.status,
            "latency_ms": self.latency_ms,
            "error": self.error,
        })
    }
}

/// An entry of the outbox index that fell due: a push task (`config_id: None`), or one of a
/// task's push notification configs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEntry {
    pub task_id: TaskId,
    pub config_id: Option<String>,
    /// The entry's sort key as read, for a conditional move.
    pub seen: String,
    /// For a config: how many sweeps in a row found it with nothing new to send since it last
    /// delivered an event (each one waits twice as long as the one before, see the sweeper).
    pub idle_rounds: u64,
    /// The task's tenant, which names the message the sweeper sends its group (SQS fair queues).
    pub tenant_id: Option<TenantId>,
    /// The task's callee, whose hold on deliveries the sweeper heeds (`domain::delivery_hold`).
    pub callee_id: Option<AgentId>,
}

/// Reads an outbox entry from its keys alone (whatever the index projects).
fn outbox_entry(item: &Item) -> Result<OutboxEntry, StoreError> {
    let read = Reader(item);
    let sk = read.s("sk")?;
    Ok(OutboxEntry {
        task_id: task_id_of(item, "outbox entry")?,
        config_id: config_id_of_sort_key(&sk).map(str::to_owned),
        seen: read.s("gsi1sk")?,
        idle_rounds: match item.get("idle_rounds") {
            Some(_) => read.n("idle_rounds")?,
            None => 0,
        },
        tenant_id: read.opt_id("tenant_id")?,
        callee_id: read.opt_id("callee_agent_id")?,
    })
}

/// Conditions `update` on a push task still waiting for its delivery (open, not accepted) that
/// no attempt holds a live lease of, and `also` (`:push` and `:now` are the update's own).
pub(super) fn waiting_delivery(
    update: UpdateItemFluentBuilder,
    also: &str,
) -> UpdateItemFluentBuilder {
    conditioned(
        update,
        Transition::Redeliver,
        &format!(
            " AND delivery = :push AND attribute_not_exists(delivered_at){also} \
             AND (attribute_not_exists(lease_until) OR lease_until < :now)"
        ),
    )
}

impl Store {
    /// Takes the delivery lease of push task `task_id` when it is not finished, not accepted and
    /// not leased by another attempt, for its delivery `delivery_id` (a message for a delivery
    /// that the caller's answer has since replaced takes nothing; `None`: a task stored before
    /// deliveries had ids), and counts the attempt: once against the delivery's retry budget and
    /// once in the task-wide attempt number (a task stored before attempts were numbered counts
    /// on from its delivery's attempts). The task as leased is returned: the worker needs no
    /// read of it before. An attempt is counted only when a POST follows: the worker gives the
    /// lease back ([`Store::give_back_lease`]) when it cannot make one.
    pub async fn lease_delivery(
        &self,
        task_id: &TaskId,
        delivery_id: Option<&str>,
        token: &str,
        lease_seconds: u64,
        max_attempts: u64,
    ) -> Result<TaskTransition, StoreError> {
        let until = clock::after(lease_seconds);
        let due = clock::after(lease_seconds + 30);
        let same_delivery = match delivery_id {
            Some(_) => "delivery_id = :delivery",
            None => "attribute_not_exists(delivery_id)",
        };
        let mut update = self
            .task_update(task_id)
            .update_expression(
                "SET #state = :to, updated_at = :now, \
                 lease_token = :token, lease_until = :until, gsi1pk = :outbox, gsi1sk = :due, \
                 attempt_number = if_not_exists(attempt_number, \
                     if_not_exists(delivery_attempts, :zero)) + :one \
                 REMOVE status_timestamp ADD delivery_attempts :one",
            )
            .expression_attribute_values(":to", target_value(Transition::Lease, None)?)
            .expression_attribute_values(":push", s(Delivery::Push.as_str()))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":token", s(token))
            .expression_attribute_values(":until", s(until))
            .expression_attribute_values(":outbox", s(outbox_shard_partition(task_shard(task_id))))
            .expression_attribute_values(":due", s(due_sort_key(&due, task_id)))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(max_attempts));
        if let Some(delivery_id) = delivery_id {
            update = update.expression_attribute_values(":delivery", s(delivery_id));
        }
        let update = conditioned(
            update,
            Transition::Lease,
            &format!(
                " AND delivery = :push AND attribute_not_exists(delivered_at) AND {same_delivery} \
                 AND (attribute_not_exists(lease_until) OR lease_until < :now) \
                 AND (attribute_not_exists(delivery_attempts) OR delivery_attempts < :max)"
            ),
        );
        self.transition(update).await
    }

    /// Gives back a lease taken for an attempt that could not make its POST (the body store
    /// failed): the lease lapses now and the attempt is uncounted, so the message that comes
    /// back later costs the task nothing. Only while `token` holds the lease.
    pub async fn give_back_lease(
        &self,
        task_id: &TaskId,
        token: &str,
    ) -> Result<TaskTransition, StoreError> {
        let update = self
            .task_update(task_id)
            .update_expression(
                "SET lease_until = :now, attempt_number = attempt_number - :one, \
                 delivery_attempts = delivery_attempts - :one",
            )
            .expression_attribute_values(":token", s(token))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":one", n(1));
        let update = conditioned(
            update,
            Transition::Release,
            " AND lease_token = :token AND delivery_attempts >= :one",
        );
        self.transition(update).await
    }

    /// Ends a failed attempt that will be retried: the lease lapses now and the outbox entry
    /// falls due after the retry should have happened.
    pub async fn release_for_retry(
        &self,
        task_id: &TaskId,
        token: &str,
        retry_in_seconds: u64,
    ) -> Result<TaskTransition, StoreError> {
        let due = clock::after(retry_in_seconds + 60);
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET lease_until = :now, {KEEP_STATUS_TIME}, updated_at = :now, gsi1sk = :due"
            ))
            .expression_attribute_values(":token", s(token))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":due", s(due_sort_key(&due, task_id)));
        let update = conditioned(update, Transition::Release, " AND lease_token = :token");
        self.transition(update).await
    }

    /// Moves push task `task_id`'s outbox entry to fall due at `due` (a delivery held back for
    /// long: `push/parking.rs`), while the task still waits for its delivery, no attempt holds
    /// a live lease and it is on the outbox. The task as moved; `None` when it did not move.
    pub async fn park_delivery(
        &self,
        task_id: &TaskId,
        due: &str,
    ) -> Result<Option<Task>, StoreError> {
        let update = self
            .task_update(task_id)
            .update_expression("SET gsi1sk = :due")
            .expression_attribute_values(":due", s(due_sort_key(due, task_id)))
            .expression_attribute_values(":now", s(clock::now()))
            .expression_attribute_values(":push", s(Delivery::Push.as_str()));
        let update = waiting_delivery(update, " AND attribute_exists(gsi1pk)");
        Ok(match self.transition(update).await? {
            TaskTransition::Applied(task) => Some(task),
            TaskTransition::Refused(_) => None,
        })
    }

    /// Applies the endpoint's answer, if this attempt still holds the lease.
    pub async fn apply_push_answer(
        &self,
        task_id: &TaskId,
        token: &str,
        result: &PackedResult,
    ) -> Result<TaskTransition, StoreError> {
        let update = conditioned(
            self.answer_update(Transition::Answer, task_id, result)?,
            Transition::Answer,
            &format!(" AND lease_token = :token{WITHIN_CONTENT_CAP}"),
        )
        .expression_attribute_values(":token", s(token));
        self.transition(update).await
    }

    /// The endpoint said `working`: the callee finishes through the result route before its
    /// claim deadline, like a pull callee that claimed the task.
    pub async fn accept_push(
        &self,
        task_id: &TaskId,
        token: &str,
        timeout_seconds: u64,
    ) -> Result<TaskTransition, StoreError> {
        let deadline = clock::after(timeout_seconds);
        let now = clock::now();
        let accepted = Change::state(TaskState::Working, false, &now);
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET delivered_at = :now, {KEEP_STATUS_TIME}, updated_at = :now, \
                 deadline_at = :deadline, \
                 gsi2pk = :shard, gsi2sk = :deadline_key, {LOG_CHANGES} \
                 REMOVE lease_token, lease_until, gsi1pk, gsi1sk",
            ))
            .expression_attribute_values(":token", s(token))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(":deadline", s(&deadline))
            .expression_attribute_values(":shard", s(deadline_shard_partition(task_shard(task_id))))
            .expression_attribute_values(":deadline_key", s(due_sort_key(&deadline, task_id)));
        let update = conditioned(update, Transition::Accept, " AND lease_token = :token");
        self.transition(logging(update, &[accepted])).await
    }

    /// Fails a push task whose delivery cannot succeed. With a token, only while that attempt
    /// holds the lease; without one, only while no attempt holds a live lease.
    pub async fn fail_delivery(
        &self,
        task_id: &TaskId,
        token: Option<&str>,
        error: &str,
    ) -> Result<TaskTransition, StoreError> {
        let failure = TaskResult::Failed {
            error: error.to_owned(),
        };
        let failed = PackedResult::pack("", task_id, &failure);
        let update = self.answer_update(Transition::FailDelivery, task_id, &failed)?;
        let update = match token {
            Some(token) => conditioned(
                update,
                Transition::FailDelivery,
                &format!(" AND lease_token = :token{WITHIN_CONTENT_CAP}"),
            )
            .expression_attribute_values(":token", s(token)),
            None => conditioned(
                update,
                Transition::FailDelivery,
                &format!(
                    " AND attribute_not_exists(delivered_at) \
                     AND (attribute_not_exists(lease_until) OR lease_until < :now){WITHIN_CONTENT_CAP}"
                ),
            ),
        };
        self.transition(update).await
    }

    /// Records one delivery attempt under its task, expiring with it. Each attempt has its own
    /// task-wide number, so a record never replaces another.
    pub async fn record_attempt(
        &self,
        task_id: &TaskId,
        attempt: &Attempt,
        expires_at: Option<u64>,
    ) -> Result<(), StoreError> {
        let mut item = key(task_partition(task_id), attempt_sort_key(attempt.number));
        item.insert("kind".into(), s("attempt"));
        item.insert("attempt".into(), n(attempt.number));
        item.insert("at".into(), s(&attempt.at));
        item.insert(
            "status".into(),
            match attempt.status {
                Some(status) => n(u64::from(status)),
                None => AttributeValue::Null(true),
            },
        );
        item.insert("latency_ms".into(), n(attempt.latency_ms));
        item.insert("error".into(), opt_s(attempt.error.as_deref()));
        if let Some(expires_at) = expires_at {
            item.insert("expires_at".into(), n(expires_at));
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    /// Every recorded attempt of a task, in order.
    pub async fn list_attempts(&self, task_id: &TaskId) -> Result<Vec<Attempt>, StoreError> {
        let items = self
            .query_prefix(task_partition(task_id), ATTEMPT_SORT_PREFIX)
            .await?;
        items
            .iter()
            .map(|item| {
                let read = Reader(item);
                Ok(Attempt {
                    number: read.n("attempt")?,
                    at: read.at("at")?,
                    status: match item.get("status") {
                        Some(AttributeValue::N(_)) => Some(read.n("status")? as u16),
                        _ => None,
                    },
                    latency_ms: read.n("latency_ms")?,
                    error: read.opt_s("error")?,
                })
            })
            .collect()
    }

    /// Entries on one outbox shard that fell due before `now`: push tasks (and the configs
    /// stored before configs had shards of their own).
    pub async fn outbox_due(
        &self,
        shard: char,
        now: &str,
        limit: i32,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        self.entries_due(outbox_shard_partition(shard), now, limit)
            .await
    }

    /// Push notification configs on one shard of their own outbox that fell due before `now`:
    /// configs of tasks not yet finished and fully delivered. Apart from the push tasks' shards,
    /// so that however many configs wait, a lost push delivery is never behind them.
    pub async fn notify_due(
        &self,
        shard: char,
        now: &str,
        limit: i32,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        self.entries_due(notify_outbox_shard_partition(shard), now, limit)
            .await
    }

    async fn entries_due(
        &self,
        partition: String,
        now: &str,
        limit: i32,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let items = self.query_due("gsi1", partition, now, limit).await?;
        items.iter().map(outbox_entry).collect()
    }

    /// Pushes a task's entry on `index` (`gsi1`: the outbox, `gsi2`: the deadlines) forward by
    /// `seconds`, if nobody moved it since it was read as `seen`. Returns whether this caller
    /// moved it. The write never grows the item: the new key has the old one's length.
    pub async fn bump_index_entry(
        &self,
        index: &str,
        task_id: &TaskId,
        seen: &str,
        seconds: u64,
    ) -> Result<bool, StoreError> {
        self.bump_entry_of(task_key(task_id), index, task_id, seen, seconds)
            .await
    }

    /// Moves an outbox entry of either kind to fall due again at `due` (a formatted moment), if
    /// nobody moved it since it was read; a config's entry also records `idle_rounds`. Returns
    /// whether this caller moved it.
    pub async fn bump_outbox_entry(
        &self,
        entry: &OutboxEntry,
        due: &str,
        idle_rounds: u64,
    ) -> Result<bool, StoreError> {
        let update = match &entry.config_id {
            None => self.move_entry(
                task_key(&entry.task_id),
                "gsi1",
                &entry.task_id,
                &entry.seen,
                due,
            ),
            Some(config_id) => self
                .move_entry(
                    config_key(&entry.task_id, config_id),
                    "gsi1",
                    &entry.task_id,
                    &entry.seen,
                    due,
                )
                .update_expression("SET #sk = :due, idle_rounds = :rounds")
                .expression_attribute_values(":rounds", n(idle_rounds)),
        };
        committed(update.send().await)
    }

    async fn bump_entry_of(
        &self,
        key: Item,
        index: &str,
        task_id: &TaskId,
        seen: &str,
        seconds: u64,
    ) -> Result<bool, StoreError> {
        let due = clock::after(seconds);
        committed(
            self.move_entry(key, index, task_id, seen, &due)
                .send()
                .await,
        )
    }

    /// The conditional write that moves an index entry's sort key to `due`.
    fn move_entry(
        &self,
        key: Item,
        index: &str,
        task_id: &TaskId,
        seen: &str,
        due: &str,
    ) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key))
            .update_expression("SET #sk = :due")
            .condition_expression("#sk = :seen")
            .expression_attribute_names("#sk", format!("{index}sk"))
            .expression_attribute_values(":due", s(due_sort_key(due, task_id)))
            .expression_attribute_values(":seen", s(seen))
    }
}
