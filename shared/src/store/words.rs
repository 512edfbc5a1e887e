//! The word index of task search: one posting per distinct word of a task's messages, written
//! once and never rewritten, in the table itself with no index on it.
//!
//! | item | pk | sk | also holds |
//! |---|---|---|---|
//! | posting | `WORDS#{tenant}#{word}` | `{created_at}#{task_id}` | `caller_agent_id`, `callee_agent_id` |
//!
//! A word's postings of one tenant are one partition, sorted by the task's creation, so a search
//! with words reads the newest tasks holding its longest word first with a strongly consistent
//! `Query` that keeps those of the searched agent on the searched side (a filter on the two
//! agents the posting names), and checks its other words by key (`BatchGetItem`). One posting
//! serves both sides of its task: a search of the callee's inbound tasks and one of the caller's
//! outbound tasks read the same item. A posting's keys are fixed when its task is opened, so
//! nothing a task does later moves it: each message adds the postings of its new words and
//! nothing else is written. A posting expires with its task.
//!
//! The postings of a message are written right after the write that added the message commits.
//! When that fails (the message stands), the task is flagged `words_due`, which the sparse index
//! `words_due` lists by `shard`, and the sweeper writes its postings again from its history.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::WriteRequest;

use super::item::{key, n, put_request, s, write_units, Item, Reader};
use super::layout::{
    posting_partition, posting_place, posting_sort_key, search_shard, TASK_SORT_KEY,
};
use super::search::{read_newest_first, Batch, IndexPage, NewestFirst};
use super::task_item::{task_id_of, task_key, WORDS_ASIDE, WORDS_DUE};
use super::{classify, Store, StoreError};
use crate::domain::search::{Direction, Position};
use crate::domain::words::TaskWords;
use crate::domain::{AgentId, Task, TaskId};

/// The task and place a posting stands for, from its sort key.
pub(crate) fn posting_position(item: &Item) -> Result<Position, StoreError> {
    let sk = Reader(item).s("sk")?;
    let (created_at, task_id) =
        posting_place(&sk).ok_or_else(|| StoreError::Corrupt(format!("posting {sk}")))?;
    Ok(Position {
        created_at: created_at.into(),
        task_id: TaskId::from(task_id.to_owned()),
    })
}

/// The key of `task`'s posting of `word`, on the partition of the task's spread logs.
fn posting_key(task: &Task, word: &str) -> Item {
    key(
        posting_partition(&task.tenant_id, word, task.log_shard),
        posting_sort_key(&task.created_at, &task.id),
    )
}

/// The puts of `task`'s postings of `words`, each naming the task's two agents and expiring with
/// the task: the words in the order they were written, while their write units fit `units`.
fn posting_puts(
    task: &Task,
    words: &TaskWords,
    units: u64,
) -> Result<Vec<WriteRequest>, StoreError> {
    let mut puts = Vec::new();
    let mut spent = 0;
    for word in words.iter() {
        let mut item = posting_key(task, word);
        item.insert("kind".into(), s("posting"));
        item.insert("caller_agent_id".into(), s(&task.caller_agent_id));
        item.insert("callee_agent_id".into(), s(&task.callee_agent_id));
        if let Some(expires_at) = task.expires_at {
            item.insert("expires_at".into(), n(expires_at));
        }
        spent += write_units(&item);
        if spent > units {
            tracing::info!(task_id = %task.id, posted = puts.len(), words = words.len(), units, "the message's postings reached the write units one write may spend; its later words are not indexed");
            break;
        }
        puts.push(put_request(item)?);
    }
    Ok(puts)
}

/// The filter that keeps the postings of `agent`'s tasks in `direction`.
fn direction_filter(direction: Direction) -> &'static str {
    match direction {
        Direction::Inbound => "callee_agent_id = :agent",
        Direction::Outbound => "caller_agent_id = :agent",
        Direction::Both => "callee_agent_id = :agent OR caller_agent_id = :agent",
    }
}

/// Most requests one `BatchWriteItem` takes.
const BATCH_WRITES: usize = 25;
/// Most rounds spent on requests a batch write left unprocessed.
const UNPROCESSED_ROUNDS: usize = 5;

