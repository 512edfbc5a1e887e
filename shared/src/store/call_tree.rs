//! The call-tree limits' reads and counts: a parent call's place in its tree (its depth and,
//! when cycles are refused, its path), the tasks one call opened (`max_fan_out`) and the open
//! tasks of one tree (`max_open_in_tree`). Each count is a small item of its own, moved by a
//! conditional write, so it never passes its limit and costs one write unit.

use aws_sdk_dynamodb::types::AttributeValue;
use futures::stream::{self, StreamExt, TryStreamExt};

use super::item::{key, n, Item, Reader};
use super::layout::{call_children_key, call_partition, tree_open_key, CALL_SORT_KEY};
use super::{committed, Store, StoreError};
use crate::domain::call_tree::{TreePlace, MAX_CALL_DEPTH_CEILING};
use crate::domain::clock::{unix_now, Timestamp};
use crate::domain::ids::{AgentId, CallId, TaskId, TenantId};
use crate::domain::trace::TraceContext;

/// A parent call of this tenant's ledger: its tree's root and its place there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParentCall {
    pub root_call_id: CallId,
    /// The agent that made the call.
    pub caller_agent_id: AgentId,
    pub place: TreePlace,
    /// When the parent call was opened.
    pub opened_at: Timestamp,
    /// The trace the parent call's open continued, which a child open that brings none joins.
    pub trace: Option<TraceContext>,
}

/// How often a count is tried again after another writer moved it.
const COUNT_ATTEMPTS: usize = 4;
/// How many reads of a tree's tasks a recount runs at once.
const RECOUNT_READS_AT_ONCE: usize = 16;
/// The most calls a recount reads the tasks of; a bigger tree keeps its count.
const RECOUNT_MAX_CALLS: usize = 2_000;
/// A tree of up to this many calls is counted again whenever its count stands at its limit;
/// a bigger one at most every [`RECOUNT_BIG_TREE_EVERY_SECONDS`].
const RECOUNT_FREELY_UP_TO: u64 = 100;
const RECOUNT_BIG_TREE_EVERY_SECONDS: u64 = 30;

