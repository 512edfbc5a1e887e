//! The sweeper: fails every working task whose callee did not answer in time, re-enqueues
//! push tasks whose delivery was lost (the outbox), and indexes the words of tasks whose
//! indexing after a change failed (the word index's due list).
//! Reads and writes only overdue tasks, through the sparse deadline index. Deployed as a
//! scheduled function; the local gateway runs it on a timer. Reads of a task apply a passed
//! deadline too, so a caller never sees an overdue task as `working` between sweeps.
//!
//! Every entry is handled on its own: one that fails is logged with its task id, counted as
//! skipped and set aside for a while (so it cannot hold the head of its shard), and the sweep
//! goes on. The sweeps run side by side, every shard at once, each paging through its shard
//! until nothing is due or [`SWEEP_BUDGET`] is spent: however long one list is, the others are
//! swept in the same run. Push notification configs have outbox shards of their own, and one
//! with nothing new to send falls due less and less often (see [`idle_interval`]).

use std::future::Future;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::bodies::Bodies;
use crate::domain::clock;
use crate::domain::ids::TaskId;
use crate::push::Queue;
use crate::search::index_words;
use crate::store::{
    OutboxEntry, OverdueEntry, Store, StoreError, TaskTransition, WordsLane, DEADLINE_SHARDS,
};
use crate::sweeper_holds::{Decision, Holds};
use crate::tasks::Tasks;

/// Most entries read per page of a shard.
const BATCH: i32 = 100;

/// How long one sweep pages on: well within the scheduled function's 60 s, so that what a page
/// started finishes before the function's time is up.
pub const SWEEP_BUDGET: Duration = Duration::from_secs(40);

/// How long an entry that could not be handled waits before a sweep tries it again.
const SET_ASIDE_SECONDS: u64 = 300;

/// What one pass did: entries handled, and entries (or whole shards) skipped after a failure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Swept {
    pub done: usize,
    pub skipped: usize,
}

impl std::ops::AddAssign for Swept {
    fn add_assign(&mut self, other: Swept) {
        self.done += other.done;
        self.skipped += other.skipped;
    }
}

impl std::iter::Sum for Swept {
    fn sum<I: Iterator<Item = Swept>>(passes: I) -> Swept {
        passes.fold(Swept::default(), |mut total, pass| {
            total += pass;
            total
        })
    }
}

/// One page of a shard: what it did, and whether the shard may hold more that is due.
struct Page {
    swept: Swept,
    full: bool,
}

impl Page {
    /// A page that read `read` entries (a full page when it read [`BATCH`]).
    fn of(read: usize, swept: Swept) -> Page {
        Page {
            swept,
            full: read >= BATCH as usize,
        }
    }

    /// A shard that could not be read: counted as skipped, and left for the next sweep.
    fn unreadable() -> Page {
        Page {
            swept: Swept {
                done: 0,
                skipped: 1,
            },
            full: false,
        }
    }
}

/// Pages through one shard until a page is not full, a page handled nothing (what is left keeps
/// failing), or `until` passes.
async fn drain<F, Fut>(until: Instant, mut page: F) -> Swept
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Page>,
{
    let mut swept = Swept::default();
    loop {
        let Page { swept: this, full } = page().await;
        swept += this;
        // Entries that keep failing stay due: a page that handled none of them ends the shard.
        if !full || this.skipped >= BATCH as usize || Instant::now() >= until {
            return swept;
        }
    }
}

/// Runs `shard_pass` on every shard at once, paging each with [`drain`].
async fn every_shard<F, Fut>(until: Instant, shard_pass: F) -> Swept
where
    F: Fn(char) -> Fut,
    Fut: Future<Output = Page>,
{
    let shard_pass = &shard_pass;
    let shards = DEADLINE_SHARDS
        .iter()
        .map(|&shard| drain(until, move || shard_pass(shard)));
    futures::future::join_all(shards).await.into_iter().sum()
}

/// What a whole sweep did, as the scheduled function reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    pub expired: Swept,
    pub enqueued: Swept,
    pub indexed: Swept,
}

