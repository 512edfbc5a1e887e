//! A server-sent-events reader for tests, per the WHATWG `text/event-stream` rules: lines of
//! `field: value`, an empty line ends an event, `:` starts a comment.

use std::time::Duration;

/// One event, or one comment line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
    /// The text of a comment line (`: …`); such an entry has no other field.
    pub comment: Option<String>,
}

impl SseEvent {
    /// The data as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|error| panic!("event data is not JSON ({error}): {}", self.data))
    }
}

/// An open event stream.
pub struct Sse {
    pub status: u16,
    pub content_type: String,
    response: reqwest::Response,
    buffer: String,
    ended: bool,
}

impl Sse {
    pub fn new(response: reqwest::Response) -> Sse {
        Sse {
            status: response.status().as_u16(),
            content_type: response
                .headers()
                .get("content-type")
                .and_then(|value| value.to_str().ok())
                .unwrap_or_default()
                .to_owned(),
            response,
            buffer: String::new(),
            ended: false,
        }
    }

    /// The rest of a response that is not a stream.
    pub async fn text(self) -> String {
        self.response.text().await.unwrap_or_default()
    }

    /// The next event or comment; `None` once the server closed the stream. Panics when nothing
    /// comes within `within`.
    pub async fn next_within(&mut self, within: Duration) -> Option<SseEvent> {
        tokio::time::timeout(within, self.next_entry())
            .await
            .unwrap_or_else(|_| panic!("no event within {within:?}"))
    }

    /// The next event (comments skipped), waiting up to 20 s.
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            let entry = self.next_within(Duration::from_secs(20)).await?;
            if entry.comment.is_none() {
                return Some(entry);
            }
        }
    }

    /// Every remaining event until the server closes the stream.
    pub async fn rest(&mut self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        while let Some(event) = self.next_event().await {
            events.push(event);
        }
        events
    }

    async fn next_entry(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(entry) = self.parse_one() {
                return Some(entry);
            }
            if self.ended {
                return None;
            }
            match self.response.chunk().await {
                Ok(Some(bytes)) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(None) | Err(_) => self.ended = true,
            }
        }
    }

    /// Takes one complete event or comment off the buffer.
    fn parse_one(&mut self) -> Option<SseEvent> {
        let mut entry = SseEvent {
            id: None,
            event: None,
            data: String::new(),
            comment: None,
        };
        let mut consumed = 0;
        let mut has_data = false;
        let buffer = self.buffer.clone();
        for line in buffer.split_inclusive('\n') {
            if !line.ends_with('\n') {
                return None;
            }
            consumed += line.len();
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if has_data || entry.id.is_some() || entry.event.is_some() {
                    self.buffer.drain(..consumed);
                    return Some(entry);
                }
                continue;
            }
            if let Some(comment) = line.strip_prefix(':') {
                self.buffer.drain(..consumed);
                return Some(SseEvent {
                    id: None,
                    event: None,
                    data: String::new(),
                    comment: Some(comment.trim().to_owned()),
                });
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => entry.id = Some(value.to_owned()),
                "event" => entry.event = Some(value.to_owned()),
                "data" => {
                    if has_data {
                        entry.data.push('\n');
                    }
                    entry.data.push_str(value);
                    has_data = true;
                }
                _ => {}
            }
        }
        None
    }
}

impl crate::TestApp {
    /// Opens `GET /v1/agents/{callee}/tasks/{task}/events`, resuming after `last_event_id`.
    pub async fn events(
        &self,
        key: &str,
        callee: &str,
        task_id: &str,
        last_event_id: Option<&str>,
    ) -> Sse {
        let mut request = self
            .http
            .get(format!(
                "{}/v1/agents/{callee}/tasks/{task_id}/events",
                self.base
            ))
            .bearer_auth(key)
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        Sse::new(request.send().await.expect("the event stream opens"))
    }
}

impl crate::TestApp {
    /// Opens an A2A stream: `method` on `path` (under the gateway) as an A2A 1.0 client sends
    /// it, with `body` as JSON when given.
    pub async fn a2a_stream(
        &self,
        method: &str,
        path: &str,
        key: &str,
        body: Option<serde_json::Value>,
    ) -> Sse {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(key)
            .header("a2a-version", "1.0")
            .header("accept", "text/event-stream");
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        Sse::new(request.send().await.expect("the stream opens"))
    }
}

impl Sse {
    /// Reads the stream to its end and sums it up as one answer: the status, and the data of
    /// every event as a JSON list.
    pub async fn into_reply(mut self) -> crate::Reply {
        let events: Vec<serde_json::Value> = self.rest().await.iter().map(SseEvent::json).collect();
        let body = serde_json::Value::Array(events);
        crate::Reply {
            status: self.status,
            headers: reqwest::header::HeaderMap::new(),
            text: body.to_string(),
            body,
        }
    }
}
