//! A2A 1.0 at the gate: the methods every binding serves, on top of the same task operations as
//! the REST routes (the same governance, audit entries, lineage and idempotency), with the A2A
//! wire format and errors (`crate::a2a`).
//!
//! Authentication and the gate's refusals stay transport-level, as on the REST routes: a missing
//! key is `401`, a refusal the one `403 not_permitted`, a busy or failing backing service
//! `429`/`503`. Everything else is an A2A error.

mod json_rpc;
mod list;
pub(crate) mod push_configs;
mod rest;
mod stream;

pub use json_rpc::jsonrpc;
pub use push_configs::{
    create_push_config, delete_push_config, get_push_config, list_push_configs,
};
pub use rest::{get_task, list_tasks, send_message, stream_message, task_action};

use std::time::Duration;

use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use serde_json::{json, Map, Value};

use super::open::parent_call;
use super::service::notify::{save_config, vetted_request, Start};
use super::service::open::{open_task, OpenRequest};
use super::service::tasks::{answer_task, cancel_task, read_task, readable_task, settle, Canceled};
use crate::a2a::incoming::incoming_message;
use crate::a2a::jsonrpc::{check_version, Method, VERSION_HEADER};
use crate::a2a::wire::{task_json, TaskView};
use crate::a2a::{A2aError, A2aErrorKind};
use crate::app::App;
use crate::domain::{CallId, TaskId, TenantPrincipal};
use crate::error::{cause_chain, ApiError};

/// The media type of HTTP+JSON bodies (A2A 1.0 §11.1: it SHOULD be used for requests and
/// responses).
pub const A2A_MEDIA_TYPE: &str = "application/a2a+json";

/// The media type of JSON-RPC bodies (A2A 1.0 §9.1: `application/json` for requests and
/// responses).
pub const JSON_RPC_MEDIA_TYPE: &str = "application/json";

/// Why an A2A call did not succeed: an error of the protocol, or one the transport carries.
pub(super) enum Failure {
    Protocol(A2aError),
    Transport(ApiError),
}

impl From<A2aError> for Failure {
    fn from(error: A2aError) -> Self {
        Failure::Protocol(error)
    }
}

impl From<ApiError> for Failure {
    fn from(error: ApiError) -> Self {
        use A2aErrorKind::*;
        let protocol = |kind, message: String| Failure::Protocol(A2aError::new(kind, message));
        match error {
            ApiError::TaskNotFound => Failure::Protocol(A2aError::task_not_found()),
            ApiError::InvalidRequest(message)
            | ApiError::TooLarge(message)
            | ApiError::NotFound(message) => protocol(InvalidParams, message),
            ApiError::UnsupportedMediaType(message) => protocol(ContentTypeNotSupported, message),
            ApiError::Conflict(message)
            | ApiError::InProgress(message)
            | ApiError::LimitReached(message) => protocol(UnsupportedOperation, message),
            ApiError::TaskNotWorking(state) => protocol(
                UnsupportedOperation,
                format!("the task is {}", state.as_str()),
            ),
            error @ (ApiError::Internal(_) | ApiError::PullResultWorking) => {
                tracing::error!(cause = %cause_chain(&error), "A2A request failed");
                protocol(Internal, "internal error".into())
            }
            transport @ (ApiError::Unauthenticated
            | ApiError::CredentialForm
            | ApiError::InvalidToken
            | ApiError::NotPermitted
            | ApiError::Forbidden(_)
            | ApiError::TooManyRequests(_)
            | ApiError::QuotaExceeded { .. }
            | ApiError::Unavailable) => Failure::Transport(transport),
        }
    }
}

/// How long a send waits before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sending {
    /// As `configuration.returnImmediately` says (`SendMessage`).
    AsAsked,
    /// Not at all: a stream follows the task (`SendStreamingMessage`).
    ForAStream,
}

/// One A2A call: who calls, which agent it is addressed to, and the call that caused it.
pub(super) struct A2aCall<'a> {
    pub app: &'a App,
    pub principal: TenantPrincipal,
    /// The credentials the caller sent: a stream authenticates them again as it goes.
    pub credentials: lambda_http::http::HeaderMap,
    pub callee_segment: String,
    pub parent_call_id: Option<CallId>,
}

