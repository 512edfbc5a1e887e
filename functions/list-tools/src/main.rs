//! Lambda function for `GET /v1/agents/{agent}/tools`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::ListTools).await
}
