//! Cost model: dollars per million tasks, pull and push, from the AWS requests one task's life
//! makes through the real in-process gateway against the local emulators.
//!
//! Each mode drives N small tasks one after another (after one warm-up task, so the key cache
//! is warm, as for a busy agent):
//!
//! - pull: open (`wait=0`), claim (`wait=0`), result, then the caller reads the task once;
//! - push: open (`wait=0`) to a callee whose endpoint is a local HTTP server answering
//!   `completed`; the push worker (SQS) delivers it; then the caller reads the task once.
//!
//! What is counted, and how:
//!
//! - every AWS request of the gateway and the worker, by service and operation, with the
//!   `Recorder` SDK interceptor of `forgebench-tests`;
//! - DynamoDB read and write units as DynamoDB Local reports them: the gateway's DynamoDB client
//!   is pointed at a recording proxy (in this file) that adds `ReturnConsumedCapacity: INDEXES` to
//!   every request that lacks it and sums the `ConsumedCapacity` of every response, the table's
//!   and each index's share apart (the store itself asks for it only in search);
//! - SQS: a second proxy in front of moto sees each `ReceiveMessage`'s messages, so the worker's
//!   batches (one Lambda invocation each) and its idle long polls are told apart, and each
//!   request's payload is billed in 64 KB chunks;
//! - Lambda duration: each HTTP request's wall time as the client sees it (the handler plus a
//!   loopback hop), per route, and each worker batch's time from its `ReceiveMessage` answer to
//!   its last `DeleteMessage`; the p50 per route, rounded up to the millisecond as Lambda bills,
//!   times the memory configured in `infra/template.yaml`;
//! - the sweeper (every minute) as a fixed monthly cost: one sweep of the idle table, measured.
//!
//! Usage: `cost [tasks per mode]` (default 200), with the `AWS_*` settings of
//! `scripts/local-stack.sh env`. `scripts/bench.sh` runs it in release mode (for the timings).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forgebench_tests::samples::median;
use forgebench_tests::{spawn_app_with, Answer, Callee, Options, Pair, Recorder, TestApp};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// The date the prices below were written down (and cross-checked, see `docs/benchmarks.md`).
const PRICES_DATE: &str = "2026-12-02";
/// us-east-1 on-demand prices, dollars per million units unless named otherwise.
/// AWS Lambda pricing page: requests, $0.20 per million (both architectures).
const LAMBDA_REQUESTS: f64 = 0.20;
/// AWS Lambda pricing page: duration, Arm (Graviton2), first 7.5 billion GB-s a month, per GB-s.
const LAMBDA_ARM_GB_SECOND: f64 = 0.000_013_333_4;
/// Amazon API Gateway pricing page: REST API requests, first 333 million a month.
const API_GATEWAY_REST: f64 = 3.50;
/// Amazon DynamoDB pricing page, on-demand (after the November 2024 price cut).
const DYNAMODB_WRITE_UNITS: f64 = 0.625;
const DYNAMODB_READ_UNITS: f64 = 0.125;
/// Amazon SQS pricing page: standard queue requests after the first million a month; each
/// 64 KB chunk of a payload is one request.
const SQS_REQUESTS: f64 = 0.40;
const SQS_CHUNK: usize = 64 * 1024;
/// AWS KMS pricing page: $0.03 per 10,000 requests.
const KMS_REQUESTS: f64 = 3.00;
/// Amazon S3 pricing page, S3 Standard: PUT, COPY, POST, LIST $0.005 per 1,000; GET $0.0004 per
/// 1,000.
const S3_PUTS: f64 = 5.00;
const S3_GETS: f64 = 0.40;

/// Sweeps a month: the sweeper runs every minute, a month taken as 30 days.
const SWEEPS_PER_MONTH: f64 = 30.0 * 24.0 * 60.0;

/// One request through a recording proxy.
#[derive(Debug, Clone)]
struct Exchange {
    /// `x-amz-target` (`DynamoDB_20120810.GetItem`, `AmazonSQS.ReceiveMessage`), or empty.
    target: String,
    request: Value,
    request_bytes: usize,
    response: Value,
    response_bytes: usize,
    sent: Instant,
    answered: Instant,
}

impl Exchange {
    fn operation(&self) -> &str {
        self.target
            .split_once('.')
            .map_or(self.target.as_str(), |(_, op)| op)
    }
}

