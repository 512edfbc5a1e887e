//! The one error type of the HTTP edge, rendered once into the documented bodies.
//!
//! Handlers return `Result<Response, ApiError>`; [`ApiError::into_response`] turns every modelled
//! failure into a response, so no modelled outcome ever becomes a Lambda invocation error. A 500
//! never carries internal detail: its cause is logged, not sent.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Response};
use serde_json::{json, Value};

use crate::bodies::BodyError;
use crate::domain::{Invalid, TaskState};
use crate::search::SearchError;
use crate::signing::SigningError;
use crate::store::StoreError;
use crate::vault::VaultError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("unauthenticated")]
    Unauthenticated,
    /// An `Authorization` header not in the one form taken: `Bearer <credential>`.
    #[error("unauthenticated: the Authorization header is not `Bearer <credential>`")]
    CredentialForm,
    /// A bearer token that was not taken; why is logged, never told.
    #[error("unauthenticated: invalid token")]
    InvalidToken,
    /// Every reason a caller may be refused on the A2A edge; the reason goes to the audit log.
    #[error("not permitted")]
    NotPermitted,
    /// A management action this principal may not take.
    #[error("forbidden: {0}")]
    Forbidden(String),
    #[error("task not found")]
    TaskNotFound,
    #[error("not found: {0}")]
    NotFound(String),
    #[error("task not working: {0:?}")]
    TaskNotWorking(TaskState),
    #[error("conflict: {0}")]
    Conflict(String),
    /// The resource is busy with what was asked for (a delivery's attempt under way): the same
    /// request may succeed in a moment (`Retry-After`).
    #[error("in progress: {0}")]
    InProgress(String),
    #[error("limit reached: {0}")]
    LimitReached(String),
    #[error("a pull result said working")]
    PullResultWorking,
    #[error("too large: {0}")]
    TooLarge(String),
    /// A part of a media type the agent it goes to does not accept.
    #[error("unsupported media type: {0}")]
    UnsupportedMediaType(String),
    /// The agent holds as many long polls as it may at once.
    #[error("too many requests: {0}")]
    TooManyRequests(String),
    /// A binding's contract: its rate, concurrency or daily quota is reached; the caller may
    /// try again after `retry_after_seconds`.
    #[error("quota exceeded: {message}")]
    QuotaExceeded {
        message: String,
        retry_after_seconds: u64,
    },
    #[error("backing service unavailable")]
    Unavailable,
    /// Anything unexpected: its cause is logged (with its chain) where the 500 is rendered and
    /// never sent.
    #[error("internal error: {0}")]
    Internal(#[source] Cause),
}

/// The cause of an internal error.
#[derive(Debug)]
pub struct Cause(pub Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for Cause {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(formatter)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// An error and every cause below it, joined: what a log line needs to lead to the fault.
pub fn cause_chain(error: &dyn std::error::Error) -> String {
    let mut chain = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        chain.push_str(": ");
        chain.push_str(&next.to_string());
        cause = next.source();
    }
    chain
}

impl From<Invalid> for ApiError {
    fn from(invalid: Invalid) -> Self {
        ApiError::InvalidRequest(invalid.0)
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Unavailable(cause) | StoreError::Throttled(cause) => {
                tracing::warn!(cause = %cause, "backing store unavailable");
                ApiError::Unavailable
            }
            StoreError::TooLarge => ApiError::TooLarge(
                "the task would exceed the stored size limit of one task (about 350 KB)".into(),
            ),
            error @ (StoreError::Corrupt(_) | StoreError::Rejected(_)) => ApiError::internal(error),
        }
    }
}

impl From<SearchError> for ApiError {
    fn from(error: SearchError) -> Self {
        match error {
            SearchError::Store(error) => error.into(),
        }
    }
}

