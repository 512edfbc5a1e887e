//! `POST /v1/agents/{callee}/tasks`: the REST edge of opening a task. The request is read here;
//! the task service opens it (`http/service/open.rs`).

use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::Request;
use serde_json::Value;

use super::service::open::{open_task, OpenRequest};
use super::service::tasks::caller_message;
use super::{json_object, only_fields, path_param, wait_param, HandlerResult};
use crate::app::App;
use crate::domain::contract::{self, MAX_SKILL_CHARS};
use crate::domain::{headers, CallId};
use crate::error::{json_response, ApiError};

impl OpenRequest {
    fn read(app: &App, request: &Request) -> Result<OpenRequest, ApiError> {
        let callee_segment = path_param(request, "agent")?;
        let wait = wait_param(request, app)?;
        let body = json_object(request)?;
        only_fields(&body, &["message", "context_id", "skill"])?;
        let message = caller_message(&body, "opening a task")?;
        let context_id = match body.get("context_id") {
            None | Some(Value::Null) => None,
            Some(Value::String(id)) => Some(
                uuid::Uuid::parse_str(id)
                    .map_err(|_| ApiError::InvalidRequest("context_id must be a UUID".into()))?
                    .to_string()
                    .into(),
            ),
            Some(_) => {
                return Err(ApiError::InvalidRequest(
                    "context_id must be a string".into(),
                ))
            }
        };
        Ok(OpenRequest {
            callee_segment,
            wait,
            message,
            context_id,
            context_named: false,
            parent_call_id: parent_call(request)?,
            skill: skill_of(&body)?,
            notify: None,
        })
    }
}

/// The body's `skill`: the callee's skill (its card's `skills[].id`) the open is for.
fn skill_of(body: &serde_json::Map<String, Value>) -> Result<Option<String>, ApiError> {
    contract::named_skill(body.get("skill")).map_err(|contract::NotASkillId| {
        ApiError::InvalidRequest(format!(
            "skill must be a skill id of 1 to {MAX_SKILL_CHARS} characters"
        ))
    })
}

/// `POST /v1/agents/{callee}/tasks?wait=N` with `{"message": Message, "context_id"?}`: `200`
/// with the task and its call id in `X-Call-Id`.
pub async fn open(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let asked = OpenRequest::read(app, &request)?;
    let task = open_task(app, &principal, asked).await?;
    let mut response = json_response(StatusCode::OK, &task.to_json());
    if let Ok(value) = HeaderValue::from_str(&task.call_id) {
        response.headers_mut().insert(headers::CALL_ID, value);
    }
    Ok(response)
}

/// `X-Parent-Call`, when sent: a call id (UUID). Lineage is bookkeeping, never a gate, but a
/// value that cannot be a call id is malformed input.
pub(crate) fn parent_call(request: &Request) -> Result<Option<CallId>, ApiError> {
    match request.headers().get(headers::PARENT_CALL) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .ok()
            .and_then(|text| uuid::Uuid::parse_str(text.trim()).ok())
            .map(|id| Some(CallId::from(id.to_string())))
            .ok_or_else(|| {
                ApiError::InvalidRequest("X-Parent-Call must be a call_id (a UUID)".into())
            }),
    }
}
