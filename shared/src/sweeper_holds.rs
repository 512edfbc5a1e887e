//! A held callee's parked backlog comes back one trial at a time (`domain::delivery_hold`). A
//! sweep reads each callee's hold once (at the first of its outbox entries it meets), and
//! decides for every entry of that callee: sent as usual, sent as the one trial, left waiting
//! (moved to the hold's end without a message), or left alone (the trial another sweep is
//! sending). Two sweeps at once start one trial between them (the start is a conditional
//! write). A hold that cannot be read or moved lets the entry go as before: the worker's
//! breaker still holds the receiver back, at the old cost.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::domain::clock;
use crate::domain::delivery_hold::{DeliveryHold, HoldAt, TRIAL_WINDOW_SECONDS};
use crate::domain::ids::{AgentId, TaskId, TenantId};
use crate::store::{HeldCallee, OutboxEntry, Store};

/// What a sweep does with an outbox entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Send,
    /// Moved to wait until then (seconds since the Unix epoch), no message sent.
    WaitUntil(u64),
    /// Not touched: the trial another sweep sends.
    Leave,
}

/// What a sweep decided for a callee's entries: the trial's task apart.
#[derive(Debug, Clone)]
struct ForCallee {
    rest: Decision,
    trial_task: Option<String>,
}

impl ForCallee {
    fn all(rest: Decision) -> ForCallee {
        ForCallee {
            rest,
            trial_task: None,
        }
    }

    fn waiting_beside(hold: &DeliveryHold, until: u64) -> ForCallee {
        ForCallee {
            rest: Decision::WaitUntil(until),
            trial_task: hold.trial_task.clone(),
        }
    }

    fn of(&self, task_id: &TaskId) -> Decision {
        match &self.trial_task {
            Some(trial) if trial == task_id.as_str() => Decision::Leave,
            _ => self.rest,
        }
    }
}

/// The holds one sweep has read or moved, by callee.
pub(crate) struct Holds<'a> {
    store: &'a Store,
    now: u64,
    decided: Mutex<HashMap<AgentId, ForCallee>>,
}

impl<'a> Holds<'a> {
    /// The holds of a sweep run as if at `now` (a formatted moment).
    pub(crate) fn at(store: &'a Store, now: &str) -> Holds<'a> {
        let now = clock::parse(now).map_or_else(clock::unix_now, |at| {
            u64::try_from(at.unix_timestamp()).unwrap_or_default()
        });
        Holds {
            store,
            now,
            decided: Mutex::default(),
        }
    }

    /// What to do with `entry`: only a task's delivery heeds its callee's hold.
    pub(crate) async fn decide(&self, entry: &OutboxEntry) -> Decision {
        let (None, Some(tenant_id), Some(callee_id)) =
            (&entry.config_id, &entry.tenant_id, &entry.callee_id)
        else {
            return Decision::Send;
        };
        if let Some(decided) = self.decided(callee_id) {
            return decided.of(&entry.task_id);
        }
        let callee = (tenant_id, callee_id);
        let (decision, for_the_rest) = self.read_and_move(callee, &entry.task_id).await;
        self.remember(callee_id, for_the_rest);
        decision
    }

    /// The callee's hold, read and moved as it asks: the decision for `task_id`'s entry, and for
    /// the callee's other entries in this sweep.
    async fn read_and_move(
        &self,
        (tenant_id, agent_id): (&TenantId, &AgentId),
        task_id: &TaskId,
    ) -> (Decision, ForCallee) {
        let Some((name, hold)) = self.read(agent_id).await else {
            return (Decision::Send, ForCallee::all(Decision::Send));
        };
        let callee = HeldCallee {
            tenant_id,
            agent_id,
            name: &name,
        };
        let for_the_rest = match hold.at(self.now) {
            HoldAt::Free => ForCallee::all(Decision::Send),
            HoldAt::Stands(until) => ForCallee::waiting_beside(&hold, until),
            HoldAt::TrialPassed(until) => {
                self.end_hold(&callee, until).await;
                ForCallee::all(Decision::Send)
            }
            HoldAt::Ended(ended) => return self.start_trial(&callee, ended, task_id).await,
        };
        (for_the_rest.of(task_id), for_the_rest)
    }

    /// One trial after the hold that ended at `ended`: `task_id`'s entry goes if this sweep
    /// started it, and the callee's other entries wait for the trial's end.
    async fn start_trial(
        &self,
        callee: &HeldCallee<'_>,
        ended: u64,
        task_id: &TaskId,
    ) -> (Decision, ForCallee) {
        let trial_until = self.now + TRIAL_WINDOW_SECONDS;
        let started = self
            .store
            .start_delivery_trial(callee, ended, trial_until, task_id)
            .await;
        match started {
            Ok(true) => {
                tracing::info!(callee_id = %callee.agent_id, task_id = %task_id, trial_until, "a held callee's trial delivery goes");
                let rest = ForCallee {
                    rest: Decision::WaitUntil(trial_until),
                    trial_task: Some(task_id.as_str().to_owned()),
                };
                (Decision::Send, rest)
            }
            // Another sweep started a trial: its task is left to it.
            Ok(false) => match self.read(callee.agent_id).await {
                Some((_, hold)) => {
                    let until = hold.held_until.unwrap_or(trial_until);
                    let rest = ForCallee::waiting_beside(&hold, until);
                    (rest.of(task_id), rest)
                }
                None => (Decision::Send, ForCallee::all(Decision::Send)),
            },
            Err(error) => {
                tracing::warn!(callee_id = %callee.agent_id, error = %error, "could not start the callee's trial; its deliveries go");
                (Decision::Send, ForCallee::all(Decision::Send))
            }
        }
    }

    async fn read(&self, agent_id: &AgentId) -> Option<(String, DeliveryHold)> {
        match self.store.delivery_hold(agent_id).await {
            Ok(read) => read,
            Err(error) => {
                tracing::warn!(callee_id = %agent_id, error = %error, "callee's hold unreadable; its deliveries go as they come");
                None
            }
        }
    }

    async fn end_hold(&self, callee: &HeldCallee<'_>, until: u64) {
        match self.store.end_delivery_hold(callee, until).await {
            Ok(ended) => {
                tracing::info!(callee_id = %callee.agent_id, ended, "the trial went through; the callee's held deliveries go")
            }
            Err(error) => {
                tracing::warn!(callee_id = %callee.agent_id, error = %error, "could not end the callee's hold; its deliveries go")
            }
        }
    }

    fn decided(&self, callee_id: &AgentId) -> Option<ForCallee> {
        self.decided
            .lock()
            .ok()
            .and_then(|decided| decided.get(callee_id).cloned())
    }

    fn remember(&self, callee_id: &AgentId, decision: ForCallee) {
        if let Ok(mut decided) = self.decided.lock() {
            decided.entry(callee_id.clone()).or_insert(decision);
        }
    }
}
