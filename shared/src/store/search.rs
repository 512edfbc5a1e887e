//! Task search's reads: the indexes a search walks, and the batch reads that judge what they
//! find.
//!
//! | index | partition (attributes) | sort | holds |
//! |---|---|---|---|
//! | `inbound_tasks` | `callee_agent_id` | `created_at` | every task by its callee: keys, `state`, `changed_at` |
//! | `outbound_tasks` | `caller_agent_id` | `created_at` | every task by its caller: keys, `state`, `changed_at`, `callee_agent_id` |
//! | `conversation` | `context_id` | `created_at` | every task by conversation (at most 100): keys |
//!
//! A search with words reads no index: it walks the table's word postings (`store/words.rs`).
//! Every walk is ordered by the tasks' creation, which never moves: a task's entries are written
//! once, at its open, and its later writes only refresh the projected `state` and `changed_at`
//! (one unit per side, never a delete and a put). A search in one state, or changed since a
//! moment, reads the side's index with a filter on what it holds; a search reads the tasks it
//! finds in one batch. The pair's binding has the side indexes' key attributes too: its entry is
//! passed over.

use crate::domain::clock::Timestamp;
use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{KeysAndAttributes, ReturnConsumedCapacity};

use super::item::{s, units, Item, Reader};
use super::layout::{
    audit_partition, moment_of_sort_key, moment_sort_key_bound, posting_partition, stored_context,
    TASK_SORT_KEY,
};
use super::task_item::{task_id_of, task_key};
use super::{classify, Store, StoreError};
use crate::domain::search::{Direction, Position, Side};
use crate::domain::{clock, AgentId, Task, TaskId, TaskState, TenantId};

/// One index a search walks, and its partition.
#[derive(Debug, Clone, Copy)]
pub enum SearchIndex<'a> {
    /// The agent's tasks on one side, those in `state` when it is given.
    Side {
        side: Side,
        agent: &'a AgentId,
        state: Option<TaskState>,
    },
    /// One conversation's tasks (at most 100, in either direction): the one the gate issued
    /// with that id, and the one of the tenant a client named so.
    Context {
        tenant: &'a TenantId,
        context_id: &'a str,
    },
    /// The postings of one word among a tenant's tasks, by the tasks' creation (the table's own
    /// items, `store/words.rs`), keeping the agent's tasks in one direction.
    Word {
        tenant: &'a TenantId,
        agent: Option<&'a AgentId>,
        direction: Direction,
        word: &'a str,
        /// The partition of the tenant's spread logs (`domain/shards.rs`) it walks.
        shard: u16,
    },
    /// Every task of a tenant, by creation: the `task.open` entries of one partition of its
    /// audit log (the table's own items, one per task, written with the task's creation as
    /// their moment); a search walks every partition the log is spread over.
    Opens { tenant: &'a TenantId, shard: u16 },
}

impl SearchIndex<'_> {
    /// One index of each kind the table defines, for checking its definition against the code.
    #[cfg(all(test, feature = "local-stack"))]
    pub(crate) fn examples() -> [SearchIndex<'static>; 3] {
        static AGENT: std::sync::LazyLock<AgentId> = std::sync::LazyLock::new(|| "agent".into());
        static TENANT: std::sync::LazyLock<TenantId> = std::sync::LazyLock::new(|| "tenant".into());
        let agent = &*AGENT;
        let state = Some(TaskState::Working);
        [
            SearchIndex::Side {
                side: Side::Inbound,
                agent,
                state,
            },
            SearchIndex::Side {
                side: Side::Outbound,
                agent,
                state,
            },
            SearchIndex::Context {
                tenant: &TENANT,
                context_id: "context",
            },
        ]
    }

    /// The index's name; `None` for word postings, which are the table's own items.
    pub(crate) fn name(&self) -> Option<&'static str> {
        Some(match self {
            SearchIndex::Side { side, .. } => match side {
                Side::Inbound => "inbound_tasks",
                Side::Outbound => "outbound_tasks",
            },
            SearchIndex::Context { .. } => "conversation",
            SearchIndex::Word { .. } | SearchIndex::Opens { .. } => return None,
        })
    }

    /// The partition's attributes and values.
    pub(crate) fn partition(&self) -> Vec<(&'static str, String)> {
        let agent_attribute = |side: Side| match side {
            Side::Inbound => "callee_agent_id",
            Side::Outbound => "caller_agent_id",
        };
        match *self {
            SearchIndex::Side { side, agent, .. } => {
                vec![(agent_attribute(side), agent.to_string())]
            }
            SearchIndex::Context { context_id, .. } => {
                vec![("context_id", context_id.to_owned())]
            }
            SearchIndex::Word {
                tenant,
                word,
                shard,
                ..
            } => vec![("pk", posting_partition(tenant, word, shard))],
            SearchIndex::Opens { tenant, shard } => vec![("pk", audit_partition(tenant, shard))],
        }
    }

    /// The state a read keeps, when the index holds others too.
    fn state(&self) -> Option<TaskState> {
        match self {
            SearchIndex::Side { state, .. } => *state,
            _ => None,
        }
    }
}

