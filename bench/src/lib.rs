//! What the benchmark programs share: the recording proxy in front of the emulators
//! ([`proxy`]), the units DynamoDB reports for what it was asked ([`capacity`]), and the
//! attribution of those units to the partition keys they land on ([`attribution`]), and the
//! small task both the cost and the partition benchmarks drive ([`small_task`]).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "benchmark code: a failed unwrap stops the run with its message"
)]

pub mod attribution;
pub mod capacity;
pub mod proxy;
pub mod small_task;
