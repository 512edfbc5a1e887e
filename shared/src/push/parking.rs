//! Parking: a task delivery held back for [`PARK_FROM`] or longer waits on the table's outbox,
//! not on the queue. The message is deleted and the task's outbox entry falls due when the wait
//! is over, for the sweeper to enqueue again (docs/reliability.md, "Fair share in the push
//! worker"). A receiver that keeps a tenant's breaker open thus holds that tenant's backlog as
//! table entries, which cost nothing while they wait, instead of as delayed messages that every
//! other tenant's deliveries share the queue with and that come back again and again.
//!
//! The first parked delivery of a hold also marks its callee (`Agent::push_held_until`): until
//! then, the callee's new push tasks are parked by their open, with no message at all, so a
//! tenant that keeps opening tasks for a receiver that keeps failing costs the queue and the
//! workers nothing more while it fails.

use std::time::Duration;

use super::queue::Job;
use super::worker::{task_id_of, MessageKind, Worker};
use crate::domain::clock::{self, unix_now};
use crate::domain::Task;

/// The shortest wait that parks a held-back delivery (an open breaker's, or a trial's under way:
/// [`super::breaker::TRIAL_WAIT`]); shorter ones (a tenant at its bound of pushes in flight,
/// held once or twice) go back on the queue.
pub const PARK_FROM: Duration = super::breaker::TRIAL_WAIT;

impl Worker {
    /// Parks `job` (a task delivery held back for `wait`) on the outbox; whether its message may
    /// go. A task no longer waiting for its delivery, or whose delivery another attempt holds,
    /// needs no message either: its outbox entry, if any, stays as it is.
    pub(super) async fn parked(&self, job: &Job, wait: Duration) -> bool {
        if wait < PARK_FROM {
            return false;
        }
        let Some((task_id, MessageKind::Deliver(_))) = task_id_of(&job.body) else {
            return false;
        };
        let wait_s = wait.as_secs().max(1);
        match self
            .store
            .park_delivery(&task_id, &clock::after(wait_s))
            .await
        {
            Ok(parked) => {
                tracing::info!(task_id = %task_id, wait_s, parked = parked.is_some(), "held-back delivery left to the outbox");
                if let Some(task) = parked {
                    self.hold_at_open(&task, unix_now() + wait_s).await;
                }
                true
            }
            Err(error) => {
                tracing::warn!(task_id = %task_id, error = %error, "could not park a held-back delivery; it goes back on the queue");
                false
            }
        }
    }

    /// Marks the callee of `parked` so that its new push tasks are parked by their open until
    /// `until`, unless this process marked it so lately. A mark not written only costs the
    /// next tasks a message each, as before.
    async fn hold_at_open(&self, parked: &Task, until: u64) {
        let callee = &parked.callee_agent_id;
        if !self.held_at_open.needs_mark(callee, until) {
            return;
        }
        let written = self
            .store
            .hold_new_deliveries(&parked.tenant_id, callee, &parked.callee_name, until)
            .await;
        match written {
            Ok(_) => {
                self.held_at_open.marked(callee, until);
                tracing::info!(callee_id = %callee, until, "new push tasks of the callee are parked at their open");
            }
            Err(error) => {
                tracing::warn!(callee_id = %callee, error = %error, "could not mark the callee's new push tasks to be parked at their open");
            }
        }
    }
}
