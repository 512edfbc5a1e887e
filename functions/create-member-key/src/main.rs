//! Lambda function for `POST /v1/members/{member_id}/keys`.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::CreateMemberKey).await
}