impl<'a> A2aCall<'a> {
    /// Authenticates the caller of `request`, addressed to the path's `agent`, and checks the
    /// protocol version it speaks.
    pub async fn read(app: &'a App, request: &Request) -> Result<A2aCall<'a>, Failure> {
        let principal = app.authenticate_in_tenant(request.headers()).await?;
        let version = request
            .headers()
            .get(VERSION_HEADER)
            .and_then(|value| value.to_str().ok());
        check_version(version)?;
        Ok(A2aCall {
            app,
            principal,
            credentials: crate::http::auth::credentials_of(request.headers()),
            callee_segment: super::path_param(request, "agent")?,
            parent_call_id: parent_call(request)?,
        })
    }

    /// The blocking wait of a send: the deployment's whole bound.
    fn send_wait(&self) -> Duration {
        Duration::from_secs(self.app.config.max_wait_seconds)
    }

    /// `SendMessage`: opens a task, or answers the task the message names in place; waits for a
    /// final or interrupted state unless `configuration.returnImmediately`.
    pub async fn send_message(&self, params: &Value) -> Result<Value, Failure> {
        let (task, view) = Box::pin(self.send(params, Sending::AsAsked)).await?;
        Ok(json!({ "task": task_json(&task, view) }))
    }

    /// Opens or answers a task as `params` ask, waiting as `sending` says; the task as it is
    /// then, and how much of it the caller asked to see.
    pub async fn send(
        &self,
        params: &Value,
        sending: Sending,
    ) -> Result<(crate::domain::Task, TaskView), Failure> {
        let params = object(params, "params")?;
        let configuration = match params.get("configuration") {
            None | Some(Value::Null) => Map::new(),
            Some(value) => object(value, "configuration")?.clone(),
        };
        // Checked (and its URL vetted) before anything is opened or answered.
        let notify = match configuration.get("taskPushNotificationConfig") {
            None | Some(Value::Null) => None,
            Some(config) => Some(
                vetted_request(self.app, config, "configuration.taskPushNotificationConfig")
                    .await?,
            ),
        };
        let immediately = optional_bool(&configuration, "returnImmediately")?;
        let view = TaskView {
            history_length: history_length(configuration.get("historyLength"))?,
            include_artifacts: true,
        };
        let wait = if immediately || sending == Sending::ForAStream {
            Duration::ZERO
        } else {
            self.send_wait()
        };
        let incoming = incoming_message(params.get("message").unwrap_or(&Value::Null))?;
        let task = match &incoming.task_id {
            Some(task_id) => {
                let task_id = task_id_of(task_id)?;
                let app = self.app;
                if let Some(asked) = notify {
                    let task = self.callers_task(&task_id).await?;
                    save_config(app, &self.principal, &task, asked, Start::Now).await?;
                }
                if let Some(context_id) = &incoming.context_id {
                    let task =
                        readable_task(app, &self.principal, &task_id, &self.callee_segment).await?;
                    if *context_id != task.context_id {
                        return Err(A2aError::invalid_params(
                            "message.contextId is not the conversation of message.taskId",
                        )
                        .into());
                    }
                }
                let segment = &self.callee_segment;
                let answered = Box::pin(answer_task(
                    app,
                    &self.principal,
                    segment,
                    &task_id,
                    incoming.message,
                ))
                .await?;
                settle(app, &self.principal, answered, wait).await?
            }
            None => {
                // A contextId the gate did not issue to these two agents names their
                // conversation in the tenant (A2A 1.0 §3.4.1): joined, or started by this task.
                let asked = OpenRequest {
                    callee_segment: self.callee_segment.clone(),
                    wait,
                    message: incoming.message,
                    context_id: incoming.context_id,
                    context_named: true,
                    parent_call_id: self.parent_call_id.clone(),
                    skill: incoming.skill,
                    notify,
                };
                Box::pin(open_task(self.app, &self.principal, asked)).await?
            }
        };
        Ok((task, view))
    }

    /// `GetTask`.
    pub async fn get_task(&self, params: &Value) -> Result<Value, Failure> {
        let params = object(params, "params")?;
        let task_id = task_id_of(required_text(params, "id")?)?;
        let view = TaskView {
            history_length: history_length(params.get("historyLength"))?,
            include_artifacts: true,
        };
        let task = read_task(
            self.app,
            &self.principal,
            &self.callee_segment,
            &task_id,
            Duration::ZERO,
        )
        .await?;
        Ok(task_json(&task, view))
    }

    /// `CancelTask`: a task already finished is not cancelable.
    pub async fn cancel_task(&self, params: &Value) -> Result<Value, Failure> {
        let params = object(params, "params")?;
        let task_id = task_id_of(required_text(params, "id")?)?;
        match cancel_task(self.app, &self.principal, &self.callee_segment, &task_id).await? {
            Canceled::Now(task) => Ok(task_json(&task, TaskView::default())),
            Canceled::AlreadyFinished(task) => Err(A2aError::new(
                A2aErrorKind::TaskNotCancelable,
                format!("the task is {} already", task.state.as_str()),
            )
            .into()),
        }
    }

    /// Every method by its JSON-RPC name.
    pub async fn call(&self, method: Method, params: &Value) -> Result<Value, Failure> {
        match method {
            // Boxed: an open's future is large, and nesting it unboxed in every binding's
            // handler overflows a worker thread's stack in debug builds.
            Method::SendMessage => Box::pin(self.send_message(params)).await,
            Method::GetTask => Box::pin(self.get_task(params)).await,
            Method::CancelTask => Box::pin(self.cancel_task(params)).await,
            Method::ListTasks => Box::pin(self.list_tasks(params)).await,
            Method::SendStreamingMessage | Method::SubscribeToTask => Err(A2aError::unsupported(
                "a streaming method is answered with an event stream; this call cannot carry one",
            )
            .into()),
            Method::CreateTaskPushNotificationConfig => {
                Box::pin(self.create_push_config(params)).await
            }
            Method::GetTaskPushNotificationConfig => Box::pin(self.get_push_config(params)).await,
            Method::ListTaskPushNotificationConfigs => {
                Box::pin(self.list_push_configs(params)).await
            }
            Method::DeleteTaskPushNotificationConfig => {
                Box::pin(self.delete_push_config(params)).await
            }
            Method::GetExtendedAgentCard => Err(A2aError::new(
                A2aErrorKind::ExtendedAgentCardNotConfigured,
                "agents have no extended card",
            )
            .into()),
        }
    }
}

fn object<'a>(value: &'a Value, name: &str) -> Result<&'a Map<String, Value>, A2aError> {
    value
        .as_object()
        .ok_or_else(|| A2aError::invalid_params(format!("{name} must be an object")))
}