/// A recording HTTP proxy in front of an emulator. With `consumed_capacity`, every DynamoDB
/// request that does not ask for its consumed capacity is made to ask (`TOTAL`), so the response
/// carries it; the response goes back to the SDK unchanged otherwise.
struct Proxy {
    endpoint: String,
    log: Arc<Mutex<Vec<Exchange>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    async fn start(target: String, consumed_capacity: bool) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .expect("client");
        let (task_log, target) = (Arc::clone(&log), Arc::new(target));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (log, client, target) =
                    (Arc::clone(&task_log), client.clone(), Arc::clone(&target));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let (log, client, target) =
                                (Arc::clone(&log), client.clone(), Arc::clone(&target));
                            async move {
                                forward(request, &client, &target, consumed_capacity, &log).await
                            }
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Proxy {
            endpoint,
            log,
            task,
        }
    }

    fn take(&self) -> Vec<Exchange> {
        std::mem::take(&mut *self.log.lock().expect("proxy log"))
    }

    fn count(&self, operation: &str) -> usize {
        self.log
            .lock()
            .expect("proxy log")
            .iter()
            .filter(|exchange| exchange.operation() == operation)
            .count()
    }
}

/// DynamoDB operations that accept `ReturnConsumedCapacity`.
const CAPACITY_OPERATIONS: [&str; 10] = [
    "GetItem",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "Query",
    "Scan",
    "BatchGetItem",
    "BatchWriteItem",
    "TransactGetItems",
    "TransactWriteItems",
];

async fn forward(
    request: hyper::Request<hyper::body::Incoming>,
    client: &reqwest::Client,
    target: &str,
    consumed_capacity: bool,
    log: &Mutex<Vec<Exchange>>,
) -> Result<hyper::Response<http_body_util::Full<hyper::body::Bytes>>, std::convert::Infallible> {
    let (parts, body) = request.into_parts();
    let mut bytes = body
        .collect()
        .await
        .map(|body| body.to_bytes().to_vec())
        .unwrap_or_default();
    let amz_target = parts
        .headers
        .get("x-amz-target")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let operation = amz_target.split_once('.').map_or("", |(_, op)| op);
    if consumed_capacity && CAPACITY_OPERATIONS.contains(&operation) {
        if let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(&bytes) {
            if !fields.contains_key("ReturnConsumedCapacity") {
                fields.insert("ReturnConsumedCapacity".into(), json!("INDEXES"));
                bytes = serde_json::to_vec(&fields).expect("json");
            }
        }
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |path| path.as_str())
        .to_owned();
    let mut outbound = client.request(parts.method.clone(), format!("{target}{path}"));
    for (name, value) in &parts.headers {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "transfer-encoding" | "connection"
        ) {
            outbound = outbound.header(name.as_str(), value.as_bytes());
        }
    }
    let request_bytes = bytes.len();
    let request_json = if amz_target.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    let sent = Instant::now();
    let response = outbound
        .body(bytes)
        .send()
        .await
        .expect("the emulator answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.bytes().await.expect("body").to_vec();
    let answered = Instant::now();
    let parsed = if amz_target.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    log.lock().expect("proxy log").push(Exchange {
        target: amz_target,
        request: request_json,
        request_bytes,
        response: parsed,
        response_bytes: body.len(),
        sent,
        answered,
    });
    let mut reply = hyper::Response::builder().status(status);
    for (name, value) in &headers {
        if !matches!(
            name.as_str(),
            "content-length" | "transfer-encoding" | "connection"
        ) {
            reply = reply.header(name.as_str(), value.as_bytes());
        }
    }
    Ok(reply
        .body(http_body_util::Full::new(hyper::body::Bytes::from(body)))
        .expect("response"))
}

fn is_read(operation: &str) -> bool {
    matches!(
        operation,
        "GetItem" | "Query" | "Scan" | "BatchGetItem" | "TransactGetItems"
    )
}

/// Read and write units of one DynamoDB response, as reported; `None` when it reports none.
fn units(exchange: &Exchange) -> Option<(f64, f64)> {
    let reports: Vec<&Value> = match &exchange.response["ConsumedCapacity"] {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![&exchange.response["ConsumedCapacity"]],
        _ => return None,
    };
    let reads_op = is_read(exchange.operation());
    let (mut read, mut write) = (0.0, 0.0);
    for report in reports {
        let (r, w) = (
            report["ReadCapacityUnits"].as_f64(),
            report["WriteCapacityUnits"].as_f64(),
        );
        if r.is_some() || w.is_some() {
            read += r.unwrap_or(0.0);
            write += w.unwrap_or(0.0);
        } else if reads_op {
            read += report["CapacityUnits"].as_f64().unwrap_or(0.0);
        } else {
            write += report["CapacityUnits"].as_f64().unwrap_or(0.0);
        }
    }
    Some((read, write))
}

/// Read and write units of one DynamoDB response as DynamoDB bills them, and whether the read
/// was raised: a read that finds nothing (an empty Query, a missing item) is billed one 4 KB
/// unit all the same (0.5 eventually consistent, 1 strongly), where DynamoDB Local reports 0.
fn billed(exchange: &Exchange) -> Option<(f64, f64, bool)> {
    let (read, write) = units(exchange)?;
    if read == 0.0 && is_read(exchange.operation()) {
        let strong = exchange.request["ConsistentRead"] == json!(true);
        return Some((if strong { 1.0 } else { 0.5 }, write, true));
    }
    Some((read, write, false))
}

