//! Seeded content: the messages tests send, and tasks written straight into the table as a
//! seeding benchmark leaves them.

use serde_json::{json, Value};

use crate::TestApp;

/// A task `caller` opened on `callee` at `opened_ms` (Unix milliseconds) in `context_id` with
/// `message` (a message's JSON), then moved to each of `states` in turn, 3 ms apart: a task as
/// a seeding benchmark writes it, with its words.
pub fn seeded_task(
    caller: &forgebench::domain::Agent,
    callee: &forgebench::domain::Agent,
    context_id: String,
    message: &Value,
    opened_ms: i128,
    states: &[forgebench::domain::TaskState],
) -> (
    forgebench::domain::Task,
    forgebench::domain::words::TaskWords,
) {
    use forgebench::domain::{clock, events::Change, task, Task};
    let moment = |ms: i128| {
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000);
        clock::format(at.expect("a moment in range"))
    };
    let mut task = Task::open(task::TaskOpening {
        id: forgebench::domain::TaskId::generate(),
        caller_agent_id: caller.id.clone(),
        callee,
        context_id: context_id.into(),
        input: forgebench::domain::content::Stored::Inline(
            serde_json::from_value(message.clone()).expect("a message"),
        ),
        input_bytes: message.to_string().len() as u64,
        lineage: task::CallLineage {
            call_id: forgebench::domain::CallId::generate(),
            parent_call_id: None,
            root_call_id: forgebench::domain::CallId::generate(),
        },
        now: moment(opened_ms),
        expires_at: clock::unix_now() + 86_400,
    });
    for (step, state) in (1..).zip(states) {
        let at = moment(opened_ms + 3 * step);
        task.changes.push(Change::state(*state, false, &at));
        task.state = *state;
    }
    task.updated_at = task.changed_at();
    let words = forgebench::domain::words::words_of_stored(message);
    (
        task,
        forgebench::domain::words::TaskWords::from_known(words),
    )
}

pub fn text_message(text: &str) -> Value {
    json!({"role": "user", "parts": [{"text": text}]})
}

/// A caller's message too large to stay in the task's item: its body lives in the body store.
pub fn offloaded_text_message() -> Value {
    let line = "invoice line ";
    text_message(&line.repeat(forgebench::domain::content::INLINE_BODY_BYTES / line.len() + 1))
}

impl TestApp {
    /// Writes the tasks `make` builds for `numbers` as the gateway leaves them once indexed,
    /// 200 to a batch, 8 batches at a time: for benchmarks that need a table of many tasks.
    pub async fn seed_tasks(
        &self,
        numbers: std::ops::Range<usize>,
        make: impl Fn(
            usize,
        ) -> (
            forgebench::domain::Task,
            forgebench::domain::words::TaskWords,
        ),
    ) {
        use futures::StreamExt;
        let numbers: Vec<usize> = numbers.collect();
        futures::stream::iter(numbers.chunks(200))
            .for_each_concurrent(8, |chunk| {
                let tasks: Vec<_> = chunk.iter().map(|n| make(*n)).collect();
                async move {
                    self.app
                        .store
                        .seed_indexed_tasks(&tasks)
                        .await
                        .expect("tasks seeded")
                }
            })
            .await;
    }
}
