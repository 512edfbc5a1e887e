//! Lambda function for `POST /v1/signing-keys/rotate`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::RotateSigningKey).await
}
