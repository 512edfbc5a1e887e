//! Lambda function for `GET /v1/agents/{agent}/agents`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::ListBindings).await
}