impl Store {
    /// `parent_call_id` as this tenant's ledger holds it, `None` when it holds no such call.
    /// A call written before calls kept their depth is placed by walking up its parents.
    pub async fn parent_call(
        &self,
        tenant_id: &TenantId,
        parent_call_id: &CallId,
    ) -> Result<Option<ParentCall>, StoreError> {
        let Some(item) = self.call_of_tenant(tenant_id, parent_call_id).await? else {
            return Ok(None);
        };
        let read = Reader(&item);
        let depth = match stored_depth(&item)? {
            Some(depth) => depth,
            None => self.depth_by_walking(tenant_id, &item).await?,
        };
        let path = match item.get("path") {
            Some(AttributeValue::L(agents)) => Some(
                agents
                    .iter()
                    .map(|agent| match agent {
                        AttributeValue::S(id) => Ok(AgentId::from(id.clone())),
                        _ => Err(StoreError::Corrupt(
                            "a call's path holds a non-string".into(),
                        )),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            _ => None,
        };
        Ok(Some(ParentCall {
            root_call_id: read.id("root_call_id")?,
            caller_agent_id: read.id("caller_agent_id")?,
            place: TreePlace { depth, path },
            opened_at: read.at("at")?,
            trace: read.trace()?,
        }))
    }

    async fn call_of_tenant(
        &self,
        tenant_id: &TenantId,
        call_id: &str,
    ) -> Result<Option<Item>, StoreError> {
        let item = self
            .get(key(call_partition(call_id), CALL_SORT_KEY))
            .await?;
        Ok(item.filter(|item| Reader(item).s("tenant_id").ok().as_deref() == Some(tenant_id)))
    }

    /// The depth of a call that does not say it: a call without a parent, or whose parent the
    /// ledger does not hold, is 1 or 2; else one more than its parent, read up to the deepest
    /// limit a tenant may set (a chain longer than that is past every limit anyway).
    async fn depth_by_walking(&self, tenant_id: &TenantId, call: &Item) -> Result<u32, StoreError> {
        let mut depth = 1;
        let mut parent = Reader(call).opt_s("parent_call_id")?;
        while let Some(parent_id) = parent {
            depth += 1;
            if depth > MAX_CALL_DEPTH_CEILING {
                break;
            }
            let Some(item) = self.call_of_tenant(tenant_id, &parent_id).await? else {
                break;
            };
            if let Some(known) = stored_depth(&item)? {
                return Ok(known.saturating_add(depth - 1));
            }
            parent = Reader(&item).opt_s("parent_call_id")?;
        }
        Ok(depth)
    }

    /// Counts one more against `counter` unless it stands at `max`: `false` when it does. A
    /// count is good for the `epoch` it was made in (`CallTreeLimits::counts_since`): one of
    /// another epoch, or none where tasks may have been opened uncounted (`absent_is_zero`
    /// false), is counted again from the ledger first; so is a tree's count at its limit (a
    /// finish it missed). What it counts again from is exact, so a count never refuses a call
    /// the ledger would admit.
    pub async fn count_within(
        &self,
        counter: &Counter,
        limit: CountLimit,
    ) -> Result<bool, StoreError> {
        for _ in 0..COUNT_ATTEMPTS {
            if self.add_one(counter, limit).await? {
                return Ok(true);
            }
            let seen = self.read_count(counter).await?;
            let current = seen.as_ref().is_some_and(|seen| seen.epoch == limit.epoch);
            if current
                && seen
                    .as_ref()
                    .is_some_and(|seen| seen.count < u64::from(limit.max))
            {
                continue; // another writer moved it meanwhile
            }
            let recounted = match (counter, current) {
                // A call's children never leave its count: a current count is exact.
                (Counter::Children { .. }, true) => return Ok(false),
                // A big tree at its limit is counted again at most every so often.
                (_, true) if seen.as_ref().is_some_and(Count::recounted_lately) => {
                    return Ok(false)
                }
                _ => self.recount(counter).await?,
            };
            let Some((exact, calls)) = recounted else {
                return Ok(false);
            };
            let admitted = exact < u64::from(limit.max);
            let next = Count {
                count: exact + u64::from(admitted),
                epoch: limit.epoch,
                recounted_at: unix_now(),
                calls,
            };
            if self.set_count(counter, seen.as_ref(), &next, limit).await? {
                tracing::info!(counter = ?counter, exact, admitted, "a call-tree count was counted again");
                return Ok(admitted);
            }
        }
        Err(StoreError::Unavailable(
            "a call-tree count kept changing under this write".into(),
        ))
    }

    /// One fewer on `counter` (never below zero): a counted task finished, or was not opened.
    pub async fn count_down(&self, counter: &Counter) -> Result<(), StoreError> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(counter.key()))
            .update_expression("ADD #count :less")
            .condition_expression("#count > :zero")
            .expression_attribute_names("#count", "count")
            .expression_attribute_values(":less", AttributeValue::N("-1".into()))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        committed(sent).map(|_| ())
    }

    async fn add_one(&self, counter: &Counter, limit: CountLimit) -> Result<bool, StoreError> {
        let mut condition = "(#epoch = :epoch AND #count < :max)".to_owned();
        if limit.absent_is_zero {
            condition.push_str(" OR attribute_not_exists(pk)");
        }
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(counter.key()))
            .update_expression(
                "SET #count = if_not_exists(#count, :zero) + :one, #epoch = :epoch, \
                 expires_at = :expires_at",
            )
            .condition_expression(condition)
            .expression_attribute_names("#count", "count")
            .expression_attribute_names("#epoch", "epoch")
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":max", n(u64::from(limit.max)))
            .expression_attribute_values(":epoch", n(limit.epoch))
            .expression_attribute_values(":expires_at", n(limit.expires_at))
            .send()
            .await;
        committed(sent)
    }

    async fn read_count(&self, counter: &Counter) -> Result<Option<Count>, StoreError> {
        let Some(item) = self.get(counter.key()).await? else {
            return Ok(None);
        };
        let read = Reader(&item);
        Ok(Some(Count {
            count: read.n("count")?,
            epoch: read.n_or("epoch", 0)?,
            recounted_at: read.n_or("recounted_at", 0)?,
            calls: read.n_or("calls", 0)?,
        }))
    }

    /// Sets `counter` to `next`, if it still stands as `seen`.
    async fn set_count(
        &self,
        counter: &Counter,
        seen: Option<&Count>,
        next: &Count,
        limit: CountLimit,
    ) -> Result<bool, StoreError> {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(counter.key()))
            .update_expression(
                "SET #count = :count, #epoch = :epoch, #recounted_at = :recounted_at, \
                 #calls = :calls, expires_at = :expires_at",
            )
            .expression_attribute_names("#count", "count")
            .expression_attribute_names("#epoch", "epoch")
            .expression_attribute_names("#recounted_at", "recounted_at")
            .expression_attribute_names("#calls", "calls")
            .expression_attribute_values(":count", n(next.count))
            .expression_attribute_values(":epoch", n(next.epoch))
            .expression_attribute_values(":recounted_at", n(next.recounted_at))
            .expression_attribute_values(":calls", n(next.calls))
            .expression_attribute_values(":expires_at", n(limit.expires_at));
        let request = match seen {
            None => request.condition_expression("attribute_not_exists(pk)"),
            Some(seen) => request
                .condition_expression("#count = :seen_count AND #epoch = :seen_epoch")
                .expression_attribute_values(":seen_count", n(seen.count))
                .expression_attribute_values(":seen_epoch", n(seen.epoch)),
        };
        committed(request.send().await)
    }

    /// What `counter` counts, read from the ledger: the calls whose parent is the call, or the
    /// open tasks of the tree; with the calls the tree holds. `None` for a tree too big to count
    /// again.
    async fn recount(&self, counter: &Counter) -> Result<Option<(u64, u64)>, StoreError> {
        let (tenant_id, root_call_id) = match counter {
            Counter::Children {
                tenant_id,
                root_call_id,
                ..
            }
            | Counter::OpenInTree {
                tenant_id,
                root_call_id,
            } => (tenant_id, root_call_id),
        };
        let calls = self.calls_of_root(tenant_id, root_call_id).await?;
        if calls.len() > RECOUNT_MAX_CALLS {
            return Ok(None);
        }
        let in_tree = calls.len() as u64;
        if let Counter::Children { parent_call_id, .. } = counter {
            let children = calls
                .iter()
                .filter(|call| call["parent_call_id"].as_str() == Some(parent_call_id.as_str()))
                .count();
            return Ok(Some((children as u64, in_tree)));
        }
        let task_ids: Vec<TaskId> = calls
            .iter()
            .filter_map(|call| call["task_id"].as_str())
            .map(|id| TaskId::from(id.to_owned()))
            .collect();
        let open: u64 = stream::iter(task_ids)
            .map(|task_id| async move { self.get_task(&task_id).await })
            .buffer_unordered(RECOUNT_READS_AT_ONCE)
            .try_fold(0, |open, task| async move {
                Ok(open + u64::from(task.is_some_and(|task| task.state.is_open())))
            })
            .await?;
        Ok(Some((open, in_tree)))
    }
}

