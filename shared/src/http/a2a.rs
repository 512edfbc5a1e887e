//! A2A 1.0 at the gate: the methods every binding serves, on top of the same task operations as
//! the REST routes (the same governance, audit entries, lineage and idempotency), with the A2A
//! wire format and errors (`crate::a2a`).
//!
//! Authentication and the gate's refusals stay transport-level, as on the REST routes: a missing
//! key is `401`, a refusal the one `403 not_permitted`, a busy or failing backing service
//! `429`/`503`. Everything else is an A2A error.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::full_task;
use super::open::{open_task, parent_call, OpenRequest};
use super::tasks::{agent_principal, answer_task, cancel_task, read_task, settle, Canceled};
use crate::a2a::jsonrpc::{self, check_version, Method, RpcRequest, VERSION_HEADER};
use crate::a2a::wire::{incoming_message, parse_state, task_json, TaskView};
use crate::a2a::{A2aError, A2aErrorKind};
use crate::app::App;
use crate::domain::{clock, AgentId, AgentRef, Task, TaskId, TaskState, TenantPrincipal};
use crate::error::{cause_chain, ApiError};
use crate::store::PairCursor;

/// The media type of A2A bodies.
pub const A2A_MEDIA_TYPE: &str = "application/a2a+json";

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
            ApiError::Conflict(message) | ApiError::LimitReached(message) => {
                protocol(UnsupportedOperation, message)
            }
            ApiError::TaskNotWorking(state) => protocol(
                UnsupportedOperation,
                format!("the task is {}", state.as_str()),
            ),
            error @ (ApiError::Internal(_) | ApiError::PullResultWorking) => {
                tracing::error!(cause = %cause_chain(&error), "A2A request failed");
                protocol(Internal, "internal error".into())
            }
            transport @ (ApiError::Unauthenticated
            | ApiError::NotPermitted
            | ApiError::Forbidden(_)
            | ApiError::TooManyRequests(_)
            | ApiError::Unavailable) => Failure::Transport(transport),
        }
    }
}

