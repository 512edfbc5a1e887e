//! Lambda function for `POST /v1/agents/me/tasks/{task_id}/progress`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::ReportTaskProgress).await
}
