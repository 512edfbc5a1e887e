//! Task search (`GET /v1/tasks`): a page of the tasks that meet a search's filters, and the
//! word postings that `q` reads.
//!
//! A page is found by walking indexes newest first (`store/search.rs`), all ordered by the
//! tasks' creation, which never moves. With a `q`, the walk is the tenant's postings of the
//! query's longest word, filtered to the agent's; else the conversation's tasks for a
//! `context_id`; else one walk per side of the agent (inbound, outbound), merged, filtered on
//! the index by state and `since` where asked; else, with no agent (every task of the tenant),
//! the tenant's task opens in its audit log. Each task met is judged as it is now
//! ([`SearchFilters::place_by_creation`]), and its other words checked on its postings. A page
//! holds the `limit` newest placements below the cursor, created at or before the search's first
//! page; a walk reads at most [`MAX_ROUNDS`] index pages per request, a request stops after the
//! round that spends [`MAX_READ_UNITS`], and a page either cuts short still carries the cursor
//! to go on.

use crate::domain::clock::Timestamp;
use std::collections::HashMap;

use crate::bodies::{Bodies, BodyError};
use crate::domain::content::Stored;
use crate::domain::events::Change;
use crate::domain::search::{Cursor, Position, SearchFilters, Side};
use crate::domain::shards::ShardCount;
use crate::domain::words::{words_of_stored, QueryWords, TaskWords};
use crate::domain::{clock, Message, Task, TaskId};
use crate::store::search::{IndexPage, Range, SearchIndex};
use crate::store::{ContextJoin, Store, StoreError};

/// Most index pages one request reads while walking.
pub const MAX_ROUNDS: usize = 10;

/// The read capacity after which a request reads no further round (indexes, tasks, postings):
/// what one search may cost the tenant's table, whatever its filters pass over.
pub const MAX_READ_UNITS: f64 = 500.0;

/// A page of results, newest first, and the cursor of the next one.
#[derive(Debug)]
pub struct SearchPage {
    pub tasks: Vec<Task>,
    /// Where each of `tasks` stands in the search's order, for a page cut short after it.
    pub positions: Vec<Position>,
    /// The moment the search reads the store as of (every page of one search the same).
    pub snapshot: String,
    pub next: Option<Cursor>,
    /// The read capacity the page cost, as the store reports it.
    pub read_units: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether `position` comes after (below) `after` in a search's order. An `after` without a
/// task id stands for every task at its moment, which all still come.
fn below(position: &Position, after: &Position) -> bool {
    if after.task_id.is_empty() {
        position.created_at <= after.created_at
    } else {
        position < after
    }
}

/// The indexes a search walks: one per side of the agent, the conversation's, a word's
/// postings, or (for every task of the tenant) the tenant's opens in its audit log; the last
/// two in each of the `log_shards` partitions of the tenant's spread logs.
fn walks(filters: &SearchFilters, log_shards: ShardCount) -> Vec<SearchIndex<'_>> {
    if let (None, Some(context_id)) = (&filters.words, &filters.context_id) {
        return vec![SearchIndex::Context {
            tenant: &filters.tenant,
            context_id,
        }];
    }
    if let Some(words) = &filters.words {
        // One tenant-wide posting list serves both sides, filtered to the agent's, in each
        // partition of the tenant's spread logs.
        let word = |shard| SearchIndex::Word {
            tenant: &filters.tenant,
            agent: filters.agent.as_ref(),
            direction: filters.direction,
            word: words.driver(),
            shard,
        };
        return log_shards.shards().map(word).collect();
    }
    let Some(agent) = &filters.agent else {
        let tenant = &filters.tenant;
        let opens = log_shards.shards();
        return opens
            .map(|shard| SearchIndex::Opens { tenant, shard })
            .collect();
    };
    let state = filters.state;
    let walk = |side: Side| SearchIndex::Side { side, agent, state };
    let sides = filters.direction.sides().iter();
    sides.map(|side| walk(*side)).collect()
}

/// Most index entries one read takes when the index holds tasks in other states, which the
/// read's filter leaves out (the state is projected, not keyed: docs/design.md).
pub const MAX_STATE_PAGE: i32 = 1_000;

