//! The claim: a callee takes the oldest claimable task of its queue with one conditional write,
//! so two pollers can never both take one task.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::domain::ids::{AgentId, TaskId};

use aws_sdk_dynamodb::types::AttributeValue;

use super::item::{n, s, Item, Reader};
use super::layout::{deadline_shard_partition, due_sort_key, queue_partition, task_shard};
use super::task_item::{change_entries, logging, queue_entry, task_id_of, LOG_CHANGES};
use super::tasks::{
    conditioned, target, target_value, TaskTransition, CLAIM_CANDIDATES, UNCLAIMABLE_ERROR,
};
use super::{classify, Store, StoreError};
use crate::domain::events::Change;
use crate::domain::transitions::Transition;
use crate::domain::{clock, Task, TaskState};

/// How long a queue page read for claims may serve later claims of this process. This bounds
/// the claim order: a task put back on the queue in an older place than a page's candidates (a
/// claim undone, a question answered) may wait behind them for at most this long.
pub(crate) const PAGE_LIFETIME: Duration = Duration::from_secs(1);

/// The outcome of one claim attempt.
#[derive(Debug, Clone)]
pub enum ClaimOutcome {
    Claimed(Box<Task>),
    /// Candidates were queued but other pollers took every one: look again at once.
    Contended,
    Empty,
}

/// Queue pages read for claims and not used up yet, one per callee. A claim takes its next
/// candidate from its callee's page before reading the queue again, so concurrent pollers in
/// one process try different tasks, and a busy callee pays one queue read per page of
/// [`CLAIM_CANDIDATES`] instead of one per claim. A candidate is only a hint: the claim's
/// conditional write decides, so a candidate another process took costs a refused write.
///
/// A page read again leaves out the queue entries this process is claiming, or claimed within
/// [`PAGE_LIFETIME`] (the queue index may show a claimed task a moment longer): trying them
/// again would only spend a refused write (a unit each). An entry is the task at one version
/// (`updated_at`), so a task put back on the queue by a change (a question answered) is a new
/// entry, claimable at once; a claim lost to another poller, or failed, forgets its entry.
///
/// When each callee's queue was last read is kept too. A long poll looking again while it waits
/// ([`Store::claim_next_waiting`]) takes a read of its queue begun by another claim of this
/// process within the shortest poll interval (`FORGEBENCH_CLAIM_POLL_MS`) as its own: what that
/// read found is on the page, and if the page holds nothing, neither did the queue then. So the
/// waits of one callee in one process read its idle queue at most as often as one wait does at
/// its fastest, however many there are. A request's first look always reads, and a lone wait
/// never looks again that soon, so either reads as before.
#[derive(Clone, Debug, Default)]
pub(crate) struct ClaimPages(Arc<Mutex<Pages>>);

#[derive(Debug, Default)]
struct Pages {
    pages: HashMap<AgentId, Page>,
    /// Per callee, when the last read of its queue began.
    looked: HashMap<AgentId, Instant>,
    /// How long such a read serves the waits looking again.
    shared_look: Duration,
    /// Per callee, the entries handed out whose claims are in flight or won, and when each was
    /// handed out, oldest first.
    handed: HashMap<AgentId, VecDeque<(Entry, Instant)>>,
}

#[derive(Debug)]
struct Page {
    read_at: Instant,
    candidates: VecDeque<Item>,
}

/// A queue entry: the task's id and version (`updated_at`).
type Entry = (String, String);

/// A candidate's queue entry.
fn entry_of(candidate: &Item) -> Option<Entry> {
    let read = Reader(candidate);
    let id = task_id_of(candidate, "queue entry").ok()?.to_string();
    let version = read.opt_s("updated_at").ok().flatten().unwrap_or_default();
    Some((id, version))
}

impl Page {
    /// Whether the page is young enough to hand out.
    fn is_fresh(&self) -> bool {
        self.read_at.elapsed() <= PAGE_LIFETIME
    }
}

impl ClaimPages {
    /// Pages whose reads serve the waits looking again for `shared_look`.
    pub(crate) fn new(shared_look: Duration) -> ClaimPages {
        ClaimPages(Arc::new(Mutex::new(Pages {
            shared_look,
            ..Pages::default()
        })))
    }

    /// Whether a read of `callee_id`'s queue began within the shared look and left nothing on
    /// its page: a wait looking again takes the queue as empty.
    fn looked_lately_at_nothing(&self, callee_id: &AgentId) -> bool {
        let state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let looked_lately = state
            .looked
            .get(callee_id)
            .is_some_and(|began| began.elapsed() < state.shared_look);
        let candidates_left = state
            .pages
            .get(callee_id)
            .is_some_and(|page| page.is_fresh() && !page.candidates.is_empty());
        looked_lately && !candidates_left
    }

