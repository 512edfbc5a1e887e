//! The HTTP edge: request parsing helpers, the route table and the handlers behind each route.
//! The same handlers serve API Gateway (one Lambda function per route) and the local gateway.

mod a2a;
mod agents;
mod audit;
pub mod auth;
mod binding_terms;
mod bindings;
mod calls;
mod cards;
mod console;
mod deliveries;
mod endpoint;
mod events;
mod feed;
mod gate;
mod issuers;
mod members;
mod open;
mod policies;
mod protected_resource;
mod pull;
pub mod reply;
pub mod router;
pub mod routes;
mod search;
mod service;
mod sign_in;
mod signing_keys;
mod tasks;
mod tenants;
mod tools;

use std::time::Duration;

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::Value;

use crate::app::App;
use crate::config::API_MAX_WAIT_SECONDS;
use crate::domain::content::{PackedBody, INLINE_BODY_BYTES, MAX_TASK_CONTENT_BYTES};
use crate::domain::ids::{TaskId, TenantId};
use crate::domain::keys::{self, KeyKind};
use crate::domain::{Message, Task, TenantPrincipal};
use crate::error::{json_response, ApiError};
use crate::store::{AuditEntry, PollSlot, SlotPool, MAX_POLLS_PER_AGENT};

pub use router::{Route, RouteMiss};

/// What every handler returns.
pub type HandlerResult = Result<Response<Body>, ApiError>;

/// A path parameter the route template guarantees.
pub(crate) fn path_param(request: &Request, name: &str) -> Result<String, ApiError> {
    request
        .path_parameters_ref()
        .and_then(|parameters| parameters.first(name))
        .map(str::to_owned)
        .ok_or_else(|| ApiError::InvalidRequest(format!("path parameter {name} is missing")))
}

/// A query parameter, if present.
pub(crate) fn query_param(request: &Request, name: &str) -> Option<String> {
    request
        .query_string_parameters_ref()
        .and_then(|parameters| parameters.first(name))
        .map(str::to_owned)
}

/// The JSON body. An empty or malformed body is a 400 that says which.
pub(crate) fn json_body(request: &Request) -> Result<Value, ApiError> {
    let bytes: &[u8] = match request.body() {
        Body::Empty => &[],
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => &[],
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::InvalidRequest("a JSON body is required".into()));
    }
    serde_json::from_slice(bytes)
        .map_err(|error| ApiError::InvalidRequest(format!("malformed JSON body: {error}")))
}

/// The JSON body, which must be an object.
pub(crate) fn json_object(request: &Request) -> Result<serde_json::Map<String, Value>, ApiError> {
    match json_body(request)? {
        Value::Object(object) => Ok(object),
        _ => Err(ApiError::InvalidRequest(
            "the body must be a JSON object".into(),
        )),
    }
}

/// Refuses fields a body may not carry, so a typo is a clear 400 rather than silently ignored.
pub(crate) fn only_fields(
    object: &serde_json::Map<String, Value>,
    allowed: &[&str],
) -> Result<(), ApiError> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(ApiError::InvalidRequest(format!(
            "unknown field {key:?}; expected any of {allowed:?}"
        ))),
        None => Ok(()),
    }
}

/// A required string field of 1 to `max` characters.
pub(crate) fn text_field(
    object: &serde_json::Map<String, Value>,
    name: &str,
    max: usize,
) -> Result<String, ApiError> {
    match object.get(name) {
        Some(Value::String(text)) if !text.trim().is_empty() && text.chars().count() <= max => {
            Ok(text.clone())
        }
        _ => Err(ApiError::InvalidRequest(format!(
            "{name} is required: a string of 1 to {max} characters"
        ))),
    }
}

/// `?wait=`: an integer from 0 to 30 (anything else is a 400), served up to the deployment's
/// bound.
pub(crate) fn wait_param(request: &Request, app: &App) -> Result<Duration, ApiError> {
    let Some(text) = query_param(request, "wait") else {
        return Ok(Duration::ZERO);
    };
    let seconds: u64 = text
        .parse()
        .ok()
        .filter(|seconds| *seconds <= API_MAX_WAIT_SECONDS)
        .ok_or_else(|| {
            ApiError::InvalidRequest(format!(
                "wait must be an integer from 0 to {API_MAX_WAIT_SECONDS}"
            ))
        })?;
    Ok(Duration::from_secs(
        seconds.min(app.config.max_wait_seconds),
    ))
}

/// Puts the task's ids on the request's span, so every log line of the request names them.
pub(crate) fn note_task(task: &Task) {
    let span = tracing::Span::current();
    span.record("task_id", task.id.as_str());
    span.record("call_id", task.call_id.as_str());
    span.record("caller_agent_id", task.caller_agent_id.as_str());
    span.record("callee_agent_id", task.callee_agent_id.as_str());
}

/// `task` with every stored body in place of its reference.
pub(crate) async fn full_task(
    app: &App,
    mut task: Task,
    written: &[&PackedBody],
) -> Result<Task, ApiError> {
    note_task(&task);
    app.bodies.resolve(&mut task, written).await?;
    Ok(task)
}

