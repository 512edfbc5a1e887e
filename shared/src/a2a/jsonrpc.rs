//! The JSON-RPC 2.0 envelope of the A2A JSON-RPC binding, and the `A2A-Version` rule both
//! bindings share.
//!
//! Every answer travels as HTTP 200, a protocol error included: A2A clients turn a non-2xx status
//! into a transport failure and lose the error object.

use serde_json::{json, Value};

use super::error::{A2aError, A2aErrorKind};

/// The request header that names the protocol version a client speaks.
pub const VERSION_HEADER: &str = "a2a-version";
/// The version this gate serves.
pub const SERVED_VERSION: &str = "1.0";

/// The A2A methods, by their JSON-RPC names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
}

impl Method {
    pub fn parse(name: &str) -> Option<Method> {
        use Method::*;
        Some(match name {
            "SendMessage" => SendMessage,
            "SendStreamingMessage" => SendStreamingMessage,
            "GetTask" => GetTask,
            "ListTasks" => ListTasks,
            "CancelTask" => CancelTask,
            "SubscribeToTask" => SubscribeToTask,
            "CreateTaskPushNotificationConfig" => CreateTaskPushNotificationConfig,
            "GetTaskPushNotificationConfig" => GetTaskPushNotificationConfig,
            "ListTaskPushNotificationConfigs" => ListTaskPushNotificationConfigs,
            "DeleteTaskPushNotificationConfig" => DeleteTaskPushNotificationConfig,
            "GetExtendedAgentCard" => GetExtendedAgentCard,
            _ => return None,
        })
    }
}

/// A JSON-RPC request read from the body.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcRequest {
    /// The request id, echoed in the answer (a string or a number).
    pub id: Value,
    pub method: Method,
    /// The params object (`{}` when none were sent).
    pub params: Value,
}

/// Reads a JSON-RPC request. A failure comes with the id to answer it under (`null` when the
/// request's own id could not be read).
pub fn parse_request(body: &[u8]) -> Result<RpcRequest, (Value, A2aError)> {
    let value: Value = serde_json::from_slice(body).map_err(|error| {
        let error = A2aError::new(A2aErrorKind::JsonParse, format!("not JSON: {error}"));
        (Value::Null, error)
    })?;
    let invalid = |id: Value, why: &str| (id, A2aError::new(A2aErrorKind::InvalidRequest, why));
    let Value::Object(fields) = value else {
        return Err(invalid(Value::Null, "a JSON-RPC request is a JSON object"));
    };
    let id = match fields.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => {
            return Err(invalid(
                Value::Null,
                "id is required: a string or a number (notifications are not served)",
            ))
        }
    };
    if fields.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    let Some(name) = fields.get("method").and_then(Value::as_str) else {
        return Err(invalid(id, "method is required: a string"));
    };
    let Some(method) = Method::parse(name) else {
        let error = A2aError::new(A2aErrorKind::MethodNotFound, format!("no method {name:?}"));
        return Err((id, error));
    };
    let params = match fields.get("params") {
        None | Some(Value::Null) => json!({}),
        Some(params @ Value::Object(_)) => {
            super::names::with_json_names(params.clone()).map_err(|error| (id.clone(), error))?
        }
        Some(_) => {
            let error = A2aError::invalid_params("params must be an object");
            return Err((id, error));
        }
    };
    Ok(RpcRequest { id, method, params })
}

/// A JSON-RPC success answer.
pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error answer.
pub fn failure(id: &Value, error: &A2aError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.json_rpc_error()})
}

/// Checks the `A2A-Version` header's value: `1.0` (any patch) is served; a missing or empty
/// header means 0.3, which is not. Served exactly as the API document's pattern says,
/// `^1(\.0+(\.[0-9]+)*)?$` (around white space the header's transport drops): `1`, `1.0`,
/// `1.00`, `1.0.3`.
pub fn check_version(header: Option<&str>) -> Result<(), A2aError> {
    let version = header.map(str::trim).filter(|text| !text.is_empty());
    let Some(version) = version else {
        return Err(A2aError::new(
            A2aErrorKind::VersionNotSupported,
            "A2A-Version is missing, which means 0.3; this gate serves 1.0",
        ));
    };
    let digits = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    let mut numbers = version.split('.');
    let major = numbers.next() == Some("1");
    let minor = numbers
        .next()
        .is_none_or(|minor| digits(minor) && minor.bytes().all(|b| b == b'0'));
    if major && minor && numbers.all(digits) {
        return Ok(());
    }
    Err(A2aError::new(
        A2aErrorKind::VersionNotSupported,
        format!("A2A-Version {version:?} is not served; this gate serves 1.0"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_read_with_its_id_method_and_params() {
        let body = br#"{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t"}}"#;
        let request = parse_request(body).unwrap();
        assert_eq!(request.id, json!(7));
        assert_eq!(request.method, Method::GetTask);
        assert_eq!(request.params, json!({"id": "t"}));
        let body = br#"{"jsonrpc": "2.0", "id": "a", "method": "ListTasks"}"#;
        assert_eq!(parse_request(body).unwrap().params, json!({}));
    }

    #[test]
    fn malformed_requests_get_their_json_rpc_error_under_the_id_that_could_be_read() {
        use A2aErrorKind::*;
        #[rustfmt::skip]
        let table: [(&[u8], Value, A2aErrorKind); 8] = [
            (b"{not json", Value::Null, JsonParse),
            (b"[1]", Value::Null, InvalidRequest),
            (br#"{"jsonrpc": "2.0", "method": "GetTask"}"#, Value::Null, InvalidRequest),
            (br#"{"jsonrpc": "2.0", "id": {}, "method": "GetTask"}"#, Value::Null, InvalidRequest),
            (br#"{"jsonrpc": "1.0", "id": 1, "method": "GetTask"}"#, json!(1), InvalidRequest),
            (br#"{"jsonrpc": "2.0", "id": 2, "method": 5}"#, json!(2), InvalidRequest),
            (br#"{"jsonrpc": "2.0", "id": 3, "method": "message/send"}"#, json!(3), MethodNotFound),
            (br#"{"jsonrpc": "2.0", "id": "x", "method": "GetTask", "params": [1]}"#, json!("x"), InvalidParams),
        ];
        for (body, id, kind) in table {
            let (got_id, error) = parse_request(body).unwrap_err();
            assert_eq!(
                (got_id, error.kind),
                (id, kind),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn answers_carry_the_request_id() {
        assert_eq!(
            success(&json!(1), json!({"task": {}})),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"task": {}}})
        );
        let error = A2aError::task_not_found();
        assert_eq!(
            failure(&json!("a"), &error),
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32001, "message": "task not found",
                   "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                             "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]}})
        );
    }

    #[test]
    fn version_1_0_is_served_and_anything_else_is_version_not_supported() {
        for served in [
            "1.0",
            "1.0.1",
            " 1.0 ",
            "1",
            "1.00",
            "1.0.0.7",
            "1.0.99999999999",
        ] {
            assert_eq!(check_version(Some(served)), Ok(()), "{served:?}");
        }
        for refused in [
            None,
            Some(""),
            Some("0.3"),
            Some("1.1"),
            Some("2.0"),
            Some("1.0.x"),
            Some("v1"),
            Some("1."),
            Some("1.0."),
            Some("1.+0"),
            Some("1.0.+1"),
            Some("01.0"),
        ] {
            let error = check_version(refused).unwrap_err();
            assert_eq!(error.kind, A2aErrorKind::VersionNotSupported, "{refused:?}");
        }
    }
}
