//! The caller's two writes: a task opened, and its answer to the task's question. The edges
//! decide whether the caller may (the gate, the limits, the sizes); these write and hand on.

use super::Tasks;
use crate::domain::clock;
use crate::domain::content::{PackedBody, Stored};
use crate::domain::task::Delivery;
use crate::domain::{Message, Task};
use crate::metrics::{self, Metric};
use crate::search::record_opened;
use crate::store::{AuditEntry, InputRefusal, OpenRefusal, OpenTask, StoreError};

impl Tasks<'_> {
    /// Writes the task `open` holds (and its conversation's join), then hands it on: its ledger
    /// items and word postings and, for a push task, its delivery's enqueue. A refusal writes
    /// nothing.
    pub async fn open(&self, open: &OpenTask) -> Result<Result<(), OpenRefusal>, StoreError> {
        if let Err(refused) = self.store.open_task(open).await? {
            return Ok(Err(refused));
        }
        let task = &open.task;
        tracing::info!(task_id = %task.id, call_id = %task.call_id, callee_id = %task.callee_agent_id, "task opened");
        metrics::emit(Metric::TaskOpened {
            delivery: task.delivery,
        });
        // Independent after the commit.
        let enqueue = async {
            match &open.parked_until {
                None => self.enqueue_push(task).await,
                Some(until) => {
                    tracing::info!(task_id = %task.id, until = %until, "the callee's deliveries are held back: parked at its open");
                }
            }
        };
        tokio::join!(
            record_opened(self.store, self.bodies, task, open.context),
            enqueue
        );
        Ok(Ok(()))
    }

    /// Takes the caller's `answer` (packed as `message`, kept once under `key`) to the question
    /// of `shown` (the task read in full before the write), with `audit` in the same
    /// transaction; then hands on the task as the answer left it, which is its answer.
    pub async fn reply(
        &self,
        shown: Task,
        answer: Message,
        message: &PackedBody,
        key: Option<&str>,
        audit: &AuditEntry,
    ) -> Result<Result<Task, InputRefusal>, StoreError> {
        let delivery_id = match self.store.answer_input(&shown, message, key, audit).await? {
            Ok(delivery_id) => delivery_id,
            Err(refused) => return Ok(Err(refused)),
        };
        tracing::info!(task_id = %shown.id, call_id = %shown.call_id, "task question answered");
        let answered = shown.answered(Stored::Inline(answer), message.bytes, &clock::now());
        self.answered(&answered, delivery_id).await;
        Ok(Ok(answered))
    }

    /// Queues a push task's delivery. The task is on the record already; if this enqueue is
    /// lost, the outbox sweep redoes it.
    pub(super) async fn enqueue_push(&self, task: &Task) {
        if task.delivery != Delivery::Push {
            return;
        }
        if let Err(error) = self.queue.enqueue_delivery(task).await {
            tracing::warn!(task_id = %task.id, error = %error, "enqueue failed; the outbox sweep will deliver the task");
        }
    }
}
