//! `tasks watch`: a task's events as they happen, followed to its end across the gateway's
//! bound on one stream (resumed after the last event's id, so nothing is missed or seen twice).

use forgebench_sdk::{text_of, Client, TaskEvent};
use futures::{Stream, TryStreamExt};

use crate::commands::CommandError;
use crate::exit;
use crate::output::Printer;

/// Prints each event of `callee`'s task `task_id` (after event `after`, when given), one line
/// each, until the task's `final` event; the exit code of its final state, as `tasks get`.
pub async fn watch(
    client: &Client,
    printer: Printer,
    (callee, task_id): (&str, &str),
    mut after: Option<u64>,
) -> Result<u8, CommandError> {
    loop {
        let stream = match after {
            Some(id) => boxed(client.events_after(callee, task_id, id)),
            None => boxed(client.events(callee, task_id)),
        };
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.try_next().await? {
            printer.print(&event, || event_line(&event));
            if let Some(id) = event.id {
                after = Some(id);
            }
            if event.is_final() {
                return Ok(event.state().map_or(exit::ERROR, exit::for_state));
            }
            if let Some(task) = event.task().filter(|task| task.state().is_final()) {
                // A task finished before the stream opened: its one event says how.
                return Ok(exit::for_state(task.state()));
            }
        }
        // The gateway closed the stream at its bound: go on after the last event seen.
        eprintln!("forgebench: the stream closed; following again after event {after:?}");
        after.get_or_insert(0);
    }
}

fn boxed(
    stream: impl Stream<Item = forgebench_sdk::Result<TaskEvent>> + Send + 'static,
) -> std::pin::Pin<Box<dyn Stream<Item = forgebench_sdk::Result<TaskEvent>> + Send>> {
    Box::pin(stream)
}

/// `ID  EVENT  STATE  TEXT`: the change's number, its kind, the state after it and the text of
/// the message it added, if any.
fn event_line(event: &TaskEvent) -> String {
    let id = event.id.map_or_else(|| "-".to_owned(), |id| id.to_string());
    let state = event
        .state()
        .map_or_else(|| "-".to_owned(), |state| state.to_string());
    let text = event
        .message()
        .map(|message| text_of(&message.parts))
        .unwrap_or_default();
    format!("{id}  {}  {state}  {text}", event.event)
        .trim_end()
        .to_owned()
}
