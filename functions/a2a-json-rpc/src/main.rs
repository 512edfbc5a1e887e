//! Lambda function for `POST /v1/agents/{agent}/a2a/jsonrpc`: A2A 1.0 over JSON-RPC.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::A2aJsonRpc).await
}
