//! Test harness: spawns the local gateway in-process on a free port with a fresh DynamoDB table
//! on DynamoDB Local, and offers one helper per route. Nothing here fakes AWS: every request goes
//! through the real handlers to the real emulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

mod a2a;
mod callee;
mod emulators;
pub mod faults;
mod logs;
pub mod oidc;
pub mod otlp;
mod proxy;
mod recorder;
mod requests;
pub mod samples;
mod seeds;
mod spawn;
pub mod sse;
mod table;
mod tasks;
mod tenants;

pub use callee::{Answer, Callee, Received};
pub use emulators::{
    dynamodb_client, dynamodb_config, dynamodb_endpoint, moto_endpoint, s3_client, sqs_and_kms,
    sqs_and_kms_recorded,
};
pub use logs::LogCapture;
pub use oidc::OidcProvider;
pub use proxy::Proxy;
pub use recorder::Recorder;
pub use requests::Reply;
pub use seeds::{offloaded_text_message, seeded_task, text_message};
pub use spawn::{spawn_app, spawn_app_with, Options, TestApp};
pub use tenants::{Pair, Tenant, TestAgent};
