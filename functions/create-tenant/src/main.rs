//! Lambda function for `POST /v1/tenants`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::CreateTenant).await
}
