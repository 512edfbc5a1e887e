//! The Rust SDK of the Forgebench A2A gateway: open tasks on other agents ([`Client::call`]),
//! read, cancel and search them, serve this agent's tasks ([`Client::serve`],
//! [`Client::next_task`], [`Client::reply`]), and manage a tenant (members, agents, keys,
//! bindings, push endpoints, cards).
//!
//! Every refusal is a typed [`Error`] carrying the gateway's documented body ([`ErrorBody`]).

mod client;
mod error;
mod manage;
mod retry;
mod serve;
mod task;
mod tasks;
pub mod webhooks;

pub use client::{
    Client, ClientBuilder, API_KEY_VARIABLE, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, HOSTED_URL,
    URL_VARIABLE,
};
pub use error::{Error, ErrorBody, Result};
pub use manage::{
    Agent, Binding, Bindings, CreatedMember, CreatedTenant, EndpointAuth, EndpointConfig,
    IssuedKey, Items, SecretKey,
};
pub use serve::{ServeOptions, StopSignal, DEFAULT_SERVE_WAIT_SECONDS, MAX_REPLY_ATTEMPTS};
pub use task::{
    new_message_id, text_of, Artifact, FileRef, IntoReply, Message, Part, Task, TaskInput,
    TaskReply, TaskState, TaskStatus, RESPONSE_ARTIFACT_NAME,
};
pub use tasks::{CallOptions, Direction, TaskPage, TaskSearch, MAX_WAIT_SECONDS};
pub use webhooks::{
    fetch_jwks, verify_delivery, Expected, ReplayCache, WebhookCheck, WebhookError,
};