impl Store {
    /// Writes `task`'s postings of `words`, as many as the write units one write of postings
    /// may spend allow ([`Store::with_index_units`]). Writing a posting that exists already
    /// changes nothing.
    /// A throttled write spreads the tenant's logs further (`store/audit_log.rs`).
    pub async fn post_words(&self, task: &Task, words: &TaskWords) -> Result<(), StoreError> {
        let written = self
            .batch_write(posting_puts(task, words, self.index_units)?)
            .await;
        if let Err(StoreError::Throttled(_)) = &written {
            self.logs_throttled(&task.tenant_id).await;
        }
        written
    }

    /// Writes what follows from a task its open just wrote (`store/open.rs`: its call, its audit
    /// entry, the conversation it starts) and the postings of its opening message's `words`
    /// (none when they could not be read), in one batch. A throttled batch spreads the tenant's
    /// audit log further (`store/audit_log.rs`).
    pub async fn record_opened(
        &self,
        task: &Task,
        context: super::open::ContextJoin,
        words: Option<&TaskWords>,
    ) -> Result<(), StoreError> {
        let mut puts = super::open::opened_items(task, context)
            .into_iter()
            .map(put_request)
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(words) = words {
            puts.extend(posting_puts(task, words, self.index_units)?);
        }
        let written = self.batch_write(puts).await;
        if let Err(StoreError::Throttled(_)) = &written {
            // The batch holds the task's audit entry and postings: its tenant's logs are spread
            // further, so that later opens share the load (the throttle may have been its call's
            // or its conversation's).
            self.logs_throttled(&task.tenant_id).await;
        }
        written
    }

    /// Up to `limit` postings of one partition (a word among a tenant's tasks), newest task
    /// first, of the tasks created at or before `top` (the reader drops those at that moment that
    /// are not below its cursor), from `start` (an earlier page's `next`); of those, the ones of
    /// `agent`'s tasks in `direction` (all of them without an agent).
    pub(crate) async fn posting_page(
        &self,
        partition: String,
        (agent, direction): (Option<&AgentId>, Direction),
        top: Option<&str>,
        start: Option<Item>,
        limit: i32,
    ) -> Result<IndexPage, StoreError> {
        let page = NewestFirst {
            partition,
            top,
            start,
            limit,
        };
        let mut query = self.newest_first(page);
        if let Some(agent) = agent {
            query = query
                .filter_expression(direction_filter(direction))
                .expression_attribute_values(":agent", s(agent));
        }
        read_newest_first(query, posting_position).await
    }

    /// Of these tasks, the ones with a posting of every one of `words`; and the read units that
    /// cost.
    pub async fn tasks_with_words(
        &self,
        tasks: &[&Task],
        words: &[&str],
    ) -> Result<(std::collections::HashSet<TaskId>, f64), StoreError> {
        let keys = tasks
            .iter()
            .flat_map(|task| words.iter().map(|word| posting_key(task, word)))
            .collect();
        let Batch { items, read_units } = self.batch_get(keys).await?;
        let mut found: std::collections::HashMap<TaskId, usize> = Default::default();
        for item in &items {
            *found.entry(posting_position(item)?.task_id).or_default() += 1;
        }
        let complete = found
            .into_iter()
            .filter(|(_, count)| *count >= words.len())
            .map(|(task_id, _)| task_id)
            .collect();
        Ok((complete, read_units))
    }

    /// Flags the task's words as due, for the sweeper: writing its postings failed.
    pub async fn flag_words_due(&self, task: &Task) -> Result<(), StoreError> {
        let update = self
            .client()
            .update_item()
            .set_key(Some(task_key(&task.id)))
            .update_expression("SET words_due = :due, #shard = :shard")
            .expression_attribute_names("#shard", "shard")
            .expression_attribute_values(":due", s(WORDS_DUE))
            .expression_attribute_values(":shard", s(search_shard(&task.id)));
        self.update_unless_gone(update).await
    }

    /// Sends an update of a task's item; a task that is gone (past its retention) needs none.
    async fn update_unless_gone(&self, update: UpdateItemFluentBuilder) -> Result<(), StoreError> {
        update
            .table_name(self.table())
            .condition_expression("attribute_exists(pk)")
            .send()
            .await
            .map(|_| ())
            .or_else(|error| match error.as_service_error() {
                Some(service) if service.is_conditional_check_failed_exception() => Ok(()),
                _ => Err(classify(error)),
            })
    }

