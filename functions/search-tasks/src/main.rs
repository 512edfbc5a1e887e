//! Lambda function for `GET /v1/tasks`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::SearchTasks).await
}
