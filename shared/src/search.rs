//! Task search (`GET /v1/tasks`): a page of the tasks that meet a search's filters, and the
//! upkeep of the word index that `q` reads.
//!
//! A page is found by walking indexes newest change first (`store/search.rs`): the word
//! postings of the query's longest word when there is a `q`, the conversation's tasks for a
//! `context_id`, the agent's tasks in a state, or all of them; one walk per side of the agent
//! (inbound, outbound), merged. Every entry met is only a candidate: its task is read and
//! placed by the snapshot ([`Snapshot::place`]), and the words checked on its current postings.
//! Tasks that changed after the snapshot are read through the agent's change-ordered index
//! (bounded by [`MAX_MOVED`]) and placed where they stood at the snapshot. A page holds the
//! `limit` newest placements below the cursor; a walk reads at most [`MAX_ROUNDS`] index pages
//! per request, and a page it cuts short still carries the cursor to go on.

use std::collections::HashMap;

use crate::bodies::{Bodies, BodyError};
use crate::domain::search::{Cursor, Position, SearchFilters, Side, Snapshot};
use crate::domain::words::{words_of_stored, QueryWords};
use crate::domain::{clock, Task, TaskId, TaskState};
use crate::store::search::{IndexPage, Range, SearchIndex};
use crate::store::{Store, StoreError, WordMarker, EXACT_WORDS};

/// Most index pages one request reads while walking.
pub const MAX_ROUNDS: usize = 10;
/// Most tasks changed since a search's snapshot that a page places; past that the search must
/// start again.
pub const MAX_MOVED: usize = 1_000;

/// A page of results, newest first, and the cursor of the next one.
#[derive(Debug)]
pub struct SearchPage {
    pub tasks: Vec<Task>,
    pub next: Option<Cursor>,
    /// The read capacity the page cost, as the store reports it.
    pub read_units: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// More tasks changed since the snapshot than a page places.
    #[error("too many tasks changed since the search's first page")]
    MovedTooFar,
}

/// Whether `position` comes after (below) `after` in a search's order. An `after` without a
/// task id stands for every task at its moment, which all still come.
fn below(position: &Position, after: &Position) -> bool {
    if after.task_id.is_empty() {
        position.changed_at <= after.changed_at
    } else {
        position < after
    }
}

/// The indexes a search walks: one per side of the agent, or the conversation's. A search with
/// words also walks the agent's lagging tasks on each side, whose postings may stand below
/// their place (`store/words.rs`): that index is ordered like the others, so a page reads only
/// as much of it as it reads of the postings.
fn walks(filters: &SearchFilters) -> Vec<SearchIndex<'_>> {
    if let (None, Some(context_id)) = (&filters.words, &filters.context_id) {
        return vec![SearchIndex::Context { context_id }];
    }
    let agent = &filters.agent;
    let walk = |side: Side| match (&filters.words, filters.state) {
        (Some(words), _) => SearchIndex::Word {
            side,
            agent,
            word: words.driver(),
        },
        (None, Some(state)) => SearchIndex::SideState { side, agent, state },
        (None, None) => SearchIndex::Side { side, agent },
    };
    let sides = filters.direction.sides().iter();
    let mut indexes: Vec<SearchIndex<'_>> = sides.clone().map(|side| walk(*side)).collect();
    if filters.words.is_some() {
        indexes.extend(sides.map(|side| SearchIndex::Lagging { side: *side, agent }));
    }
    indexes
}

/// One walk: its index and where it stands.
struct Walk<'a> {
    index: SearchIndex<'a>,
    next: Option<crate::store::item::Item>,
    /// The moment of the last entry read; `None` before the first page.
    reached: Option<String>,
    done: bool,
}

/// What a page has found so far: each task once, at its place in the snapshot.
struct Found<'a> {
    snapshot: Snapshot<'a>,
    after: Option<&'a Position>,
    placed: HashMap<TaskId, (Position, Task)>,
    read_units: f64,
}

