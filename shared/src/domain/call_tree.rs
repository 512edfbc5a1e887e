//! Call-tree limits: how deep a chain of calls may go, whether it may come back to an agent
//! already on it, how many tasks one call may open and how many of a tree may be open at once.
//! The gate holds every call's parent and root (`CallLineage`); these rules read the parent's
//! place in its tree and decide the new call's, before anything is written for it.

use serde::Serialize;

use super::clock::Timestamp;
use super::ids::AgentId;
use super::refusal::RefusalReason;

/// The depth limit of a tenant that never set one.
pub const DEFAULT_MAX_CALL_DEPTH: u32 = 16;
/// The deepest limit a tenant may set: a path of agents this long still fits a call's item.
pub const MAX_CALL_DEPTH_CEILING: u32 = 64;
/// The largest fan-out and open-in-tree limits a tenant may set.
pub const MAX_COUNT_LIMIT: u32 = 10_000;

/// A tenant's call-tree limits. `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CallTreeLimits {
    /// The most calls on one path from the root, the root call counted as 1.
    pub max_call_depth: u32,
    /// Whether a call to an agent already on its own path to the root is refused.
    pub refuse_cycles: bool,
    /// The most tasks one call (a task) may open below it.
    pub max_fan_out: Option<u32>,
    /// The most tasks of one tree open (not finished) at once.
    pub max_open_in_tree: Option<u32>,
    /// When counting began (milliseconds since the epoch): the last time a count limit was set
    /// where there was none. Counts made before it missed the tasks opened while nothing was
    /// counted, so they are made again from the ledger before they are used.
    pub counts_since: u64,
    /// Whether a binding of the tenant has limits of its own that need every call tracked
    /// (`BindingLimits::needs_tracking`): then every call keeps its path and every open is
    /// counted, limited or not.
    #[serde(skip)]
    pub tracked_by_bindings: bool,
}

impl Default for CallTreeLimits {
    fn default() -> Self {
        CallTreeLimits {
            max_call_depth: DEFAULT_MAX_CALL_DEPTH,
            refuse_cycles: false,
            max_fan_out: None,
            max_open_in_tree: None,
            counts_since: 0,
            tracked_by_bindings: false,
        }
    }
}

/// Where a call sits in its tree: its depth (a root call is 1) and, when the tenant refuses
/// cycles, every agent on its path from the root's caller to its callee.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TreePlace {
    pub depth: u32,
    pub path: Option<Vec<AgentId>>,
}

/// The parent of a new call as the ledger knows it: its place, when the parent is a call of this
/// tenant's ledger; a parent the ledger does not know is taken as the root (depth 1), with no
/// path known beyond it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parent {
    None,
    Unknown,
    Known {
        place: TreePlace,
        /// When the parent call was opened.
        opened_at: Timestamp,
        /// The agent that made the parent call.
        caller: AgentId,
    },
}

impl CallTreeLimits {
    /// These limits as changed to `next` at `now_ms`: counting begins again when what is
    /// counted changes, a count limit set where there was none or taken away. A count set
    /// misses the opens made without it; and a root's children are counted beside its tree's
    /// open tasks only while those are counted, so they move when the tree's limit goes.
    pub fn changed_to(&self, mut next: CallTreeLimits, now_ms: u64) -> CallTreeLimits {
        next.tracked_by_bindings = self.tracked_by_bindings;
        let changes = self.max_fan_out.is_some() != next.max_fan_out.is_some()
            || self.max_open_in_tree.is_some() != next.max_open_in_tree.is_some();
        next.counts_since = if changes { now_ms } else { self.counts_since };
        next
    }

