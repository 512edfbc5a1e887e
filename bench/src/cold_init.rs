//! Cold init of every function against the hello-world `lambda_http` baseline, under a local
//! Lambda runtime API (this program serves it): for each function of the deployment (the one
//! gateway bootstrap with that function's `FORGEBENCH_ROUTE`), the time from process start to its
//! first `GET …/invocation/next` (init) and to its first answer, median of 5 runs; and the
//! package's size beside hello-world's. Usage:
//!
//! ```text
//! cold-init <gateway bootstrap> <hello-world bootstrap>
//! ```
//!
//! `scripts/bench.sh` builds both with cargo-lambda in release mode for this machine's
//! architecture (the deployed arm64 builds cannot run here) and runs this.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forgebench_tests::samples::median;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// One API Gateway REST proxy event: an unauthenticated `GET /v1/agents/me`, answered by every
/// route function without a store call (a 401 or a routing answer) and by hello-world with 200.
fn api_event() -> String {
    json!({
        "resource": "/v1/agents/me", "path": "/v1/agents/me", "httpMethod": "GET",
        "headers": {"Host": "localhost"}, "multiValueHeaders": {"Host": ["localhost"]},
        "queryStringParameters": null, "multiValueQueryStringParameters": null,
        "pathParameters": null, "stageVariables": null, "body": null, "isBase64Encoded": false,
        "requestContext": {
            "accountId": "123456789012", "resourceId": "r", "stage": "prod", "requestId": "req",
            "identity": {"sourceIp": "127.0.0.1"}, "resourcePath": "/v1/agents/me",
            "httpMethod": "GET", "apiId": "api", "protocol": "HTTP/1.1"
        }
    })
    .to_string()
}

fn event_for(function: &str) -> String {
    match function {
        "push-worker" => json!({"Records": []}).to_string(),
        "sweep-deadlines" => json!({}).to_string(),
        _ => api_event(),
    }
}

/// Whether a function's first answer includes AWS calls (the sweeper's answer is a sweep), so
/// its answer time is more than cold start.
fn first_answer_calls_aws(function: &str) -> bool {
    function == "sweep-deadlines"
}

#[derive(Default)]
struct Marks {
    next: Option<Instant>,
    answered: Option<Instant>,
}

