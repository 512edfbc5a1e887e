//! A task's server-sent events (`GET /v1/agents/{callee}/tasks/{id}/events`, docs/api.md "Event
//! streams"): the task as it is, then one event per change until the final state.

use std::collections::VecDeque;

use futures::Stream;
use serde::Serialize;
use serde_json::Value;

use crate::client::{segment, Client, Request};
use crate::error::{Error, ErrorBody, Result};
use crate::task::{Message, Task, TaskState};

/// One event of a task's stream.
///
/// `event` is `task` (the first one: the task as `GET` returns it, see [`TaskEvent::task`]),
/// `status`, `progress`, `question`, `answer`, `artifact` or `final`; `data` its JSON (a change
/// holds `task_id`, `event`, `state`, `timestamp` and what it added: `message`, `artifact`,
/// `artifact_index`, `error`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskEvent {
    pub event: String,
    /// The number of the task's change (its `id:`): resume after it with
    /// [`Client::events_after`].
    pub id: Option<u64>,
    pub data: Value,
}

impl TaskEvent {
    /// The task, for the first event (`task`).
    pub fn task(&self) -> Option<Task> {
        (self.event == "task")
            .then(|| serde_json::from_value(self.data.clone()).ok())
            .flatten()
    }

    /// The task's state after this event.
    pub fn state(&self) -> Option<TaskState> {
        let state = match self.event.as_str() {
            "task" => self.data.pointer("/status/state"),
            _ => self.data.get("state"),
        };
        state.and_then(|state| serde_json::from_value(state.clone()).ok())
    }

    /// The message the change added (`progress`, `question`, `answer`, and `final` with a
    /// status message).
    pub fn message(&self) -> Option<Message> {
        self.data
            .get("message")
            .and_then(|message| serde_json::from_value(message.clone()).ok())
    }

    /// The last event of a stream that followed the task to its end.
    pub fn is_final(&self) -> bool {
        self.event == "final"
    }
}

/// What a stream has done so far.
enum Phase {
    /// Not sent yet (or refused before sending: the error is the stream's only item).
    Opening(Client, Result<Request>),
    Reading(Box<EventReader>),
    Done,
}

impl Client {
    /// The events of a task, as a stream: first `task` (the task as it is), then one event per
    /// change (`status`, `progress`, `question`, `answer`, `artifact`, `final`) as it happens.
    /// The stream ends when the gateway closes it: after `final`, at once for a task already
    /// finished, or after the gateway's bound on one stream (14 minutes; resume with
    /// [`Client::events_after`] and the last event's `id`). Any reader of the task may follow
    /// it: `GET /v1/agents/{callee}/tasks/{id}/events`.
    ///
    /// Nothing is sent until the stream is first polled. A refusal to open it (`404`, `429`:
    /// each stream holds one of the key's 10 waiting slots) is the stream's only item; a
    /// connection that breaks mid-stream, or an `event: error` of the gateway (an
    /// [`Error::Server`] carrying its body), is its last. Keep-alive comments are skipped. The
    /// stream has no overall timeout: drop it to stop following.
    pub fn events(
        &self,
        callee: &str,
        task_id: &str,
    ) -> impl Stream<Item = Result<TaskEvent>> + Send + 'static {
        self.event_stream(callee, task_id, None)
    }

    /// The events of a task numbered above `last_event_id` (sent as `Last-Event-ID`), without
    /// the `task` event: nothing missed, nothing twice. Otherwise as [`Client::events`].
    pub fn events_after(
        &self,
        callee: &str,
        task_id: &str,
        last_event_id: u64,
    ) -> impl Stream<Item = Result<TaskEvent>> + Send + 'static {
        self.event_stream(callee, task_id, Some(last_event_id))
    }

    fn event_stream(
        &self,
        callee: &str,
        task_id: &str,
        last_event_id: Option<u64>,
    ) -> impl Stream<Item = Result<TaskEvent>> + Send + 'static {
        let request = events_path(callee, task_id).map(|path| {
            let mut request = Request::get(path);
            if let Some(last) = last_event_id {
                request.headers.push(("last-event-id", last.to_string()));
            }
            request
        });
        futures::stream::unfold(Phase::Opening(self.clone(), request), |phase| async move {
            let mut reader = match phase {
                Phase::Done => return None,
                Phase::Reading(reader) => reader,
                Phase::Opening(client, request) => {
                    let opened = match request {
                        Ok(request) => client.open_stream(request).await,
                        Err(error) => Err(error),
                    };
                    match opened {
                        Ok(response) => Box::new(EventReader::new(response)),
                        Err(error) => return Some((Err(error), Phase::Done)),
                    }
                }
            };
            let item = reader.next().await?;
            let next = match &item {
                Ok(_) => Phase::Reading(reader),
                Err(_) => Phase::Done,
            };
            Some((item, next))
        })
    }
}

fn events_path(callee: &str, task_id: &str) -> Result<String> {
    Ok(format!(
        "/v1/agents/{}/tasks/{}/events",
        segment(callee)?,
        segment(task_id)?
    ))
}

/// Reads the events of an open response.
struct EventReader {
    response: reqwest::Response,
    request_id: Option<String>,
    parser: EventParser,
    ended: bool,
}

impl EventReader {
    fn new(response: reqwest::Response) -> EventReader {
        let request_id = response
            .headers()
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        EventReader {
            response,
            request_id,
            parser: EventParser::default(),
            ended: false,
        }
    }

