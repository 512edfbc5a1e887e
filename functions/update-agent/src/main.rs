//! Lambda function for `PATCH /v1/agents/{agent}`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::UpdateAgent).await
}
