//! The JSON-RPC binding: `POST /v1/agents/{agent}/a2a/jsonrpc`.

use lambda_http::http::StatusCode;
use lambda_http::Request;
use serde_json::Value;

use std::sync::Arc;

use super::stream::Framing;
use super::{a2a_response, body_bytes, check_content_type, A2aCall, Failure, JSON_RPC_MEDIA_TYPE};
use crate::a2a::jsonrpc::{self, Method, RpcRequest};
use crate::app::App;
use crate::error::ApiError;
use crate::http::reply::{buffered, Reply};

/// `POST /v1/agents/{agent}/a2a/jsonrpc`: the JSON-RPC binding. A protocol error is a JSON-RPC
/// error object in a `200`; only the transport's own refusals use other statuses. The streaming
/// methods answer with an event stream of JSON-RPC responses.
pub async fn jsonrpc(app: &Arc<App>, request: Request) -> Result<Reply, ApiError> {
    let call = match A2aCall::read(app, &request).await {
        Ok(call) => call,
        Err(Failure::Transport(error)) => return Err(error),
        Err(Failure::Protocol(error)) => {
            let body = jsonrpc::failure(&rpc_id(&request), &error);
            return Ok(buffered(a2a_response(
                StatusCode::OK,
                &body,
                JSON_RPC_MEDIA_TYPE,
            )));
        }
    };
    if let Err(error) = check_content_type(&request) {
        let body = jsonrpc::failure(&rpc_id(&request), &error);
        return Ok(buffered(a2a_response(
            StatusCode::OK,
            &body,
            JSON_RPC_MEDIA_TYPE,
        )));
    }
    let RpcRequest { id, method, params } = match jsonrpc::parse_request(body_bytes(&request)) {
        Ok(rpc) => rpc,
        Err((id, error)) => {
            return Ok(buffered(a2a_response(
                StatusCode::OK,
                &jsonrpc::failure(&id, &error),
                JSON_RPC_MEDIA_TYPE,
            )))
        }
    };
    let framing = Framing::JsonRpc(id.clone());
    let outcome = match method {
        Method::SendStreamingMessage => Box::pin(call.stream_message(app, &params, framing)).await,
        Method::SubscribeToTask => Box::pin(call.subscribe(app, &params, framing)).await,
        method => call.call(method, &params).await.map(|result| {
            let body = jsonrpc::success(&id, result);
            buffered(a2a_response(StatusCode::OK, &body, JSON_RPC_MEDIA_TYPE))
        }),
    };
    match outcome {
        Ok(reply) => Ok(reply),
        Err(Failure::Protocol(error)) => Ok(buffered(a2a_response(
            StatusCode::OK,
            &jsonrpc::failure(&id, &error),
            JSON_RPC_MEDIA_TYPE,
        ))),
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