/// Read and write units of these DynamoDB responses as DynamoDB bills them, summed.
fn billed_total(exchanges: &[Exchange]) -> (f64, f64) {
    exchanges
        .iter()
        .filter_map(billed)
        .fold((0.0, 0.0), |(read, write), (r, w, _)| (read + r, write + w))
}

/// Units of one DynamoDB response by where they were spent: `table`, or an index's name.
fn units_by_place(exchange: &Exchange) -> Vec<(String, f64)> {
    let reports: Vec<&Value> = match &exchange.response["ConsumedCapacity"] {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![&exchange.response["ConsumedCapacity"]],
        _ => return Vec::new(),
    };
    let mut places = Vec::new();
    for report in reports {
        if let Some(units) = report["Table"]["CapacityUnits"].as_f64() {
            places.push(("table".to_owned(), units));
        }
        for kind in ["GlobalSecondaryIndexes", "LocalSecondaryIndexes"] {
            if let Some(indexes) = report[kind].as_object() {
                for (name, index) in indexes {
                    places.push((
                        format!("index {name}"),
                        index["CapacityUnits"].as_f64().unwrap_or(0.0),
                    ));
                }
            }
        }
    }
    places
}

/// Requests by `service:operation` from the recorder's log since the last take.
fn take_requests(recorder: &Recorder) -> BTreeMap<String, usize> {
    let mut calls = BTreeMap::new();
    for (operation, actions) in recorder.take_requests() {
        let service = actions
            .first()
            .and_then(|action| action.split_once(':'))
            .map_or("dynamodb", |(service, _)| service)
            .to_owned();
        *calls.entry(format!("{service}:{operation}")).or_default() += 1;
    }
    calls
}

/// The median of `samples` in milliseconds; 0 when there are none.
fn p50_ms(samples: &[Duration]) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    median(samples.to_vec()).as_secs_f64() * 1e3
}

/// What the template configures: every function's memory (the Globals, with no per-function
/// override found) and the push worker's SQS batch size.
struct Template {
    memory_mb: f64,
    batch_size: usize,
}

fn template() -> Template {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../infra/template.yaml");
    let text = std::fs::read_to_string(path).expect("infra/template.yaml");
    let values = |key: &str| -> Vec<String> {
        text.lines()
            .filter_map(|line| line.trim().strip_prefix(key).map(|v| v.trim().to_owned()))
            .collect()
    };
    let memory = values("MemorySize:");
    assert_eq!(
        memory.len(),
        1,
        "one MemorySize (the Globals) expected in the template, found {memory:?}: the model \
         assumes every function runs at the same memory"
    );
    let batch = values("BatchSize:");
    Template {
        memory_mb: memory[0].parse().expect("MemorySize"),
        batch_size: batch
            .first()
            .map_or(10, |size| size.parse().expect("BatchSize")),
    }
}

/// Everything one mode's N tasks made.
struct Run {
    mode: &'static str,
    tasks: usize,
    /// AWS requests by `service:operation` (the recorder).
    requests: BTreeMap<String, usize>,
    /// DynamoDB units, reported by DynamoDB Local, and the requests that reported none.
    read_units: f64,
    write_units: f64,
    unreported: usize,
    /// Reads DynamoDB Local reported as 0 units, raised to DynamoDB's minimum of one 4 KB unit.
    raised: usize,
    /// DynamoDB calls, read units and write units by operation.
    by_operation: BTreeMap<String, (usize, f64, f64)>,
    /// DynamoDB writes by where they were spent (the table, each index): the requests that
    /// wrote there and their units.
    writes_by_place: BTreeMap<String, (usize, f64)>,
    /// SQS requests billed (64 KB chunks), the worker's batches and its idle long polls.
    sqs_billed: usize,
    batches: usize,
    idle_receives: usize,
    /// HTTP requests to the gateway by route, with their wall times.
    routes: BTreeMap<&'static str, Vec<Duration>>,
    /// The worker's batches, receive answered → last delete sent.
    batch_times: Vec<Duration>,
    /// DynamoDB read and write units by step of a task's life, in the order first met.
    steps: Vec<(&'static str, f64, f64)>,
    /// The DynamoDB exchanges the steps took from the proxy, tallied at the end.
    taken: Vec<Exchange>,
}

impl Run {
    fn new(mode: &'static str, tasks: usize) -> Run {
        Run {
            mode,
            tasks,
            requests: BTreeMap::new(),
            read_units: 0.0,
            write_units: 0.0,
            unreported: 0,
            raised: 0,
            by_operation: BTreeMap::new(),
            writes_by_place: BTreeMap::new(),
            sqs_billed: 0,
            batches: 0,
            idle_receives: 0,
            routes: BTreeMap::new(),
            batch_times: Vec::new(),
            steps: Vec::new(),
            taken: Vec::new(),
        }
    }

