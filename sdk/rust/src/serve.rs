//! The serve loop: claim a task, run the handler, post its reply; until told to stop.
//!
//! - A claim or a reply that fails for a passing reason (the network, `429`, a `5xx`) is tried
//!   again after a growing pause (0.5 s doubling to 30 s, jittered; a reply up to 8 times). A
//!   key the gateway refuses (`401`, `403`) ends `serve` with that error; so does any other
//!   refusal of a claim (a bad `wait`).
//! - A handler that returns an `Err` or panics fails its task with the message; the loop goes on.
//! - A reply the gateway refuses as invalid (`400`, `413`, `422`) fails the task with the reason,
//!   so the caller is not left waiting until the claim deadline.
//! - A reply refused with `409 task_not_working` (the caller canceled meanwhile) is dropped; the
//!   task still counts as handled.
//! - Stopping is graceful: no new claim starts, a claim already waiting is let finish and a task
//!   it brings is handled (a claimed task is never dropped), handlers in flight finish and their
//!   replies are posted. `serve` then returns the number of tasks handled.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::watch;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::retry::Backoff;
use crate::task::{IntoReply, Task, TaskReply, TaskState};

/// How many times one reply is posted before the loop gives up on it (about a minute).
pub const MAX_REPLY_ATTEMPTS: u32 = 8;
/// How long each claim of `serve` waits for a task, by default.
pub const DEFAULT_SERVE_WAIT_SECONDS: u32 = 20;

/// A stop flag for [`Client::serve`], settable from anywhere (a signal handler, a handler, a
/// test). Cloning shares the flag.
#[derive(Debug, Clone)]
pub struct StopSignal(Arc<watch::Sender<bool>>);

impl Default for StopSignal {
    fn default() -> Self {
        StopSignal::new()
    }
}

impl StopSignal {
    pub fn new() -> StopSignal {
        StopSignal(Arc::new(watch::channel(false).0))
    }

    /// Asks every `serve` watching this signal to return once its tasks in hand are answered.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }

    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once [`StopSignal::stop`] was called.
    pub async fn stopped(&self) {
        let mut receiver = self.0.subscribe();
        // The sender lives in `self`, so the channel cannot close while this waits.
        let _closed = receiver.wait_for(|stopped| *stopped).await;
    }
}

/// How [`Client::serve`] runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Claim loops side by side, each claiming one task and running the handler before
    /// claiming again (default 1). The gateway holds at most 10 waiting claims per key.
    pub concurrency: usize,
    /// Stop after this many tasks handled (by all loops together); `None` for no bound.
    pub max_tasks: Option<usize>,
    /// Seconds each claim waits for a task (0–30, default 20).
    pub wait: u32,
    /// Stops the loop gracefully when set.
    pub stop: Option<StopSignal>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            concurrency: 1,
            max_tasks: None,
            wait: DEFAULT_SERVE_WAIT_SECONDS,
            stop: None,
        }
    }
}

/// How many tasks `serve` may still claim, shared by its loops: a loop reserves a place before
/// it claims, so together they never claim more than `max_tasks`.
struct ClaimBudget {
    max_tasks: Option<usize>,
    counts: Mutex<(usize, usize)>,
}

impl ClaimBudget {
    fn new(max_tasks: Option<usize>) -> ClaimBudget {
        ClaimBudget {
            max_tasks,
            counts: Mutex::new((0, 0)),
        }
    }

    fn with_counts<T>(&self, change: impl FnOnce(&mut usize, &mut usize) -> T) -> T {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let (reserved, handled) = &mut *counts;
        change(reserved, handled)
    }

    fn reserve(&self) -> bool {
        let max_tasks = self.max_tasks;
        self.with_counts(|reserved, handled| {
            if max_tasks.is_some_and(|max| *reserved + *handled >= max) {
                return false;
            }
            *reserved += 1;
            true
        })
    }

    fn release(&self) {
        self.with_counts(|reserved, _| *reserved -= 1);
    }

    fn finish(&self) {
        self.with_counts(|reserved, handled| {
            *reserved -= 1;
            *handled += 1;
        });
    }

    fn handled(&self) -> usize {
        self.with_counts(|_, handled| *handled)
    }
}

/// The caller's stop signal and the loop's own (set when one loop ends with an error).
struct Stopping {
    caller: Option<StopSignal>,
    own: StopSignal,
}

impl Stopping {
    fn is_set(&self) -> bool {
        self.own.is_stopped() || self.caller.as_ref().is_some_and(StopSignal::is_stopped)
    }

    /// Sleeps `pause`, or less when a stop comes first.
    async fn sleep(&self, pause: Duration) {
        let caller = async {
            match &self.caller {
                Some(signal) => signal.stopped().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = self.own.stopped() => {}
            () = caller => {}
        }
    }
}

/// One `serve` call.
struct Server<'a, H> {
    client: &'a Client,
    handler: &'a H,
    budget: ClaimBudget,
    stopping: Stopping,
    wait: u32,
}

