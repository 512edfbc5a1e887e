//! What becomes of a push job's message, and the times a job keeps to.

use std::time::Duration;

use crate::store::StoreError;

/// What to do with the message after handling it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// Delete it: the task needs nothing more from this message.
    Done,
    /// Leave it on the queue and make it visible again after this delay.
    RetryIn(Duration),
    /// Nothing was tried (the tenant's pushes in flight at their bound, or its breaker at the
    /// receiver open): put the message back as a new one, due after this delay, so waiting
    /// does not count toward its receives (`maxReceiveCount`, which sends a message the worker
    /// keeps failing to the dead-letter queue).
    HeldBack(Duration),
}

/// How long one attempt may hold a task before another attempt may take it over.
pub const LEASE_SECONDS: u64 = 60;
/// When the store fails mid-job, look again after this long.
pub(super) const STORE_RETRY: Duration = Duration::from_secs(10);

/// When a job cut at the end of its invocation's time comes back (its leases, held for
/// [`LEASE_SECONDS`], may still stand then; the next attempt waits for them).
pub const CUT_RETRY: Duration = Duration::from_secs(10);

/// What a batch leaves of its invocation's time for answering: delaying the messages to retry
/// and the response.
pub const ANSWER_TIME: Duration = Duration::from_secs(3);

/// The push worker function's timeout (infra/template.yaml), which the local gateway's worker
/// gives each batch too.
pub const INVOCATION_TIME: Duration = Duration::from_secs(30);

/// Why a delivery ended before its POST's outcome was recorded.
pub(super) enum Stop {
    /// Nothing more to do this time; what to do with the message.
    With(JobOutcome),
    /// The store failed: the message comes back after [`STORE_RETRY`].
    Store(StoreError),
}

impl From<StoreError> for Stop {
    fn from(error: StoreError) -> Self {
        Stop::Store(error)
    }
}

/// A uniform draw from [0, 1] for the retry delay's jitter.
pub(crate) fn jitter() -> f64 {
    let mut bytes = [0u8; 2];
    let _ = getrandom::fill(&mut bytes);
    f64::from(u16::from_le_bytes(bytes)) / f64::from(u16::MAX)
}