/// What a call-tree count counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counter {
    /// The tasks call `parent_call_id` opened (`max_fan_out`).
    Children {
        tenant_id: TenantId,
        root_call_id: CallId,
        parent_call_id: CallId,
    },
    /// The open tasks of one tree (`max_open_in_tree`).
    OpenInTree {
        tenant_id: TenantId,
        root_call_id: CallId,
    },
}

impl Counter {
    fn key(&self) -> Item {
        match self {
            Counter::Children { parent_call_id, .. } => call_children_key(parent_call_id),
            Counter::OpenInTree {
                tenant_id,
                root_call_id,
            } => tree_open_key(tenant_id, root_call_id),
        }
    }
}

/// The limit a count is held to, and what its count is good for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountLimit {
    pub max: u32,
    /// The tenant's counting epoch (`CallTreeLimits::counts_since`).
    pub epoch: u64,
    /// Whether no count at all means nothing was opened yet (a new tree; a parent opened in
    /// this epoch), so the first count needs no recount.
    pub absent_is_zero: bool,
    /// When the count's item expires, in seconds since the epoch.
    pub expires_at: u64,
}

/// A count as stored, and its last recount: when, and how many calls the tree held then.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Count {
    count: u64,
    epoch: u64,
    recounted_at: u64,
    calls: u64,
}

impl Count {
    /// Whether this is a big tree's count, counted again a moment ago: a refusal at its limit
    /// then costs one read, not a read of every task of the tree, however often it comes.
    fn recounted_lately(&self) -> bool {
        self.calls > RECOUNT_FREELY_UP_TO
            && unix_now().saturating_sub(self.recounted_at) < RECOUNT_BIG_TREE_EVERY_SECONDS
    }
}

/// The depth a call item keeps, if it was written after calls kept theirs.
fn stored_depth(call: &Item) -> Result<Option<u32>, StoreError> {
    Ok(Reader(call)
        .opt_n("depth")?
        .map(|depth| u32::try_from(depth).unwrap_or(u32::MAX)))
}
