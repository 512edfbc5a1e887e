//! The gateway binary: every Lambda function of the deployment (each route, the push worker, the
//! sweeper) runs this program, and its `FORGEBENCH_ROUTE` names which job it serves.

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_configured_function().await
}
