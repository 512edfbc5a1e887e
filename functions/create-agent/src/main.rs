//! Lambda function for `POST /v1/agents`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::CreateAgent).await
}