/// Which part of an index a read covers: the tasks created at or before `at_or_before` (the
/// reader drops those at that very moment that are not below its cursor), and, on a side's
/// index, only those whose latest change is after `changed_after`.
#[derive(Debug, Clone, Copy)]
pub struct Range<'a> {
    pub changed_after: Option<&'a str>,
    pub at_or_before: Option<&'a str>,
}

/// One page of index entries, newest first, and where the next page starts (`None` at the end).
#[derive(Debug, Default)]
pub struct IndexPage {
    pub entries: Vec<Position>,
    /// The moment the read got down to (its last entry's, or the last one a filter left out).
    pub reached: Option<String>,
    pub next: Option<Item>,
    /// The read capacity the page cost, as the store reports it.
    pub read_units: f64,
}

/// Items a batch read found, and the read capacity it cost.
pub(super) struct Batch {
    pub items: Vec<Item>,
    pub read_units: f64,
}

/// The task an index entry stands for, and its position there (its creation).
fn entry_position(item: &Item) -> Result<Position, StoreError> {
    Ok(Position {
        created_at: Reader(item).at("created_at")?,
        task_id: task_id_of(item, "search index entry")?,
    })
}

/// Whether an index entry is a task's (the pair's binding has the side indexes' keys too).
fn is_task_entry(item: &Item) -> bool {
    Reader(item).s("sk").is_ok_and(|sk| sk == TASK_SORT_KEY)
}

/// A read of one partition of the table's own items whose sort keys start with a moment
/// (`{moment}#…`), newest first.
pub(super) struct NewestFirst<'a> {
    pub partition: String,
    /// Only items at or before this moment (`None`: all).
    pub top: Option<&'a str>,
    pub start: Option<Item>,
    pub limit: i32,
}

/// Reads a [`NewestFirst`] query: the entries `position` finds in its items, and the moment the
/// read got down to (its last item evaluated, which a filter may have left out).
pub(super) async fn read_newest_first(
    query: QueryFluentBuilder,
    position: impl Fn(&Item) -> Result<Position, StoreError>,
) -> Result<IndexPage, StoreError> {
    let output = query.send().await.map_err(classify)?;
    let entries = super::page::decoded(output.items(), "search index", &position);
    let reached = match &output.last_evaluated_key {
        Some(key) => {
            let sort_key = Reader(key).s("sk")?;
            let moment = moment_of_sort_key(&sort_key)
                .ok_or_else(|| StoreError::Corrupt(format!("sort key {sort_key}")))?;
            Some(moment.to_owned())
        }
        None => entries.last().map(|entry| entry.created_at.to_string()),
    };
    Ok(IndexPage {
        reached,
        entries,
        read_units: units(output.consumed_capacity()),
        next: output.last_evaluated_key,
    })
}

/// Most keys one `BatchGetItem` takes.
const BATCH_KEYS: usize = 100;
/// Most rounds spent on keys a batch read left unprocessed before the read counts as failed.
const UNPROCESSED_ROUNDS: usize = 5;

impl Store {
    /// The query of a [`NewestFirst`] read, strongly consistent, its filter still to add.
    pub(super) fn newest_first(&self, page: NewestFirst<'_>) -> QueryFluentBuilder {
        let query = self
            .client()
            .query()
            .table_name(self.table())
            .consistent_read(true)
            .scan_index_forward(false)
            .limit(page.limit)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .set_exclusive_start_key(page.start)
            .expression_attribute_values(":pk", s(page.partition));
        match page.top {
            // `$` sorts after `#`: every item at the top moment is below.
            Some(top) => query
                .key_condition_expression("pk = :pk AND sk < :below")
                .expression_attribute_values(":below", s(moment_sort_key_bound(top))),
            None => query.key_condition_expression("pk = :pk"),
        }
    }

