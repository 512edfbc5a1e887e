//! Lambda function for `POST /v1/agents/{agent}/a2a/message:stream`, streamed.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_route(forgebench::Route::A2aStreamMessage).await
}
