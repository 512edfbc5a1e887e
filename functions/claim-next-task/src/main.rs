//! Lambda function for `GET /v1/agents/me/tasks/next`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::ClaimNextTask).await
}