/// One A2A call: who calls, which agent it is addressed to, and the call that caused it.
pub(super) struct A2aCall<'a> {
    pub app: &'a App,
    pub principal: TenantPrincipal,
    pub callee_segment: String,
    pub parent_call_id: Option<String>,
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
        let params = object(params, "params")?;
        let configuration = match params.get("configuration") {
            None | Some(Value::Null) => Map::new(),
            Some(value) => object(value, "configuration")?.clone(),
        };
        if configuration
            .get("taskPushNotificationConfig")
            .is_some_and(|config| !config.is_null())
        {
            return Err(A2aError::new(
                A2aErrorKind::PushNotificationNotSupported,
                "push notification configs are not served yet",
            )
            .into());
        }
        let immediately = optional_bool(&configuration, "returnImmediately")?;
        let view = TaskView {
            history_length: history_length(configuration.get("historyLength"))?,
            include_artifacts: true,
        };
        let wait = if immediately {
            Duration::ZERO
        } else {
            self.send_wait()
        };
        let incoming = incoming_message(params.get("message").unwrap_or(&Value::Null))?;
        let task = match &incoming.task_id {
            Some(task_id) => {
                let task_id = task_id_of(task_id)?;
                let app = self.app;
                if let Some(context_id) = &incoming.context_id {
                    let task = read_task(
                        app,
                        &self.principal,
                        &self.callee_segment,
                        &task_id,
                        Duration::ZERO,
                    )
                    .await?;
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
                let context_id = match &incoming.context_id {
                    None => None,
                    Some(id) => Some(
                        uuid::Uuid::parse_str(id)
                            .map_err(|_| {
                                A2aError::invalid_params(
                                    "message.contextId is not one this gate issued",
                                )
                            })?
                            .to_string(),
                    ),
                };
                let asked = OpenRequest {
                    callee_segment: self.callee_segment.clone(),
                    wait,
                    message: incoming.message,
                    context_id,
                    parent_call_id: self.parent_call_id.clone(),
                };
                Box::pin(open_task(self.app, &self.principal, asked)).await?
            }
        };
        Ok(json!({ "task": task_json(&task, view) }))
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

    /// `ListTasks`: the caller's tasks on this agent, newest first, a page at a time.
    pub async fn list_tasks(&self, params: &Value) -> Result<Value, Failure> {
        let query = TaskQuery::read(object(params, "params")?)?;
        let caller = agent_principal(&self.principal, "listing tasks")?;
        let callee = self
            .app
            .store
            .find_agent(
                &self.principal.tenant_id,
                &AgentRef::parse(&self.callee_segment),
            )
            .await
            .map_err(ApiError::from)?
            .filter(|callee| callee.tenant_id == self.principal.tenant_id);
        let Some(callee) = callee else {
            // An agent the caller cannot reach has no tasks of the caller's.
            return Ok(list_page(Vec::new(), "", query.page_size));
        };
        let binding = query.binding(&caller, &callee.id);
        let mut cursor = query.start(&binding)?;
        let mut page = Vec::new();
        for _ in 0..LIST_ROUNDS {
            let (tasks, next) = self
                .app
                .store
                .tasks_of_pair(&caller, &callee.id, cursor.as_ref(), query.page_size as i32)
                .await
                .map_err(ApiError::from)?;
            let batch = tasks.len();
            for (index, task) in tasks.into_iter().enumerate() {
                let key = PairCursor(format!("{}#{}", task.created_at, task.id));
                if query.matches(&task) {
                    let task = full_task(self.app, task, &[]).await?;
                    page.push(task_json(&task, query.view));
                }
                cursor = Some(key);
                if page.len() == query.page_size {
                    let more = index + 1 < batch || next.is_some();
                    let token = cursor
                        .filter(|_| more)
                        .map(|key| encode_token(&binding, &key));
                    return Ok(list_page(
                        page,
                        token.as_deref().unwrap_or(""),
                        query.page_size,
                    ));
                }
            }
            if next.is_none() {
                return Ok(list_page(page, "", query.page_size));
            }
        }
        let token = cursor.map(|key| encode_token(&binding, &key));
        Ok(list_page(
            page,
            token.as_deref().unwrap_or(""),
            query.page_size,
        ))
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
            Method::SendStreamingMessage | Method::SubscribeToTask => {
                Err(A2aError::unsupported("streaming is not served yet").into())
            }
            Method::CreateTaskPushNotificationConfig
            | Method::GetTaskPushNotificationConfig
            | Method::ListTaskPushNotificationConfigs
            | Method::DeleteTaskPushNotificationConfig => Err(A2aError::new(
                A2aErrorKind::PushNotificationNotSupported,
                "push notification configs are not served yet",
            )
            .into()),
            Method::GetExtendedAgentCard => Err(A2aError::new(
                A2aErrorKind::ExtendedAgentCardNotConfigured,
                "agents have no extended card",
            )
            .into()),
        }
    }
}

/// Most index reads one `ListTasks` page makes while filters pass over tasks; a page cut short
/// by it still carries the token to go on.
const LIST_ROUNDS: usize = 10;
const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 100;

/// A `ListTasks` request's filters and view.
struct TaskQuery {
    context_id: Option<String>,
    state: Option<Option<TaskState>>,
    after: Option<String>,
    page_size: usize,
    page_token: Option<String>,
    view: TaskView,
}