    /// A read of `callee_id`'s queue begins.
    fn looking(&self, callee_id: &AgentId) {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let shared_look = state.shared_look;
        state
            .looked
            .retain(|_, began| began.elapsed() < shared_look);
        if !shared_look.is_zero() {
            state.looked.insert(callee_id.clone(), Instant::now());
        }
    }

    /// The next candidate of `callee_id`'s page, while the page is fresh.
    fn next(&self, callee_id: &AgentId) -> Option<Item> {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let page = state.pages.get_mut(callee_id)?;
        let candidate = if page.is_fresh() {
            page.candidates.pop_front()
        } else {
            None
        };
        if candidate.is_none() || page.candidates.is_empty() {
            state.pages.remove(callee_id);
        }
        if let Some(entry) = candidate.as_ref().and_then(entry_of) {
            let handed = state.handed.entry(callee_id.clone()).or_default();
            handed.push_back((entry, Instant::now()));
        }
        candidate
    }

    /// The claim of `callee_id`'s candidate `id` was lost to another poller, or failed: a page
    /// read again may hold its task.
    fn forget(&self, callee_id: &AgentId, id: &str) {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(handed) = state.handed.get_mut(callee_id) {
            handed.retain(|((taken, _), _)| taken != id);
            if handed.is_empty() {
                state.handed.remove(callee_id);
            }
        }
    }

    /// Keeps `candidates`, just read, as `callee_id`'s page, but the entries handed out and not
    /// forgotten, and drops the pages and hand-outs gone stale. Returns how many it kept.
    fn keep(&self, callee_id: &AgentId, candidates: Vec<Item>) -> usize {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        state.pages.retain(|_, page| page.is_fresh());
        state.handed.retain(|_, handed| {
            while handed
                .front()
                .is_some_and(|(_, at)| at.elapsed() > PAGE_LIFETIME)
            {
                handed.pop_front();
            }
            !handed.is_empty()
        });
        let handed = state.handed.get(callee_id);
        let fresh: VecDeque<Item> = candidates
            .into_iter()
            .filter(|candidate| {
                let entry = entry_of(candidate);
                !handed.is_some_and(|handed| {
                    handed
                        .iter()
                        .any(|(taken, _)| Some(taken) == entry.as_ref())
                })
            })
            .collect();
        let kept = fresh.len();
        if kept > 0 {
            state.pages.insert(
                callee_id.clone(),
                Page {
                    read_at: Instant::now(),
                    candidates: fresh,
                },
            );
        }
        kept
    }
}

impl Store {
    /// Claims one queued task of `callee_id`: the candidates of this process's page of its
    /// queue first (see [`ClaimPages`]), then a fresh page of the oldest candidates, rotated at
    /// random so that pollers in other processes mostly try different tasks. A candidate that
    /// cannot be taken (an unreadable or oversized item left by an older version) is failed and
    /// passed over, so one task never stops its callee's queue.
    pub async fn claim_next(&self, callee_id: &AgentId) -> Result<ClaimOutcome, StoreError> {
        let mut read_queue = false;
        loop {
            let candidate = match self.claim_pages.next(callee_id) {
                Some(candidate) => candidate,
                None if read_queue => return Ok(ClaimOutcome::Contended),
                None => {
                    read_queue = true;
                    self.claim_pages.looking(callee_id);
                    let page = self.queue_page(callee_id).await?;
                    if page.is_empty() {
                        return Ok(ClaimOutcome::Empty);
                    }
                    if self.claim_pages.keep(callee_id, page) == 0 {
                        // Every candidate is being claimed by this process already.
                        return Ok(ClaimOutcome::Contended);
                    }
                    continue;
                }
            };
            let Ok(task_id) = task_id_of(&candidate, "queue entry") else {
                tracing::error!("a queue entry without a task id; skipped");
                continue;
            };
            let claimed = self
                .claim_candidate(callee_id, &task_id, &Reader(&candidate))
                .await;
            if !matches!(claimed, Ok(Some(_))) {
                self.claim_pages.forget(callee_id, &task_id);
            }
            match claimed {
                Ok(Some(task)) => return Ok(ClaimOutcome::Claimed(Box::new(task))),
                Ok(None) => {}
                Err(error @ (StoreError::Unavailable(_) | StoreError::Throttled(_))) => {
                    return Err(error)
                }
                Err(error) => {
                    tracing::error!(task_id = %task_id, error = %error, "a queued task cannot be claimed; failing it and passing over");
                    if let Err(error) = self.fail_unclaimable(callee_id, &task_id).await {
                        tracing::error!(task_id = %task_id, error = %error, "could not fail an unclaimable task");
                    }
                }
            }
        }
    }

