//! The smallest `lambda_http` function: the cold-init and size baseline for the benchmarks.

use lambda_http::{service_fn, Body, Error, Request, Response};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(|_request: Request| async {
        Ok::<_, Error>(Response::new(Body::Text("hello".into())))
    }))
    .await
}
