//! The task layer, below both HTTP edges and the push worker and the sweeper: every change to a
//! task (the caller's open and answer, a claim, a callee's progress, question and result, a
//! cancel, a claim deadline passed, a push delivery's verdict applied, accepted or failed), and
//! what follows every committed change, whoever made it: the task's push notification configs
//! hear of it, and the words of the message it appended are indexed.
//!
//! Every writer hands its changes on here, so a change is told to its listeners one way. The
//! store's write decides whether a change applies (its condition and target state come from
//! the state machine's table, `domain/transitions.rs`); this layer acts on what it decided.

mod caller;
pub mod claim;
pub mod contract;
pub mod tree;

use crate::bodies::Bodies;
use crate::domain::content::PackedBody;
use crate::domain::task::PackedResult;
use crate::domain::{AgentId, Task, TaskId, TenantId};
use crate::metrics::{self, Metric};
use crate::push::queue::Queue;
use crate::search::index_changed;
use crate::store::{Store, StoreError, TaskTransition};

/// The task layer over one process's store, body store and queue (borrowed: a view, built where
/// it is used, so a writer with its own store client changes tasks through that client).
#[derive(Clone, Copy)]
pub struct Tasks<'a> {
    pub store: &'a Store,
    pub bodies: &'a Bodies,
    pub queue: &'a Queue,
}

