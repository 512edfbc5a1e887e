//! Typed errors: one variant per documented refusal, each carrying the gateway's body as it came.
//!
//! Every refusal has its status ([`Error::status`]), its `detail.code` ([`Error::code`]) and the
//! gateway's request id ([`Error::request_id`]); docs/sdks.md lists the variant of each status
//! beside the Python and TypeScript class of the same status.

use std::time::Duration;

use serde_json::Value;

/// A refusal's status and body, as the gateway sent them.
///
/// The body is one of the documented shapes: `{"detail": {"code", "message", …}}`, or one of the
/// exact bodies the docs print (`{"detail": "task not found"}`, `{"detail": {"code":
/// "task_not_working", "state": "canceled"}}`, …). A body that is not JSON is kept as a string.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBody {
    pub status: u16,
    pub body: Value,
    /// The response's `X-Request-Id` header (every answer of the gateway carries it).
    pub header_request_id: Option<String>,
}

impl ErrorBody {
    /// The body's `detail`: a string (`"task not found"`) or an object with a `code`.
    pub fn detail(&self) -> Option<&Value> {
        self.body.get("detail")
    }

    /// `detail.code` when the body has one (`not_permitted`, `task_not_working`, …).
    pub fn code(&self) -> Option<&str> {
        self.detail()?.get("code")?.as_str()
    }

    /// The gateway's id of the request, the id its operators search the logs by: the body's
    /// `detail.request_id`, else the response's `X-Request-Id` header (the four exact bodies the
    /// docs print, such as `task not found`, carry it only there).
    pub fn request_id(&self) -> Option<&str> {
        self.detail()
            .and_then(|detail| detail.get("request_id"))
            .and_then(Value::as_str)
            .or(self.header_request_id.as_deref())
    }

    /// For `409 task_not_working`, the state the task is in now.
    pub fn state(&self) -> Option<&str> {
        self.detail()?.get("state")?.as_str()
    }

    /// A readable reason: `detail.message`, a string `detail`, `detail.code`, or the raw body.
    pub fn message(&self) -> String {
        match self.detail() {
            Some(Value::String(text)) => text.clone(),
            Some(detail) => detail
                .get("message")
                .or_else(|| detail.get("code"))
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| detail.to_string()),
            None => match &self.body {
                Value::String(text) => text.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            },
        }
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let message = self.message();
        if message.is_empty() {
            write!(f, "{}", self.status)
        } else {
            write!(f, "{} {message}", self.status)
        }
    }
}