impl Client {
    /// Serves this agent's tasks: claims each, runs `handler` on it and posts what it returns
    /// (anything [`IntoReply`]), with `options.concurrency` loops side by side, until
    /// `options.max_tasks` are handled or `options.stop` is set. Returns the number handled.
    pub async fn serve<H, F, R>(&self, handler: H, options: ServeOptions) -> Result<usize>
    where
        H: Fn(Task) -> F,
        F: Future<Output = R>,
        R: IntoReply,
    {
        if options.concurrency == 0 {
            return Err(Error::InvalidArgument(
                "concurrency must be 1 or more".into(),
            ));
        }
        let server = Server {
            client: self,
            handler: &handler,
            budget: ClaimBudget::new(options.max_tasks),
            stopping: Stopping {
                caller: options.stop,
                own: StopSignal::new(),
            },
            wait: options.wait,
        };
        let loops = (0..options.concurrency).map(|_| server.work_until_error());
        let outcomes = futures::future::join_all(loops).await;
        outcomes.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(server.budget.handled())
    }
}

impl<H, F, R> Server<'_, H>
where
    H: Fn(Task) -> F,
    F: Future<Output = R>,
    R: IntoReply,
{
    async fn work_until_error(&self) -> Result<()> {
        let outcome = self.work().await;
        if outcome.is_err() {
            // The other loops finish what they hold, then stop.
            self.stopping.own.stop();
        }
        outcome
    }

    async fn work(&self) -> Result<()> {
        let mut backoff = Backoff::for_serve();
        while !self.stopping.is_set() && self.budget.reserve() {
            let task = match self.client.next_task(self.wait).await {
                Ok(Some(task)) => task,
                Ok(None) => {
                    self.budget.release();
                    backoff.reset();
                    if self.wait == 0 {
                        self.stopping.sleep(Duration::from_secs(1)).await;
                    }
                    continue;
                }
                Err(error) if error.is_passing() => {
                    self.budget.release();
                    let pause = backoff.next_delay();
                    tracing::warn!(%error, ?pause, "forgebench: claim failed; trying again");
                    self.stopping.sleep(pause).await;
                    continue;
                }
                Err(error) => {
                    self.budget.release();
                    return Err(error);
                }
            };
            backoff.reset();
            let reply = self.answer(task.clone()).await;
            let delivered = self.deliver(&task, reply).await;
            self.budget.finish();
            delivered?;
        }
        Ok(())
    }

    /// The handler's reply; a panic fails the task instead of the loop.
    async fn answer(&self, task: Task) -> TaskReply {
        let task_id = task.id.clone();
        // In the trace the claimed task is in, when the application has OpenTelemetry.
        let (traceparent, tracestate) = (task.traceparent.clone(), task.tracestate.clone());
        let handled = AssertUnwindSafe(crate::trace_context::within(
            traceparent.as_deref(),
            tracestate.as_deref(),
            async { (self.handler)(task).await.into_reply() },
        ));
        match handled.catch_unwind().await {
            Ok(reply) => reply,
            Err(panic) => {
                let reason = panic_message(panic.as_ref());
                tracing::error!(
                    task_id,
                    reason,
                    "forgebench: the handler panicked; the task fails"
                );
                TaskReply::fail(format!("the handler panicked: {reason}"))
            }
        }
    }

    /// Posts `reply`, through passing trouble; see the module's rules.
    async fn deliver(&self, task: &Task, mut reply: TaskReply) -> Result<()> {
        let mut backoff = Backoff::for_serve();
        for _attempt in 0..MAX_REPLY_ATTEMPTS {
            let error = match self.client.post_reply(&task.id, &reply).await {
                Ok(_) => return Ok(()),
                Err(error) => error,
            };
            match error {
                Error::Unauthenticated(_) | Error::PermissionDenied(_) => return Err(error),
                error if error.is_passing() => {
                    let pause = backoff.next_delay();
                    tracing::warn!(task_id = %task.id, %error, ?pause, "forgebench: reply failed; trying again");
                    // A claimed task is answered even when stopping.
                    tokio::time::sleep(pause).await;
                }
                Error::Conflict(body) => {
                    tracing::info!(task_id = %task.id, state = body.state(), "forgebench: the task is no longer working; its reply was dropped");
                    return Ok(());
                }
                Error::BadRequest(_) | Error::TooLarge(_) | Error::Unprocessable(_)
                    if reply.state != TaskState::Failed =>
                {
                    tracing::error!(task_id = %task.id, %error, "forgebench: the handler's reply was refused");
                    reply = TaskReply::fail(format!("the handler's reply was refused: {error}"));
                }
                error => {
                    tracing::error!(task_id = %task.id, %error, "forgebench: the reply was refused");
                    return Ok(());
                }
            }
        }
        tracing::error!(task_id = %task.id, "forgebench: gave up replying to the task");
        Ok(())
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_never_hands_out_more_places_than_max_tasks() {
        let budget = ClaimBudget::new(Some(2));
        assert!(budget.reserve());
        assert!(budget.reserve());
        assert!(!budget.reserve());
        budget.release();
        assert!(budget.reserve());
        budget.finish();
        budget.finish();
        assert_eq!(budget.handled(), 2);
        assert!(!budget.reserve());
    }

    #[tokio::test]
    async fn a_stop_wakes_a_sleeping_loop() {
        let stopping = Stopping {
            caller: Some(StopSignal::new()),
            own: StopSignal::new(),
        };
        if let Some(signal) = &stopping.caller {
            signal.stop();
        }
        let started = std::time::Instant::now();
        stopping.sleep(Duration::from_secs(30)).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(stopping.is_set());
    }
}