/// How many entries the next read of a walk takes after one that took `size` and kept `kept`:
/// one past the page at first, so the page's last placement is known final in one read; when a
/// state's filter left most of a read out, four times as many, up to [`MAX_STATE_PAGE`]: the
/// entries passed over are small, and only those kept have their tasks read.
fn next_page_size(size: i32, kept: usize) -> i32 {
    let sparse = usize::try_from(size).is_ok_and(|size| kept * 2 < size);
    match sparse {
        true => size.saturating_mul(4).min(MAX_STATE_PAGE),
        false => size,
    }
}

/// One walk: its index and where it stands.
struct Walk<'a> {
    index: SearchIndex<'a>,
    next: Option<crate::store::item::Item>,
    /// The moment of the last entry read; `None` before the first page.
    reached: Option<String>,
    done: bool,
    /// How many entries its next read takes.
    size: i32,
}

/// What a page has found so far: each task once, at its place.
struct Found<'a> {
    filters: &'a SearchFilters,
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
            .filter_map(|task| Some((self.filters.place_by_creation(task)?, task)))
            .filter(|(position, _)| self.after.is_none_or(|after| below(position, after)))
            .collect();
        let with_words = match &self.filters.words {
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
                reached.is_none_or(|moment| position.created_at.as_str() > moment)
            })
            .count()
    }
}

/// Of the tasks placed, those with a posting of every other word of the query.
async fn matching(
    store: &Store,
    placed: &[(Position, &Task)],
    words: &QueryWords,
) -> Result<(std::collections::HashSet<TaskId>, f64), StoreError> {
    let tasks: Vec<&Task> = placed.iter().map(|(_, task)| *task).collect();
    let others: Vec<&str> = words.others().collect();
    if others.is_empty() {
        return Ok((tasks.iter().map(|task| task.id.clone()).collect(), 0.0));
    }
    store.tasks_with_words(&tasks, &others).await
}

/// One page of the search `filters` from `cursor` (the first page when `None`).
pub async fn search(
    store: &Store,
    filters: &SearchFilters,
    cursor: Option<&Cursor>,
    limit: usize,
) -> Result<SearchPage, SearchError> {
    search_within(store, filters, cursor, limit, MAX_READ_UNITS).await
}

/// [`search`], stopping after the round that spends `max_read_units`.
pub async fn search_within(
    store: &Store,
    filters: &SearchFilters,
    cursor: Option<&Cursor>,
    limit: usize,
    max_read_units: f64,
) -> Result<SearchPage, SearchError> {
    let moment = cursor.map_or_else(clock::now, |cursor| cursor.snapshot.clone());
    let after = cursor.map(|cursor| &cursor.after);
    let mut found = Found {
        filters,
        after,
        placed: HashMap::new(),
        read_units: 0.0,
    };
    let top = after.map_or(moment.as_str(), |after| after.created_at.as_str());
    // One entry past the page, so the page's last placement is known final in one read.
    let page_size = i32::try_from(limit + 1).unwrap_or(101);
    let log_shards = log_shards(store, filters).await?;
    let indexes = walks(filters, log_shards);
    // The partitions of spread logs each take their share of the page at first (at least two
    // entries); a log's one partition, or each side of an agent, takes it whole.
    let share = page_size / i32::from(log_shards.get());
    let mut walks: Vec<Walk<'_>> = indexes
        .into_iter()
        .map(|index| Walk {
            index,
            next: None,
            reached: None,
            done: false,
            size: share.max(2).min(page_size),
        })
        .collect();
    for _ in 0..MAX_ROUNDS {
        for walk in walks.iter_mut().filter(|walk| !walk.done) {
            let range = Range {
                changed_after: filters.since.as_deref(),
                at_or_before: Some(top),
            };
            let IndexPage {
                entries,
                reached,
                next,
                read_units,
            } = store
                .search_index_page(walk.index, range, walk.next.take(), walk.size)
                .await?;
            // A filter leaves entries out: a state's or a moment's on a side, the agent's on a
            // word's postings, every entry but the opens in a tenant's audit log.
            let filtered = filters.words.is_some()
                || filters.state.is_some()
                || filters.since.is_some()
                || filters.agent.is_none();
            if filtered {
                walk.size = next_page_size(walk.size, entries.len());
            }
            found.read_units += read_units;
            let ids: Vec<TaskId> = entries.iter().map(|entry| entry.task_id.clone()).collect();
            found.judge(store, &ids).await?;
            walk.reached = reached;
            walk.done = next.is_none();
            walk.next = next;
        }
        let reached = complete_above(&walks);
        if found.final_count(reached.as_deref()) >= limit
            || reached.is_none()
            || found.read_units >= max_read_units
        {
            return Ok(page(found, reached, limit, moment.clone()));
        }
    }
    let reached = complete_above(&walks);
    Ok(page(found, reached, limit, moment.clone()))
}

