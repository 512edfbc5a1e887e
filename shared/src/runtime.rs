//! What the gateway binary's `main` calls: structured logs, the function's job from its
//! configuration, configuration, clients, then that job's Lambda loop.

use std::sync::Arc;

use futures::FutureExt;
use lambda_http::{service_fn, Error, Request};
use tracing::Instrument;

use crate::app::App;
use crate::function::{Function, ROUTE_VARIABLE};
use crate::http::reply::ReplyBody;
use crate::http::Route;

/// The log filter's directives: the level Lambda's advanced logging controls set
/// (`AWS_LAMBDA_LOG_LEVEL`: TRACE, DEBUG, INFO, WARN, ERROR or FATAL) when there is one, else
/// `RUST_LOG`'s directives, else `info`.
fn log_filter_directives(lambda_log_level: Option<&str>, rust_log: Option<&str>) -> String {
    if let Some(level) = lambda_log_level
        .map(str::trim)
        .filter(|level| !level.is_empty())
    {
        return match level.to_ascii_lowercase().as_str() {
            // tracing has no level above error
            "fatal" => "error".to_owned(),
            level => level.to_owned(),
        };
    }
    rust_log.unwrap_or("info").to_owned()
}

/// JSON logs with the level from `AWS_LAMBDA_LOG_LEVEL` (the function's log level when its
/// logging config sets one), else `RUST_LOG`, else `info`; `info` too for directives that do not
/// parse. Spans are exported over OTLP as well when the environment names an endpoint
/// (`telemetry.rs`).
pub fn init_tracing() {
    let directives = log_filter_directives(
        std::env::var("AWS_LAMBDA_LOG_LEVEL").ok().as_deref(),
        std::env::var("RUST_LOG").ok().as_deref(),
    );
    let exported = crate::telemetry::configured_by_environment()
        .then(|| crate::telemetry::install(None))
        .and_then(|installed| {
            installed
                .inspect_err(|error| eprintln!("spans are not exported: {error}"))
                .ok()
        });
    init_tracing_with(&directives, exported);
}

/// The process's subscriber: JSON logs filtered by `directives`, and the spans to `exported`'s
/// tracer when there is one.
pub fn init_tracing_with(directives: &str, exported: Option<opentelemetry_sdk::trace::Tracer>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_new(directives)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(true);
    let spans = exported.map(|tracer| tracing_opentelemetry::layer().with_tracer(tracer));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(logs)
        .with(spans)
        .try_init();
}

/// Serves the job the function's configuration names in `FORGEBENCH_ROUTE`, read once at cold
/// start: one of the route table's routes, the push worker or the sweeper. A missing or unknown
/// name is an init error (logged with the name), never a default route.
pub async fn serve_configured_function() -> Result<(), Error> {
    init_tracing();
    let configured = std::env::var(ROUTE_VARIABLE).ok();
    let function = match Function::from_configured(configured.as_deref()) {
        Ok(function) => function,
        Err(error) => {
            tracing::error!(
                variable = ROUTE_VARIABLE,
                value = configured.as_deref(),
                %error,
                "refusing to start: the function's configuration names no route of the gateway"
            );
            return Err(error.into());
        }
    };
    match function {
        Function::Route(route) => serve_route(route).await,
        Function::PushWorker => serve_push_worker().await,
        Function::Sweeper => serve_sweeper().await,
    }
}

/// Serves one route as a Lambda function behind API Gateway: with response streaming for the
/// routes that stream or wait (their integration is in `STREAM` mode), buffered for the rest.
async fn serve_route(route: Route) -> Result<(), Error> {
    let app = Arc::new(App::from_env().await?);
    if route.streamed() {
        return lambda_http::run_with_streaming_response(service_fn(move |request: Request| {
            let app = Arc::clone(&app);
            async move {
                let reply = route.handle(&app, request).await;
                crate::telemetry::flush().await;
                Ok::<_, std::convert::Infallible>(reply)
            }
        }))
        .await;
    }
    lambda_http::run(service_fn(move |request: Request| {
        let app = Arc::clone(&app);
        async move {
            let reply = route.handle(&app, request).await;
            crate::telemetry::flush().await;
            Ok::<_, std::convert::Infallible>(reply.map(ReplyBody::into_buffered))
        }
    }))
    .await
}

/// The span of one invocation of an event-driven function: its Lambda request id and X-Ray
/// trace id on every line it logs.
fn invocation_span(context: &lambda_http::lambda_runtime::Context) -> tracing::Span {
    tracing::info_span!(
        "invocation",
        request_id = %context.request_id,
        trace_id = context.xray_trace_id.as_deref(),
    )
}

/// Runs the claim-deadline sweeper as a scheduled Lambda function.
async fn serve_sweeper() -> Result<(), Error> {
    let app = Arc::new(App::from_env().await?);
    lambda_http::lambda_runtime::run(service_fn(
        move |event: lambda_http::lambda_runtime::LambdaEvent<serde_json::Value>| {
            let app = Arc::clone(&app);
            let span = invocation_span(&event.context);
            async move {
                let report = crate::sweeper::sweep(&app.store, &app.queue, &app.bodies).await;
                Ok::<_, Error>(serde_json::to_value(report)?)
            }
            .instrument(span)
            .then(|done| async move {
                crate::telemetry::flush().await;
                done
            })
        },
    ))
    .await
}

/// Runs the push worker as a Lambda function on the push queue's event source, reporting
/// partial batch failures: only the messages to retry stay on the queue.
async fn serve_push_worker() -> Result<(), Error> {
    use aws_lambda_events::event::sqs::SqsEvent;
    use lambda_http::lambda_runtime::LambdaEvent;

    use crate::push::batch;
    let app = App::from_env().await?;
    let worker = Arc::new(app.worker());
    lambda_http::lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| {
        let worker = Arc::clone(&worker);
        let span = invocation_span(&event.context);
        // What the invocation has left: its deadline is in Unix milliseconds.
        let left = std::time::UNIX_EPOCH + std::time::Duration::from_millis(event.context.deadline);
        let time = left
            .duration_since(std::time::SystemTime::now())
            .unwrap_or_default();
        async move { Ok::<_, Error>(batch::handle_event(&worker, event.payload, time).await) }
            .instrument(span)
            .then(|done| async move {
                crate::telemetry::flush().await;
                done
            })
    }))
    .await
}

#[cfg(test)]
mod tests {
    use super::log_filter_directives;

    #[test]
    fn lambda_log_level_wins_over_rust_log() {
        assert_eq!(log_filter_directives(Some("DEBUG"), Some("warn")), "debug");
        assert_eq!(log_filter_directives(Some("WARN"), None), "warn");
        // Lambda's FATAL is tracing's highest level
        assert_eq!(log_filter_directives(Some("FATAL"), None), "error");
    }

    #[test]
    fn rust_log_then_info_when_lambda_sets_no_level() {
        assert_eq!(
            log_filter_directives(None, Some("forgebench=debug,info")),
            "forgebench=debug,info"
        );
        assert_eq!(log_filter_directives(Some(""), Some("trace")), "trace");
        assert_eq!(log_filter_directives(None, None), "info");
    }

    #[test]
    fn every_lambda_level_is_a_filter_tracing_accepts() {
        for level in ["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"] {
            let directives = log_filter_directives(Some(level), None);
            assert!(
                tracing_subscriber::EnvFilter::try_new(&directives).is_ok(),
                "{level} -> {directives}"
            );
        }
    }
}
