//! The local gateway: serves every route of the API from one process, matching paths with the
//! shared route table and calling the very handlers the Lambda functions run. It stands in for
//! API Gateway REST, the per-route functions and the scheduled sweeper.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use forgebench::error::{json_response, ApiError};
use forgebench::http::reply::buffered;
use forgebench::http::RouteMiss;
use forgebench::{App, Route};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use lambda_http::http::{self, StatusCode};
use lambda_http::{Body, RequestExt};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// API Gateway's payload limit for a Lambda proxy integration, enforced here too.
pub const MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

/// The API document, as `infra/openapi.yaml` has it, less the API Gateway integration blocks.
pub fn openapi_json() -> serde_json::Value {
    static DOCUMENT: std::sync::LazyLock<serde_json::Value> = std::sync::LazyLock::new(|| {
        let mut document: serde_json::Value =
            serde_norway::from_str(include_str!("../../infra/openapi.yaml")).unwrap_or_default();
        if let Some(top) = document.as_object_mut() {
            top.retain(|name, _| !name.starts_with("x-amazon-apigateway-"));
        }
        if let Some(paths) = document
            .get_mut("paths")
            .and_then(|paths| paths.as_object_mut())
        {
            for operations in paths.values_mut() {
                if let Some(operations) = operations.as_object_mut() {
                    for operation in operations.values_mut() {
                        if let Some(operation) = operation.as_object_mut() {
                            operation.remove("x-amazon-apigateway-integration");
                        }
                    }
                }
            }
        }
        document
    });
    DOCUMENT.clone()
}

/// Turns a hyper request into the request a Lambda function would receive from API Gateway,
/// path and query parameters included, or into the response that refuses it.
async fn to_lambda_request(
    request: hyper::Request<Incoming>,
) -> Result<(Route, lambda_http::Request), lambda_http::Response<Body>> {
    let (parts, body) = request.into_parts();
    if parts.method == http::Method::GET && parts.uri.path() == "/openapi.json" {
        return Err(json_response(StatusCode::OK, &openapi_json()));
    }
    let (route, parameters) = match Route::find(&parts.method, parts.uri.path()) {
        Ok(found) => found,
        Err(RouteMiss::WrongMethod(allowed)) => {
            let mut response = json_response(
                StatusCode::METHOD_NOT_ALLOWED,
                &json!({"detail": {"code": "method_not_allowed", "message": "this path does not take that method"}}),
            );
            // RFC 9110 §15.5.6: a 405 names the methods the path does take.
            let allow: Vec<&str> = allowed.iter().map(http::Method::as_str).collect();
            if let Ok(value) = http::HeaderValue::from_str(&allow.join(", ")) {
                response.headers_mut().insert(http::header::ALLOW, value);
            }
            return Err(response);
        }
        Err(RouteMiss::NoSuchPath) => {
            return Err(ApiError::NotFound("no such route".into()).into_response());
        }
    };
    let bytes = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Err(ApiError::TooLarge(format!(
                "the body is larger than {MAX_BODY_BYTES} bytes"
            ))
            .into_response())
        }
    };
    let body = if bytes.is_empty() {
        Body::Empty
    } else {
        match String::from_utf8(bytes.to_vec()) {
            Ok(text) => Body::Text(text),
            Err(error) => Body::Binary(error.into_bytes()),
        }
    };
    let query: lambda_http::aws_lambda_events::query_map::QueryMap = parts
        .uri
        .query()
        .unwrap_or_default()
        .parse()
        .unwrap_or_default();
    // A request id of its own, as API Gateway gives each request.
    let mut context =
        lambda_http::aws_lambda_events::apigw::ApiGatewayProxyRequestContext::default();
    context.request_id = Some(uuid::Uuid::new_v4().to_string());
    let request = http::Request::from_parts(parts, body)
        .with_path_parameters(parameters)
        .with_query_string_parameters(query)
        .with_request_context(lambda_http::request::RequestContext::ApiGatewayV1(context));
    Ok((route, request))
}

/// Where `FORGEBENCH_ACCESS_LOG` names a file, one JSON line per request routed to an operation:
/// its `operation` (the document's `operationId`), `status` and `user_agent`. Never a path,
/// header value but the user agent, or body. The SDKs' suites read it to show that every
/// operation of the document is reached through each SDK (`scripts/operations-reached.py`).
struct AccessLog(std::fs::File);

impl AccessLog {
    fn from_env() -> Option<Arc<AccessLog>> {
        let path = std::env::var_os("FORGEBENCH_ACCESS_LOG")?;
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            Ok(file) => Some(Arc::new(AccessLog(file))),
            Err(error) => {
                tracing::warn!(error = %error, "the access log cannot be opened; requests go unlogged");
                None
            }
        }
    }

    /// One line in one write, so processes appending to the same file never interleave.
    fn record(&self, route: Route, status: StatusCode, user_agent: &str) {
        use std::io::Write;
        let line = json!({
            "operation": format!("{route:?}"),
            "status": status.as_u16(),
            "user_agent": user_agent,
        });
        if let Err(error) = (&self.0).write_all(format!("{line}\n").as_bytes()) {
            tracing::warn!(error = %error, "an access log line was not written");
        }
    }
}

