//! The call-tree limits' counts: the tasks one call opened (`max_fan_out`) and the open tasks
//! of one tree (`max_open_in_tree`). Each count is a small item, moved by a conditional write,
//! so it never passes its limit and costs one write unit; a root's children are counted on its
//! tree's item, so that a call below a root takes both its counts in one write.

use aws_sdk_dynamodb::types::AttributeValue;
use futures::stream::{self, StreamExt, TryStreamExt};

use super::item::{n, Item, Reader};
use super::layout::{call_children_key, tree_open_key};
use super::{committed, Store, StoreError};
use crate::domain::clock::unix_now;
use crate::domain::ids::{CallId, TaskId, TenantId};
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
        let names = counter.names();
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(counter.key()))
            .update_expression("ADD #count :less")
            .condition_expression("#count > :zero")
            .expression_attribute_names("#count", names.count)
            .expression_attribute_values(":less", AttributeValue::N("-1".into()))
            .expression_attribute_values(":zero", n(0))
            .send()
            .await;
        committed(sent).map(|_| ())
    }

    /// Counts one more of a root's children and of its tree's open tasks, in one write on the
    /// tree's item (`Counter::Children::beside_tree`), unless either stands at its limit or
    /// is not current: `false` then, and nothing is counted (each is then counted alone, with
    /// [`Store::count_within`]).
    pub async fn count_both_within(
        &self,
        (children, children_limit): (&Counter, CountLimit),
        (tree, tree_limit): (&Counter, CountLimit),
    ) -> Result<bool, StoreError> {
        debug_assert!(children.beside_tree() && children.key() == tree.key());
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(tree.key()))
            .update_expression(
                "SET #count = #count + :one, #children = #children + :one, \
                 expires_at = :expires_at",
            )
            .condition_expression(
                "#epoch = :epoch AND #count < :max \
                 AND #children_epoch = :epoch AND #children < :children_max",
            )
            .expression_attribute_names("#count", OWN_COUNT.count)
            .expression_attribute_names("#epoch", OWN_COUNT.epoch)
            .expression_attribute_names("#children", ROOT_CHILDREN.count)
            .expression_attribute_names("#children_epoch", ROOT_CHILDREN.epoch)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":epoch", n(tree_limit.epoch))
            .expression_attribute_values(":max", n(u64::from(tree_limit.max)))
            .expression_attribute_values(":children_max", n(u64::from(children_limit.max)))
            .expression_attribute_values(
                ":expires_at",
                n(tree_limit.expires_at.max(children_limit.expires_at)),
            )
            .send()
            .await;
        committed(sent)
    }

    async fn add_one(&self, counter: &Counter, limit: CountLimit) -> Result<bool, StoreError> {
        let names = counter.names();
        let mut condition = "(#epoch = :epoch AND #count < :max)".to_owned();
        if limit.absent_is_zero {
            condition.push_str(" OR attribute_not_exists(#count)");
        }
        let mut update = "SET #count = if_not_exists(#count, :zero) + :one, #epoch = :epoch, \
                          expires_at = :expires_at"
            .to_owned();
        let mut request = self.client.update_item();
        if limit.starts_children {
            update.push_str(", #children = :zero, #children_epoch = :epoch");
            request = request
                .expression_attribute_names("#children", ROOT_CHILDREN.count)
                .expression_attribute_names("#children_epoch", ROOT_CHILDREN.epoch);
        }
        let sent = request
            .table_name(&self.table)
            .set_key(Some(counter.key()))
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#count", names.count)
            .expression_attribute_names("#epoch", names.epoch)
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
        let (read, names) = (Reader(&item), counter.names());
        let Some(count) = read.opt_n(names.count)? else {
            return Ok(None); // a tree's item that does not count its root's children (yet)
        };
        Ok(Some(Count {
            count,
            epoch: read.n_or(names.epoch, 0)?,
            recounted_at: read.n_or(names.recounted_at, 0)?,
            calls: read.n_or(names.calls, 0)?,
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
        let names = counter.names();
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(counter.key()))
            .update_expression(
                "SET #count = :count, #epoch = :epoch, #recounted_at = :recounted_at, \
                 #calls = :calls, expires_at = :expires_at",
            )
            .expression_attribute_names("#count", names.count)
            .expression_attribute_names("#epoch", names.epoch)
            .expression_attribute_names("#recounted_at", names.recounted_at)
            .expression_attribute_names("#calls", names.calls)
            .expression_attribute_values(":count", n(next.count))
            .expression_attribute_values(":epoch", n(next.epoch))
            .expression_attribute_values(":recounted_at", n(next.recounted_at))
            .expression_attribute_values(":calls", n(next.calls))
            .expression_attribute_values(":expires_at", n(limit.expires_at));
        let request = match seen {
            None => request.condition_expression("attribute_not_exists(#count)"),
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
        let (tenant_id, root_call_id) = counter.tree();
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
    /// The tasks call `parent_call_id` opened (`max_fan_out`). A root's children are counted
    /// on its tree's item, beside the tree's open tasks, while those are counted
    /// (`beside_tree`): a call below a root takes both counts in one write.
    Children {
        tenant_id: TenantId,
        root_call_id: CallId,
        parent_call_id: CallId,
        beside_tree: bool,
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
            Counter::Children {
                beside_tree: false,
                parent_call_id,
                ..
            } => call_children_key(parent_call_id),
            _ => {
                let (tenant_id, root_call_id) = self.tree();
                tree_open_key(tenant_id, root_call_id)
            }
        }
    }

    /// The tenant and root call of the tree this count is in.
    fn tree(&self) -> (&TenantId, &CallId) {
        match self {
            Counter::Children {
                tenant_id,
                root_call_id,
                ..
            }
            | Counter::OpenInTree {
                tenant_id,
                root_call_id,
            } => (tenant_id, root_call_id),
        }
    }

    fn names(&self) -> &'static CountNames {
        match self {
            Counter::Children {
                beside_tree: true, ..
            } => &ROOT_CHILDREN,
            _ => &OWN_COUNT,
        }
    }

    /// Whether this is a root's children's count, kept on its tree's item.
    pub fn beside_tree(&self) -> bool {
        matches!(
            self,
            Counter::Children {
                beside_tree: true,
                ..
            }
        )
    }
}

/// The attributes a count is kept in.
struct CountNames {
    count: &'static str,
    epoch: &'static str,
    recounted_at: &'static str,
    calls: &'static str,
}

/// A count on an item of its own, and a tree's count of its open tasks.
const OWN_COUNT: CountNames = CountNames {
    count: "count",
    epoch: "epoch",
    recounted_at: "recounted_at",
    calls: "calls",
};

/// A root's children's count, on its tree's item.
const ROOT_CHILDREN: CountNames = CountNames {
    count: "children",
    epoch: "children_epoch",
    recounted_at: "children_recounted_at",
    calls: "children_calls",
};

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
    /// Whether a root call's count of its tree's open tasks starts its children's count too, at
    /// zero (a tree's item without one was written before its root's children were counted
    /// there, or while they were not counted: its first count is made from the ledger).
    pub starts_children: bool,
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
