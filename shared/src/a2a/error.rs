//! The errors of the A2A protocol (1.0), each with its JSON-RPC code and, for the HTTP+JSON
//! binding, its HTTP status, its `google.rpc.Status` code and its `ErrorInfo` reason.

use serde_json::{json, Value};

/// The `ErrorInfo` domain of every A2A error.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// An A2A error: which one, and a message safe to show the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aError {
    pub kind: A2aErrorKind,
    pub message: String,
}

/// The errors A2A 1.0 names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aErrorKind {
    /// The body is not JSON.
    JsonParse,
    /// The body is JSON but not a request of the protocol.
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
    /// No task of that id the caller may see: the same answer whether it exists or not.
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
}

/// How one error travels on each binding.
struct Mapping {
    json_rpc_code: i64,
    http_status: u16,
    rpc_status: &'static str,
    reason: &'static str,
}

impl A2aErrorKind {
    fn mapping(self) -> Mapping {
        use A2aErrorKind::*;
        let (json_rpc_code, http_status, rpc_status, reason) = match self {
            JsonParse => (-32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR"),
            InvalidRequest => (-32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
            MethodNotFound => (-32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND"),
            InvalidParams => (-32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
            Internal => (-32603, 500, "INTERNAL", "INTERNAL_ERROR"),
            TaskNotFound => (-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
            TaskNotCancelable => (-32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
            PushNotificationNotSupported => (
                -32003,
                400,
                "FAILED_PRECONDITION",
                "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ),
            UnsupportedOperation => (-32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
            ContentTypeNotSupported => (
                -32005,
                400,
                "INVALID_ARGUMENT",
                "CONTENT_TYPE_NOT_SUPPORTED",
            ),
            InvalidAgentResponse => (-32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"),
            ExtendedAgentCardNotConfigured => (
                -32007,
                400,
                "FAILED_PRECONDITION",
                "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ),
            ExtensionSupportRequired => (
                -32008,
                400,
                "FAILED_PRECONDITION",
                "EXTENSION_SUPPORT_REQUIRED",
            ),
            VersionNotSupported => (-32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
        };
        Mapping {
            json_rpc_code,
            http_status,
            rpc_status,
            reason,
        }
    }
}

impl A2aError {
    pub fn new(kind: A2aErrorKind, message: impl Into<String>) -> A2aError {
        A2aError {
            kind,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> A2aError {
        A2aError::new(A2aErrorKind::InvalidParams, message)
    }

    pub fn task_not_found() -> A2aError {
        A2aError::new(A2aErrorKind::TaskNotFound, "task not found")
    }

    pub fn unsupported(message: impl Into<String>) -> A2aError {
        A2aError::new(A2aErrorKind::UnsupportedOperation, message)
    }

    /// The JSON-RPC error code.
    pub fn json_rpc_code(&self) -> i64 {
        self.kind.mapping().json_rpc_code
    }

    /// The HTTP status of the error on the HTTP+JSON binding.
    pub fn http_status(&self) -> u16 {
        self.kind.mapping().http_status
    }

    /// The JSON-RPC `error` object: its `data` the same `ErrorInfo` detail the HTTP+JSON
    /// binding carries, so a client reads the error's reason the same way on both.
    pub fn json_rpc_error(&self) -> Value {
        json!({"code": self.json_rpc_code(), "message": self.message, "data": [self.error_info()]})
    }

    /// The HTTP+JSON error body: a `google.rpc.Status` with one `ErrorInfo` detail.
    pub fn status_body(&self) -> Value {
        let mapping = self.kind.mapping();
        json!({
            "error": {
                "code": mapping.http_status,
                "status": mapping.rpc_status,
                "message": self.message,
                "details": [self.error_info()],
            }
        })
    }

    /// The error's `google.rpc.ErrorInfo`, as an `Any`: its A2A reason in the A2A domain.
    fn error_info(&self) -> Value {
        json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.kind.mapping().reason,
            "domain": ERROR_DOMAIN,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_error_has_the_code_status_and_reason_of_a2a_1_0() {
        use A2aErrorKind::*;
        #[rustfmt::skip]
        let table = [
            (JsonParse, -32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR"),
            (InvalidRequest, -32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
            (MethodNotFound, -32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND"),
            (InvalidParams, -32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
            (Internal, -32603, 500, "INTERNAL", "INTERNAL_ERROR"),
            (TaskNotFound, -32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
            (TaskNotCancelable, -32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
            (PushNotificationNotSupported, -32003, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"),
            (UnsupportedOperation, -32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION"),
            (ContentTypeNotSupported, -32005, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"),
            (InvalidAgentResponse, -32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"),
            (ExtendedAgentCardNotConfigured, -32007, 400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
            (ExtensionSupportRequired, -32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED"),
            (VersionNotSupported, -32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"),
        ];
        for (kind, code, status, rpc_status, reason) in table {
            let error = A2aError::new(kind, "why");
            assert_eq!(
                error.json_rpc_error(),
                json!({"code": code, "message": "why", "data": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": reason,
                    "domain": ERROR_DOMAIN,
                }]}),
                "{kind:?}"
            );
            assert_eq!(error.http_status(), status, "{kind:?}");
            let body = error.status_body();
            assert_eq!(body["error"]["code"], status, "{kind:?}");
            assert_eq!(body["error"]["status"], rpc_status, "{kind:?}");
            assert_eq!(body["error"]["message"], "why", "{kind:?}");
            let detail = &body["error"]["details"][0];
            assert_eq!(
                detail["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
                "{kind:?}"
            );
            assert_eq!(detail["reason"], reason, "{kind:?}");
            assert_eq!(detail["domain"], ERROR_DOMAIN, "{kind:?}");
        }
    }
}
