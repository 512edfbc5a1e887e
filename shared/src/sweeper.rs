//! The sweeper: fails every working task whose callee did not answer in time, re-enqueues
//! push tasks whose delivery was lost (the outbox), and indexes the words of tasks whose
//! indexing after a change failed (the word index's due list).
//! Reads and writes only overdue tasks, through the sparse deadline index. Deployed as a
//! scheduled function; the local gateway runs it on a timer. Reads of a task apply a passed
//! deadline too, so a caller never sees an overdue task as `working` between sweeps.
//!
//! Every entry is handled on its own: one that fails is logged with its task id, counted as
//! skipped and set aside for a while (so it cannot hold the head of its shard), and the sweep
//! goes on; the outbox sweep runs whatever the deadline sweep met.

use serde::Serialize;

use crate::bodies::Bodies;
use crate::domain::clock;
use crate::domain::ids::TaskId;
use crate::push::{notify_changed, Queue};
use crate::search::{index_changed, index_words};
use crate::store::{Store, StoreError, TaskTransition, DEADLINE_SHARDS, OUTBOX_SHARDS};

/// Most overdue tasks handled per shard per sweep.
const BATCH: i32 = 100;

/// How long an entry that could not be handled waits before a sweep tries it again.
const SET_ASIDE_SECONDS: u64 = 300;

/// What one pass did: entries handled, and entries (or whole shards) skipped after a failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Swept {
    pub done: usize,
    pub skipped: usize,
}

/// What a whole sweep did, as the scheduled function reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    pub expired: Swept,
    pub enqueued: Swept,
    pub indexed: Swept,
}

/// Every sweep, each whatever the others met; the counts go to the log too.
pub async fn sweep(store: &Store, queue: &Queue, bodies: &Bodies) -> SweepReport {
    let report = SweepReport {
        expired: sweep_overdue(store, queue, bodies).await,
        enqueued: sweep_outbox(store, queue).await,
        indexed: sweep_words(store, bodies).await,
    };
    crate::metrics::emit(crate::metrics::Metric::TasksExpired {
        count: report.expired.done as u64,
    });
    crate::metrics::emit(crate::metrics::Metric::SweepSkipped {
        count: (report.expired.skipped + report.enqueued.skipped + report.indexed.skipped) as u64,
    });
    tracing::info!(
        expired = report.expired.done,
        expired_skipped = report.expired.skipped,
        enqueued = report.enqueued.done,
        enqueue_skipped = report.enqueued.skipped,
        indexed = report.indexed.done,
        index_skipped = report.indexed.skipped,
        "sweep done"
    );
    report
}

/// How long a task's words may stay due before the sweeper indexes them: longer than the
/// request that made the change takes to index them itself.
pub const WORDS_GRACE_SECONDS: u64 = 30;

/// Indexes the words of tasks still due after [`WORDS_GRACE_SECONDS`].
pub async fn sweep_words(store: &Store, bodies: &Bodies) -> Swept {
    sweep_words_until(store, bodies, &clock::ago(WORDS_GRACE_SECONDS)).await
}

/// [`sweep_words`] for tasks whose last change came before `before` (a formatted moment).
pub async fn sweep_words_until(store: &Store, bodies: &Bodies, before: &str) -> Swept {
    let mut swept = Swept::default();
    for shard in DEADLINE_SHARDS {
        let due = match store.words_due(shard, before, BATCH).await {
            Ok(due) => due,
            Err(error) => {
                tracing::warn!(shard = %shard, error = %error, "word index due list unreadable; skipped");
                swept.skipped += 1;
                continue;
            }
        };
        for task_id in due {
            match index_words(store, bodies, &task_id).await {
                Ok(()) => swept.done += 1,
                Err(error) => {
                    tracing::error!(task_id = %task_id, error = %error, sweep = "words", "sweep skipped a task");
                    swept.skipped += 1;
                }
            }
        }
    }
    swept
}

/// Fails every task whose claim deadline passed; returns how many it failed and skipped.
pub async fn sweep_overdue(store: &Store, queue: &Queue, bodies: &Bodies) -> Swept {
    let now = clock::now();
    let mut swept = Swept::default();
    for shard in DEADLINE_SHARDS {
        let entries = match store.overdue_tasks(shard, &now, BATCH).await {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(shard = %shard, error = %error, "deadline shard unreadable; skipped");
                swept.skipped += 1;
                continue;
            }
        };
        for entry in entries {
            match store
                .expire_task(&entry.task_id, &entry.deadline_at, entry.timeout_seconds)
                .await
            {
                Ok(TaskTransition::Applied(task)) => {
                    tracing::info!(task_id = %entry.task_id, "claim deadline passed; task failed");
                    notify_changed(queue, &task).await;
                    index_changed(store, bodies, &task).await;
                    swept.done += 1;
                }
                Ok(TaskTransition::Refused(_)) => {}
                Err(error) => {
                    skip(&error, &entry.task_id, "expiry");
                    swept.skipped += 1;
                    set_aside(store, "gsi2", &entry.task_id, &entry.index_key).await;
                }
            }
        }
    }
    swept
}

fn skip(error: &StoreError, task_id: &TaskId, what: &str) {
    tracing::error!(task_id = %task_id, error = %error, sweep = what, "sweep skipped a task");
}

/// Moves a failing entry's index key forward so the next sweeps reach the entries behind it.
async fn set_aside(store: &Store, index: &str, task_id: &TaskId, seen: &str) {
    if let Err(error) = store
        .bump_index_entry(index, task_id, seen, SET_ASIDE_SECONDS)
        .await
    {
        tracing::error!(task_id = %task_id, error = %error, "could not set a failing entry aside");
    }
}

/// How long a re-enqueued outbox entry waits before the sweep may enqueue it again.
const OUTBOX_RETRY_SECONDS: u64 = 60;

/// Re-enqueues push tasks whose outbox entry fell due (the enqueue at open was lost, or an
/// attempt died holding its lease), and push notification configs of tasks not yet finished
/// and fully delivered (a notification's enqueue after a change may have been lost): each at
/// most once a minute.
pub async fn sweep_outbox(store: &Store, queue: &Queue) -> Swept {
    sweep_outbox_until(store, queue, &clock::now()).await
}

/// [`sweep_outbox`] for entries due before `now` (a formatted moment).
pub async fn sweep_outbox_until(store: &Store, queue: &Queue, now: &str) -> Swept {
    let mut swept = Swept::default();
    for shard in OUTBOX_SHARDS {
        let entries = match store.outbox_due(shard, now, BATCH).await {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(shard = %shard, error = %error, "outbox shard unreadable; skipped");
                swept.skipped += 1;
                continue;
            }
        };
        for entry in entries {
            match store.bump_outbox_entry(&entry, OUTBOX_RETRY_SECONDS).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(error) => {
                    skip(&error, &entry.task_id, "outbox");
                    swept.skipped += 1;
                    continue;
                }
            }
            let task_id = &entry.task_id;
            let enqueued = match &entry.config_id {
                None => queue.enqueue(task_id).await,
                Some(_) => queue.enqueue_notify(task_id).await,
            };
            match enqueued {
                Ok(()) => {
                    tracing::info!(task_id = %task_id, config_id = ?entry.config_id, "re-enqueued from the outbox");
                    swept.done += 1;
                }
                Err(error) => {
                    tracing::warn!(task_id = %task_id, error = %error, "re-enqueue failed");
                    swept.skipped += 1;
                }
            }
        }
    }
    swept
}