    /// [`Store::claim_next`] for a long poll looking again while it waits: when another claim
    /// of this process began reading the queue within the shortest poll interval and its page
    /// has nothing left, the queue is taken as empty without a read (see [`ClaimPages`]).
    pub async fn claim_next_waiting(
        &self,
        callee_id: &AgentId,
    ) -> Result<ClaimOutcome, StoreError> {
        if self.claim_pages.looked_lately_at_nothing(callee_id) {
            return Ok(ClaimOutcome::Empty);
        }
        self.claim_next(callee_id).await
    }

    /// The oldest [`CLAIM_CANDIDATES`] entries of `callee_id`'s queue, rotated by a random offset.
    async fn queue_page(&self, callee_id: &AgentId) -> Result<Vec<Item>, StoreError> {
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .index_name("gsi1")
            .key_condition_expression("gsi1pk = :queue")
            .expression_attribute_values(":queue", s(queue_partition(callee_id)))
            .limit(CLAIM_CANDIDATES)
            .send()
            .await
            .map_err(classify)?;
        let mut candidates = output.items.unwrap_or_default();
        if !candidates.is_empty() {
            let mut offset = [0u8; 4];
            let _ = getrandom::fill(&mut offset);
            let start = u32::from_le_bytes(offset) as usize % candidates.len();
            candidates.rotate_left(start);
        }
        Ok(candidates)
    }

