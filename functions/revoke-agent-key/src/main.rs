//! Lambda function for `DELETE /v1/agents/{agent}/keys/{key_id}`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::RevokeAgentKey).await
}