/// Serves the runtime API for one invocation and records when the function asked and answered.
async fn runtime_api(
    event: String,
) -> (
    String,
    Arc<Mutex<Marks>>,
    Arc<Notify>,
    tokio::task::JoinHandle<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let marks: Arc<Mutex<Marks>> = Arc::default();
    let done = Arc::new(Notify::new());
    let (task_marks, task_done) = (Arc::clone(&marks), Arc::clone(&done));
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let (marks, done, event) = (
                Arc::clone(&task_marks),
                Arc::clone(&task_done),
                event.clone(),
            );
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                        let (marks, done, event) =
                            (Arc::clone(&marks), Arc::clone(&done), event.clone());
                        async move {
                            let path = request.uri().path().to_owned();
                            if path.ends_with("/invocation/next") {
                                let first = {
                                    let mut marks = marks.lock().unwrap();
                                    let first = marks.next.is_none();
                                    marks.next.get_or_insert_with(Instant::now);
                                    first
                                };
                                if !first {
                                    // Only one invocation: hold the second poll until the process is killed.
                                    tokio::time::sleep(Duration::from_secs(3600)).await;
                                }
                                let deadline = std::time::SystemTime::now()
                                    .duration_since(std::time::UNIX_EPOCH)
                                    .unwrap()
                                    .as_millis()
                                    + 30_000;
                                return Ok::<_, Infallible>(
                                    hyper::Response::builder()
                                        .header("lambda-runtime-aws-request-id", "bench-1")
                                        .header("lambda-runtime-deadline-ms", deadline.to_string())
                                        .header(
                                            "lambda-runtime-invoked-function-arn",
                                            "arn:aws:lambda:us-east-1:123456789012:function:bench",
                                        )
                                        .header(
                                            "lambda-runtime-trace-id",
                                            "Root=1-00000000-000000000000000000000000",
                                        )
                                        .body(Full::new(Bytes::from(event)))
                                        .unwrap(),
                                );
                            }
                            marks
                                .lock()
                                .unwrap()
                                .answered
                                .get_or_insert_with(Instant::now);
                            done.notify_one();
                            Ok(hyper::Response::builder()
                                .status(202)
                                .body(Full::new(Bytes::new()))
                                .unwrap())
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (address, marks, done, task)
}

/// (init, first answer) of one cold start.
async fn cold_start(bootstrap: &Path, function: &str) -> (Duration, Duration) {
    let route = match function {
        "hello" => "",
        route => route,
    };
    let (address, marks, done, server) = runtime_api(event_for(function)).await;
    let started = Instant::now();
    let mut child = tokio::process::Command::new(bootstrap)
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", &address)
        .env("AWS_LAMBDA_FUNCTION_NAME", function)
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        // The sweeper's first answer is a sweep: let it reach the local DynamoDB when one is up.
        .env(
            "AWS_ENDPOINT_URL_DYNAMODB",
            std::env::var("AWS_ENDPOINT_URL_DYNAMODB")
                .unwrap_or_else(|_| "http://127.0.0.1:9".into()),
        )
        .env("FORGEBENCH_TABLE", "bench")
        .env("FORGEBENCH_ROUTE", route)
        .env("RUST_LOG", "off")
        .kill_on_drop(true)
        .spawn()
        .expect("spawn bootstrap");
    let answered = tokio::time::timeout(Duration::from_secs(20), done.notified())
        .await
        .is_ok();
    let _ = child.kill().await;
    server.abort();
    let marks = marks.lock().unwrap();
    assert!(answered, "{function} never answered");
    (
        marks
            .next
            .expect("asked for an event")
            .duration_since(started),
        marks.answered.expect("answered").duration_since(started),
    )
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let gateway = PathBuf::from(args.next().expect("gateway bootstrap"));
    let hello = PathBuf::from(args.next().expect("hello-world bootstrap"));
    const RUNS: usize = 5;
    let measure = |bootstrap: PathBuf, name: String| async move {
        let mut init = Vec::new();
        let mut answer = Vec::new();
        for _ in 0..RUNS {
            let (i, a) = cold_start(&bootstrap, &name).await;
            init.push(i);
            answer.push(a);
        }
        (
            median(init),
            median(answer),
            std::fs::metadata(&bootstrap).map(|m| m.len()).unwrap_or(0),
        )
    };
    let (hello_init, hello_answer, hello_size) = measure(hello.clone(), "hello".into()).await;
    println!("\nCold start under a local runtime API (median of {RUNS}), against hello-world lambda_http:");
    println!(
        "| function | init | init / hello | first answer | answer / hello | size | size / hello |"
    );
    println!("|---|---|---|---|---|---|---|");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "| hello-world | {:.1} ms | 1.00 | {:.1} ms | 1.00 | {:.1} MB | 1.00 |",
        ms(hello_init),
        ms(hello_answer),
        hello_size as f64 / 1048576.0
    );
    let mut names: Vec<String> = forgebench::Function::all().map(|f| f.name()).collect();
    names.sort();
    let (mut worst_init, mut worst_answer): (f64, f64) = (0.0, 0.0);
    for name in names {
        let (init, answer, size) = measure(gateway.clone(), name.clone()).await;
        let init_ratio = init.as_secs_f64() / hello_init.as_secs_f64();
        let answer_ratio = answer.as_secs_f64() / hello_answer.as_secs_f64();
        worst_init = worst_init.max(init_ratio);
        let marker = if first_answer_calls_aws(&name) {
            " (sweeps: DynamoDB calls)"
        } else {
            worst_answer = worst_answer.max(answer_ratio);
            ""
        };
        println!(
            "| {name} | {:.1} ms | {init_ratio:.2} | {:.1} ms{marker} | {answer_ratio:.2} | {:.1} MB | {:.2} |",
            ms(init),
            ms(answer),
            size as f64 / 1048576.0,
            size as f64 / hello_size as f64
        );
    }
    let package = std::fs::metadata(&gateway).map(|m| m.len()).unwrap_or(0);
    println!(
        "\nthe one package every function deploys: {:.1} MB ({:.2}x hello-world's {:.1} MB)",
        package as f64 / 1048576.0,
        package as f64 / hello_size as f64,
        hello_size as f64 / 1048576.0
    );
    println!("worst init ratio to hello-world: {worst_init:.2} (target <= 1.5)");
    println!(
        "worst first-answer ratio to hello-world, first answers without AWS calls: \
         {worst_answer:.2} (target <= 1.5)"
    );
}