    /// One claim attempt on one candidate: the task, or `None` when another poller took it.
    async fn claim_candidate(
        &self,
        callee_id: &AgentId,
        task_id: &TaskId,
        candidate: &Reader<'_>,
    ) -> Result<Option<Task>, StoreError> {
        let timeout = candidate.n("claim_timeout_seconds")?;
        let now = clock::now();
        let deadline = clock::after(timeout);
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET #state = :to, updated_at = :now, \
                 deadline_at = :deadline, gsi2pk = :shard, gsi2sk = :deadline_key, \
                 {LOG_CHANGES} REMOVE status_timestamp, gsi1pk, gsi1sk",
            ))
            .expression_attribute_values(":queue", s(queue_partition(callee_id)))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(":deadline", s(&deadline))
            .expression_attribute_values(":shard", s(deadline_shard_partition(task_shard(task_id))))
            .expression_attribute_values(":deadline_key", s(due_sort_key(&deadline, task_id)));
        let update = target(update, Transition::Claim, None)?;
        let update = conditioned(update, Transition::Claim, " AND gsi1pk = :queue");
        let claimed = Change::state(TaskState::Working, false, &now);
        match self.transition(logging(update, &[claimed])).await? {
            TaskTransition::Applied(task) => Ok(Some(task)),
            TaskTransition::Refused(_) => Ok(None),
        }
    }

    /// Fails a queued task no claim can take, with a write that does not grow it. The one write
    /// of a task's state not conditioned on the state ([`Transition::FailUnclaimable`] starts
    /// from the states a queue entry implies): the item may be unreadable, its state included,
    /// and being on the queue is what makes it claimable.
    async fn fail_unclaimable(
        &self,
        callee_id: &AgentId,
        task_id: &TaskId,
    ) -> Result<(), StoreError> {
        let now = clock::now();
        let failed = Change::state(TaskState::Failed, false, &now);
        let update = self
            .task_update(task_id)
            .update_expression(format!(
                "SET #state = :to, #error = :error, \
                 updated_at = :now, {LOG_CHANGES} REMOVE status_timestamp, gsi1pk, gsi1sk",
            ))
            .condition_expression("gsi1pk = :queue")
            .expression_attribute_names("#error", "error")
            .expression_attribute_values(":to", target_value(Transition::FailUnclaimable, None)?)
            .expression_attribute_values(":error", s(UNCLAIMABLE_ERROR))
            .expression_attribute_values(":now", s(&now))
            .expression_attribute_values(":queue", s(queue_partition(callee_id)));
        update
            .expression_attribute_values(":no_changes", AttributeValue::L(Vec::new()))
            .expression_attribute_values(":changes", change_entries(&[failed]))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    /// Puts a task this claim took back on its callee's queue, in its old place, while the claim
    /// still holds (its deadline unchanged): the claim could not hand the task over. The claim's
    /// entry in the change log (its last, nothing having been logged since) is taken back and the
    /// task gets the state it had before, so a claim retried any number of times logs one entry
    /// and readers never see a claim that did not happen.
    pub async fn unclaim(&self, task: &Task) -> Result<(), StoreError> {
        let (queue, order) = queue_entry(task, &task.created_at);
        let logged = task.changes.len();
        let update = self
            .task_update(&task.id)
            .update_expression(format!(
                "SET #state = :to, gsi1pk = :queue, gsi1sk = :order, changed_at = :changed \
                 REMOVE deadline_at, gsi2pk, gsi2sk, events[{}]",
                logged.saturating_sub(1)
            ))
            .expression_attribute_values(
                ":to",
                target_value(Transition::Unclaim, Some(task.state_before_latest_change()))?,
            )
            .expression_attribute_values(":changed", s(task.changed_before_latest_change()))
            .expression_attribute_values(":logged", n(logged as u64))
            .expression_attribute_values(":queue", s(queue))
            .expression_attribute_values(":order", s(order))
            .expression_attribute_values(
                ":deadline",
                s(task.deadline_at.clone().unwrap_or_default()),
            );
        let update = conditioned(
            update,
            Transition::Unclaim,
            " AND deadline_at = :deadline AND size(events) = :logged",
        );
        self.transition(update).await.map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::item::s;

    /// Queue entries of these tasks, each at the version `v1`.
    fn entries(ids: &[&str]) -> Vec<Item> {
        ids.iter()
            .map(|id| {
                Item::from([
                    ("pk".to_owned(), s(format!("TASK#{id}"))),
                    ("updated_at".to_owned(), s("v1")),
                ])
            })
            .collect()
    }

    fn next_id(pages: &ClaimPages, callee: &AgentId) -> Option<String> {
        pages
            .next(callee)
            .and_then(|item| entry_of(&item).map(|(id, _)| id))
    }

    #[test]
    fn a_page_read_again_leaves_out_the_entries_being_claimed() {
        let pages = ClaimPages::default();
        let (callee, other) = (AgentId::from("callee"), AgentId::from("other"));
        assert_eq!(pages.keep(&callee, entries(&["a", "b"])), 2);
        assert_eq!(next_id(&pages, &callee).as_deref(), Some("a"));
        assert_eq!(next_id(&pages, &callee).as_deref(), Some("b"));
        assert_eq!(next_id(&pages, &callee), None, "the page is used up");
        // Read again while the claims of a and b are in flight: both are still queued.
        assert_eq!(pages.keep(&callee, entries(&["a", "b", "c"])), 1);
        assert_eq!(next_id(&pages, &callee).as_deref(), Some("c"));
        assert_eq!(pages.keep(&callee, entries(&["a", "b"])), 0);
        // A claim lost to another poller forgets its entry: the task may be tried again.
        pages.forget(&callee, "a");
        assert_eq!(pages.keep(&callee, entries(&["a", "b"])), 1);
        assert_eq!(next_id(&pages, &callee).as_deref(), Some("a"));
        // A task put back on the queue by a change is a new entry, claimable at once.
        let mut requeued = entries(&["b"]);
        requeued[0].insert("updated_at".into(), s("v2"));
        assert_eq!(pages.keep(&callee, requeued), 1);
        // Another callee's queue is its own.
        assert_eq!(pages.keep(&other, entries(&["a"])), 1);
    }

    #[test]
    fn a_read_of_the_queue_serves_the_waits_looking_again_for_the_shortest_poll_interval() {
        let shared_look = Duration::from_millis(80);
        let pages = ClaimPages::new(shared_look);
        let (callee, other) = (AgentId::from("callee"), AgentId::from("other"));
        assert!(!pages.looked_lately_at_nothing(&callee), "nothing read yet");
        pages.looking(&callee);
        assert!(
            pages.looked_lately_at_nothing(&callee),
            "the read found nothing (yet)"
        );
        assert!(
            !pages.looked_lately_at_nothing(&other),
            "another callee's queue is its own"
        );
        // What the read found is on the page for the waits to take.
        assert_eq!(pages.keep(&callee, entries(&["a"])), 1);
        assert!(!pages.looked_lately_at_nothing(&callee), "candidates left");
        assert_eq!(next_id(&pages, &callee).as_deref(), Some("a"));
        assert!(pages.looked_lately_at_nothing(&callee), "used up");
        std::thread::sleep(shared_look);
        assert!(
            !pages.looked_lately_at_nothing(&callee),
            "read again after the interval"
        );
        // Without an interval, no read is shared.
        let unshared = ClaimPages::default();
        unshared.looking(&callee);
        assert!(!unshared.looked_lately_at_nothing(&callee));
    }
}
