//! A new task's place in its call tree, under the tenant's call-tree limits: its depth and path
//! decided by the domain (`domain/call_tree.rs`), its parent's count of tasks opened
//! (`max_fan_out`) and its tree's count of open tasks (`max_open_in_tree`) moved here, before
//! the task is written. A finished task leaves its tree's count ([`Tasks::left_its_tree`]).

use super::Tasks;
use crate::domain::binding::RefusalReason;
use crate::domain::call_tree::{CallTreeLimits, Parent, TreePlace};
use crate::domain::clock::unix_ms;
use crate::domain::task::CallLineage;
use crate::domain::{AgentId, Task, TenantId};
use crate::store::{CountLimit, Counter, StoreError};

/// Who opens what, where: the facts the limits judge a new call by.
pub struct TreeCall<'a> {
    pub tenant_id: &'a TenantId,
    pub caller_id: &'a AgentId,
    pub callee_id: &'a AgentId,
    pub lineage: &'a CallLineage,
    pub parent: &'a Parent,
    /// When the task (and so its counts) expire, in seconds since the epoch.
    pub expires_at: u64,
}

/// A call the limits admitted: its place, and the counts it took (given back by
/// [`Tasks::leave_tree_unopened`] if its task is not written after all).
#[derive(Debug, Default)]
pub struct TreeAdmission {
    pub place: TreePlace,
    counted: Vec<Counter>,
}

impl TreeAdmission {
    /// Whether the task counts among its tree's open tasks.
    pub fn counted_in_tree(&self) -> bool {
        self.counted
            .iter()
            .any(|counter| matches!(counter, Counter::OpenInTree { .. }))
    }
}

impl Tasks<'_> {
    /// Places `call` in its tree under `limits`, taking its counts, or the reason the limits
    /// refuse it (nothing stays counted for a refused call).
    pub async fn enter_tree(
        &self,
        limits: &CallTreeLimits,
        call: &TreeCall<'_>,
    ) -> Result<Result<TreeAdmission, RefusalReason>, StoreError> {
        let place = match limits.place(call.parent, call.caller_id, call.callee_id) {
            Ok(place) => place,
            Err(reason) => return Ok(Err(reason)),
        };
        let mut admission = TreeAdmission {
            place,
            counted: Vec::new(),
        };
        let counts = counts_of(limits, call);
        if let [(children, children_limit, _), (tree, tree_limit, _)] = counts.as_slice() {
            if children.beside_tree()
                && self
                    .store
                    .count_both_within((children, *children_limit), (tree, *tree_limit))
                    .await?
            {
                admission.counted = vec![children.clone(), tree.clone()];
                return Ok(Ok(admission));
            }
        }
        for (counter, limit, refusal) in counts {
            match self.store.count_within(&counter, limit).await {
                Ok(true) => admission.counted.push(counter),
                Ok(false) => {
                    self.leave_tree_unopened(&admission).await;
                    return Ok(Err(refusal));
                }
                Err(error) => {
                    self.leave_tree_unopened(&admission).await;
                    return Err(error);
                }
            }
        }
        Ok(Ok(admission))
    }

    /// Gives back the counts an admitted call took, when its task was not written after all (a
    /// failed write, or an open repeated with the same `message_id`). A count not given back
    /// errs on the side of refusing, and is made again from the ledger before it refuses.
    pub async fn leave_tree_unopened(&self, admission: &TreeAdmission) {
        for counter in &admission.counted {
            if let Err(error) = self.store.count_down(counter).await {
                tracing::warn!(counter = ?counter, error = %error, "could not give back a call-tree count");
            }
        }
    }

    /// Takes a task that just finished off its tree's count of open tasks, if it was on it.
    pub(super) async fn left_its_tree(&self, task: &Task) {
        if !task.counted_in_tree || task.state.is_open() {
            return;
        }
        let counter = Counter::OpenInTree {
            tenant_id: task.tenant_id.clone(),
            root_call_id: task.root_call_id.clone(),
        };
        if let Err(error) = self.store.count_down(&counter).await {
            tracing::warn!(task_id = %task.id, error = %error, "could not take a finished task off its tree's count; it is counted again at its limit");
        }
    }
}

/// The counts a call must take under `limits`: its parent's tasks opened (a parent from outside
/// the ledger opened nothing here), and its tree's open tasks.
fn counts_of(
    limits: &CallTreeLimits,
    call: &TreeCall<'_>,
) -> Vec<(Counter, CountLimit, RefusalReason)> {
    let mut counts = Vec::new();
    let epoch = limits.counts_since;
    let root_call_id = &call.lineage.root_call_id;
    let known_parent = match (call.parent, &call.lineage.parent_call_id) {
        (Parent::Known { opened_at, .. }, Some(parent_id)) => Some((parent_id, opened_at)),
        _ => None,
    };
    // While a binding's limits track every call, an open with no limit of its own is counted
    // all the same (under no bound), so that the counts stay whole for the binding's.
    let tracked = |limit: Option<u32>| limit.or(limits.tracked_by_bindings.then_some(u32::MAX));
    let tree_counted = tracked(limits.max_open_in_tree).is_some();
    if let (Some(max), Some((parent_id, opened_at))) = (tracked(limits.max_fan_out), known_parent) {
        // A root's children are counted on its tree's item while the tree's open tasks are.
        let beside_tree = tree_counted && parent_id == root_call_id;
        // A parent opened since counting began has had every task it opened counted (a root
        // whose tree's item holds no count of its children did not start one there).
        let opened_since = unix_ms(opened_at).is_some_and(|at| at >= epoch);
        counts.push((
            Counter::Children {
                tenant_id: call.tenant_id.clone(),
                root_call_id: root_call_id.clone(),
                parent_call_id: parent_id.clone(),
                beside_tree,
            },
            CountLimit {
                max,
                epoch,
                absent_is_zero: opened_since && !beside_tree,
                expires_at: call.expires_at,
                starts_children: false,
            },
            RefusalReason::FanOutExceeded,
        ));
    }
    if let Some(max) = tracked(limits.max_open_in_tree) {
        let root = matches!(call.parent, Parent::None);
        counts.push((
            Counter::OpenInTree {
                tenant_id: call.tenant_id.clone(),
                root_call_id: root_call_id.clone(),
            },
            CountLimit {
                max,
                epoch,
                // A root call starts its tree: nothing of it was opened before.
                absent_is_zero: root,
                expires_at: call.expires_at,
                starts_children: root && tracked(limits.max_fan_out).is_some(),
            },
            RefusalReason::TreeOpenLimit,
        ));
    }
    counts
}