    /// The new call's place below `parent`, from `caller` to `callee`, or the reason the limits
    /// refuse it: deeper than `max_call_depth` (`depth_exceeded`), or back to an agent on its
    /// path when cycles are refused (`cycle`). A parent whose path is not known (written before
    /// cycles were refused) gives a path from the caller on.
    pub fn place(
        &self,
        parent: &Parent,
        caller: &AgentId,
        callee: &AgentId,
    ) -> Result<TreePlace, RefusalReason> {
        let (parent_depth, parent_path) = match parent {
            Parent::None => (0, None),
            Parent::Unknown => (1, None),
            Parent::Known { place, .. } => (place.depth, place.path.clone()),
        };
        let depth = parent_depth.saturating_add(1);
        if depth > self.max_call_depth {
            return Err(RefusalReason::DepthExceeded);
        }
        if !self.refuse_cycles && !self.tracked_by_bindings {
            return Ok(TreePlace { depth, path: None });
        }
        let mut path = parent_path.unwrap_or_default();
        if path.last() != Some(caller) {
            path.push(caller.clone());
        }
        if self.refuse_cycles && path.contains(callee) {
            return Err(RefusalReason::Cycle);
        }
        path.push(callee.clone());
        Ok(TreePlace {
            depth,
            path: Some(path),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str) -> AgentId {
        AgentId::from(name.to_owned())
    }

    fn known(place: TreePlace) -> Parent {
        Parent::Known {
            place,
            opened_at: Timestamp::default(),
            caller: agent("parent-caller"),
        }
    }

    fn limits(depth: u32, cycles: bool) -> CallTreeLimits {
        CallTreeLimits {
            max_call_depth: depth,
            refuse_cycles: cycles,
            ..CallTreeLimits::default()
        }
    }

    #[test]
    fn a_root_call_is_depth_one_and_each_call_below_one_deeper() {
        let limits = limits(3, false);
        let (a, b) = (agent("a"), agent("b"));
        let root = limits.place(&Parent::None, &a, &b).unwrap();
        assert_eq!(root.depth, 1);
        let second = limits.place(&known(root), &b, &a).unwrap();
        assert_eq!(second.depth, 2);
        let third = limits.place(&known(second), &a, &b).unwrap();
        assert_eq!(third.depth, 3);
        assert_eq!(
            limits.place(&known(third), &b, &a),
            Err(RefusalReason::DepthExceeded)
        );
        // A parent from outside the ledger is the root: its child is depth 2.
        assert_eq!(limits.place(&Parent::Unknown, &a, &b).unwrap().depth, 2);
    }

    #[test]
    fn a_call_back_to_an_agent_on_its_path_is_a_cycle_only_when_cycles_are_refused() {
        let (a, b, c) = (agent("a"), agent("b"), agent("c"));
        let open = limits(16, false);
        let root = open.place(&Parent::None, &a, &b).unwrap();
        assert_eq!(root.path, None);
        assert!(open.place(&known(root), &b, &a).is_ok());

        let closed = limits(16, true);
        let root = closed.place(&Parent::None, &a, &b).unwrap();
        assert_eq!(root.path, Some(vec![a.clone(), b.clone()]));
        let down = closed.place(&known(root.clone()), &b, &c).unwrap();
        assert_eq!(down.path, Some(vec![a.clone(), b.clone(), c.clone()]));
        assert_eq!(
            closed.place(&known(down.clone()), &c, &a),
            Err(RefusalReason::Cycle)
        );
        assert_eq!(
            closed.place(&known(down), &c, &b),
            Err(RefusalReason::Cycle)
        );
        // Calling oneself is the shortest cycle.
        assert_eq!(
            closed.place(&Parent::None, &a, &a),
            Err(RefusalReason::Cycle)
        );
        // A caller that is not its parent's callee joins the path before its callee.
        let aside = closed.place(&known(root), &c, &a);
        assert_eq!(aside, Err(RefusalReason::Cycle));
    }

    #[test]
    fn a_parent_without_a_known_path_starts_the_path_at_the_caller() {
        let (a, b) = (agent("a"), agent("b"));
        let closed = limits(16, true);
        let old = TreePlace {
            depth: 4,
            path: None,
        };
        let place = closed.place(&known(old), &a, &b).unwrap();
        assert_eq!(place.depth, 5);
        assert_eq!(place.path, Some(vec![a.clone(), b.clone()]));
        assert_eq!(
            closed.place(&known(place), &b, &a),
            Err(RefusalReason::Cycle)
        );
    }

    #[test]
    fn counting_begins_again_when_a_count_limit_is_set_or_taken_away() {
        let counted = |fan_out: Option<u32>, open: Option<u32>| CallTreeLimits {
            max_fan_out: fan_out,
            max_open_in_tree: open,
            counts_since: 7,
            ..CallTreeLimits::default()
        };
        let both = counted(Some(2), Some(5));
        assert_eq!(
            both.changed_to(counted(Some(3), Some(9)), 99).counts_since,
            7
        );
        assert_eq!(both.changed_to(counted(Some(2), None), 99).counts_since, 99);
        assert_eq!(both.changed_to(counted(None, Some(5)), 99).counts_since, 99);
        let none = counted(None, None);
        assert_eq!(none.changed_to(counted(None, Some(1)), 99).counts_since, 99);
        assert_eq!(none.changed_to(limits(3, true), 99).counts_since, 7);
    }
}