/// How many partitions the tenant's logs are spread over, read fresh, for a search that walks
/// them all (with words, or every task of the tenant); one for any other search, which reads
/// none.
async fn log_shards(store: &Store, filters: &SearchFilters) -> Result<ShardCount, StoreError> {
    let every_task = filters.context_id.is_none() && filters.agent.is_none();
    if filters.words.is_none() && !every_task {
        return Ok(ShardCount::ONE);
    }
    let settings = store.tenant_settings(&filters.tenant).await?;
    Ok(settings.unwrap_or_default().log_shards)
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
fn page(found: Found<'_>, reached: Option<String>, limit: usize, moment: Timestamp) -> SearchPage {
    let read_units = found.read_units;
    let mut placed: Vec<(Position, Task)> = found
        .placed
        .into_values()
        .filter(|(position, _)| {
            reached
                .as_deref()
                .is_none_or(|moment| position.created_at.as_str() > moment)
        })
        .collect();
    placed.sort_by(|a, b| b.0.cmp(&a.0));
    let more_placed = placed.len() > limit;
    placed.truncate(limit);
    let next = match (placed.len() == limit, more_placed || reached.is_some()) {
        (true, true) => placed.last().map(|(position, _)| position.clone()),
        (false, _) => reached.map(|created_at| Position {
            created_at: created_at.into(),
            task_id: TaskId::from(String::new()),
        }),
        (true, false) => None,
    };
    let (positions, tasks) = placed.into_iter().unzip();
    SearchPage {
        read_units,
        tasks,
        positions,
        snapshot: moment.to_string(),
        next: next.map(|after| Cursor {
            snapshot: moment,
            after,
        }),
    }
}

/// Why writing a task's postings failed.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Bodies(#[from] BodyError),
}

/// The words of these messages, their bodies read from the body store where they live there.
async fn words_of(bodies: &Bodies, messages: &[&Stored<Message>]) -> Result<TaskWords, BodyError> {
    let mut words = TaskWords::default();
    for message in messages {
        let value = match message.reference() {
            None => message.to_value(),
            Some(_) => bodies.resolve_message(message).await?,
        };
        words.add(words_of_stored(&value));
    }
    Ok(words)
}

/// The words of `messages` to post for `task`, but those of `known` (posted already); `None`
/// when the task's tenant has word search off (`TenantSettings::word_search`): then no posting
/// of its tasks is written.
async fn words_to_post(
    store: &Store,
    bodies: &Bodies,
    task: &Task,
    messages: &[&Stored<Message>],
    known: &TaskWords,
) -> Result<Option<TaskWords>, IndexError> {
    if !store
        .recent_tenant_settings(&task.tenant_id)
        .await?
        .word_search
    {
        return Ok(None);
    }
    Ok(Some(words_of(bodies, messages).await?.without(known)))
}

/// The task's messages, from the opening one on.
fn history_of(task: &Task) -> Vec<&Stored<Message>> {
    task.history.iter().collect()
}

/// Writes the postings of every word of `task`'s messages (its history), if its tenant has word
/// search on.
async fn post_all_words(store: &Store, bodies: &Bodies, task: &Task) -> Result<(), IndexError> {
    let none_known = TaskWords::default();
    if let Some(words) = words_to_post(store, bodies, task, &history_of(task), &none_known).await? {
        store.post_words(task, &words).await?;
    }
    Ok(())
}

/// The sweeper's repair of a task flagged `words_due`: what follows from its open (its call,
/// audit entry and conversation: `store/open.rs`) and the postings of every word of its
/// messages, then the flag cleared.
pub async fn index_words(
    store: &Store,
    bodies: &Bodies,
    task_id: &TaskId,
) -> Result<(), IndexError> {
    // Read strictly: a task that cannot be decoded fails its repair, which the sweeper sets
    // aside and tries again, rather than being taken for gone and its flag cleared.
    if let Some(task) = store.get_task(task_id).await? {
        store.restore_opened(&task).await?;
        post_all_words(store, bodies, &task).await?;
    }
    store.clear_words_due(task_id).await?;
    Ok(())
}