/// Every error the SDK returns.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// 400 `invalid_request`: the request was malformed.
    #[error("bad request: {0}")]
    BadRequest(ErrorBody),
    /// 401 `unauthenticated`: the key is missing, unknown or revoked, or the token was refused
    /// (`invalid token`; a client with a token provider asked it for a new token first).
    #[error("unauthenticated: {0}")]
    Unauthenticated(ErrorBody),
    /// 403 `not_permitted` (no live binding to that callee, for every reason) or `forbidden`.
    #[error("permission denied: {0}")]
    PermissionDenied(ErrorBody),
    /// 404: `{"detail": "task not found"}` for tasks, `not_found` elsewhere.
    #[error("not found: {0}")]
    NotFound(ErrorBody),
    /// 409: `task_not_working` (see [`ErrorBody::state`]), `limit_reached`, `conflict`, or
    /// `in_progress` (the same request may succeed in a moment: `Retry-After`).
    #[error("conflict: {0}")]
    Conflict(ErrorBody),
    /// 413 `too_large`: the write would take the task past its content bound.
    #[error("too large: {0}")]
    TooLarge(ErrorBody),
    /// 422: a pull result said `working`. (`UnprocessableEntityError` in Python and
    /// TypeScript.)
    #[error("unprocessable: {0}")]
    Unprocessable(ErrorBody),
    /// 429: too many waiting requests at once for this key.
    #[error("rate limited: {body}")]
    RateLimited {
        body: ErrorBody,
        /// The `Retry-After` header (whole or fractional seconds), when the answer had one.
        retry_after: Option<Duration>,
    },
    /// 5xx: 503 `unavailable` (nothing was written) or another server failure.
    #[error("server error: {0}")]
    Server(ErrorBody),
    /// Any other status that is not a success.
    #[error("unexpected status: {0}")]
    Status(ErrorBody),
    /// The gateway could not be reached, or the connection broke before an answer came.
    #[error("could not reach the gateway: {0}")]
    Connection(#[source] reqwest::Error),
    /// A success whose body is not what the route documents.
    #[error("unexpected response body: {0}")]
    Decode(String),
    /// An argument the SDK refuses before sending anything (an empty callee, no message parts).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// The client's [`crate::TokenProvider`] gave no token (its error, or an empty token);
    /// nothing was sent.
    #[error("the token provider gave no token: {0}")]
    TokenProvider(#[source] crate::token::TokenError),
}

impl Error {
    /// The typed error for a non-success `status` with `body` (and the response's
    /// `X-Request-Id`, when it is known).
    pub(crate) fn from_status(
        status: u16,
        body: Value,
        retry_after: Option<Duration>,
        header_request_id: Option<String>,
    ) -> Error {
        let body = ErrorBody {
            status,
            body,
            header_request_id,
        };
        match status {
            400 => Error::BadRequest(body),
            401 => Error::Unauthenticated(body),
            403 => Error::PermissionDenied(body),
            404 => Error::NotFound(body),
            409 => Error::Conflict(body),
            413 => Error::TooLarge(body),
            422 => Error::Unprocessable(body),
            429 => Error::RateLimited { body, retry_after },
            500..=599 => Error::Server(body),
            _ => Error::Status(body),
        }
    }

    /// The refusal's status and body, for every error the gateway answered.
    pub fn body(&self) -> Option<&ErrorBody> {
        match self {
            Error::BadRequest(body)
            | Error::Unauthenticated(body)
            | Error::PermissionDenied(body)
            | Error::NotFound(body)
            | Error::Conflict(body)
            | Error::TooLarge(body)
            | Error::Unprocessable(body)
            | Error::RateLimited { body, .. }
            | Error::Server(body)
            | Error::Status(body) => Some(body),
            Error::Connection(_)
            | Error::Decode(_)
            | Error::InvalidArgument(_)
            | Error::TokenProvider(_) => None,
        }
    }

    /// The HTTP status of a refusal.
    pub fn status(&self) -> Option<u16> {
        self.body().map(|body| body.status)
    }

    /// `detail.code` of a refusal, when its body has one.
    pub fn code(&self) -> Option<&str> {
        self.body().and_then(ErrorBody::code)
    }

    /// The gateway's request id of a refusal (`detail.request_id`), when its body has one.
    pub fn request_id(&self) -> Option<&str> {
        self.body().and_then(ErrorBody::request_id)
    }

    /// The `Retry-After` of a `429`, when the answer had one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A passing trouble, after which the same request may succeed: the network, 429, 5xx.
    pub fn is_passing(&self) -> bool {
        matches!(
            self,
            Error::Connection(_) | Error::RateLimited { .. } | Error::Server(_)
        )
    }
}

/// The SDK's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_task_not_working_refusal_carries_its_state_and_code() {
        let error = Error::from_status(
            409,
            json!({"detail": {"code": "task_not_working", "state": "canceled"}}),
            None,
            None,
        );
        assert!(matches!(error, Error::Conflict(_)));
        assert_eq!(error.code(), Some("task_not_working"));
        assert_eq!(error.body().and_then(ErrorBody::state), Some("canceled"));
    }

    #[test]
    fn a_string_detail_is_the_message() {
        let error = Error::from_status(404, json!({"detail": "task not found"}), None, None);
        assert!(matches!(error, Error::NotFound(_)));
        assert_eq!(error.code(), None);
        assert_eq!(error.to_string(), "not found: 404 task not found");
    }

    #[test]
    fn a_refusal_carries_the_request_id_of_its_body() {
        let error = Error::from_status(
            403,
            json!({"detail": {"code": "forbidden", "message": "no", "request_id": "req-1"}}),
            None,
            Some("req-3".into()),
        );
        assert_eq!(
            (error.status(), error.code(), error.request_id()),
            (Some(403), Some("forbidden"), Some("req-1"))
        );
        let exact = Error::from_status(404, json!({"detail": "task not found"}), None, None);
        assert_eq!(exact.request_id(), None);
        let with_header = Error::from_status(
            404,
            json!({"detail": "task not found"}),
            None,
            Some("req-2".into()),
        );
        assert_eq!(with_header.request_id(), Some("req-2"));
        // `error` had the header "req-3" too: the body's id comes first.
        assert_eq!(error.request_id(), Some("req-1"), "the body's id first");
    }

    #[test]
    fn only_network_rate_limit_and_server_errors_are_passing() {
        let unavailable = Error::from_status(503, json!({}), None, None);
        let forbidden = Error::from_status(403, json!({}), None, None);
        assert!(unavailable.is_passing());
        assert!(!forbidden.is_passing());
    }
}
