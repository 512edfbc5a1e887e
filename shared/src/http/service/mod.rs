//! The task service: what a caller or a callee does to a task (open it, read it, cancel it,
//! answer its question, give it a push notification config), whichever edge asked. The REST
//! handlers (`http/open.rs`, `http/tasks.rs`, `http/pull.rs`) and the A2A ones (`http/a2a`) read
//! their wire formats into these calls and render what comes back; neither edge calls into the
//! other.

pub(crate) mod admission;
mod call_span;
pub(crate) mod notify;
pub(crate) mod open;
pub(crate) mod policy;
pub(crate) mod tasks;