    /// Moves a task whose postings a sweep failed to write to the list of those set aside (if it
    /// is still due: one whose words were written meanwhile stays as it is).
    pub async fn set_words_aside(&self, task_id: &TaskId) -> Result<(), StoreError> {
        let update = self
            .client()
            .update_item()
            .set_key(Some(task_key(task_id)))
            .update_expression("SET words_due = :aside")
            .condition_expression("words_due = :due")
            .expression_attribute_values(":aside", s(WORDS_ASIDE))
            .expression_attribute_values(":due", s(WORDS_DUE))
            .table_name(self.table())
            .send()
            .await;
        match update {
            Ok(_) => Ok(()),
            Err(error) => match error.as_service_error() {
                Some(service) if service.is_conditional_check_failed_exception() => Ok(()),
                _ => Err(classify(error)),
            },
        }
    }

    /// Up to `limit` tasks of one shard of `lane` whose words are due since before `before` (the
    /// `words_due` index: `words_due`, `shard` / `changed_at`).
    pub async fn words_due(
        &self,
        lane: WordsLane,
        shard: char,
        before: &str,
        limit: i32,
    ) -> Result<Vec<TaskId>, StoreError> {
        let output = self
            .client()
            .query()
            .table_name(self.table())
            .index_name("words_due")
            .key_condition_expression(
                "words_due = :due AND #shard = :shard AND changed_at < :before",
            )
            .expression_attribute_names("#shard", "shard")
            .expression_attribute_values(":due", s(lane.value()))
            .expression_attribute_values(":shard", s(shard.to_string()))
            .expression_attribute_values(":before", s(before))
            .limit(limit)
            .send()
            .await
            .map_err(classify)?;
        output
            .items()
            .iter()
            .map(|item| task_id_of(item, "due entry"))
            .collect()
    }

    /// Clears the task's `words_due` flag: its postings are written.
    pub async fn clear_words_due(&self, task_id: &TaskId) -> Result<(), StoreError> {
        let update = self
            .client()
            .update_item()
            .set_key(Some(task_key(task_id)))
            .update_expression("REMOVE words_due");
        self.update_unless_gone(update).await
    }

    /// One page of the table's tasks not past their retention, from one segment of `segments`
    /// of a parallel scan (for the backfill of postings); and where the next page starts. A scan
    /// reads whole items whatever it returns, so the tasks come whole, not read again by key.
    pub async fn tasks_page(
        &self,
        segment: i32,
        segments: i32,
        start: Option<Item>,
    ) -> Result<(Vec<Task>, Option<Item>), StoreError> {
        let output = self
            .client()
            .scan()
            .table_name(self.table())
            .segment(segment)
            .total_segments(segments)
            .filter_expression("sk = :task")
            .expression_attribute_values(":task", s(TASK_SORT_KEY))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(classify)?;
        let now = crate::domain::clock::unix_now();
        let mut tasks = Vec::new();
        for item in output.items() {
            let task = Task::try_from(item)?;
            if task.expires_at.is_none_or(|at| at > now) {
                tasks.push(task);
            }
        }
        Ok((tasks, output.last_evaluated_key))
    }

