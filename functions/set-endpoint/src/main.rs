//! Lambda function for `PUT /v1/agents/{agent}/endpoint`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::SetEndpoint).await
}
