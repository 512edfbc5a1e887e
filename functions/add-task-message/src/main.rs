//! Lambda function for `POST /v1/agents/{agent}/tasks/{task_id}/messages`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::AddTaskMessage).await
}
