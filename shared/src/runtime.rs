//! What every function's `main` calls: structured logs, configuration, clients, the route.

use std::sync::Arc;

use lambda_http::{service_fn, Error, Request};

use crate::app::App;
use crate::http::Route;

/// JSON logs with the level from `RUST_LOG` (default `info`).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(true)
        .try_init();
}

/// Serves one route as a Lambda function behind API Gateway.
pub async fn serve_route(route: Route) -> Result<(), Error> {
    init_tracing();
    let app = Arc::new(App::from_env().await?);
    lambda_http::run(service_fn(move |request: Request| {
        let app = Arc::clone(&app);
        async move { Ok::<_, std::convert::Infallible>(route.handle(&app, request).await) }
    }))
    .await
}

/// Runs the claim-deadline sweeper as a scheduled Lambda function.
pub async fn serve_sweeper() -> Result<(), Error> {
    init_tracing();
    let app = Arc::new(App::from_env().await?);
    lambda_http::lambda_runtime::run(service_fn(
        move |_event: lambda_http::lambda_runtime::LambdaEvent<serde_json::Value>| {
            let app = Arc::clone(&app);
            async move {
                let report = crate::sweeper::sweep(&app.store, &app.queue).await;
                Ok::<_, Error>(serde_json::to_value(report)?)
            }
        },
    ))
    .await
}

/// Runs the push worker as a Lambda function on the push queue's event source, reporting
/// partial batch failures: only the messages to retry stay on the queue.
pub async fn serve_push_worker() -> Result<(), Error> {
    use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
    init_tracing();
    let app = App::from_env().await?;
    let worker = Arc::new(app.worker());
    lambda_http::lambda_runtime::run(service_fn(
        move |event: lambda_http::lambda_runtime::LambdaEvent<SqsEvent>| {
            let worker = Arc::clone(&worker);
            async move {
                let jobs: Vec<crate::push::Job> = event
                    .payload
                    .records
                    .into_iter()
                    .filter_map(|record| {
                        Some(crate::push::Job {
                            message_id: record.message_id?,
                            receipt_handle: record.receipt_handle.unwrap_or_default(),
                            body: record.body.unwrap_or_default(),
                        })
                    })
                    .collect();
                let mut response = SqsBatchResponse::default();
                for message_id in worker.handle_batch(&jobs).await {
                    let mut failure = BatchItemFailure::default();
                    failure.item_identifier = message_id;
                    response.batch_item_failures.push(failure);
                }
                Ok::<_, Error>(response)
            }
        },
    ))
    .await
}
