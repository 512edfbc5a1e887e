//! A task's updates as they happen: the one loop behind every event stream (the REST event
//! stream and both A2A bindings' streams), and the server-sent-events body it feeds.
//!
//! A stream learns of changes by reading the task's item at a waiting caller's pace (soon after
//! the task's last change, then once per `FORGEBENCH_IDLE_POLL_MS`) and comparing its change-log
//! length with the number of the last event it sent: new entries are new events, rendered from the same read, so events arrive in log
//! order, each once, and a reconnecting client resumes after the number it saw last. A stream
//! holds one of its reader's long-poll slots while open, so the streams and waits of one key
//! holder are bounded together. Once per key-cache time a stream reads the task as its reader
//! would open it again (the key authenticated afresh, the right to read the task judged again),
//! so a revoked key or a lost right ends the stream within the time a revoked key keeps working
//! anywhere else.

use crate::domain::clock::Timestamp;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use lambda_http::http::{header, HeaderValue, StatusCode};
use lambda_http::Response;
use tokio::time::Instant;

use super::reply::{Reply, ReplyBody};
use super::service::tasks::{expire_if_overdue, readable_task};
use super::{full_task, poll_slot, WaitSlots};
use crate::app::App;
use crate::domain::events::TaskEvent;
use crate::domain::{clock, Task, TaskId, TaskState, TenantPrincipal};
use crate::error::{cause_chain, ApiError};

/// What one stream sends, in its own format.
pub(crate) trait Render: Send + 'static {
    /// One event of the task (its bodies resolved).
    fn event(&self, task: &Task, event: &TaskEvent<'_>) -> Bytes;
    /// Whether the stream ends once the task is in `state`.
    fn ends_at(&self, state: TaskState) -> bool;
    /// The last thing a stream sends when it cannot go on.
    fn failure(&self, error: &ApiError) -> Bytes;
}

/// Who follows a task: the principal, the credentials it showed (a key or a console session's
/// cookie, to authenticate again), and the agent the request's path named.
pub(crate) struct Follower {
    pub principal: TenantPrincipal,
    pub credentials: lambda_http::http::HeaderMap,
    pub segment: String,
}

impl Follower {
    /// The task as this follower may read it now: its key authenticated afresh (through the
    /// key cache, so at most once per key-cache time against the store) and its right to read
    /// judged again; an error when either is gone.
    async fn read_again(&self, app: &App, task_id: &TaskId) -> Result<Task, ApiError> {
        let principal = app.authenticate_in_tenant(&self.credentials).await?;
        if principal != self.principal {
            return Err(ApiError::Unauthenticated);
        }
        readable_task(app, &principal, task_id, &self.segment).await
    }
}

/// A task being followed for one reader.
pub(crate) struct Feed {
    app: Arc<App>,
    follower: Follower,
    /// When the follower is next judged again (see [`Follower::read_again`]).
    recheck_at: Instant,
    task_id: TaskId,
    /// The number of the last event sent.
    seen: u64,
    /// When the task last changed, as last read (its `updated_at`): what paces the next read.
    changed_at: Timestamp,
    ends: Instant,
    slot: Option<WaitSlots>,
}

/// What the next look at the task found.
enum Update {
    /// New events: the task as read, bodies resolved.
    Changed(Box<Task>),
    /// Nothing for a keep-alive period.
    Idle,
    /// The stream's time is up.
    TimeUp,
}

impl Feed {
    /// Starts following `task` for `principal`, after event `seen`, holding one of the
    /// principal's long-poll slots for the stream's longest life (`429` when all are held).
    pub async fn open(
        app: &Arc<App>,
        follower: Follower,
        task: &Task,
        seen: u64,
    ) -> Result<Feed, ApiError> {
        let life = Duration::from_secs(app.config.stream_max_seconds);
        let slot = poll_slot(app, &follower.principal, life).await?;
        Ok(Feed {
            app: Arc::clone(app),
            follower,
            recheck_at: Instant::now() + app.config.key_cache_ttl,
            task_id: task.id.clone(),
            seen,
            changed_at: task.updated_at.clone(),
            ends: Instant::now() + life,
            slot,
        })
    }