    /// The next event; `None` once the stream ended.
    async fn next(&mut self) -> Option<Result<TaskEvent>> {
        loop {
            if let Some(raw) = self.parser.next_event(self.ended) {
                return Some(self.event_of(raw));
            }
            if self.ended {
                return None;
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.parser.push(&bytes),
                Ok(None) => self.ended = true,
                Err(error) => {
                    self.ended = true;
                    return Some(Err(Error::Connection(error)));
                }
            }
        }
    }

    fn event_of(&self, raw: RawEvent) -> Result<TaskEvent> {
        let data: Value = serde_json::from_str(&raw.data)
            .map_err(|error| Error::Decode(format!("an event's data is not JSON: {error}")))?;
        if raw.event == "error" {
            // The stream could not go on (a backing service failing): the gateway's error body.
            return Err(Error::Server(ErrorBody {
                status: 503,
                body: data,
                header_request_id: self.request_id.clone(),
            }));
        }
        Ok(TaskEvent {
            event: raw.event,
            id: raw.id.and_then(|id| id.parse().ok()),
            data,
        })
    }
}

/// One dispatched event, before its data is read as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RawEvent {
    event: String,
    id: Option<String>,
    data: String,
}

/// The `text/event-stream` rules (WHATWG HTML, "Parsing an event stream"): lines end with
/// `\n`, `\r\n` or `\r`; `field: value`; a blank line dispatches the event; `:` starts a
/// comment; an event without data is not dispatched; an event cut off by the end of the
/// stream is dropped.
#[derive(Debug, Default)]
struct EventParser {
    buffer: Vec<u8>,
    started: bool,
    event: Option<String>,
    id: Option<String>,
    data: Option<String>,
    ready: VecDeque<RawEvent>,
}

impl EventParser {
    fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete event in what was pushed; `ended` once nothing more will come.
    fn next_event(&mut self, ended: bool) -> Option<RawEvent> {
        while self.ready.is_empty() {
            let line = self.next_line(ended)?;
            self.take_line(&line);
        }
        self.ready.pop_front()
    }

    fn next_line(&mut self, ended: bool) -> Option<String> {
        if !self.started {
            if self.buffer.len() < 3 && !ended {
                return None;
            }
            if self.buffer.starts_with(b"\xEF\xBB\xBF") {
                self.buffer.drain(..3);
            }
            self.started = true;
        }
        let end = self
            .buffer
            .iter()
            .position(|b| *b == b'\n' || *b == b'\r')?;
        let carriage_return = self.buffer[end] == b'\r';
        if carriage_return && end + 1 == self.buffer.len() && !ended {
            // A `\n` may follow in the next chunk.
            return None;
        }
        let line = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        let crlf = carriage_return && self.buffer.get(end + 1) == Some(&b'\n');
        self.buffer.drain(..end + if crlf { 2 } else { 1 });
        Some(line)
    }

    fn take_line(&mut self, line: &str) {
        if line.is_empty() {
            let event = self.event.take();
            let id = self.id.take();
            if let Some(mut data) = self.data.take() {
                data.pop(); // the newline after the last data line
                self.ready.push_back(RawEvent {
                    event: event.unwrap_or_else(|| "message".into()),
                    id,
                    data,
                });
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                data.push_str(value);
                data.push('\n');
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(chunks: &[&str]) -> Vec<RawEvent> {
        let mut parser = EventParser::default();
        let mut events = Vec::new();
        for chunk in chunks {
            parser.push(chunk.as_bytes());
            while let Some(event) = parser.next_event(false) {
                events.push(event);
            }
        }
        while let Some(event) = parser.next_event(true) {
            events.push(event);
        }
        events
    }

    fn raw(event: &str, id: Option<&str>, data: &str) -> RawEvent {
        RawEvent {
            event: event.into(),
            id: id.map(str::to_owned),
            data: data.into(),
        }
    }

    #[test]
    fn events_split_anywhere_are_read_whole_and_comments_skipped() {
        let stream = "id: 2\nevent: task\ndata: {\"a\":1}\n\n: keep-alive\n\nid: 3\r\nevent: final\r\ndata: {\"b\":\r\ndata: 2}\r\n\r\n";
        let whole = events_of(&[stream]);
        let expected = vec![
            raw("task", Some("2"), "{\"a\":1}"),
            raw("final", Some("3"), "{\"b\":\n2}"),
        ];
        assert_eq!(whole, expected);
        for cut in 1..stream.len() {
            let (first, second) = stream.split_at(cut);
            assert_eq!(events_of(&[first, second]), expected, "cut at {cut}");
        }
    }

    #[test]
    fn an_event_cut_off_by_the_end_and_one_without_data_are_dropped() {
        assert_eq!(
            events_of(&["\u{feff}event: status\n\nevent: x\ndata: 1\n\ndata: 2"]),
            vec![raw("x", None, "1")]
        );
    }

    #[test]
    fn a_task_event_gives_its_state_and_a_change_its_message() {
        let first = TaskEvent {
            event: "task".into(),
            id: Some(0),
            data: serde_json::json!({"id": "t", "context_id": "c", "status": {"state": "submitted"}}),
        };
        assert_eq!(first.state(), Some(TaskState::Submitted));
        assert_eq!(first.task().map(|task| task.id), Some("t".to_owned()));
        let progress = TaskEvent {
            event: "progress".into(),
            id: Some(1),
            data: serde_json::json!({"state": "working", "message": {"role": "agent", "parts": [{"text": "half"}]}}),
        };
        assert_eq!(progress.state(), Some(TaskState::Working));
        assert_eq!(progress.message().map(|m| m.text()), Some("half".into()));
        assert!(progress.task().is_none() && !progress.is_final());
    }
}