impl Found<'_> {
    /// Reads the candidates' tasks, and keeps those that belong below the cursor and have the
    /// query's words.
    async fn judge(&mut self, store: &Store, candidates: &[TaskId]) -> Result<(), StoreError> {
        let fresh: Vec<TaskId> = candidates
            .iter()
            .filter(|id| !self.placed.contains_key(*id))
            .cloned()
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        let (tasks, read_units) = store.get_tasks(&fresh).await?;
        self.read_units += read_units;
        let placed: Vec<(Position, &Task)> = tasks
            .values()
            .filter_map(|task| Some((self.snapshot.place(task)?, task)))
            .filter(|(position, _)| self.after.is_none_or(|after| below(position, after)))
            .collect();
        let with_words = match &self.snapshot.filters.words {
            Some(words) => {
                let (ids, read_units) = matching(store, &placed, words).await?;
                self.read_units += read_units;
                Some(ids)
            }
            None => None,
        };
        for (position, task) in placed {
            if with_words.as_ref().is_none_or(|ids| ids.contains(&task.id)) {
                self.placed
                    .insert(task.id.clone(), (position, task.clone()));
            }
        }
        Ok(())
    }

    /// How many placements are final once every walk has read down to `reached`.
    fn final_count(&self, reached: Option<&str>) -> usize {
        self.placed
            .values()
            .filter(|(position, _)| {
                reached.is_none_or(|moment| position.changed_at.as_str() > moment)
            })
            .count()
    }
}

async fn matching(
    store: &Store,
    placed: &[(Position, &Task)],
    words: &QueryWords,
) -> Result<(std::collections::HashSet<TaskId>, f64), StoreError> {
    let tasks: Vec<&Task> = placed.iter().map(|(_, task)| *task).collect();
    let words: Vec<&str> = words.all().iter().map(String::as_str).collect();
    store.tasks_with_words(&tasks, &words).await
}

/// One page of the search `filters` from `cursor` (the first page when `None`).
pub async fn search(
    store: &Store,
    filters: &SearchFilters,
    cursor: Option<&Cursor>,
    limit: usize,
) -> Result<SearchPage, SearchError> {
    let moment = cursor.map_or_else(clock::now, |cursor| cursor.snapshot.clone());
    let after = cursor.map(|cursor| &cursor.after);
    let mut found = Found {
        snapshot: Snapshot {
            moment: &moment,
            filters,
        },
        after,
        placed: HashMap::new(),
        read_units: 0.0,
    };
    let (moved, read_units) = moved_since(store, filters, &moment).await?;
    found.read_units += read_units;
    found.judge(store, &moved).await?;
    let top = after.map_or(moment.as_str(), |after| after.changed_at.as_str());
    let mut walks: Vec<Walk<'_>> = walks(filters)
        .into_iter()
        .map(|index| Walk {
            index,
            next: None,
            reached: None,
            done: false,
        })
        .collect();
    // One entry past the page, so the page's last placement is known final in one read.
    let page_size = i32::try_from(limit + 1).unwrap_or(101);
    for _ in 0..MAX_ROUNDS {
        for walk in walks.iter_mut().filter(|walk| !walk.done) {
            let range = Range {
                after: filters.since.as_deref(),
                at_or_before: Some(top),
            };
            let IndexPage {
                entries,
                next,
                read_units,
            } = store
                .search_index_page(walk.index, range, walk.next.take(), page_size)
                .await?;
            found.read_units += read_units;
            let ids: Vec<TaskId> = entries.iter().map(|entry| entry.task_id.clone()).collect();
            found.judge(store, &ids).await?;
            walk.reached = entries.last().map(|entry| entry.changed_at.clone());
            walk.done = next.is_none();
            walk.next = next;
        }
        let reached = complete_above(&walks);
        if found.final_count(reached.as_deref()) >= limit || reached.is_none() {
            return Ok(page(found, reached, limit, moment.clone()));
        }
    }
    let reached = complete_above(&walks);
    Ok(page(found, reached, limit, moment.clone()))
}

