//! The gateway binary: every Lambda function of the deployment (each route, the push worker, the
//! sweeper) runs this program, and its `FORGEBENCH_ROUTE` names which job it serves.
// Every job's future nests inside `main`'s, deeper than the compiler's default of 128 levels
// lets it lay that future out (since the push worker's jobs are cleared before their lease).
#![recursion_limit = "256"]

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    forgebench::runtime::serve_configured_function().await
}