/// A message packed for task `task_id` of `tenant_id`, not stored yet.
pub(crate) fn pack_message(
    tenant_id: &TenantId,
    task_id: &TaskId,
    message: &Message,
) -> Result<PackedBody, ApiError> {
    let value = serde_json::to_value(message).map_err(ApiError::internal)?;
    Ok(PackedBody::pack(
        tenant_id,
        task_id,
        &value,
        INLINE_BODY_BYTES,
    ))
}

/// The `413` for a write that would take a task past [`MAX_TASK_CONTENT_BYTES`].
pub(crate) fn content_too_large() -> ApiError {
    ApiError::TooLarge(format!(
        "the task would hold more than {MAX_TASK_CONTENT_BYTES} bytes of messages and artifacts; \
         open a new task in this conversation"
    ))
}

/// Puts a task action that took effect on the audit log. The action is on the record already
/// (in the task), so a failure here is logged, never answered: that would invite a retry of
/// something done.
pub(crate) async fn audit_task_action(
    app: &App,
    principal: &TenantPrincipal,
    action: &str,
    task: &Task,
) {
    let entry = AuditEntry::for_task(principal, action, task);
    record_task_action(app, &entry).await;
}

async fn record_task_action(app: &App, entry: &AuditEntry) {
    if let Err(error) = app.store.record_audit(entry).await {
        let task_id = entry.task_id.as_deref().unwrap_or_default();
        tracing::error!(task_id, action = %entry.action, error = %error, "audit entry not written");
    }
}

/// `200` with a task `action` just changed, in full, with its audit entry (see [`audited_task`]).
pub(crate) async fn audited_task_ok(
    app: &App,
    principal: &TenantPrincipal,
    action: &str,
    task: Task,
    written: &[&PackedBody],
) -> HandlerResult {
    ok(&audited_task(app, principal, action, task, written)
        .await?
        .to_json())
}

/// A task `action` just changed, in full, with its audit entry written while the task's bodies
/// are read back (neither waits on the other).
pub(crate) async fn audited_task(
    app: &App,
    principal: &TenantPrincipal,
    action: &str,
    task: Task,
    written: &[&PackedBody],
) -> Result<Task, ApiError> {
    let entry = AuditEntry::for_task(principal, action, &task);
    let (_, answer) = tokio::join!(
        record_task_action(app, &entry),
        full_task(app, task, written)
    );
    answer
}

/// The two long-poll slots a waiting request holds: one of its key holder's and one of its
/// tenant's.
pub(crate) struct WaitSlots {
    own: PollSlot,
    tenant: PollSlot,
}

impl WaitSlots {
    /// Gives both slots back.
    pub(crate) async fn release(self, app: &App) {
        tokio::join!(
            app.store.release_poll_slot(&self.own),
            app.store.release_poll_slot(&self.tenant)
        );
    }
}

/// The slots a wait of `wait` holds (see [`WaitSlots`]), or `429 too_many_requests` when the
/// principal holds [`MAX_POLLS_PER_AGENT`] already or its tenant holds its `tenant_max_waits`;
/// no slot is needed to wait for nothing. The key holder's slot is taken first and the tenant's
/// only then: a wait refused by either costs the store no write in the other pool, so a client
/// at its limits costs little however often it asks.
pub(crate) async fn poll_slot(
    app: &App,
    principal: &TenantPrincipal,
    wait: Duration,
) -> Result<Option<WaitSlots>, ApiError> {
    if wait.is_zero() {
        return Ok(None);
    }
    let own_pool = SlotPool::of_holder(principal.id());
    let tenant_pool = SlotPool::of_tenant(&principal.tenant_id, app.config.tenant_max_waits);
    let seconds = wait.as_secs();
    let Some(own) = app.store.take_poll_slot(&own_pool, seconds).await? else {
        return Err(ApiError::TooManyRequests(format!(
            "at most {MAX_POLLS_PER_AGENT} requests with wait may be open at once per key \
             holder; retry when one has answered"
        )));
    };
    match app.store.take_poll_slot(&tenant_pool, seconds).await {
        Ok(Some(tenant)) => Ok(Some(WaitSlots { own, tenant })),
        refused_or_failed => {
            // The key holder's slot goes back at once.
            app.store.release_poll_slot(&own).await;
            Err(match refused_or_failed {
                Ok(_) => ApiError::TooManyRequests(format!(
                    "at most {} requests with wait may be open at once per tenant; retry when \
                     one has answered",
                    tenant_pool.size()
                )),
                Err(error) => error.into(),
            })
        }
    }
}

/// Runs `work` holding the slots of a wait of `wait` (see [`poll_slot`]) and gives them back
/// after.
pub(crate) async fn with_poll_slot<T>(
    app: &App,
    principal: &TenantPrincipal,
    wait: Duration,
    work: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let slots = poll_slot(app, principal, wait).await?;
    let outcome = work.await;
    if let Some(slots) = slots {
        slots.release(app).await;
    }
    outcome
}

/// A new key of `kind`, shown once.
pub(crate) fn new_key(kind: KeyKind) -> Result<String, ApiError> {
    keys::generate(kind)
        .map_err(|error| ApiError::internal(format!("no randomness for a key: {error}")))
}

pub(crate) fn ok(body: &Value) -> HandlerResult {
    Ok(json_response(StatusCode::OK, body))
}

pub(crate) fn created(body: &Value) -> HandlerResult {
    Ok(json_response(StatusCode::CREATED, body))
}
