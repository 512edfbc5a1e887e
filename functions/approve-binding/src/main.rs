//! Lambda function for `POST /v1/agents/{agent}/agents/{binding_id}/approve`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::ApproveBinding).await
}
