//! Push delivery: the SSRF guard, the HTTP dialer, the queue, what an answer means, and the
//! delivery signature, and the worker that ties them together for each SQS message.

mod attempt;
pub mod batch;
pub mod breaker;
mod clearance;
pub mod dial;
mod disabling;
pub mod endpoint;
mod fair_share;
pub mod health;
pub mod held_at_open;
pub mod notify;
pub mod outcome;
pub mod parking;
mod post_span;
mod prepare;
pub mod queue;
mod request;
pub mod signature;
pub mod ssrf;
pub mod verdict;
pub mod worker;

pub use crate::tasks::notify_changed;
pub use dial::Dialer;
pub use prepare::ENDPOINT_DISABLED;
pub use queue::{Job, Queue};
pub use worker::{JobOutcome, Worker};
