//! Black-box tests of the gateway over real HTTP, against DynamoDB Local. One binary, one fresh
//! table per test, so tests run in parallel without seeing each other.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

mod a2a;
mod a2a_push_configs;
mod a2a_streams;
mod audit_partitions;
mod bad_input;
mod binding_terms;
mod bindings;
mod cards;
mod concurrency;
mod console;
mod contract;
mod delivery_ops;
mod deployment;
mod errors;
mod events;
mod governance;
mod histories;
mod idempotency;
mod input;
mod large;
mod ledger;
mod lived_in;
mod long_polls;
mod management;
mod observability;
mod oidc;
mod otel_trace;
mod outage;
mod permissions;
mod policies;
mod progress;
mod public_jwks;
mod pull;
mod push;
mod push_attempts;
mod push_fair_share;
mod push_security;
mod push_signatures;
mod release;
mod sdk_tls;
mod search;
mod security;
mod tasks;
mod trace_context;