    /// Charges what DynamoDB was asked since the last step to `step`.
    fn step(&mut self, step: &'static str, dynamodb: &Proxy) {
        let exchanges = dynamodb.take();
        let (read, write) = billed_total(&exchanges);
        match self.steps.iter_mut().find(|(name, _, _)| *name == step) {
            Some(entry) => {
                entry.1 += read;
                entry.2 += write;
            }
            None => self.steps.push((step, read, write)),
        }
        self.taken.extend(exchanges);
    }

    fn per_task(&self, count: f64) -> f64 {
        count / self.tasks as f64
    }

    fn requests_of(&self, service: &str, operations: &[&str]) -> usize {
        self.requests
            .iter()
            .filter(|(name, _)| {
                name.split_once(':').is_some_and(|(s, op)| {
                    s == service && (operations.is_empty() || operations.contains(&op))
                })
            })
            .map(|(_, count)| count)
            .sum()
    }

    /// Tallies what the proxies saw since their last take.
    fn tally(&mut self, dynamodb: &Proxy, moto: &Proxy) {
        let mut exchanges = std::mem::take(&mut self.taken);
        exchanges.extend(dynamodb.take());
        for exchange in exchanges {
            let Some((read, write, raised)) = billed(&exchange) else {
                self.unreported += 1;
                continue;
            };
            self.raised += usize::from(raised);
            self.read_units += read;
            self.write_units += write;
            let entry = self
                .by_operation
                .entry(exchange.operation().to_owned())
                .or_default();
            entry.0 += 1;
            entry.1 += read;
            entry.2 += write;
            if !is_read(exchange.operation()) {
                for (place, units) in units_by_place(&exchange) {
                    if units > 0.0 {
                        let entry = self.writes_by_place.entry(place).or_default();
                        entry.0 += 1;
                        entry.1 += units;
                    }
                }
            }
        }
        let exchanges = moto.take();
        for exchange in &exchanges {
            if exchange.target.starts_with("AmazonSQS.") {
                let payload = exchange.request_bytes.max(exchange.response_bytes);
                self.sqs_billed += payload.div_ceil(SQS_CHUNK).max(1);
            }
        }
        // A batch: a receive that returned messages, until the delete of its last message.
        for (index, exchange) in exchanges.iter().enumerate() {
            if exchange.operation() != "ReceiveMessage" {
                continue;
            }
            let handles: Vec<&str> = exchange.response["Messages"]
                .as_array()
                .map(|messages| {
                    messages
                        .iter()
                        .filter_map(|m| m["ReceiptHandle"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            if handles.is_empty() {
                self.idle_receives += 1;
                continue;
            }
            self.batches += 1;
            let last_delete = exchanges[index..]
                .iter()
                .filter(|later| {
                    later.operation() == "DeleteMessage"
                        && later.request["ReceiptHandle"]
                            .as_str()
                            .is_some_and(|handle| handles.contains(&handle))
                })
                .map(|later| later.sent)
                .take(handles.len())
                .last();
            if let Some(sent) = last_delete {
                self.batch_times
                    .push(sent.saturating_duration_since(exchange.answered));
            }
        }
    }
}

/// One HTTP request to the gateway, timed under its route.
async fn timed<T>(
    run: &mut Run,
    route: &'static str,
    request: impl std::future::Future<Output = T>,
) -> T {
    let started = Instant::now();
    let reply = request.await;
    run.routes.entry(route).or_default().push(started.elapsed());
    reply
}

/// The small task of the cost targets: a two-part message of a dozen words and a small `data`
/// part; with its answer, 14 distinct words (docs/benchmarks.md, "Cost per task").
fn small_message() -> Value {
    json!({"role": "user", "parts": [
        {"text": "Please classify the attached invoice and flag anything unusual for review"},
        {"data": {"invoice": 4182}},
    ]})
}

/// The small task's answer: a one-part artifact.
fn small_result() -> Value {
    json!({"state": "completed", "artifacts": [
        {"name": "invoice", "parts": [{"text": "routine, approved"}]},
    ]})
}

async fn pull_task(gateway: &Gateway, pair: &Pair, run: &mut Run) {
    let app = &gateway.app;
    let opened = timed(
        run,
        "POST /v1/agents/{agent}/tasks (open)",
        app.open_task(&pair.caller.key, &pair.callee.id, small_message(), 0),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    run.step("open", &gateway.dynamodb);
    let claimed = timed(
        run,
        "GET /v1/agents/me/tasks/next (claim)",
        app.claim(&pair.callee.key, 0),
    )
    .await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    run.step("claim", &gateway.dynamodb);
    let done = timed(
        run,
        "POST /v1/agents/me/tasks/{id}/result",
        app.post_result(&pair.callee.key, &opened.field("id"), small_result()),
    )
    .await;
    assert_eq!(done.state(), "completed", "{}", done.text);
    run.step("result", &gateway.dynamodb);
    let read = timed(
        run,
        "GET /v1/agents/{agent}/tasks/{id} (read)",
        app.get_task(&pair.caller.key, &pair.callee.id, &opened.field("id")),
    )
    .await;
    assert_eq!(read.state(), "completed", "{}", read.text);
    run.step("read", &gateway.dynamodb);
}

async fn push_task(gateway: &Gateway, pair: &Pair, callee: &Callee, run: &mut Run) {
    let (app, moto) = (&gateway.app, &gateway.moto);
    let (received, deleted) = (callee.received().len(), moto.count("DeleteMessage"));
    let opened = timed(
        run,
        "POST /v1/agents/{agent}/tasks (open)",
        app.open_task(&pair.caller.key, &pair.callee.id, small_message(), 0),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    // Delivered, answered, and the worker done with its batch (its message deleted).
    assert!(callee.wait_for(received + 1).await.len() > received);
    for _ in 0..1500 {
        if moto.count("DeleteMessage") > deleted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The worker runs beside the open's answer: its writes and the open's are one step.
    run.step("open and delivery", &gateway.dynamodb);
    let read = timed(
        run,
        "GET /v1/agents/{agent}/tasks/{id} (read)",
        app.get_task(&pair.caller.key, &pair.callee.id, &opened.field("id")),
    )
    .await;
    assert_eq!(read.state(), "completed", "{}", read.text);
    run.step("read", &gateway.dynamodb);
}

struct Gateway {
    app: TestApp,
    recorder: Recorder,
    dynamodb: Proxy,
    moto: Proxy,
}

async fn gateway(options: Options) -> Gateway {
    let recorder = Recorder::default();
    let dynamodb = Proxy::start(forgebench_tests::dynamodb_endpoint(), true).await;
    let moto = Proxy::start(forgebench_tests::moto_endpoint(), false).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: dynamodb.endpoint.clone(),
        moto_endpoint: moto.endpoint.clone(),
        key_cache_seconds: 60,
        deployed_poll_intervals: true,
        recorder: Some(recorder.clone()),
        ..options
    })
    .await;
    Gateway {
        app,
        recorder,
        dynamodb,
        moto,
    }
}

impl Gateway {
    /// Forgets everything recorded so far.
    fn reset(&self) {
        self.recorder.take_requests();
        self.dynamodb.take();
        self.moto.take();
    }

    fn finish(&self, run: &mut Run) {
        run.requests = take_requests(&self.recorder);
        run.tally(&self.dynamodb, &self.moto);
    }
}

/// Turns word search on or off for `pair`'s tenant (`PATCH /v1/tenant/settings`).
async fn set_word_search(gateway: &Gateway, pair: &Pair, on: bool) {
    let reply = gateway
        .app
        .send(
            "PATCH",
            "/v1/tenant/settings",
            Some(&pair.tenant.admin_key),
            Some(json!({ "word_search": on })),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

/// Small pull tasks one after another, in a tenant with word search on or off
/// (`PATCH /v1/tenant/settings`).
async fn pull(tasks: usize, word_search: bool) -> Run {
    let gateway = gateway(Options {
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = gateway.app.pair().await;
    let mode = match word_search {
        true => "pull",
        false => "pull, word search off",
    };
    if !word_search {
        set_word_search(&gateway, &pair, false).await;
    }
    pull_task(&gateway, &pair, &mut Run::new("warm-up", 1)).await;
    gateway.reset();
    let mut run = Run::new(mode, tasks);
    for _ in 0..tasks {
        pull_task(&gateway, &pair, &mut run).await;
    }
    gateway.finish(&mut run);
    run
}

async fn push(tasks: usize) -> Run {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let gateway = gateway(Options {
        ..Options::local_push()
    })
    .await;
    let pair = gateway.app.pair().await;
    let reply = gateway
        .app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": "bench"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    push_task(&gateway, &pair, &callee, &mut Run::new("warm-up", 1)).await;
    gateway.reset();
    let mut run = Run::new("push", tasks);
    for _ in 0..tasks {
        push_task(&gateway, &pair, &callee, &mut run).await;
    }
    gateway.finish(&mut run);
    run
}

/// One line of the bill.
struct Item {
    service: &'static str,
    unit: String,
    per_task: f64,
    /// Dollars per million units.
    price: f64,
}

impl Item {
    fn dollars_per_million_tasks(&self) -> f64 {
        self.per_task * self.price
    }
}

fn items(run: &Run, template: &Template) -> Vec<Item> {
    let gb = template.memory_mb / 1024.0;
    let http: usize = run.routes.values().map(Vec::len).sum();
    // Billed milliseconds: the p50 of each route, rounded up, for each of its requests.
    let mut gb_seconds: f64 = run
        .routes
        .values()
        .map(|samples| p50_ms(samples).ceil() * samples.len() as f64 / 1e3 * gb)
        .sum();
    gb_seconds += p50_ms(&run.batch_times).ceil() * run.batches as f64 / 1e3 * gb;
    let s3_puts = run.requests_of("s3", &["PutObject"]);
    let s3_gets = run.requests_of("s3", &["GetObject"]);
    let kms = run.requests_of("kms", &[]);
    let per_task = |count: usize| run.per_task(count as f64);
    vec![
        Item {
            service: "Lambda",
            unit: format!("invocations ({http} HTTP, {} worker batches)", run.batches),
            per_task: per_task(http + run.batches),
            price: LAMBDA_REQUESTS,
        },
        Item {
            service: "Lambda",
            unit: format!("GB-seconds at {} MB (p50 per route)", template.memory_mb),
            per_task: run.per_task(gb_seconds),
            price: LAMBDA_ARM_GB_SECOND * 1e6,
        },
        Item {
            service: "API Gateway",
            unit: "REST requests".into(),
            per_task: per_task(http),
            price: API_GATEWAY_REST,
        },
        Item {
            service: "DynamoDB",
            unit: "write request units".into(),
            per_task: run.per_task(run.write_units),
            price: DYNAMODB_WRITE_UNITS,
        },
        Item {
            service: "DynamoDB",
            unit: "read request units".into(),
            per_task: run.per_task(run.read_units),
            price: DYNAMODB_READ_UNITS,
        },
        Item {
            service: "SQS",
            unit: "requests (64 KB chunks; idle polls excluded)".into(),
            per_task: per_task(run.sqs_billed - run.idle_receives.min(run.sqs_billed)),
            price: SQS_REQUESTS,
        },
        Item {
            service: "KMS",
            unit: "requests".into(),
            per_task: per_task(kms),
            price: KMS_REQUESTS,
        },
        Item {
            service: "S3",
            unit: "PUT requests".into(),
            per_task: per_task(s3_puts),
            price: S3_PUTS,
        },
        Item {
            service: "S3",
            unit: "GET requests".into(),
            per_task: per_task(s3_gets),
            price: S3_GETS,
        },
    ]
}

fn report(run: &Run, template: &Template) -> f64 {
    println!("\n### {} ({} tasks)\n", run.mode, run.tasks);
    println!("AWS requests per task (recorder):\n");
    println!("| service:operation | per task |");
    println!("|---|---|");
    for (name, count) in &run.requests {
        println!("| {name} | {:.2} |", run.per_task(*count as f64));
    }
    println!("\nLambda duration, wall time per request (p50 / max, ms):\n");
    println!("| function | requests per task | p50 | max |");
    println!("|---|---|---|---|");
    for (route, samples) in &run.routes {
        let max = samples.iter().max().copied().unwrap_or_default();
        println!(
            "| {route} | {:.2} | {:.1} | {:.1} |",
            run.per_task(samples.len() as f64),
            p50_ms(samples),
            max.as_secs_f64() * 1e3
        );
    }
    if run.batches > 0 {
        let max = run.batch_times.iter().max().copied().unwrap_or_default();
        println!(
            "| push worker (one SQS batch) | {:.2} | {:.1} | {:.1} |",
            run.per_task(run.batches as f64),
            p50_ms(&run.batch_times),
            max.as_secs_f64() * 1e3
        );
    }
    println!("\nDynamoDB units per task by operation (as DynamoDB Local reports them):\n");
    println!("| operation | calls | read units | write units |");
    println!("|---|---|---|---|");
    for (operation, (calls, read, write)) in &run.by_operation {
        println!(
            "| {operation} | {:.2} | {:.2} | {:.2} |",
            run.per_task(*calls as f64),
            run.per_task(*read),
            run.per_task(*write)
        );
    }
    println!("\nDynamoDB units per task by step of its life:\n");
    println!("| step | read units | write units |");
    println!("|---|---|---|");
    for (step, read, write) in &run.steps {
        println!(
            "| {step} | {:.2} | {:.2} |",
            run.per_task(*read),
            run.per_task(*write)
        );
    }
    println!("\nDynamoDB write units per task by where they are spent:\n");
    println!("| table or index | requests writing there | write units | share of writes |");
    println!("|---|---|---|---|");
    let mut placed = 0.0;
    for (place, (requests, units)) in &run.writes_by_place {
        placed += units;
        println!(
            "| {place} | {:.2} | {:.2} | {:.1} % |",
            run.per_task(*requests as f64),
            run.per_task(*units),
            100.0 * units / run.write_units
        );
    }
    println!(
        "| (total write units, of which placed above) | | {:.2} ({:.2}) | |",
        run.per_task(run.write_units),
        run.per_task(placed)
    );
    if run.raised > 0 {
        println!(
            "({} reads reported as 0 units counted at DynamoDB's minimum, one 4 KB unit.)",
            run.raised
        );
    }
    if run.unreported > 0 {
        println!(
            "\nWARNING: {} DynamoDB responses reported no consumed capacity (not counted)",
            run.unreported
        );
    }
    let items = items(run, template);
    let total: f64 = items.iter().map(Item::dollars_per_million_tasks).sum();
    println!(
        "\nCost, {} mode, us-east-1 on-demand prices of {PRICES_DATE}:\n",
        run.mode
    );
    println!("| service | unit | per task | $ per million tasks | share |");
    println!("|---|---|---|---|---|");
    for item in &items {
        let dollars = item.dollars_per_million_tasks();
        println!(
            "| {} | {} | {:.4} | {dollars:.2} | {:.1} % |",
            item.service,
            item.unit,
            item.per_task,
            100.0 * dollars / total
        );
    }
    println!("| **total** | | | **{total:.2}** | |");
    let largest = items
        .iter()
        .max_by(|a, b| {
            a.dollars_per_million_tasks()
                .total_cmp(&b.dollars_per_million_tasks())
        })
        .expect("items");
    println!(
        "\nLargest item ({}): {} {}, ${:.2} per million tasks ({:.0} % of the total).",
        run.mode,
        largest.service,
        largest.unit,
        largest.dollars_per_million_tasks(),
        100.0 * largest.dollars_per_million_tasks() / total
    );
    if run.idle_receives > 0 {
        println!(
            "(The local worker's idle long polls, {} over the run, are left out: a deployed event \
             source mapping's polling is a fixed cost, not a task's.)",
            run.idle_receives
        );
    }
    total
}

/// One sweep of the idle table of a fresh gateway: the scheduled sweeper's fixed cost.
async fn sweeper(template: &Template) {
    let gateway = gateway(Options {
        push_worker: false,
        ..Options::default()
    })
    .await;
    gateway.reset();
    let app = &gateway.app.app;
    let mut times = Vec::new();
    let mut run = Run::new("sweeper", 1);
    const SWEEPS: usize = 5;
    for _ in 0..SWEEPS {
        let started = Instant::now();
        forgebench::sweeper::sweep(&app.store, &app.queue, &app.bodies).await;
        times.push(started.elapsed());
    }
    gateway.finish(&mut run);
    let per_sweep = |count: f64| count / SWEEPS as f64;
    let gb_seconds = p50_ms(&times).ceil() / 1e3 * template.memory_mb / 1024.0;
    let requests: usize = run.requests.values().sum();
    let monthly = SWEEPS_PER_MONTH
        * (LAMBDA_REQUESTS / 1e6
            + gb_seconds * LAMBDA_ARM_GB_SECOND
            + per_sweep(run.read_units) * DYNAMODB_READ_UNITS / 1e6
            + per_sweep(run.write_units) * DYNAMODB_WRITE_UNITS / 1e6
            + per_sweep(run.sqs_billed as f64) * SQS_REQUESTS / 1e6);
    println!("\n### sweeper (fixed, every minute; one sweep of an idle table, {SWEEPS} sweeps)\n");
    println!(
        "Per sweep: {:.1} AWS requests ({}), {:.1} read units, {:.1} write units, p50 {:.1} ms.",
        per_sweep(requests as f64),
        run.requests
            .iter()
            .map(|(name, count)| format!("{} {name}", per_sweep(*count as f64)))
            .collect::<Vec<_>>()
            .join(", "),
        per_sweep(run.read_units),
        per_sweep(run.write_units),
        p50_ms(&times)
    );
    println!(
        "A month ({SWEEPS_PER_MONTH} sweeps): ${monthly:.4} (Lambda requests and GB-seconds, \
         DynamoDB units; an idle table, so a lower bound: each due task adds its own writes)."
    );
}

/// Distinct words of the large message: three times what one write of postings may spend.
const LARGE_MESSAGE_WORDS: usize = 3 * forgebench::config::DEFAULT_INDEX_UNITS as usize;

/// The write units one open of a message of [`LARGE_MESSAGE_WORDS`] distinct words spent on its
/// postings: its open's units less those of the same open in a tenant with word search off,
/// where the same writes are made but the postings. `--gate` holds it to
/// `FORGEBENCH_INDEX_UNITS`.
async fn large_open() -> f64 {
    let gateway = gateway(Options {
        push_worker: false,
        ..Options::default()
    })
    .await;
    let text = (0..LARGE_MESSAGE_WORDS)
        .map(|n| format!("w{n}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mut open_units = Vec::new();
    for word_search in [true, false] {
        let pair = gateway.app.pair().await;
        set_word_search(&gateway, &pair, word_search).await;
        gateway.reset();
        let message = json!({"role": "user", "parts": [{"text": text}]});
        let opened = gateway
            .app
            .open_task(&pair.caller.key, &pair.callee.id, message, 0)
            .await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        open_units.push(billed_total(&gateway.dynamodb.take()).1);
    }
    let postings = open_units[0] - open_units[1];
    println!(
        "\nOne open of a message of {LARGE_MESSAGE_WORDS} distinct words: {:.0} write units, \
         {postings:.0} of them its postings (FORGEBENCH_INDEX_UNITS: {}); the same open with \
         word search off: {:.0}.",
        open_units[0],
        forgebench::config::DEFAULT_INDEX_UNITS,
        open_units[1]
    );
    postings
}

/// What one small task may cost at most, in DynamoDB units, before `--gate` fails the run:
/// the counts measured when each store change landed, so that none creeps back up. The targets
/// of the store's design (docs/design.md, "What a task costs") are lower; each change that
/// reaches further lowers these.
const GATE: [(&str, f64, f64); 3] = [
    // (mode, write units per task, read units per task)
    ("pull", PULL_WRITE_UNITS_BOUND, PULL_READ_UNITS_BOUND),
    (
        "pull, word search off",
        PULL_WITHOUT_WORDS_WRITE_UNITS_BOUND,
        PULL_READ_UNITS_BOUND,
    ),
    ("push", PUSH_WRITE_UNITS_BOUND, PUSH_READ_UNITS_BOUND),
];
/// A pull task's units are the same in every run: its writes follow one another.
const PULL_WRITE_UNITS_BOUND: f64 = 34.0;
const PULL_READ_UNITS_BOUND: f64 = 3.5;
/// The same task in a tenant that turned word search off: no postings.
const PULL_WITHOUT_WORDS_WRITE_UNITS_BOUND: f64 = 20.0;
/// A push task's may vary by a unit or two between runs, with how the worker's delivery and
/// the open's answer interleave; the bound leaves that room.
const PUSH_WRITE_UNITS_BOUND: f64 = 37.0;
const PUSH_READ_UNITS_BOUND: f64 = 3.5;

/// The runs' units per task against [`GATE`]; the failures, described.
fn gate(runs: &[&Run]) -> Vec<String> {
    let mut failures = Vec::new();
    for run in runs {
        let Some((_, writes, reads)) = GATE.iter().find(|(mode, _, _)| *mode == run.mode) else {
            continue;
        };
        let (w, r) = (run.per_task(run.write_units), run.per_task(run.read_units));
        println!(
            "gate, {}: {w:.2} write units per task (bound {writes}), {r:.2} read units (bound {reads})",
            run.mode
        );
        if w > *writes + 1e-9 {
            failures.push(format!(
                "{}: {w:.2} write units per task > {writes}",
                run.mode
            ));
        }
        if r > *reads + 1e-9 {
            failures.push(format!(
                "{}: {r:.2} read units per task > {reads}",
                run.mode
            ));
        }
    }
    failures
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gated = args.iter().any(|arg| arg == "--gate");
    let tasks: usize = args
        .iter()
        .find(|arg| !arg.starts_with("--"))
        .map_or(200, |n| n.parse().expect("tasks per mode"));
    let template = template();
    println!(
        "Cost model: {tasks} small tasks per mode (a two-part message of a dozen words and a \
         small data part, a one-part artifact), key cache warm, every function at {} MB \
         (infra/template.yaml), push worker batch size {} (a batch per task here: tasks one after \
         another).",
        template.memory_mb, template.batch_size
    );
    let pull_run = pull(tasks, true).await;
    let pull_total = report(&pull_run, &template);
    let without_words = pull(tasks, false).await;
    let without_words_total = report(&without_words, &template);
    let push_run = push(tasks).await;
    let push_total = report(&push_run, &template);
    sweeper(&template).await;
    println!(
        "\nPer million small tasks: pull ${pull_total:.2} (word search off: \
         ${without_words_total:.2}), push ${push_total:.2} (push / pull = {:.2}).",
        push_total / pull_total
    );
    let large_postings = large_open().await;
    let mut failures = gate(&[&pull_run, &without_words, &push_run]);
    let index_units = forgebench::config::DEFAULT_INDEX_UNITS as f64;
    if large_postings > index_units + 1e-9 {
        failures.push(format!(
            "one open's postings spent {large_postings:.0} write units > {index_units}"
        ));
    }
    if gated && !failures.is_empty() {
        eprintln!("cost gate failed:\n  {}", failures.join("\n  "));
        std::process::exit(1);
    }
}