fn required_text<'a>(params: &'a Map<String, Value>, name: &str) -> Result<&'a str, A2aError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .ok_or_else(|| A2aError::invalid_params(format!("{name} is required: a string")))
}

/// An optional string field (absent, null or empty: `None`).
fn optional_text<'a>(
    params: &'a Map<String, Value>,
    name: &str,
) -> Result<Option<&'a str>, A2aError> {
    match params.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(A2aError::invalid_params(format!("{name} must be a string"))),
    }
}

fn optional_bool(params: &Map<String, Value>, name: &str) -> Result<bool, A2aError> {
    match params.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(_) => Err(A2aError::invalid_params(format!(
            "{name} must be a boolean"
        ))),
    }
}

/// `historyLength`: absent for the whole history, else a whole number.
fn history_length(value: Option<&Value>) -> Result<Option<usize>, A2aError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(|length| Some(length as usize))
            .ok_or_else(|| A2aError::invalid_params("historyLength must be a whole number")),
    }
}

/// A task id as the caller sent it: one this gate did not issue names no task.
fn task_id_of(text: &str) -> Result<TaskId, A2aError> {
    uuid::Uuid::parse_str(text)
        .map(|id| TaskId::from(id.to_string()))
        .map_err(|_| A2aError::task_not_found())
}

/// An A2A body as `media_type`.
pub(super) fn a2a_response(
    status: StatusCode,
    body: &Value,
    media_type: &'static str,
) -> Response<Body> {
    let mut response = Response::new(Body::Text(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        HeaderValue::from_static(media_type),
    );
    response
}

/// Refuses a request body sent as anything but JSON (`application/json`, or A2A's
/// `application/a2a+json`), with `ContentTypeNotSupported`; a body without a `Content-Type` is
/// read as JSON.
pub(super) fn check_content_type(request: &Request) -> Result<(), A2aError> {
    let Some(value) = request
        .headers()
        .get(lambda_http::http::header::CONTENT_TYPE)
    else {
        return Ok(());
    };
    let media = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if [JSON_RPC_MEDIA_TYPE, A2A_MEDIA_TYPE].contains(&media.as_str()) {
        return Ok(());
    }
    Err(A2aError::new(
        A2aErrorKind::ContentTypeNotSupported,
        format!(
            "a body of type {media:?} is not read: send application/json or application/a2a+json"
        ),
    ))
}

/// The media type of an HTTP+JSON answer to `request`: `application/a2a+json`, unless the
/// client's `Accept` names `application/json` and nothing that `application/a2a+json` meets.
pub(super) fn rest_media_type(request: &Request) -> &'static str {
    let accept = request
        .headers()
        .get_all(lambda_http::http::header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|range| {
            range
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .collect::<Vec<_>>();
    let takes = |media: &str| accept.iter().any(|range| range == media);
    if takes("application/json")
        && !["application/a2a+json", "application/*", "*/*"]
            .iter()
            .any(|m| takes(m))
    {
        JSON_RPC_MEDIA_TYPE
    } else {
        A2A_MEDIA_TYPE
    }
}

pub(super) fn body_bytes(request: &Request) -> &[u8] {
    match request.body() {
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => &[],
    }
}