/// The moment above which every walk has read everything: the highest moment a walk still
/// going has reached; `None` when every walk is done.
fn complete_above(walks: &[Walk<'_>]) -> Option<String> {
    walks
        .iter()
        .filter(|walk| !walk.done)
        .map(|walk| walk.reached.clone().unwrap_or_default())
        .max()
}

/// The `limit` newest final placements, and the cursor after them when more may follow.
fn page(found: Found<'_>, reached: Option<String>, limit: usize, moment: String) -> SearchPage {
    let read_units = found.read_units;
    let mut placed: Vec<(Position, Task)> = found
        .placed
        .into_values()
        .filter(|(position, _)| {
            reached
                .as_deref()
                .is_none_or(|moment| position.changed_at.as_str() > moment)
        })
        .collect();
    placed.sort_by(|a, b| b.0.cmp(&a.0));
    let more_placed = placed.len() > limit;
    placed.truncate(limit);
    let next = match (placed.len() == limit, more_placed || reached.is_some()) {
        (true, true) => placed.last().map(|(position, _)| position.clone()),
        (false, _) => reached.map(|changed_at| Position {
            changed_at,
            task_id: TaskId::from(String::new()),
        }),
        (true, false) => None,
    };
    SearchPage {
        read_units,
        tasks: placed.into_iter().map(|(_, task)| task).collect(),
        next: next.map(|after| Cursor {
            snapshot: moment,
            after,
        }),
    }
}

/// The tasks of the search's agent (or conversation) that changed after `moment`.
async fn moved_since(
    store: &Store,
    filters: &SearchFilters,
    moment: &str,
) -> Result<(Vec<TaskId>, f64), SearchError> {
    let agent = &filters.agent;
    let reads: Vec<SearchIndex<'_>> = match &filters.context_id {
        Some(context_id) => vec![SearchIndex::Context { context_id }],
        None => filters
            .direction
            .sides()
            .iter()
            .map(|side| SearchIndex::Side { side: *side, agent })
            .collect(),
    };
    let mut moved = Vec::new();
    let mut units = 0.0;
    for index in reads {
        let mut start = None;
        loop {
            let range = Range {
                after: Some(moment),
                at_or_before: None,
            };
            let IndexPage {
                entries,
                next,
                read_units,
            } = store.search_index_page(index, range, start, 100).await?;
            units += read_units;
            moved.extend(entries.into_iter().map(|entry| entry.task_id));
            if moved.len() > MAX_MOVED {
                return Err(SearchError::MovedTooFar);
            }
            match next {
                Some(key) => start = Some(key),
                None => break,
            }
        }
    }
    Ok((moved, units))
}

/// Why indexing a task's words failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Bodies(#[from] BodyError),
}

/// Brings the task's word index to where the task stands now (read afresh, so it does not
/// matter what a caller holds): the words it had, and those of the history entries written
/// since, their bodies read from the body store where they live there.
pub async fn index_words(
    store: &Store,
    bodies: &Bodies,
    task_id: &TaskId,
) -> Result<(), IndexError> {
    let (Some(task), previous) = store.task_and_word_marker(task_id).await? else {
        return Ok(());
    };
    index_task(store, bodies, &task, previous).await
}

/// Brings `task`'s word index to where `task` stands, from what the index knew of it
/// (`previous`, its marker).
async fn index_task(
    store: &Store,
    bodies: &Bodies,
    task: &Task,
    previous: Option<WordMarker>,
) -> Result<(), IndexError> {
    let changed_at = task.changed_at();
    if let Some(known) = previous
        .as_ref()
        .filter(|known| known.changed_at >= changed_at)
    {
        if known.changed_at == changed_at {
            store.clear_words_due(&task.id, &changed_at).await?;
        }
        return Ok(());
    }
    let mut marker = previous.clone().unwrap_or_default();
    let known = marker.words.clone();
    for entry in task.history.iter().skip(marker.through) {
        let value = match entry.reference() {
            None => entry.to_value(),
            Some(_) => bodies.resolve_message(entry).await?,
        };
        marker.words.add(words_of_stored(&value));
    }
    marker.changed_at = changed_at;
    marker.through = task.history.len();
    let finished = !TaskState::OPEN.contains(&task.state);
    marker.lagging = !finished && marker.words.len() > EXACT_WORDS;
    if !marker.lagging {
        store
            .rewrite_word_postings(task, previous.as_ref(), &marker)
            .await?;
    } else {
        let new_words: Vec<&String> = marker
            .words
            .iter()
            .filter(|word| !known.contains(word))
            .collect();
        store.add_word_postings(task, &marker, &new_words).await?;
    }
    Ok(())
}

/// Indexes a task its open just wrote, from the task as written: nothing to read, since a new
/// task has no marker yet. A change that overtook the open is handled as any race is (see
/// `store/words.rs`). A failure is logged, never answered, like [`index_changed`]'s.
pub async fn index_opened(store: &Store, bodies: &Bodies, task: &Task) {
    if let Err(error) = index_task(store, bodies, task, None).await {
        tracing::warn!(task_id = %task.id, error = %error, "could not index the task's words; the sweeper will");
    }
}

/// [`index_words`] after a committed change: a failure is logged, never answered (the change
/// is in), and the sweeper indexes the task later.
pub async fn index_changed(store: &Store, bodies: &Bodies, task_id: &TaskId) {
    if let Err(error) = index_words(store, bodies, task_id).await {
        tracing::warn!(task_id = %task_id, error = %error, "could not index the task's words; the sweeper will");
    }
}
