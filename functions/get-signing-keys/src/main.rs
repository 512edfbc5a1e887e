//! Lambda function for `GET /v1/billing/export/pubkey`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::GetSigningKeys).await
}
