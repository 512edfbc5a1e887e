//! Lambda function for `PUT /v1/agents/{agent}/tools/{tool}`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::PutTool).await
}
