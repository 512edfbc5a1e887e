//! Lambda function for `GET /v1/agents/{agent}/.well-known/agent-card.json`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::GetAgentCard).await
}
