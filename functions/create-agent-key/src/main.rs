//! Lambda function for `POST /v1/agents/{agent}/keys`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::CreateAgentKey).await
}
