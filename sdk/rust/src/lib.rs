//! The Rust SDK of the Forgebench A2A gateway: open tasks on other agents ([`Client::call`]),
//! read, cancel and search them, serve this agent's tasks ([`Client::serve`],
//! [`Client::next_task`], [`Client::reply`]; pushed to an endpoint, with the same handler:
//! [`PushEndpoint`]), follow a task's events ([`Client::events`]), and
//! manage a tenant (members, agents, keys, bindings, push endpoints and their deliveries, tools,
//! cards, the audit log, call lineage, settings, signing keys, trusted OpenID Connect issuers). A
//! client signs in with a key, or with the access tokens of a [`TokenProvider`].
//!
//! Every refusal is a typed [`Error`] carrying the gateway's documented body ([`ErrorBody`]).

mod admin;
mod binding_terms;
mod client;
mod deliveries;
mod error;
mod events;
mod issuers;
mod manage;
mod policies;
pub mod push;
mod retry;
mod serve;
mod task;
mod tasks;
mod token;
mod trace_context;
pub mod webhooks;

pub use admin::{
    AuditActor, AuditEntry, AuditOutcome, AuditPage, AuditQuery, Call, Jwk, Jwks,
    RetiredSigningKey, SigningKey, SigningKeyPurpose, TenantSettings, TenantSettingsPatch,
};
pub use binding_terms::{
    BindingContract, BindingLimits, BindingPatch, BindingUsage, ContractPatch, LimitsPatch,
};
pub use client::{
    Client, ClientBuilder, API_KEY_VARIABLE, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, HOSTED_URL,
    URL_VARIABLE,
};
pub use deliveries::{
    EndpointAttemptCounts, EndpointDisableAfter, EndpointDisabled, EndpointHealth, EndpointState,
    Redriven, Replayed, ReplayedNotification,
};
pub use error::{Error, ErrorBody, Result};
pub use events::TaskEvent;
/// The `http` crate whose `Request` and `Response` [`PushEndpoint::handle`] takes and returns.
pub use http;
pub use issuers::{
    IssuerDiscovery, IssuerRemoved, SignsInAs, SubjectGrant, SubjectGrantIn, TrustedIssuer,
};
pub use manage::{
    Agent, AgentEndpoint, Binding, Bindings, CreatedMember, CreatedTenant, EndpointAuth,
    EndpointAuthInfo, EndpointConfig, IssuedKey, Items, KeyInfo, KeyRevoked, Member, SecretKey,
    Tool, ToolRemoved, ToolSpec,
};
pub use policies::{
    CallCheck, CallCheckRequest, PolicyMode, PolicyPatch, TenantPolicies, TenantPolicy,
};
pub use push::{
    task_of_delivery, JwksSource, PushEndpoint, PushOptions, DEFAULT_JWKS_MAX_AGE,
    DEFAULT_JWKS_REFRESH_COOLDOWN,
};
pub use serve::{ServeOptions, StopSignal, DEFAULT_SERVE_WAIT_SECONDS, MAX_REPLY_ATTEMPTS};
pub use task::{
    new_message_id, text_of, Artifact, FileRef, IntoReply, Message, Part, Task, TaskInput,
    TaskReply, TaskState, TaskStatus, RESPONSE_ARTIFACT_NAME,
};
pub use tasks::{CallOptions, DeliveryAttempt, Direction, TaskPage, TaskSearch, MAX_WAIT_SECONDS};
pub use token::{AccessToken, TokenError, TokenFuture, TokenProvider, TOKEN_REFRESH_MARGIN};
pub use webhooks::{
    fetch_jwks, notification_destination, verify_delivery, verify_notification, Expected,
    ExpectedNotification, ReplayCache, WebhookCheck, WebhookError,
};