    /// Runs these writes in batches, retrying what a batch leaves unprocessed.
    pub(crate) async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<(), StoreError> {
        for chunk in requests.chunks(BATCH_WRITES) {
            let mut pending = chunk.to_vec();
            for _ in 0..UNPROCESSED_ROUNDS {
                if pending.is_empty() {
                    break;
                }
                let output = self
                    .client()
                    .batch_write_item()
                    .request_items(self.table(), std::mem::take(&mut pending))
                    .send()
                    .await
                    .map_err(classify)?;
                pending = output
                    .unprocessed_items
                    .and_then(|mut by_table| by_table.remove(self.table()))
                    .unwrap_or_default();
            }
            if !pending.is_empty() {
                return Err(StoreError::Throttled(format!(
                    "{} writes left unprocessed",
                    pending.len()
                )));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "local-stack")]
impl Store {
    /// Writes tasks as the gateway leaves them once their words are posted (the task item and
    /// its postings), in batches: for benchmarks that need a table of many tasks.
    pub async fn seed_indexed_tasks(&self, tasks: &[(Task, TaskWords)]) -> Result<(), StoreError> {
        let mut writes = Vec::new();
        for (task, words) in tasks {
            writes.push(put_request(super::task_item::to_item(task))?);
            writes.extend(posting_puts(task, words, u64::MAX)?);
        }
        self.batch_write(writes).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::task::{CallLineage, TaskOpening};
    use crate::domain::words::MAX_WORD_CHARS;
    use crate::domain::TenantId;
    use crate::domain::{Agent, Message, Part};
    use crate::store::item::item_size;

    const UUID: &str = "9f0c7a9e-1111-4222-8333-444455556666";

    /// A task with every id as long as the gateway makes them.
    fn task() -> Task {
        let callee = Agent::sample(UUID, UUID, "callee");
        let message = Message::agent(vec![Part::Text("hi".into())]);
        Task::open(TaskOpening {
            id: UUID.into(),
            caller_agent_id: UUID.into(),
            callee: &callee,
            context_id: UUID.into(),
            input: crate::domain::content::Stored::Inline(message),
            input_bytes: 2,
            lineage: CallLineage {
                call_id: UUID.into(),
                parent_call_id: None,
                root_call_id: UUID.into(),
            },
            now: "2026-01-01T00:00:00.000000Z".into(),
            expires_at: 1_800_000_000,
        })
    }

    fn posted_item(put: &WriteRequest) -> &Item {
        put.put_request().map(|put| put.item()).unwrap()
    }

    #[test]
    fn the_largest_posting_a_word_can_make_costs_one_write_unit() {
        // The longest word kept, each of its characters four bytes long in UTF-8.
        let longest = "𝄞".repeat(MAX_WORD_CHARS);
        let words = TaskWords::from_known([longest]);
        let puts = posting_puts(&task(), &words, 1).unwrap();
        assert_eq!(puts.len(), 1);
        let size = item_size(posted_item(&puts[0]));
        assert!(size > 256 && size <= 1024, "{size} bytes");
        assert_eq!(write_units(posted_item(&puts[0])), 1);
    }

    #[test]
    fn a_messages_postings_stop_where_their_write_units_reach_the_bound() {
        let words = TaskWords::from_known((0..50).rev().map(|n| format!("w{n}")));
        let puts = posting_puts(&task(), &words, 20).unwrap();
        assert_eq!(puts.len(), 20);
        let kept: Vec<String> = puts
            .iter()
            .map(|put| Reader(posted_item(put)).s("pk").unwrap())
            .collect();
        assert_eq!(
            kept[0], "WORDS#9f0c7a9e-1111-4222-8333-444455556666#w49",
            "the first word written first"
        );
        assert_eq!(kept[19], "WORDS#9f0c7a9e-1111-4222-8333-444455556666#w30");
        assert_eq!(posting_puts(&task(), &words, 1_000).unwrap().len(), 50);
    }

    #[test]
    fn a_posting_sorts_by_its_task_s_creation_and_reads_back_its_place() {
        let id = TaskId::from("9f0c7a9e-1111-4222-8333-444455556666".to_owned());
        let early = posting_sort_key("2026-01-01T00:00:00.000001Z", &id);
        let late = posting_sort_key("2026-01-01T00:00:00.000002Z", &id);
        assert!(early < late);
        let item = key(
            posting_partition(&TenantId::from("tenant"), "word", 0),
            late.clone(),
        );
        let place = posting_position(&item).unwrap();
        assert_eq!(place.created_at, "2026-01-01T00:00:00.000002Z");
        assert_eq!(place.task_id, id);
        let partition = posting_partition(&TenantId::from("t"), "w", 0);
        assert!(posting_position(&key(partition, "no-separator")).is_err());
        assert_ne!(
            posting_partition(&TenantId::from("a"), "w", 0),
            posting_partition(&TenantId::from("b"), "w", 0)
        );
    }
}

/// A list of tasks whose word postings are behind them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WordsLane {
    /// Flagged when writing their postings failed.
    Due,
    /// Set aside after a sweep failed on them too: retried a page a sweep.
    Aside,
}

impl WordsLane {
    fn value(self) -> &'static str {
        match self {
            WordsLane::Due => WORDS_DUE,
            WordsLane::Aside => WORDS_ASIDE,
        }
    }
}
