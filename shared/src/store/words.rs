//! The word index of task search: for each task, one posting per distinct word of its
//! messages, in the task's partition, for the task's current position.
//!
//! | item | pk | sk | attributes |
//! |---|---|---|---|
//! | posting | `TASK#{id}` | `WORD#{changed_at}#{word}` | `w_callee`, `w_caller`, `word`, `changed_at`, `task_id` (on `words_in`, `words_out`) |
//! | the task's word marker | `TASK#{id}` | `WORDS` | `changed_at`, `through`, `words` |
//!
//! A search orders tasks by their latest change, so a posting's sort key is a moment of the
//! task (its generation). A task of at most [`EXACT_WORDS`] words, and every task once it is
//! finished, has all its postings at its current moment: each change writes the new generation
//! and deletes the others in the same batches. A larger open task would make every change
//! rewrite hundreds of postings, so its changes only add postings for its new words and flag it
//! `words_lag`. A change that adds no words (a claim, a push callee accepting:
//! `task_item::LOG_WORDLESS_CHANGES`) writes nothing here at all: it moves the task and flags it
//! `words_lag`, and the postings stay at the task's `words_at`, the moment its words last
//! changed. A search walks an agent's lagging tasks (a sparse index, ordered like the postings)
//! beside the postings and places each task by the task itself, whatever its postings say.
//!
//! The marker records the task's whole word set (which is what a search checks a candidate's
//! words against) and how many history entries it covers, with a write that only moves forward,
//! in one transaction with the task's flags (clearing `words_due`, and setting or clearing
//! `words_lag`) while the task is still at that moment, or its words are (`words_at`). A pass
//! that lost that race deletes the postings it wrote.
//! `words_due` (set by every logged change, see `task_item::LOG_CHANGES`) is how the sweeper
//! finds a task whose indexing after a write failed.

use aws_sdk_dynamodb::types::{
    AttributeValue, DeleteRequest, Put, PutRequest, TransactWriteItem, Update, WriteRequest,
};

use super::item::{key, n, s, Item, Reader};
use super::task_item::{task_id_of, task_key, WORDS_DUE, WORDS_LAG};
use super::tasks::build;
use super::{classify, Store, StoreError};
use crate::domain::words::TaskWords;
use crate::domain::{Task, TaskId};

/// The most distinct words a task may have for its changes to keep every posting at its
/// current moment (see the module's comment).
pub const EXACT_WORDS: usize = 64;

/// What the word index knows of a task: the moment of its indexed generation, its words, and
/// how many of the task's history entries they cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WordMarker {
    pub changed_at: String,
    pub through: usize,
    pub words: TaskWords,
    /// Whether the task's postings may stand at several moments (it was a large open task):
    /// when not, every posting is at `changed_at`.
    pub lagging: bool,
}

/// How writing a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indexed {
    /// The generation is the task's index now.
    Current,
    /// The task moved on (or a newer generation was recorded) first; this one removed itself.
    Superseded,
}

/// The key of a task's posting of `word` in the generation of `changed_at`.
pub(crate) fn posting_key(task_id: &TaskId, changed_at: &str, word: &str) -> Item {
    key(
        format!("TASK#{task_id}"),
        format!("WORD#{changed_at}#{word}"),
    )
}

fn read_marker(item: &Item) -> Result<WordMarker, StoreError> {
    let read = Reader(item);
    let words = match item.get("words") {
        Some(AttributeValue::Ss(words)) => words.clone(),
        _ => Vec::new(),
    };
    Ok(WordMarker {
        changed_at: read.s("changed_at")?,
        through: read.n("through")? as usize,
        words: TaskWords::from_known(words),
        lagging: matches!(item.get("lagging"), Some(AttributeValue::Bool(true))),
    })
}

fn marker_item(task: &Task, marker: &WordMarker) -> Item {
    let mut item = marker_key(&task.id);
    item.insert("kind".into(), s("words"));
    item.insert("changed_at".into(), s(&marker.changed_at));
    item.insert("through".into(), n(marker.through as u64));
    item.insert("lagging".into(), AttributeValue::Bool(marker.lagging));
    if !marker.words.is_empty() {
        let words = marker.words.iter().cloned().collect();
        item.insert("words".into(), AttributeValue::Ss(words));
    }
    if let Some(expires_at) = task.expires_at {
        item.insert("expires_at".into(), n(expires_at));
    }
    item
}

fn marker_key(task_id: &TaskId) -> Item {
    key(format!("TASK#{task_id}"), "WORDS")
}

fn posting(task: &Task, changed_at: &str, word: &str) -> Item {
    let mut item = posting_key(&task.id, changed_at, word);
    item.insert("kind".into(), s("word"));
    item.insert("w_callee".into(), s(&task.callee_agent_id));
    item.insert("w_caller".into(), s(&task.caller_agent_id));
    item.insert("word".into(), s(word));
    item.insert("changed_at".into(), s(changed_at));
    item.insert("task_id".into(), s(&task.id));
    if let Some(expires_at) = task.expires_at {
        item.insert("expires_at".into(), n(expires_at));
    }
    item
}