    /// Up to `limit` entries of `index` in `range`, newest first, from `start` (an earlier
    /// page's `next`).
    pub async fn search_index_page(
        &self,
        index: SearchIndex<'_>,
        range: Range<'_>,
        start: Option<Item>,
        limit: i32,
    ) -> Result<IndexPage, StoreError> {
        if let SearchIndex::Word {
            tenant,
            agent,
            direction,
            word,
            shard,
        } = index
        {
            // Word postings: the table's own items, by creation. A change's moment is not a
            // creation, so `since` is judged on the tasks read.
            let partition = posting_partition(tenant, word, shard);
            let top = range.at_or_before;
            let filter = (agent, direction);
            return self
                .posting_page(partition, filter, top, start, limit)
                .await;
        }
        if let SearchIndex::Context { tenant, context_id } = index {
            let mut page = self.conversation_page(context_id).await?;
            let named = self
                .conversation_page(&stored_context(tenant, context_id, true))
                .await?;
            page.entries.extend(named.entries);
            page.read_units += named.read_units;
            return Ok(page);
        }
        if let SearchIndex::Opens { tenant, shard } = index {
            return self
                .opens_page((tenant, shard), range.at_or_before, start, limit)
                .await;
        }
        self.secondary_index_page(index, range, start, limit).await
    }

    /// Up to `limit` entries of one of the table's secondary indexes (by agent, pair or state)
    /// in `range`, newest first, from `start`.
    async fn secondary_index_page(
        &self,
        index: SearchIndex<'_>,
        range: Range<'_>,
        start: Option<Item>,
        limit: i32,
    ) -> Result<IndexPage, StoreError> {
        let Some(index_name) = index.name() else {
            return Ok(IndexPage::default());
        };
        let mut condition = Vec::new();
        let mut filters = Vec::new();
        let mut query = self
            .client()
            .query()
            .table_name(self.table())
            .index_name(index_name)
            .scan_index_forward(false)
            .limit(limit)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .set_exclusive_start_key(start);
        for (place, (attribute, value)) in index.partition().into_iter().enumerate() {
            condition.push(format!("#p{place} = :p{place}"));
            query = query
                .expression_attribute_names(format!("#p{place}"), attribute)
                .expression_attribute_values(format!(":p{place}"), s(value));
        }
        if let Some(high) = range.at_or_before {
            condition.push("created_at <= :high".into());
            query = query.expression_attribute_values(":high", s(high));
        }
        if let Some(low) = range.changed_after {
            filters.push("changed_at > :low");
            query = query.expression_attribute_values(":low", s(low));
        }
        if let Some(state) = index.state() {
            filters.push("#state = :state");
            query = query
                .expression_attribute_names("#state", "state")
                .expression_attribute_values(":state", s(state.as_str()));
        }
        if !filters.is_empty() {
            query = query.filter_expression(filters.join(" AND "));
        }
        let output = query
            .key_condition_expression(condition.join(" AND "))
            .send()
            .await
            .map_err(classify)?;
        let task_entries = output.items().iter().filter(|item| is_task_entry(item));
        let entries = super::page::decoded(task_entries, "search index", entry_position);
        // Read down to the last entry evaluated, which a filter may have left out.
        let reached = match &output.last_evaluated_key {
            Some(key) => Some(Reader(key).s("created_at")?),
            None => entries.last().map(|entry| entry.created_at.to_string()),
        };
        Ok(IndexPage {
            entries,
            reached,
            read_units: units(output.consumed_capacity()),
            next: output.last_evaluated_key,
        })
    }