/// Writes the postings of every task in one segment of `segments` of the table (a parallel
/// scan), from each task's history: how a table whose tasks were indexed before the postings
/// existed (docs/deploy.md) is carried over. Safe to run again: a posting written twice is the
/// same item. Returns how many tasks it indexed.
pub async fn backfill_words(
    store: &Store,
    bodies: &Bodies,
    segment: i32,
    segments: i32,
) -> Result<usize, IndexError> {
    let mut start = None;
    let mut indexed = 0;
    loop {
        let (tasks, next) = store.tasks_page(segment, segments, start).await?;
        for task in &tasks {
            post_all_words(store, bodies, task).await?;
            indexed += 1;
        }
        match next {
            Some(key) => start = Some(key),
            None => return Ok(indexed),
        }
    }
}

/// Writes the postings of the words of `messages`, new in `task`, but those of `known` (words
/// posted already); when that fails (the change that added the messages stands), flags the task
/// for the sweeper. A failure is logged, never answered.
async fn post_new_words(
    store: &Store,
    bodies: &Bodies,
    task: &Task,
    messages: &[&Stored<Message>],
    known: &TaskWords,
) {
    if messages.is_empty() {
        return;
    }
    let posted = match words_to_post(store, bodies, task, messages, known).await {
        Ok(Some(words)) => store
            .post_words(task, &words)
            .await
            .map_err(IndexError::from),
        Ok(None) => Ok(()),
        Err(error) => Err(error),
    };
    if let Err(error) = posted {
        flag_for_sweeper(store, task, &error).await;
    }
}

/// Flags `task` for the sweeper's [`index_words`]: writing what follows from its change failed.
async fn flag_for_sweeper(store: &Store, task: &Task, error: &IndexError) {
    tracing::warn!(task_id = %task.id, error = %error, "could not write the task's postings and ledger items; the sweeper will");
    if let Err(error) = store.flag_words_due(task).await {
        tracing::error!(task_id = %task.id, error = %error, "could not flag the task for the sweeper: its new words stay unsearchable until it is indexed again");
    }
}

/// Writes what follows from a task its open just wrote, in one batch: its call, its audit entry,
/// the conversation it starts, and the postings of its opening message's words. When any of it
/// fails (the task stands, and is answered), flags the task for the sweeper, which writes it all
/// again. A failure is logged, never answered.
pub async fn record_opened(store: &Store, bodies: &Bodies, task: &Task, context: ContextJoin) {
    let none_known = TaskWords::default();
    let words = words_to_post(store, bodies, task, &history_of(task), &none_known).await;
    let written = store
        .record_opened(task, context, words.as_ref().ok().and_then(Option::as_ref))
        .await
        .map_err(IndexError::from)
        .and(words.map(|_| ()));
    if let Err(error) = written {
        flag_for_sweeper(store, task, &error).await;
    }
}

/// Posts the words of the message a committed change appended to `task` (as the change left
/// it), if it appended one: the latest entry of its history.
pub async fn index_changed(store: &Store, bodies: &Bodies, task: &Task) {
    let appended = matches!(
        task.changes.last(),
        Some(Change::State {
            with_message: true,
            ..
        })
    );
    let Some((latest, earlier)) = task.history.split_last().filter(|_| appended) else {
        return;
    };
    // The words of the earlier messages held in the item are posted already; those of a body in
    // the body store are not read again for this, and posting one of them twice writes nothing new.
    let mut known = TaskWords::default();
    for message in earlier
        .iter()
        .filter(|message| message.reference().is_none())
    {
        known.add(words_of_stored(&message.to_value()));
    }
    post_new_words(store, bodies, task, &[latest], &known).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_a_state_left_mostly_out_is_followed_by_a_larger_one_up_to_the_cap() {
        assert_eq!(next_page_size(51, 50), 51, "a full read: the page is near");
        assert_eq!(next_page_size(51, 26), 51);
        assert_eq!(next_page_size(51, 25), 204);
        assert_eq!(next_page_size(204, 0), 816);
        assert_eq!(next_page_size(816, 3), MAX_STATE_PAGE);
        assert_eq!(next_page_size(MAX_STATE_PAGE, 0), MAX_STATE_PAGE);
    }
}
