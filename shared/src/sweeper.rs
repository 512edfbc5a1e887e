//! The sweeper: fails every working task whose callee did not answer in time, and re-enqueues
//! push tasks whose delivery was lost (the outbox).
//! Reads and writes only overdue tasks, through the sparse deadline index. Deployed as a
//! scheduled function; the local gateway runs it on a timer. Reads of a task apply a passed
//! deadline too, so a caller never sees an overdue task as `working` between sweeps.

use crate::domain::clock;
use crate::push::Queue;
use crate::store::{Store, StoreError, TaskTransition, DEADLINE_SHARDS, OUTBOX_SHARDS};

/// Most overdue tasks handled per shard per sweep.
const BATCH: i32 = 100;

/// Runs one sweep; returns how many tasks it failed.
pub async fn sweep_overdue(store: &Store) -> Result<usize, StoreError> {
    let now = clock::now();
    let mut failed = 0;
    for shard in DEADLINE_SHARDS {
        for (task_id, deadline, timeout) in store.overdue_tasks(shard, &now, BATCH).await? {
            if let TaskTransition::Applied(_) =
                store.expire_task(&task_id, &deadline, timeout).await?
            {
                tracing::info!(task_id = %task_id, "claim deadline passed; task failed");
                failed += 1;
            }
        }
    }
    Ok(failed)
}

/// How long a re-enqueued outbox entry waits before the sweep may enqueue it again.
const OUTBOX_RETRY_SECONDS: u64 = 60;

/// Re-enqueues push tasks whose outbox entry fell due: the enqueue at open was lost, or an
/// attempt died holding its lease. Returns how many it enqueued.
pub async fn sweep_outbox(store: &Store, queue: &Queue) -> Result<usize, StoreError> {
    sweep_outbox_until(store, queue, &clock::now()).await
}

/// [`sweep_outbox`] for entries due before `now` (a formatted moment).
pub async fn sweep_outbox_until(
    store: &Store,
    queue: &Queue,
    now: &str,
) -> Result<usize, StoreError> {
    let mut enqueued = 0;
    for shard in OUTBOX_SHARDS {
        for (task_id, seen) in store.outbox_due(shard, now, BATCH).await? {
            if !store
                .bump_outbox(&task_id, &seen, OUTBOX_RETRY_SECONDS)
                .await?
            {
                continue;
            }
            match queue.enqueue(&task_id).await {
                Ok(()) => {
                    tracing::info!(task_id = %task_id, "push task re-enqueued from the outbox");
                    enqueued += 1;
                }
                Err(error) => {
                    tracing::warn!(task_id = %task_id, error = %error, "re-enqueue failed")
                }
            }
        }
    }
    Ok(enqueued)
}