impl TaskQuery {
    fn read(params: &Map<String, Value>) -> Result<TaskQuery, A2aError> {
        let text = |name: &str| match params.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) if text.is_empty() => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(A2aError::invalid_params(format!("{name} must be a string"))),
        };
        let page_size = match params.get("pageSize") {
            None | Some(Value::Null) => DEFAULT_PAGE_SIZE,
            Some(value) => value
                .as_u64()
                .map(|size| size as usize)
                .filter(|size| (1..=MAX_PAGE_SIZE).contains(size))
                .ok_or_else(|| {
                    A2aError::invalid_params(format!("pageSize must be 1 to {MAX_PAGE_SIZE}"))
                })?,
        };
        let after = match text("statusTimestampAfter")? {
            None => None,
            Some(at) => Some(clock::format(clock::parse(&at).ok_or_else(|| {
                A2aError::invalid_params("statusTimestampAfter must be an RFC 3339 time")
            })?)),
        };
        Ok(TaskQuery {
            context_id: text("contextId")?,
            state: text("status")?.map(|name| parse_state(&name)).transpose()?,
            after,
            page_size,
            page_token: text("pageToken")?,
            view: TaskView {
                history_length: history_length(params.get("historyLength"))?,
                include_artifacts: optional_bool(params, "includeArtifacts")?,
            },
        })
    }

    fn matches(&self, task: &Task) -> bool {
        self.context_id
            .as_ref()
            .is_none_or(|id| *id == task.context_id)
            && self.state.is_none_or(|state| state == Some(task.state))
            && self
                .after
                .as_ref()
                .is_none_or(|after| task.status_timestamp > *after)
    }

    /// What a page token is bound to: the caller, the callee and the filters, so a token of
    /// another query is refused rather than misread.
    fn binding(&self, caller: &AgentId, callee: &AgentId) -> String {
        let filters = format!(
            "{caller}|{callee}|{:?}|{:?}|{:?}",
            self.context_id, self.state, self.after
        );
        hex::encode(&Sha256::digest(filters.as_bytes())[..8])
    }

    fn start(&self, binding: &str) -> Result<Option<PairCursor>, A2aError> {
        let Some(token) = &self.page_token else {
            return Ok(None);
        };
        let refused = || A2aError::invalid_params("pageToken is not one this query issued");
        let text = URL_SAFE_NO_PAD.decode(token).map_err(|_| refused())?;
        let text = String::from_utf8(text).map_err(|_| refused())?;
        let (bound, key) = text.split_once('|').ok_or_else(refused)?;
        if bound != binding {
            return Err(refused());
        }
        Ok(Some(PairCursor(key.to_owned())))
    }
}

fn encode_token(binding: &str, key: &PairCursor) -> String {
    URL_SAFE_NO_PAD.encode(format!("{binding}|{}", key.0))
}

fn list_page(tasks: Vec<Value>, next_page_token: &str, page_size: usize) -> Value {
    json!({"tasks": tasks, "nextPageToken": next_page_token, "pageSize": page_size})
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

/// An A2A body with its media type.
fn a2a_response(status: StatusCode, body: &Value) -> Response<Body> {
    let mut response = Response::new(Body::Text(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        HeaderValue::from_static(A2A_MEDIA_TYPE),
    );
    response
}

/// `POST /v1/agents/{agent}/a2a/jsonrpc`: the JSON-RPC binding. A protocol error is a JSON-RPC
/// error object in a `200`; only the transport's own refusals use other statuses.
pub async fn jsonrpc(app: &App, request: Request) -> super::HandlerResult {
    let call = match A2aCall::read(app, &request).await {
        Ok(call) => call,
        Err(Failure::Transport(error)) => return Err(error),
        Err(Failure::Protocol(error)) => {
            let body = jsonrpc::failure(&rpc_id(&request), &error);
            return Ok(a2a_response(StatusCode::OK, &body));
        }
    };
    let RpcRequest { id, method, params } = match jsonrpc::parse_request(body_bytes(&request)) {
        Ok(rpc) => rpc,
        Err((id, error)) => {
            return Ok(a2a_response(StatusCode::OK, &jsonrpc::failure(&id, &error)))
        }
    };
    match call.call(method, &params).await {
        Ok(result) => Ok(a2a_response(StatusCode::OK, &jsonrpc::success(&id, result))),
        Err(Failure::Protocol(error)) => {
            Ok(a2a_response(StatusCode::OK, &jsonrpc::failure(&id, &error)))
        }
        Err(Failure::Transport(error)) => Err(error),
    }
}

/// The request's JSON-RPC id, when an error is answered before the request is read in full.
fn rpc_id(request: &Request) -> Value {
    serde_json::from_slice::<Value>(body_bytes(request))
        .ok()
        .and_then(|body| body.get("id").cloned())
        .filter(|id| id.is_string() || id.is_number())
        .unwrap_or(Value::Null)
}

fn body_bytes(request: &Request) -> &[u8] {
    match request.body() {
        Body::Text(text) => text.as_bytes(),
        Body::Binary(bytes) => bytes,
        _ => &[],
    }
}
