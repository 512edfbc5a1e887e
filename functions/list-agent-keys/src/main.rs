//! Lambda function for `GET /v1/agents/{agent}/keys`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::ListAgentKeys).await
}