/// On what condition a generation is recorded on the task, and the flags it leaves there.
#[derive(Debug, Clone, Copy)]
enum Record {
    /// The task is still at the generation's moment: `words_due` goes, and `words_lag` stays
    /// only for a large open task (`lagging`).
    AtMoment { lagging: bool },
    /// The task moved on only by changes that add no words: its words are still the
    /// generation's (`words_at`), so `words_due` goes and `words_lag` stays.
    AtWords,
}

impl Record {
    /// The task's update expression and its condition (`:changed` is the generation's moment).
    fn flags_and_condition(self) -> (&'static str, &'static str) {
        let flags = match self.keeps_lagging() {
            true => "SET words_lag = :lag REMOVE words_due",
            false => "REMOVE words_due, words_lag",
        };
        let condition = match self {
            Record::AtMoment { .. } => "changed_at = :changed",
            Record::AtWords => "words_at = :changed AND words_lag = :lag",
        };
        (flags, condition)
    }

    /// Whether the task stays flagged `words_lag` (and the update binds `:lag`).
    fn keeps_lagging(self) -> bool {
        !matches!(self, Record::AtMoment { lagging: false })
    }
}

/// Most requests one `BatchWriteItem` takes.
const BATCH_WRITES: usize = 25;
/// Most rounds spent on requests a batch write left unprocessed.
const UNPROCESSED_ROUNDS: usize = 5;

impl Store {
    /// The task (unless gone or past its retention) and its word marker (if its words were
    /// ever indexed), in one strongly consistent read.
    pub async fn task_and_word_marker(
        &self,
        task_id: &TaskId,
    ) -> Result<(Option<Task>, Option<WordMarker>), StoreError> {
        let items = self
            .batch_get(vec![task_key(task_id), marker_key(task_id)])
            .await?
            .items;
        let (mut task, mut marker) = (None, None);
        for item in &items {
            match Reader(item).s("sk")?.as_str() {
                "TASK" => task = Some(Task::try_from(item)?),
                _ => marker = Some(read_marker(item)?),
            }
        }
        let now = crate::domain::clock::unix_now();
        Ok((
            task.filter(|task| task.expires_at.is_none_or(|at| at > now)),
            marker,
        ))
    }

    /// Makes `marker` (the task's words now) the task's word index at its current position,
    /// every posting at that moment: the postings of other moments (those of `previous`, or
    /// every one the task's partition holds when they may stand at several) go in the same
    /// batches.
    pub async fn rewrite_word_postings(
        &self,
        task: &Task,
        previous: Option<&WordMarker>,
        marker: &WordMarker,
    ) -> Result<Indexed, StoreError> {
        let mut writes = Vec::new();
        for stale in self
            .other_postings(task, previous, &marker.changed_at)
            .await?
        {
            writes.push(delete_request(stale)?);
        }
        let written: Vec<&String> = marker.words.iter().collect();
        for word in &written {
            writes.push(put_request(posting(task, &marker.changed_at, word))?);
        }
        self.batch_write(writes).await?;
        self.record_generation(task, marker, false, &written).await
    }

    /// The keys of the task's postings at moments other than `changed_at`.
    async fn other_postings(
        &self,
        task: &Task,
        previous: Option<&WordMarker>,
        changed_at: &str,
    ) -> Result<Vec<Item>, StoreError> {
        // Before the first logged change, a task has had one moment only (its opening): any
        // posting written for it (by a pass that failed before its marker) is at that moment.
        if previous.is_none() && task.changes.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(previous) = previous.filter(|previous| !previous.lagging) {
            if previous.changed_at == changed_at {
                return Ok(Vec::new());
            }
            let words = previous.words.iter();
            return Ok(words
                .map(|word| posting_key(&task.id, &previous.changed_at, word))
                .collect());
        }
        let keep = format!("WORD#{changed_at}#");
        let mut keys = Vec::new();
        for item in self
            .query_prefix(format!("TASK#{}", task.id), "WORD#")
            .await?
        {
            let sk = Reader(&item).s("sk")?;
            if !sk.starts_with(&keep) {
                keys.push(key(format!("TASK#{}", task.id), sk));
            }
        }
        Ok(keys)
    }

    /// Records `marker` for a large open task and adds postings for `new_words` only, at its
    /// current moment; the task is flagged lagging (see the module's comment).
    pub async fn add_word_postings(
        &self,
        task: &Task,
        marker: &WordMarker,
        new_words: &[&String],
    ) -> Result<Indexed, StoreError> {
        let puts = new_words
            .iter()
            .map(|word| put_request(posting(task, &marker.changed_at, word)));
        self.batch_write(puts.collect::<Result<_, _>>()?).await?;
        self.record_generation(task, marker, true, new_words).await
    }

    /// The word sets of these tasks' markers (a task never indexed has none), by task.
    pub async fn task_words(
        &self,
        task_ids: &[&TaskId],
    ) -> Result<(std::collections::HashMap<TaskId, TaskWords>, f64), StoreError> {
        let keys = task_ids.iter().map(|id| marker_key(id)).collect();
        let batch = self.batch_get(keys).await?;
        let mut words = std::collections::HashMap::new();
        for item in &batch.items {
            let pk = Reader(item).s("pk")?;
            let task_id = pk.strip_prefix("TASK#").unwrap_or_default().to_owned();
            words.insert(TaskId::from(task_id), read_marker(item)?.words);
        }
        Ok((words, batch.read_units))
    }

