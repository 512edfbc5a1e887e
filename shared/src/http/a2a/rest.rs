//! The HTTP+JSON binding under `/v1/agents/{agent}/a2a`: `POST /message:send`,
//! `POST /message:stream`, `GET /tasks/{id}`, `GET /tasks`, `POST /tasks/{id}:cancel`, and
//! `tasks/{id}:subscribe` by GET or POST (push notification configs
//! are in `push_configs.rs`). Bodies are the A2A 1.0 request and
//! response messages in JSON; a protocol error is a `google.rpc.Status` body with the status of
//! its A2A error.

use lambda_http::http::StatusCode;
use lambda_http::{Request, RequestExt};
use serde_json::{json, Map, Value};

use std::sync::Arc;

use super::stream::Framing;
use super::{a2a_response, body_bytes, check_content_type, rest_media_type, A2aCall, Failure};
use crate::a2a::{A2aError, A2aErrorKind};
use crate::app::App;
use crate::error::ApiError;
use crate::http::reply::{buffered, Reply};
use crate::http::{path_param, HandlerResult};

/// Query parameters whose values are numbers, and those that are booleans; the rest are text.
const NUMBER_PARAMETERS: [&str; 2] = ["historyLength", "pageSize"];
const BOOLEAN_PARAMETERS: [&str; 1] = ["includeArtifacts"];

/// Renders one call's outcome: the result as the body of a `200`, a protocol error as its
/// status body, a transport error as the gateway's own.
pub(super) fn render(request: &Request, outcome: Result<Value, Failure>) -> HandlerResult {
    let media_type = rest_media_type(request);
    match outcome {
        Ok(result) => Ok(a2a_response(StatusCode::OK, &result, media_type)),
        Err(Failure::Protocol(error)) => {
            let status = StatusCode::from_u16(error.http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            Ok(a2a_response(status, &error.status_body(), media_type))
        }
        Err(Failure::Transport(error)) => Err(error),
    }
}

/// The request body as an object (`{}` when empty).
pub(super) fn body_object(request: &Request) -> Result<Value, A2aError> {
    let bytes = body_bytes(request);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    check_content_type(request)?;
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value @ Value::Object(_)) => crate::a2a::names::with_json_names(value),
        Ok(_) => Err(A2aError::invalid_params("the body must be a JSON object")),
        Err(error) => Err(A2aError::new(
            A2aErrorKind::JsonParse,
            format!("the body is not JSON: {error}"),
        )),
    }
}

/// The query string as the request message it stands for: numbers and booleans typed.
pub(super) fn query_object(request: &Request) -> Result<Value, A2aError> {
    let mut params = Map::new();
    let query = request.query_string_parameters();
    for (name, value) in query.iter() {
        let name = crate::a2a::names::json_name(name);
        let name = name.as_str();
        let typed = if NUMBER_PARAMETERS.contains(&name) {
            value
                .parse::<u64>()
                .map(Value::from)
                .map_err(|_| A2aError::invalid_params(format!("{name} must be a whole number")))?
        } else if BOOLEAN_PARAMETERS.contains(&name) {
            match value {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(A2aError::invalid_params(format!(
                        "{name} must be true or false"
                    )))
                }
            }
        } else {
            Value::String(value.to_owned())
        };
        params.insert(name.to_owned(), typed);
    }
    Ok(Value::Object(params))
}

/// `POST /v1/agents/{agent}/a2a/message:send`.
pub async fn send_message(app: &App, request: Request) -> HandlerResult {
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let params = body_object(&request)?;
        Box::pin(call.send_message(&params)).await
    };
    render(&request, outcome.await)
}

/// `GET /v1/agents/{agent}/a2a/tasks/{task}`: `GetTask`, or `SubscribeToTask` when the segment
/// is `{id}:subscribe`.
pub async fn get_task(app: &Arc<App>, request: Request) -> Result<Reply, ApiError> {
    let segment = path_param(&request, "task")?;
    if let Some((task_id, "subscribe")) = segment.rsplit_once(':') {
        return subscribe(app, &request, task_id).await;
    }
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let mut params = query_object(&request)?;
        params["id"] = Value::String(segment);
        Box::pin(call.get_task(&params)).await
    };
    render(&request, outcome.await).map(buffered)
}

/// `POST /v1/agents/{agent}/a2a/message:stream`: `SendStreamingMessage`.
pub async fn stream_message(app: &Arc<App>, request: Request) -> Result<Reply, ApiError> {
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let params = body_object(&request)?;
        Box::pin(call.stream_message(app, &params, Framing::HttpJson)).await
    };
    render_stream(&request, outcome.await)
}

/// `tasks/{id}:subscribe` (GET or POST): `SubscribeToTask`. It reads no query parameter, but
/// those the route documents are held to their types as on `GetTask` (a `historyLength` that is
/// no number is refused, not ignored).
async fn subscribe(app: &Arc<App>, request: &Request, task_id: &str) -> Result<Reply, ApiError> {
    let outcome = async {
        let call = A2aCall::read(app, request).await?;
        query_object(request)?;
        let params = json!({ "id": task_id });
        Box::pin(call.subscribe(app, &params, Framing::HttpJson)).await
    };
    render_stream(request, outcome.await)
}

/// A stream, or the error that prevented it, rendered as [`render`] does.
fn render_stream(request: &Request, outcome: Result<Reply, Failure>) -> Result<Reply, ApiError> {
    match outcome {
        Ok(reply) => Ok(reply),
        Err(failure) => render(request, Err(failure)).map(buffered),
    }
}

/// `GET /v1/agents/{agent}/a2a/tasks`.
pub async fn list_tasks(app: &App, request: Request) -> HandlerResult {
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        let params = query_object(&request)?;
        Box::pin(call.list_tasks(&params)).await
    };
    render(&request, outcome.await)
}

/// `POST /v1/agents/{agent}/a2a/tasks/{task}`, where the segment is `{id}:cancel` or
/// `{id}:subscribe`.
pub async fn task_action(app: &Arc<App>, request: Request) -> Result<Reply, ApiError> {
    let segment = path_param(&request, "task")?;
    if let Some((task_id, "subscribe")) = segment.rsplit_once(':') {
        return subscribe(app, &request, task_id).await;
    }
    let outcome = async {
        let call = A2aCall::read(app, &request).await?;
        match segment.rsplit_once(':') {
            Some((task_id, "cancel")) => {
                Box::pin(call.cancel_task(&json!({ "id": task_id }))).await
            }
            _ => Err(A2aError::new(
                A2aErrorKind::MethodNotFound,
                format!("no method for POST tasks/{segment}"),
            )
            .into()),
        }
    };
    render(&request, outcome.await).map(buffered)
}
