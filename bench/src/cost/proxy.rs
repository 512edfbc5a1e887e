//! The recording proxy in front of an emulator (DynamoDB Local, moto): every request the
//! gateway and the worker make goes through it, is forwarded unchanged (but for DynamoDB's
//! `ReturnConsumedCapacity`) and is logged with its answer and times.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// One request through a recording proxy.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// `x-amz-target` (`DynamoDB_20120810.GetItem`, `AmazonSQS.ReceiveMessage`), or empty.
    pub target: String,
    pub request: Value,
    pub request_bytes: usize,
    pub response: Value,
    pub response_bytes: usize,
    pub sent: Instant,
    pub answered: Instant,
}

impl Exchange {
    pub fn operation(&self) -> &str {
        self.target
            .split_once('.')
            .map_or(self.target.as_str(), |(_, op)| op)
    }
}

/// A recording HTTP proxy in front of an emulator. With `consumed_capacity`, every DynamoDB
/// request that does not ask for its consumed capacity is made to ask (`TOTAL`), so the response
/// carries it; the response goes back to the SDK unchanged otherwise.
pub struct Proxy {
    pub endpoint: String,
    log: Arc<Mutex<Vec<Exchange>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    pub async fn start(target: String, consumed_capacity: bool) -> Proxy {
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

    pub fn take(&self) -> Vec<Exchange> {
        std::mem::take(&mut *self.log.lock().expect("proxy log"))
    }

    /// The SQS messages deleted so far, one by one or in batches.
    pub fn deletes(&self) -> usize {
        self.log
            .lock()
            .expect("proxy log")
            .iter()
            .map(|exchange| crate::run::deleted_handles(exchange).count())
            .sum()
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
        ask_for_capacity(&mut bytes);
    }
    let outbound = outbound(client, &parts, target);
    let request_bytes = bytes.len();
    let request_json = parse(&amz_target, &bytes);
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
    let parsed = parse(&amz_target, &body);
    log.lock().expect("proxy log").push(Exchange {
        target: amz_target,
        request: request_json,
        request_bytes,
        response: parsed,
        response_bytes: body.len(),
        sent,
        answered,
    });
    Ok(reply(status, &headers, body))
}

/// Makes a DynamoDB request that does not ask for its consumed capacity ask for it
/// (`INDEXES`: the table's share and each index's apart).
fn ask_for_capacity(bytes: &mut Vec<u8>) {
    if let Ok(Value::Object(mut fields)) = serde_json::from_slice::<Value>(bytes) {
        if !fields.contains_key("ReturnConsumedCapacity") {
            fields.insert("ReturnConsumedCapacity".into(), json!("INDEXES"));
            *bytes = serde_json::to_vec(&fields).expect("json");
        }
    }
}

/// The request to the emulator: the same method, path and headers (but those of the hop).
fn outbound(
    client: &reqwest::Client,
    parts: &hyper::http::request::Parts,
    target: &str,
) -> reqwest::RequestBuilder {
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
    outbound
}

/// A JSON body of an AWS JSON protocol exchange (one with an `x-amz-target`); `Null` otherwise.
fn parse(amz_target: &str, body: &[u8]) -> Value {
    if amz_target.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body).unwrap_or(Value::Null)
    }
}

/// The emulator's answer, back to the SDK: its status, headers (but those of the hop) and body.
fn reply(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    body: Vec<u8>,
) -> hyper::Response<http_body_util::Full<hyper::body::Bytes>> {
    let mut reply = hyper::Response::builder().status(status);
    for (name, value) in headers {
        if !matches!(
            name.as_str(),
            "content-length" | "transfer-encoding" | "connection"
        ) {
            reply = reply.header(name.as_str(), value.as_bytes());
        }
    }
    reply
        .body(http_body_util::Full::new(hyper::body::Bytes::from(body)))
        .expect("response")
}
