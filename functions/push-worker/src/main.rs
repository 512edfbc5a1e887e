//! Lambda function on the push queue (SQS event source): delivers push tasks to callee endpoints.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_push_worker().await
}