impl From<BodyError> for ApiError {
    fn from(error: BodyError) -> Self {
        match error {
            BodyError::Unavailable(cause) => {
                tracing::warn!(cause = %cause, "body store unavailable");
                ApiError::Unavailable
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<VaultError> for ApiError {
    fn from(error: VaultError) -> Self {
        match error {
            VaultError::Unavailable(cause) => {
                tracing::warn!(cause = %cause, "KMS unavailable");
                ApiError::Unavailable
            }
            other => ApiError::internal(other),
        }
    }
}

impl From<SigningError> for ApiError {
    fn from(error: SigningError) -> Self {
        match error {
            SigningError::Store(error) => error.into(),
            SigningError::Vault(error) => error.into(),
            SigningError::Contended => ApiError::Unavailable,
            SigningError::Changed => ApiError::Conflict(SigningError::Changed.to_string()),
            error @ (SigningError::NoRandomness(_) | SigningError::Inconsistent(_)) => {
                ApiError::internal(error)
            }
        }
    }
}

impl ApiError {
    /// An internal error caused by `cause` (an error, or a text saying what went wrong).
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> ApiError {
        ApiError::Internal(Cause(cause.into()))
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::InvalidRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthenticated | ApiError::CredentialForm | ApiError::InvalidToken => {
                StatusCode::UNAUTHORIZED
            }
            ApiError::NotPermitted | ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::TaskNotFound | ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::TaskNotWorking(_)
            | ApiError::Conflict(_)
            | ApiError::InProgress(_)
            | ApiError::LimitReached(_) => StatusCode::CONFLICT,
            ApiError::PullResultWorking => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyRequests(_) | ApiError::QuotaExceeded { .. } => {
                StatusCode::TOO_MANY_REQUESTS
            }
            ApiError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The machine-readable code of the body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::InvalidRequest(_) => "invalid_request",
            ApiError::Unauthenticated | ApiError::CredentialForm | ApiError::InvalidToken => {
                "unauthenticated"
            }
            ApiError::NotPermitted => "not_permitted",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::TaskNotFound | ApiError::NotFound(_) => "not_found",
            ApiError::TaskNotWorking(_) => "task_not_working",
            ApiError::Conflict(_) => "conflict",
            ApiError::InProgress(_) => "in_progress",
            ApiError::LimitReached(_) => "limit_reached",
            ApiError::PullResultWorking => "invalid_result",
            ApiError::TooLarge(_) => "too_large",
            ApiError::UnsupportedMediaType(_) => "unsupported_media_type",
            ApiError::TooManyRequests(_) => "too_many_requests",
            ApiError::QuotaExceeded { .. } => "quota_exceeded",
            ApiError::Unavailable => "unavailable",
            ApiError::Internal(_) => "internal",
        }
    }

    /// The documented body. The 403, 404, 409 and 422 of the A2A edge are the exact bodies the
    /// public docs print; everything else is `{"detail": {"code", "message"}}`.
    pub fn body(&self) -> Value {
        let detail = |message: &str| json!({"detail": {"code": self.code(), "message": message}});
        match self {
            ApiError::NotPermitted => detail("not permitted to call that agent"),
            ApiError::TaskNotFound => json!({"detail": "task not found"}),
            ApiError::TaskNotWorking(state) => {
                json!({"detail": {"code": "task_not_working", "state": state}})
            }
            ApiError::PullResultWorking => {
                json!({"detail": "a pull result must be completed, failed, or input_required"})
            }
            ApiError::InvalidRequest(message)
            | ApiError::Forbidden(message)
            | ApiError::NotFound(message)
            | ApiError::Conflict(message)
            | ApiError::InProgress(message)
            | ApiError::LimitReached(message)
            | ApiError::TooLarge(message)
            | ApiError::UnsupportedMediaType(message)
            | ApiError::TooManyRequests(message)
            | ApiError::QuotaExceeded { message, .. } => detail(message),
            ApiError::Unauthenticated => {
                detail("a valid API key is required: Authorization: Bearer <key>")
            }
            ApiError::CredentialForm => {
                detail("the Authorization header must be exactly: Bearer <credential>")
            }
            ApiError::InvalidToken => detail("invalid token"),
            ApiError::Unavailable => {
                detail("a backing service is unavailable; nothing was changed, retry later")
            }
            ApiError::Internal(_) => detail("internal error"),
        }
    }

    pub fn into_response(self) -> Response<Body> {
        self.into_response_for(RequestRef::default())
    }

    /// Whether the body is one the public docs print word for word (the A2A edge's 403, 404,
    /// 409 and 422), which nothing is added to.
    fn is_exact_body(&self) -> bool {
        matches!(
            self,
            ApiError::NotPermitted
                | ApiError::TaskNotFound
                | ApiError::TaskNotWorking(_)
                | ApiError::PullResultWorking
        )
    }

    /// The response, with the request's ids (`request_id`, and the X-Ray `trace_id` of a traced
    /// invocation) in `detail` of every body but the exact ones the public docs print: the ids a
    /// user reports lead to the logs and the trace of that request. The exact bodies' request id
    /// is in the `X-Request-Id` header every response carries.
    pub fn into_response_for(self, ids: RequestRef<'_>) -> Response<Body> {
        let mut body = self.body();
        if let (false, Some(detail)) = (
            self.is_exact_body(),
            body.get_mut("detail").and_then(Value::as_object_mut),
        ) {
            if let Some(id) = ids.request_id {
                detail.insert("request_id".into(), Value::from(id));
            }
            if let Some(trace) = ids.trace_id.and_then(trace_root) {
                detail.insert("trace_id".into(), Value::from(trace));
            }
        }
        let mut response = json_response(self.status(), &body);
        if let Some(seconds) = self.retry_after_seconds() {
            response.headers_mut().insert(
                lambda_http::http::header::RETRY_AFTER,
                lambda_http::http::HeaderValue::from(seconds),
            );
        }
        response
    }

    /// The `Retry-After` of an answer that asks the caller to come back later.
    pub fn retry_after_seconds(&self) -> Option<u64> {
        match self {
            ApiError::Unavailable | ApiError::TooManyRequests(_) | ApiError::InProgress(_) => {
                Some(1)
            }
            ApiError::QuotaExceeded {
                retry_after_seconds,
                ..
            } => Some(*retry_after_seconds),
            _ => None,
        }
    }
}

/// The ids of the request a response answers, where known.
#[derive(Debug, Default, Clone, Copy)]
pub struct RequestRef<'a> {
    pub request_id: Option<&'a str>,
    /// The invocation's X-Ray trace header (`Root=1-…;Parent=…;Sampled=…`) or a bare trace id.
    pub trace_id: Option<&'a str>,
}

/// The trace id (`1-…-…`) of an X-Ray trace header, the id the X-Ray console and the API's
/// access log show.
fn trace_root(header: &str) -> Option<&str> {
    let root = header
        .split(';')
        .find_map(|field| field.trim().strip_prefix("Root="))
        .unwrap_or(header)
        .trim();
    (!root.is_empty()).then_some(root)
}

/// A JSON response with the right content type.
pub fn json_response(status: StatusCode, body: &Value) -> Response<Body> {
    let mut response = Response::new(Body::Text(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        lambda_http::http::header::CONTENT_TYPE,
        lambda_http::http::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body_of(response: Response<Body>) -> Value {
        match response.body() {
            Body::Text(text) => serde_json::from_str(text).unwrap(),
            other => panic!("not a text body: {other:?}"),
        }
    }

    const IDS: RequestRef<'static> = RequestRef {
        request_id: Some("req-1"),
        trace_id: Some(
            "Root=1-67890abc-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1",
        ),
    };

    #[test]
    fn a_conflict_that_passes_says_so_with_its_own_code_and_a_retry_after() {
        let busy = ApiError::InProgress("an attempt is under way".into());
        assert_eq!(busy.status(), StatusCode::CONFLICT);
        let response = busy.into_response();
        assert_eq!(response.headers()["retry-after"], "1");
        assert_eq!(body_of(response)["detail"]["code"], "in_progress");
        let response = ApiError::Conflict("the task is completed".into()).into_response();
        assert!(response.headers().get("retry-after").is_none());
        assert_eq!(body_of(response)["detail"]["code"], "conflict");
    }

    #[test]
    fn an_error_body_carries_the_request_and_trace_ids_a_user_reports() {
        for error in [
            ApiError::InvalidRequest("wait must be 0-30".into()),
            ApiError::Unauthenticated,
            ApiError::Conflict("taken".into()),
            ApiError::Unavailable,
            ApiError::internal("boom"),
        ] {
            let code = error.code();
            let body = body_of(error.into_response_for(IDS));
            assert_eq!(body["detail"]["code"], code);
            assert_eq!(body["detail"]["request_id"], "req-1", "{body}");
            assert_eq!(
                body["detail"]["trace_id"], "1-67890abc-0123456789abcdef01234567",
                "{body}"
            );
        }
        let untraced = RequestRef {
            request_id: Some("req-2"),
            trace_id: None,
        };
        let body = body_of(ApiError::Unauthenticated.into_response_for(untraced));
        assert_eq!(body["detail"]["request_id"], "req-2");
        assert!(body["detail"].get("trace_id").is_none(), "{body}");
    }

    #[test]
    fn the_exact_documented_bodies_get_no_ids() {
        for error in [
            ApiError::NotPermitted,
            ApiError::TaskNotFound,
            ApiError::TaskNotWorking(TaskState::Canceled),
            ApiError::PullResultWorking,
        ] {
            let exact = error.body();
            assert_eq!(body_of(error.into_response_for(IDS)), exact);
        }
    }

    #[test]
    fn the_a2a_refusals_render_the_exact_documented_bodies() {
        assert_eq!(
            ApiError::NotPermitted.body().to_string(),
            r#"{"detail":{"code":"not_permitted","message":"not permitted to call that agent"}}"#
        );
        assert_eq!(
            ApiError::TaskNotFound.body().to_string(),
            r#"{"detail":"task not found"}"#
        );
        assert_eq!(
            ApiError::TaskNotWorking(TaskState::Canceled)
                .body()
                .to_string(),
            r#"{"detail":{"code":"task_not_working","state":"canceled"}}"#
        );
        assert_eq!(
            ApiError::PullResultWorking.body().to_string(),
            r#"{"detail":"a pull result must be completed, failed, or input_required"}"#
        );
        assert_eq!(
            ApiError::PullResultWorking.status(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }

    #[test]
    fn an_internal_error_says_nothing_about_its_cause() {
        let body = ApiError::internal("the table said: secret detail")
            .body()
            .to_string();
        assert_eq!(
            body,
            r#"{"detail":{"code":"internal","message":"internal error"}}"#
        );
    }
}
