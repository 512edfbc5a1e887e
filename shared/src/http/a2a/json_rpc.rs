//! The JSON-RPC binding: `POST /v1/agents/{agent}/a2a/jsonrpc`.

use lambda_http::http::StatusCode;
use lambda_http::Request;
use serde_json::Value;

use super::{a2a_response, body_bytes, A2aCall, Failure};
use crate::a2a::jsonrpc::{self, RpcRequest};
use crate::app::App;

/// `POST /v1/agents/{agent}/a2a/jsonrpc`: the JSON-RPC binding. A protocol error is a JSON-RPC
/// error object in a `200`; only the transport's own refusals use other statuses.
pub async fn jsonrpc(app: &App, request: Request) -> crate::http::HandlerResult {
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