    /// Reads the task until it has events past `seen`, a keep-alive period passes, or the
    /// stream's time is up.
    async fn next(&mut self) -> Result<Update, ApiError> {
        let quiet_until = Instant::now() + self.app.config.stream_keepalive;
        loop {
            let now = Instant::now();
            if now >= self.ends {
                return Ok(Update::TimeUp);
            }
            if now >= quiet_until {
                return Ok(Update::Idle);
            }
            let quiet = clock::elapsed_since(&self.changed_at, time::OffsetDateTime::now_utc());
            let interval = self.app.config.task_pace().after_quiet(quiet);
            let wake = (now + interval).min(self.ends).min(quiet_until);
            tokio::time::sleep_until(wake).await;
            let task = if Instant::now() >= self.recheck_at {
                self.recheck_at = Instant::now() + self.app.config.key_cache_ttl;
                self.follower.read_again(&self.app, &self.task_id).await?
            } else {
                self.app
                    .store
                    .get_task(&self.task_id)
                    .await?
                    .ok_or(ApiError::TaskNotFound)?
            };
            let task = expire_if_overdue(&self.app, task).await?;
            self.changed_at.clone_from(&task.updated_at);
            if task.event_count() > self.seen {
                return Ok(Update::Changed(Box::new(
                    full_task(&self.app, task, &[]).await?,
                )));
            }
        }
    }

    /// Gives the long-poll slot back.
    async fn close(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.release(&self.app).await;
        }
    }
}

impl Drop for Feed {
    /// A stream its client dropped gives its slot back from a task of its own (the slot also
    /// frees itself when its time runs out).
    fn drop(&mut self) {
        if let (Some(slot), Ok(runtime)) = (self.slot.take(), tokio::runtime::Handle::try_current())
        {
            let app = Arc::clone(&self.app);
            runtime.spawn(async move { slot.release(&app).await });
        }
    }
}

/// The state of one streamed body.
struct Streaming<R> {
    feed: Feed,
    render: R,
    ready: VecDeque<Bytes>,
    done: bool,
}

impl<R: Render> Streaming<R> {
    /// The next chunk to send, or `None` when the stream is over.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if let Some(chunk) = self.ready.pop_front() {
                return Some(chunk);
            }
            if self.done {
                self.feed.close().await;
                return None;
            }
            match self.feed.next().await {
                Ok(Update::Changed(task)) => self.take(&task),
                Ok(Update::Idle) => self
                    .ready
                    .push_back(Bytes::from_static(b": keep-alive\n\n")),
                Ok(Update::TimeUp) => {
                    self.ready.push_back(Bytes::from_static(
                        b": the stream's time is up; reconnect with Last-Event-ID\n\n",
                    ));
                    self.done = true;
                }
                Err(error) => {
                    if let ApiError::Internal(_) = &error {
                        tracing::error!(cause = %cause_chain(&error), "event stream failed");
                    } else {
                        tracing::warn!(error = %error, "event stream ended early");
                    }
                    self.ready.push_back(self.render.failure(&error));
                    self.done = true;
                }
            }
        }
    }

    /// Queues the events of `task` past the last one sent; the stream ends when the task has.
    fn take(&mut self, task: &Task) {
        for event in task.events_after(self.feed.seen) {
            self.ready.push_back(self.render.event(task, &event));
        }
        self.feed.seen = self.feed.seen.max(task.event_count());
        self.done = self.render.ends_at(task.state);
    }
}

/// An event stream: `first` (what the client is owed at once), then every later event of the
/// feed's task, until the task reaches a state that ends `render`'s stream or the time is up.
pub(crate) fn event_stream<R: Render>(
    feed: Feed,
    render: R,
    first: Vec<Bytes>,
    task: &Task,
) -> Reply {
    let done = render.ends_at(task.state);
    let streaming = Streaming {
        feed,
        render,
        ready: first.into(),
        done,
    };
    let chunks = futures::stream::unfold(streaming, |mut streaming| async move {
        let chunk = streaming.next_chunk().await?;
        Some((chunk, streaming))
    });
    let mut response = Response::new(ReplyBody::Streamed(Box::pin(chunks)));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// One server-sent event: its name (when it has one), its id (when it has one) and its data
/// (one line of JSON).
pub(crate) fn sse_frame(name: Option<&str>, id: Option<u64>, data: &serde_json::Value) -> Bytes {
    let mut frame = String::new();
    if let Some(id) = id {
        frame.push_str(&format!("id: {id}\n"));
    }
    if let Some(name) = name {
        frame.push_str(&format!("event: {name}\n"));
    }
    frame.push_str(&format!("data: {data}\n\n"));
    Bytes::from(frame)
}
