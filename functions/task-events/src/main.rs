//! Lambda function for `GET /v1/agents/{agent}/tasks/{task_id}/events`, streamed.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::TaskEvents).await
}