fn user_agent(request: &hyper::Request<Incoming>) -> String {
    request
        .headers()
        .get(http::header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// Serves the API on `listener` until the task is aborted.
pub fn serve(app: Arc<App>, listener: TcpListener) -> JoinHandle<()> {
    let access_log = AccessLog::from_env();
    tokio::spawn(async move {
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(error = %error, "accept failed");
                    continue;
                }
            };
            let app = Arc::clone(&app);
            let access_log = access_log.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<Incoming>| {
                    let app = Arc::clone(&app);
                    let access_log = access_log.clone();
                    async move {
                        let user_agent = user_agent(&request);
                        // A streamed reply goes out chunk by chunk (HTTP/1.1 chunked), as API
                        // Gateway sends a `STREAM` integration's response.
                        let response = match to_lambda_request(request).await {
                            Ok((route, request)) => {
                                let response = route.handle(&app, request).await;
                                if let Some(log) = &access_log {
                                    log.record(route, response.status(), &user_agent);
                                }
                                response
                            }
                            Err(refusal) => buffered(refusal),
                        };
                        Ok::<_, Infallible>(response)
                    }
                });
                if let Err(error) = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await
                {
                    tracing::debug!(error = %error, "connection closed with an error");
                }
            });
        }
    })
}

/// Runs the sweeper (claim deadlines, push outbox) every `every`, as the deployed schedule does.
pub fn run_sweeper(app: Arc<App>, every: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        loop {
            ticks.tick().await;
            forgebench::sweeper::sweep(&app.store, &app.queue, &app.bodies).await;
        }
    })
}

/// How many batches the local push worker runs at once: the deployed event source's maximum
/// concurrency (`PushWorkerConcurrency` in infra/template.yaml), so a tenant's slow receivers
/// hold the local worker as they would the deployed one.
pub const PUSH_WORKER_CONCURRENCY: usize = 50;

/// How many receive loops the local push worker runs: the Lambda SQS event source starts with
/// five pollers, so one tenant's backlog on the queue is drained by several at once.
const PUSH_POLLERS: usize = 5;

/// Runs the push worker on the push queue with the semantics of a Lambda SQS event source with
/// partial batch failures and a maximum concurrency: [`PUSH_POLLERS`] receive loops, at most
/// `concurrency` batches at once, each received only when one may run; a handled message is
/// deleted, a failed one stays on the queue and comes back when its visibility (set by the
/// worker for the retry) runs out.
pub fn run_push_worker(app: Arc<App>, concurrency: usize) -> JoinHandle<()> {
    tokio::spawn(async move {
        let worker = Arc::new(app.worker());
        let running = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
        let pollers: Vec<_> = (0..PUSH_POLLERS)
            .map(|_| {
                tokio::spawn(poll_push_queue(
                    Arc::clone(&app),
                    Arc::clone(&worker),
                    Arc::clone(&running),
                ))
            })
            .collect();
        // Stopping the worker stops its pollers.
        let _stop_all = AbortOnDrop(pollers);
        std::future::pending::<()>().await;
    })
}

/// Aborts its tasks when dropped.
struct AbortOnDrop(Vec<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// One receive loop of the local push worker: a batch is received once one of `running`'s
/// places is free, and holds it until its last job ends.
async fn poll_push_queue(
    app: Arc<App>,
    worker: Arc<forgebench::push::Worker>,
    running: Arc<tokio::sync::Semaphore>,
) {
    loop {
        let Ok(permit) = Arc::clone(&running).acquire_owned().await else {
            return;
        };
        let jobs = match app.queue.receive(Duration::from_secs(1)).await {
            Ok(jobs) => jobs,
            Err(error) => {
                tracing::warn!(error = %error, "receive failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if jobs.is_empty() {
            continue;
        }
        let worker = Arc::clone(&worker);
        let queue = app.queue.clone();
        // Batches run side by side, like concurrent Lambda invocations.
        tokio::spawn(async move {
            let _running = permit;
            let time = forgebench::push::worker::INVOCATION_TIME
                .saturating_sub(forgebench::push::worker::ANSWER_TIME);
            let failed = worker.handle_batch(&jobs, time).await;
            let handled: Vec<&str> = jobs
                .iter()
                .filter(|job| !failed.contains(&job.message_id))
                .map(|job| job.receipt_handle.as_str())
                .collect();
            if let Err(error) = queue.delete_all(&handled).await {
                tracing::warn!(error = %error, "delete failed; the message will come back");
            }
        });
    }
}

/// Binds the listen address (`FORGEBENCH_LISTEN`, default `127.0.0.1:8080`).
pub async fn bind(address: &str) -> std::io::Result<(TcpListener, SocketAddr)> {
    let listener = TcpListener::bind(address).await?;
    let local = listener.local_addr()?;
    Ok((listener, local))
}
