//! Lambda function for `GET /v1/agents/cards`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::ListAgentCards).await
}