    /// Up to `limit` entries of a tenant's audit log, newest first, of those at or before
    /// `top` (the reader drops those at that moment that are not below its cursor), from
    /// `start`; of those, the opens of tasks, each at its task's creation. A change's moment is
    /// not a creation, so `state` and `since` are judged on the tasks read.
    async fn opens_page(
        &self,
        (tenant, shard): (&TenantId, u16),
        top: Option<&str>,
        start: Option<Item>,
        limit: i32,
    ) -> Result<IndexPage, StoreError> {
        let page = NewestFirst {
            partition: audit_partition(tenant, shard),
            top,
            start,
            limit,
        };
        let query = self
            .newest_first(page)
            .filter_expression("#action = :open AND #outcome = :allowed")
            .expression_attribute_names("#action", "action")
            .expression_attribute_values(":open", s(super::audit::TASK_OPENED))
            // A refused open has an entry of the same action and no task.
            .expression_attribute_names("#outcome", "outcome")
            .expression_attribute_values(":allowed", s("allowed"));
        let open_position = |item: &Item| {
            Ok(Position {
                created_at: Reader(item).at("at")?,
                task_id: Reader(item).id("task_id")?,
            })
        };
        read_newest_first(query, open_position).await
    }

    /// Every task of one conversation (at most 100, by creation), in one read: a conversation
    /// search judges them all by its snapshot, so the page has no order to follow here.
    async fn conversation_page(&self, context_id: &str) -> Result<IndexPage, StoreError> {
        let mut entries = Vec::new();
        let mut read_units = 0.0;
        let mut start = None;
        loop {
            let output = self
                .client()
                .query()
                .table_name(self.table())
                .index_name("conversation")
                .key_condition_expression("context_id = :context")
                .expression_attribute_values(":context", s(context_id))
                .return_consumed_capacity(ReturnConsumedCapacity::Total)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            read_units += units(output.consumed_capacity());
            for item in output.items() {
                entries.push(Position {
                    created_at: Timestamp::default(),
                    task_id: task_id_of(item, "conversation entry")?,
                });
            }
            match output.last_evaluated_key {
                Some(key) => start = Some(key),
                None => break,
            }
        }
        Ok(IndexPage {
            entries,
            reached: None,
            next: None,
            read_units,
        })
    }

    /// The tasks with these ids that exist and are not past their retention, strongly
    /// consistent, by id; and the read capacity that cost.
    pub async fn get_tasks(
        &self,
        ids: &[TaskId],
    ) -> Result<(HashMap<TaskId, Task>, f64), StoreError> {
        let unique: HashSet<&TaskId> = ids.iter().collect();
        let keys: Vec<Item> = unique.into_iter().map(task_key).collect();
        let now = clock::unix_now();
        let batch = self.batch_get(keys).await?;
        let tasks = super::page::decoded(&batch.items, "tasks by id", Task::try_from)
            .into_iter()
            .filter(|task| task.expires_at.is_none_or(|at| at > now))
            .map(|task| (task.id.clone(), task))
            .collect();
        Ok((tasks, batch.read_units))
    }

    /// Every item of these keys that exists, strongly consistent, in batches.
    pub(super) async fn batch_get(&self, keys: Vec<Item>) -> Result<Batch, StoreError> {
        let mut items = Vec::new();
        let mut read_units = 0.0;
        for chunk in keys.chunks(BATCH_KEYS) {
            let mut pending = chunk.to_vec();
            for _ in 0..UNPROCESSED_ROUNDS {
                if pending.is_empty() {
                    break;
                }
                let request = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut pending)))
                    .consistent_read(true)
                    .build()
                    .map_err(|error| StoreError::Rejected(error.to_string()))?;
                let output = self
                    .client()
                    .batch_get_item()
                    .request_items(self.table(), request)
                    .return_consumed_capacity(ReturnConsumedCapacity::Total)
                    .send()
                    .await
                    .map_err(classify)?;
                read_units += output
                    .consumed_capacity()
                    .iter()
                    .map(|consumed| units(Some(consumed)))
                    .sum::<f64>();
                if let Some(found) = output
                    .responses
                    .and_then(|mut by_table| by_table.remove(self.table()))
                {
                    items.extend(found);
                }
                pending = output
                    .unprocessed_keys
                    .and_then(|mut by_table| by_table.remove(self.table()))
                    .map(|left| left.keys)
                    .unwrap_or_default();
            }
            if !pending.is_empty() {
                return Err(StoreError::Unavailable(format!(
                    "{} keys left unprocessed",
                    pending.len()
                )));
            }
        }
        Ok(Batch { items, read_units })
    }
}
