//! Scheduled Lambda function: fails claimed tasks whose callee missed its claim deadline.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_sweeper().await
}
