//! What the benchmark programs share: the recording proxy in front of the emulators
//! ([`proxy`]), the units DynamoDB reports for what it was asked ([`capacity`]), and the
//! small task the cost targets are set on ([`small_task`]).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmark code: a failed unwrap stops the run with its message"
)]

pub mod capacity;
pub mod proxy;
pub mod small_task;
