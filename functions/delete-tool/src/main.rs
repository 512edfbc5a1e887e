//! Lambda function for `DELETE /v1/agents/{agent}/tools/{tool}`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::DeleteTool).await
}
