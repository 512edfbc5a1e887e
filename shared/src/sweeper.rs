//! The claim-deadline sweeper: fails every working task whose callee did not answer in time.
//! Reads and writes only overdue tasks, through the sparse deadline index. Deployed as a
//! scheduled function; the local gateway runs it on a timer. Reads of a task apply a passed
//! deadline too, so a caller never sees an overdue task as `working` between sweeps.

use crate::domain::clock;
use crate::store::{Store, StoreError, TaskTransition, DEADLINE_SHARDS};

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
