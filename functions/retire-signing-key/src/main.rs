//! Lambda function for `POST /v1/signing-keys/{kid}/retire`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::RetireSigningKey).await
}