impl<'a> Tasks<'a> {
    pub fn new(store: &'a Store, bodies: &'a Bodies, queue: &'a Queue) -> Tasks<'a> {
        Tasks {
            store,
            bodies,
            queue,
        }
    }

    /// Hands a committed change of `task` on: its notification configs, its word index.
    pub async fn changed(&self, task: &Task) {
        tokio::join!(
            notify_changed(self.store, self.queue, task),
            index_changed(self.store, self.bodies, task),
        );
    }

    /// [`Tasks::changed`] for a change that added no words (a claim, an accepted delivery): its
    /// word index needs nothing (see `store/task_item.rs`, `LOG_WORDLESS_CHANGES`).
    pub async fn changed_wordless(&self, task: &Task) {
        notify_changed(self.store, self.queue, task).await;
    }

    /// Hands on the change a write applied, if it applied; the transition back.
    pub async fn handed_on(&self, transition: TaskTransition) -> TaskTransition {
        if let TaskTransition::Applied(task) = &transition {
            self.changed(task).await;
            self.left_its_tree(task).await;
            self.left_its_binding(task).await;
        }
        transition
    }

    /// Hands on the caller's answer the store took (`answered`: the task as the answer left
    /// it, so the answer's words are the ones indexed) and, for a push task, enqueues its next
    /// delivery (`delivery_id`). The task is on the outbox already: if this enqueue is lost,
    /// the outbox sweep redoes it.
    pub async fn answered(&self, answered: &Task, delivery_id: Option<String>) {
        self.changed(answered).await;
        let redelivered = Task {
            delivery_id,
            ..answered.clone()
        };
        self.enqueue_push(&redelivered).await;
    }

    /// Fails a working task whose claim deadline `deadline_at` passed (unless it moved on
    /// meanwhile), and hands the change on.
    pub async fn expire(
        &self,
        task_id: &TaskId,
        deadline_at: &str,
        timeout_seconds: u64,
    ) -> Result<TaskTransition, StoreError> {
        let expired = self
            .store
            .expire_task(task_id, deadline_at, timeout_seconds)
            .await?;
        if let TaskTransition::Applied(task) = &expired {
            tracing::info!(task_id = %task.id, "claim deadline passed; task failed");
        }
        Ok(self.handed_on(expired).await)
    }

    /// A pull callee's answer (a result, a failure or a question) to a task it holds, kept once
    /// under its idempotency `key` when there is one; handed on when it applied.
    pub async fn finish(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        callee_id: &AgentId,
        result: &PackedResult,
        key: Option<&str>,
    ) -> Result<TaskTransition, StoreError> {
        let finished = match key {
            Some(key) => {
                self.store
                    .finish_task_keyed(task_id, tenant_id, callee_id, result, key)
                    .await?
            }
            None => {
                self.store
                    .finish_task(task_id, tenant_id, callee_id, result)
                    .await?
            }
        };
        if let TaskTransition::Applied(task) = &finished {
            tracing::info!(task_id = %task.id, state = task.state.as_str(), "task answered");
            metrics::emit(Metric::TaskAnswered {
                state: task.state,
                delivery: task.delivery,
            });
        }
        Ok(self.handed_on(finished).await)
    }

    /// A callee's progress report on a task it holds; handed on when it applied.
    pub async fn report_progress(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        callee_id: &AgentId,
        message: &PackedBody,
        key: Option<&str>,
    ) -> Result<TaskTransition, StoreError> {
        let reported = self
            .store
            .report_progress(task_id, tenant_id, callee_id, message, key)
            .await?;
        if let TaskTransition::Applied(task) = &reported {
            tracing::info!(task_id = %task.id, "task progress reported");
        }
        Ok(self.handed_on(reported).await)
    }

    /// The caller's cancel of an open task on `callee` (its id or name as the route gave it);
    /// handed on when it applied.
    pub async fn cancel(
        &self,
        task_id: &TaskId,
        tenant_id: &TenantId,
        caller_id: &AgentId,
        callee: &str,
    ) -> Result<TaskTransition, StoreError> {
        let canceled = self
            .store
            .cancel_task(task_id, tenant_id, caller_id, callee)
            .await?;
        if let TaskTransition::Applied(task) = &canceled {
            tracing::info!(task_id = %task.id, "task canceled");
        }
        Ok(self.handed_on(canceled).await)
    }

    /// Applies a push delivery's answer to the task its lease `token` holds, and hands it on.
    pub async fn apply_push_answer(
        &self,
        task_id: &TaskId,
        token: &str,
        result: &PackedResult,
    ) -> Result<TaskTransition, StoreError> {
        let applied = self.store.apply_push_answer(task_id, token, result).await?;
        Ok(self.handed_on(applied).await)
    }

    /// Takes a push callee's `working`: it finishes later through the result route.
    pub async fn accept_push(
        &self,
        task_id: &TaskId,
        token: &str,
        claim_timeout_seconds: u64,
    ) -> Result<TaskTransition, StoreError> {
        let accepted = self
            .store
            .accept_push(task_id, token, claim_timeout_seconds)
            .await?;
        if let TaskTransition::Applied(task) = &accepted {
            self.changed_wordless(task).await;
        }
        Ok(accepted)
    }

    /// Makes the task's waiting push delivery due now with a fresh retry budget (see
    /// [`Store::renew_delivery`]) and enqueues it; the outbox sweep redoes a lost enqueue.
    pub async fn redeliver(&self, task_id: &TaskId) -> Result<TaskTransition, StoreError> {
        let renewed = self.store.renew_delivery(task_id).await?;
        if let TaskTransition::Applied(task) = &renewed {
            self.enqueue_push(task).await;
        }
        Ok(renewed)
    }

    /// Fails the task's push delivery (see [`Store::fail_delivery`]), and hands it on.
    pub async fn fail_delivery(
        &self,
        task_id: &TaskId,
        token: Option<&str>,
        error: &str,
    ) -> Result<TaskTransition, StoreError> {
        let failed = self.store.fail_delivery(task_id, token, error).await?;
        if matches!(failed, TaskTransition::Applied(_)) {
            metrics::emit(Metric::PushFailed);
        }
        Ok(self.handed_on(failed).await)
    }
}

/// After a committed change of `task`: asks the worker to notify its configs, if it has any. A
/// failed enqueue is logged and never fails the change: the configs are made due on the outbox,
/// for the next sweep to enqueue (and the next change enqueues again).
pub async fn notify_changed(store: &Store, queue: &Queue, task: &Task) {
    if task.notify_configs == 0 {
        return;
    }
    let Err(error) = queue.enqueue_notify(&task.id, Some(&task.tenant_id)).await else {
        return;
    };
    tracing::warn!(task_id = %task.id, error = %error, "could not enqueue the task's push notifications; the sweeper will");
    if let Err(error) = store.notify_configs_due_now(&task.id).await {
        tracing::warn!(task_id = %task.id, error = %error, "could not make the task's configs due; their next sweep sends them");
    }
}
