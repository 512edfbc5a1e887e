//! Lambda function for `DELETE /v1/members/{member_id}/keys/{key_id}`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::RevokeMemberKey).await
}