/// Every sweep, side by side; the counts go to the log too.
pub async fn sweep(store: &Store, queue: &Queue, bodies: &Bodies) -> SweepReport {
    let until = Instant::now() + SWEEP_BUDGET;
    let now = clock::now();
    let words_before = clock::ago(WORDS_GRACE_SECONDS);
    let (expired, enqueued, indexed) = tokio::join!(
        sweep_overdue_within(store, queue, bodies, until),
        sweep_outbox_within(store, queue, &now, until),
        sweep_words_within(store, bodies, &words_before, until),
    );
    let report = SweepReport {
        expired,
        enqueued,
        indexed,
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
    sweep_words_within(store, bodies, before, Instant::now() + SWEEP_BUDGET).await
}

async fn sweep_words_within(store: &Store, bodies: &Bodies, before: &str, until: Instant) -> Swept {
    let due = every_shard(until, |shard| async move {
        let page = words_page(store, bodies, WordsLane::Due, shard, before).await;
        Page::of(page.read, page.swept)
    });
    // One page a shard of the tasks set aside, which may keep failing: never paged through.
    let aside = futures::future::join_all(DEADLINE_SHARDS.iter().map(|&shard| async move {
        words_page(store, bodies, WordsLane::Aside, shard, before)
            .await
            .swept
    }));
    let (mut swept, aside) = tokio::join!(due, aside);
    swept += aside.into_iter().sum();
    swept
}

/// What one page of a words lane did, and how many entries it read.
struct WordsPage {
    swept: Swept,
    read: usize,
}

/// Writes the postings of one page of `lane` in `shard`. A task that fails in the due lane is
/// set aside, so that the next page (and the next sweep) reaches the tasks behind it however
/// many keep failing.
async fn words_page(
    store: &Store,
    bodies: &Bodies,
    lane: WordsLane,
    shard: char,
    before: &str,
) -> WordsPage {
    let due = match store.words_due(lane, shard, before, BATCH).await {
        Ok(due) => due,
        Err(error) => {
            tracing::warn!(shard = %shard, lane = ?lane, error = %error, "word index due list unreadable; skipped");
            let unreadable = Page::unreadable();
            return WordsPage {
                swept: unreadable.swept,
                read: 0,
            };
        }
    };
    let mut swept = Swept::default();
    for task_id in &due {
        match index_words(store, bodies, task_id).await {
            Ok(()) => swept.done += 1,
            Err(error) => {
                tracing::error!(task_id = %task_id, error = %error, sweep = "words", "sweep skipped a task");
                swept.skipped += 1;
                if lane == WordsLane::Due {
                    if let Err(error) = store.set_words_aside(task_id).await {
                        tracing::error!(task_id = %task_id, error = %error, "could not set a failing entry aside");
                    }
                }
            }
        }
    }
    WordsPage {
        swept,
        read: due.len(),
    }
}

/// Fails every task whose claim deadline passed; returns how many it failed and skipped.
pub async fn sweep_overdue(store: &Store, queue: &Queue, bodies: &Bodies) -> Swept {
    sweep_overdue_within(store, queue, bodies, Instant::now() + SWEEP_BUDGET).await
}

async fn sweep_overdue_within(
    store: &Store,
    queue: &Queue,
    bodies: &Bodies,
    until: Instant,
) -> Swept {
    let now = clock::now();
    every_shard(until, |shard| {
        let now = now.clone();
        async move {
            let entries = match store.overdue_tasks(shard, &now, BATCH).await {
                Ok(entries) => entries,
                Err(error) => {
                    tracing::warn!(shard = %shard, error = %error, "deadline shard unreadable; skipped");
                    return Page::unreadable();
                }
            };
            let mut swept = Swept::default();
            for entry in &entries {
                swept += expire(store, queue, bodies, entry).await;
            }
            Page::of(entries.len(), swept)
        }
    })
    .await
}

/// Fails one overdue task (unless it moved on), or sets its entry aside when that fails.
async fn expire(store: &Store, queue: &Queue, bodies: &Bodies, entry: &OverdueEntry) -> Swept {
    match Tasks::new(store, bodies, queue)
        .expire(&entry.task_id, &entry.deadline_at, entry.timeout_seconds)
        .await
    {
        Ok(TaskTransition::Applied(_)) => Swept {
            done: 1,
            skipped: 0,
        },
        // Another writer moved it on: nothing to count, and the page still moved.
        Ok(TaskTransition::Refused(_)) => Swept::default(),
        Err(error) => {
            skip(&error, &entry.task_id, "expiry");
            set_aside(store, "gsi2", &entry.task_id, &entry.index_key).await;
            Swept {
                done: 0,
                skipped: 1,
            }
        }
    }
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

/// How long a re-enqueued push task waits before the sweep may enqueue it again.
const OUTBOX_RETRY_SECONDS: u64 = 60;

/// Most times an idle config's wait doubles: from one minute to 64.
const MAX_IDLE_DOUBLINGS: u64 = 6;

/// How long a config's outbox entry waits after a sweep found it due for the `rounds`-th time
/// in a row with nothing delivered in between: 1, 2, 4 … 64 minutes. A config whose enqueues
/// arrive sends each change at once and its entry waits a minute again (see
/// `Store::advance_notify`); one whose task sleeps costs a sweep an hour, not one a minute.
pub fn idle_interval(rounds: u64) -> u64 {
    OUTBOX_RETRY_SECONDS << rounds.min(MAX_IDLE_DOUBLINGS)
}

/// Re-enqueues push tasks whose outbox entry fell due (the enqueue at open was lost, or an
/// attempt died holding its lease), and push notification configs of tasks not yet finished
/// and fully delivered (a notification's enqueue after a change may have been lost): a push
/// task at most once a minute, a config less often the longer it stays idle.
pub async fn sweep_outbox(store: &Store, queue: &Queue) -> Swept {
    sweep_outbox_until(store, queue, &clock::now()).await
}

/// [`sweep_outbox`] as if run at `now` (a formatted moment): entries due before it are sent,
/// and wait again from it.
pub async fn sweep_outbox_until(store: &Store, queue: &Queue, now: &str) -> Swept {
    sweep_outbox_within(store, queue, now, Instant::now() + SWEEP_BUDGET).await
}

async fn sweep_outbox_within(store: &Store, queue: &Queue, now: &str, until: Instant) -> Swept {
    let holds = &Holds::at(store, now);
    let tasks = every_shard(until, |shard| async move {
        let entries = store.outbox_due(shard, now, BATCH).await;
        re_enqueue(store, queue, now, shard, entries, holds).await
    });
    let configs = every_shard(until, |shard| async move {
        let entries = store.notify_due(shard, now, BATCH).await;
        re_enqueue(store, queue, now, shard, entries, holds).await
    });
    let (tasks, configs) = tokio::join!(tasks, configs);
    let mut swept = tasks;
    swept += configs;
    swept
}

/// One page of outbox entries: each moved to wait again, then enqueued.
async fn re_enqueue(
    store: &Store,
    queue: &Queue,
    now: &str,
    shard: char,
    entries: Result<Vec<OutboxEntry>, StoreError>,
    holds: &Holds<'_>,
) -> Page {
    let entries = match entries {
        Ok(entries) => entries,
        Err(error) => {
            tracing::warn!(shard = %shard, error = %error, "outbox shard unreadable; skipped");
            return Page::unreadable();
        }
    };
    let mut swept = Swept::default();
    for entry in &entries {
        swept += match holds.decide(entry).await {
            Decision::Send => re_enqueue_one(store, queue, now, entry).await,
            Decision::WaitUntil(until) => keep_waiting(store, entry, until).await,
            Decision::Leave => Swept::default(),
        };
    }
    Page::of(entries.len(), swept)
}

/// Moves a held callee's entry to wait until `until` (seconds since the epoch), with no
/// message: it is not counted as enqueued.
async fn keep_waiting(store: &Store, entry: &OutboxEntry, until: u64) -> Swept {
    let due = clock::from_unix(until);
    match store.bump_outbox_entry(entry, &due, 0).await {
        Ok(_) => Swept::default(),
        Err(error) => {
            skip(&error, &entry.task_id, "outbox");
            Swept {
                done: 0,
                skipped: 1,
            }
        }
    }
}

async fn re_enqueue_one(store: &Store, queue: &Queue, now: &str, entry: &OutboxEntry) -> Swept {
    let (wait, rounds) = match entry.config_id {
        None => (OUTBOX_RETRY_SECONDS, 0),
        Some(_) => (
            idle_interval(entry.idle_rounds),
            entry.idle_rounds.saturating_add(1),
        ),
    };
    let due = clock::parse(now)
        .map(|at| clock::format(at + time::Duration::seconds(wait as i64)))
        .unwrap_or_else(|| clock::after(wait));
    match store.bump_outbox_entry(entry, &due, rounds).await {
        Ok(true) => {}
        // Another sweep took it.
        Ok(false) => return Swept::default(),
        Err(error) => {
            skip(&error, &entry.task_id, "outbox");
            return Swept {
                done: 0,
                skipped: 1,
            };
        }
    }
    let task_id = &entry.task_id;
    let enqueued = match &entry.config_id {
        None => queue.enqueue(task_id, entry.tenant_id.as_ref()).await,
        Some(_) => {
            queue
                .enqueue_notify(task_id, entry.tenant_id.as_ref())
                .await
        }
    };
    match enqueued {
        Ok(()) => {
            tracing::info!(task_id = %task_id, config_id = ?entry.config_id, "re-enqueued from the outbox");
            Swept {
                done: 1,
                skipped: 0,
            }
        }
        Err(error) => {
            tracing::warn!(task_id = %task_id, error = %error, "re-enqueue failed");
            Swept {
                done: 0,
                skipped: 1,
            }
        }
    }
}