    /// Up to `limit` tasks of one shard whose words are due since before `before` (the
    /// `words_due` index: `words_due`, `shard` / `changed_at`).
    pub async fn words_due(
        &self,
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
            .expression_attribute_values(":due", s(WORDS_DUE))
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

    /// Clears the task's `words_due` flag if it is still at `changed_at` (its words are indexed
    /// for that moment already).
    pub async fn clear_words_due(
        &self,
        task_id: &TaskId,
        changed_at: &str,
    ) -> Result<(), StoreError> {
        let result = self
            .client()
            .update_item()
            .table_name(self.table())
            .set_key(Some(task_key(task_id)))
            .update_expression("REMOVE words_due")
            .condition_expression("changed_at = :changed")
            .expression_attribute_values(":changed", s(changed_at))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(error)
                if error
                    .as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(error) => Err(classify(error)),
        }
    }

    /// The marker's write, moving only forward, with the task's flags while the task is still
    /// at the marker's moment: both, or neither. When the task has moved on only by changes
    /// that add no words (a claim, see `task_item::LOG_WORDLESS_CHANGES`), the generation is
    /// still its words: it is recorded all the same and the task stays flagged lagging, so a
    /// claim racing its open's indexing leaves nothing for the sweeper. A pass that lost
    /// deletes the postings it wrote (`written`), which a newer pass has written again at its
    /// own moment.
    async fn record_generation(
        &self,
        task: &Task,
        marker: &WordMarker,
        lagging: bool,
        written: &[&String],
    ) -> Result<Indexed, StoreError> {
        for record in [Record::AtMoment { lagging }, Record::AtWords] {
            if self
                .transact_if(self.generation_write(task, marker, record)?)
                .await?
            {
                return Ok(Indexed::Current);
            }
        }
        let own = written
            .iter()
            .map(|word| delete_request(posting_key(&task.id, &marker.changed_at, word)));
        self.batch_write(own.collect::<Result<_, _>>()?).await?;
        Ok(Indexed::Superseded)
    }

    /// The marker's put (moving only forward) and the task's flags' update as `record` says,
    /// as one transaction.
    fn generation_write(
        &self,
        task: &Task,
        marker: &WordMarker,
        record: Record,
    ) -> Result<Vec<TransactWriteItem>, StoreError> {
        let put = build(
            Put::builder()
                .table_name(self.table())
                .set_item(Some(marker_item(task, marker)))
                .condition_expression("attribute_not_exists(pk) OR changed_at < :changed")
                .expression_attribute_values(":changed", s(&marker.changed_at))
                .build(),
        )?;
        let (flags, condition) = record.flags_and_condition();
        let mut flag = Update::builder()
            .table_name(self.table())
            .set_key(Some(task_key(&task.id)))
            .update_expression(flags)
            .condition_expression(condition)
            .expression_attribute_values(":changed", s(&marker.changed_at));
        if record.keeps_lagging() {
            flag = flag.expression_attribute_values(":lag", s(WORDS_LAG));
        }
        Ok(vec![
            TransactWriteItem::builder().put(put).build(),
            TransactWriteItem::builder()
                .update(build(flag.build())?)
                .build(),
        ])
    }

    /// Runs these writes in batches, retrying what a batch leaves unprocessed.
    async fn batch_write(&self, requests: Vec<WriteRequest>) -> Result<(), StoreError> {
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
                return Err(StoreError::Unavailable(format!(
                    "{} writes left unprocessed",
                    pending.len()
                )));
            }
        }
        Ok(())
    }
}

fn put_request(item: Item) -> Result<WriteRequest, StoreError> {
    let put = build(PutRequest::builder().set_item(Some(item)).build())?;
    Ok(WriteRequest::builder().put_request(put).build())
}

fn delete_request(key: Item) -> Result<WriteRequest, StoreError> {
    let delete = build(DeleteRequest::builder().set_key(Some(key)).build())?;
    Ok(WriteRequest::builder().delete_request(delete).build())
}

#[cfg(feature = "local-stack")]
impl Store {
    /// Writes tasks as the gateway leaves them once their words are indexed (the task item, its
    /// postings and its marker), in batches: for benchmarks that need a table of many tasks.
    pub async fn seed_indexed_tasks(&self, tasks: &[(Task, TaskWords)]) -> Result<(), StoreError> {
        let mut writes = Vec::new();
        for (task, words) in tasks {
            let mut item = super::task_item::to_item(task);
            item.remove("words_due");
            writes.push(put_request(item)?);
            let marker = WordMarker {
                changed_at: task.changed_at(),
                through: task.history.len(),
                words: words.clone(),
                lagging: false,
            };
            for word in words.iter() {
                writes.push(put_request(posting(task, &marker.changed_at, word))?);
            }
            writes.push(put_request(marker_item(task, &marker))?);
        }
        self.batch_write(writes).await
    }
}
