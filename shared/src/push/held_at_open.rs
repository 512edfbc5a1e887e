//! The callees a push worker process marked to have their new push tasks parked at their open
//! (`push/parking.rs`), remembered so that a backlog parked one task after another writes its
//! callee once a hold, not once a task.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use crate::domain::clock::unix_now;
use crate::domain::ids::AgentId;

/// How much later than the mark this process last wrote on an agent a parked delivery's wait
/// must end to write the mark again: the deliveries of one hold end within a few seconds of
/// each other (their waits are spread), and each need not move the mark.
const MARK_AGAIN_AFTER_SECONDS: u64 = 10;

/// The most agents whose marks a process remembers; past it, the ones already over are dropped.
const MAX_MARKS_KEPT: usize = 10_000;

/// The holds this process marked on agents, each until when, so that a backlog parked one task
/// after another writes its callee once a hold, not once a task.
#[derive(Debug, Default)]
pub struct HeldAtOpen {
    marked: Mutex<HashMap<AgentId, u64>>,
}

impl HeldAtOpen {
    /// Whether a hold of `agent_id` until `until` needs writing: no mark this process wrote
    /// reaches within [`MARK_AGAIN_AFTER_SECONDS`] of it.
    pub(super) fn needs_mark(&self, agent_id: &AgentId, until: u64) -> bool {
        let marked = self.marked.lock().unwrap_or_else(PoisonError::into_inner);
        marked
            .get(agent_id)
            .is_none_or(|known| known.saturating_add(MARK_AGAIN_AFTER_SECONDS) < until)
    }

    pub(super) fn marked(&self, agent_id: &AgentId, until: u64) {
        let mut marked = self.marked.lock().unwrap_or_else(PoisonError::into_inner);
        if marked.len() >= MAX_MARKS_KEPT {
            let now = unix_now();
            marked.retain(|_, until| *until > now);
        }
        marked.insert(agent_id.clone(), until);
    }
}
