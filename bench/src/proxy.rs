//! The recording proxy in front of an emulator (DynamoDB Local, moto): every request the
//! gateway and the worker make goes through it, is forwarded unchanged (but for DynamoDB's
//! `ReturnConsumedCapacity`) and is logged with its answer and times; on request, each DynamoDB
//! write is logged with the images of the items it names, read just before and just after it.

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
    /// The items a write names, as they stood before and after it (only with
    /// [`Capture::images`]; empty otherwise).
    pub images: Vec<Images>,
}

/// One item a write names: its key, and the item before and after the write (`Null` where
/// there was none), read strongly consistent while no other write went through the proxy.
#[derive(Debug, Clone, PartialEq)]
pub struct Images {
    pub table: String,
    pub key: Value,
    pub before: Value,
    pub after: Value,
}

/// What a proxy adds to what it forwards and records.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    /// Every DynamoDB request that does not ask for its consumed capacity asks for it
    /// (`INDEXES`), so its answer carries it.
    pub consumed_capacity: bool,
    /// The table's key attributes: with them, each DynamoDB write is held alone (writes through
    /// the proxy go one at a time) between a strongly consistent read of the items it names and
    /// a second read after it, so the images are exactly what it changed. The reads go to the
    /// emulator directly and are not recorded.
    pub images: Option<Vec<String>>,
}

impl Exchange {
    pub fn operation(&self) -> &str {
        self.target
            .split_once('.')
            .map_or(self.target.as_str(), |(_, op)| op)
    }
}

/// A recording HTTP proxy in front of an emulator, adding what its [`Capture`] asks for; the
/// response goes back to the SDK unchanged otherwise.
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
    /// A proxy that asks DynamoDB for consumed capacity when `consumed_capacity`.
    pub async fn start(target: String, consumed_capacity: bool) -> Proxy {
        let capture = Capture {
            consumed_capacity,
            images: None,
        };
        Proxy::start_capturing(target, capture).await
    }

    pub async fn start_capturing(target: String, capture: Capture) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .expect("client");
        let forwarder = Arc::new(Forwarder {
            client,
            target,
            capture,
            writes: tokio::sync::Mutex::new(()),
        });
        let task_log = Arc::clone(&log);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (log, forwarder) = (Arc::clone(&task_log), Arc::clone(&forwarder));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let (log, forwarder) = (Arc::clone(&log), Arc::clone(&forwarder));
                            async move { forwarder.forward(request, &log).await }
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
            .map(|exchange| deleted_handles(exchange).count())
            .sum()
    }

    pub fn count(&self, operation: &str) -> usize {
        self.log
            .lock()
            .expect("proxy log")
            .iter()
            .filter(|exchange| exchange.operation() == operation)
            .count()
    }
}

/// The receipt handles an SQS request deletes: a `DeleteMessage`'s one, or each entry of a
/// `DeleteMessageBatch` (how the local worker, as the Lambda event source, deletes a batch's
/// successes).
pub fn deleted_handles(exchange: &Exchange) -> impl Iterator<Item = &str> {
    let single = (exchange.operation() == "DeleteMessage")
        .then(|| exchange.request["ReceiptHandle"].as_str())
        .flatten();
    let batch = (exchange.operation() == "DeleteMessageBatch")
        .then(|| exchange.request["Entries"].as_array())
        .flatten()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["ReceiptHandle"].as_str());
    single.into_iter().chain(batch)
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

/// What each connection's requests share: where they go and what is added.
struct Forwarder {
    client: reqwest::Client,
    target: String,
    capture: Capture,
    /// Held by a write whose images are read, so no other write lands between its reads.
    writes: tokio::sync::Mutex<()>,
}

/// DynamoDB operations that write.
const WRITE_OPERATIONS: [&str; 5] = [
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "BatchWriteItem",
    "TransactWriteItems",
];

impl Forwarder {
    async fn forward(
        &self,
        request: hyper::Request<hyper::body::Incoming>,
        log: &Mutex<Vec<Exchange>>,
    ) -> Result<hyper::Response<http_body_util::Full<hyper::body::Bytes>>, std::convert::Infallible>
    {
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
        if self.capture.consumed_capacity && CAPACITY_OPERATIONS.contains(&operation) {
            ask_for_capacity(&mut bytes);
        }
        let request_bytes = bytes.len();
        let request_json = parse(&amz_target, &bytes);
        let imaged = self
            .capture
            .images
            .as_ref()
            .filter(|_| WRITE_OPERATIONS.contains(&operation));
        let held = match imaged {
            Some(_) => Some(self.writes.lock().await),
            None => None,
        };
        let named = imaged.map_or_else(Vec::new, |key| named_items(&request_json, key));
        let before = self.images(&parts, &named).await;
        let sent = Instant::now();
        let response = outbound(&self.client, &parts, &self.target)
            .body(bytes)
            .send()
            .await
            .expect("the emulator answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.bytes().await.expect("body").to_vec();
        let answered = Instant::now();
        let after = self.images(&parts, &named).await;
        drop(held);
        let images = named
            .into_iter()
            .zip(before.into_iter().zip(after))
            .map(|((table, key), (before, after))| Images {
                table,
                key,
                before,
                after,
            })
            .collect();
        let parsed = parse(&amz_target, &body);
        log.lock().expect("proxy log").push(Exchange {
            target: amz_target,
            request: request_json,
            request_bytes,
            response: parsed,
            response_bytes: body.len(),
            sent,
            answered,
            images,
        });
        Ok(reply(status, &headers, body))
    }

    /// The items at `keys` as they stand now (`Null` where there is none), each read strongly
    /// consistent with the credentials of the request being recorded.
    async fn images(
        &self,
        parts: &hyper::http::request::Parts,
        keys: &[(String, Value)],
    ) -> Vec<Value> {
        let mut images = Vec::with_capacity(keys.len());
        for (table, key) in keys {
            let read = json!({"TableName": table, "Key": key, "ConsistentRead": true});
            let mut request = self
                .client
                .post(&self.target)
                .header("x-amz-target", "DynamoDB_20120810.GetItem")
                .header("content-type", "application/x-amz-json-1.0");
            for name in ["authorization", "x-amz-date"] {
                if let Some(value) = parts.headers.get(name) {
                    request = request.header(name, value.as_bytes());
                }
            }
            let answer: Value = request
                .body(read.to_string())
                .send()
                .await
                .expect("the emulator answers")
                .json()
                .await
                .expect("an item read's answer");
            images.push(answer.get("Item").cloned().unwrap_or(Value::Null));
        }
        images
    }
}

/// The (table, key) of each item a write request names, in the request's order: a put's item,
/// an update's or a delete's key; each item of a batch or a transaction (condition checks too).
pub fn named_items(request: &Value, key_attributes: &[String]) -> Vec<(String, Value)> {
    let key_of = |item: &Value| -> Value {
        key_attributes
            .iter()
            .filter_map(|name| item.get(name).map(|value| (name.clone(), value.clone())))
            .collect::<serde_json::Map<String, Value>>()
            .into()
    };
    let table = |request: &Value| request["TableName"].as_str().unwrap_or_default().to_owned();
    let mut named = Vec::new();
    if let Some(item) = request.get("Item") {
        named.push((table(request), key_of(item)));
    } else if let Some(key) = request.get("Key") {
        named.push((table(request), key_of(key)));
    }
    if let Some(tables) = request["RequestItems"].as_object() {
        for (name, writes) in tables {
            for write in writes.as_array().into_iter().flatten() {
                let item = write["PutRequest"]
                    .get("Item")
                    .or_else(|| write["DeleteRequest"].get("Key"));
                if let Some(item) = item {
                    named.push((name.clone(), key_of(item)));
                }
            }
        }
    }
    for action in request["TransactItems"].as_array().into_iter().flatten() {
        for kind in ["Put", "Update", "Delete", "ConditionCheck"] {
            let part = &action[kind];
            if let Some(item) = part.get("Item").or_else(|| part.get("Key")) {
                named.push((table(part), key_of(item)));
            }
        }
    }
    named
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

#[cfg(test)]
mod tests {
    use super::named_items;
    use serde_json::json;

    fn key(pk: &str) -> serde_json::Value {
        json!({"pk": {"S": pk}, "sk": {"S": "X"}})
    }

    #[test]
    fn a_write_names_its_items_by_their_table_key_in_the_request_order() {
        let attributes = vec!["pk".to_owned(), "sk".to_owned()];
        let mut item = key("TASK#1");
        item["state"] = json!({"S": "submitted"});
        let put = json!({"TableName": "t", "Item": item});
        assert_eq!(
            named_items(&put, &attributes),
            vec![("t".into(), key("TASK#1"))]
        );
        let batch = json!({"RequestItems": {"t": [
            {"PutRequest": {"Item": key("AUDIT#a")}},
            {"DeleteRequest": {"Key": key("WORDS#a#b")}},
        ]}});
        assert_eq!(
            named_items(&batch, &attributes),
            vec![("t".into(), key("AUDIT#a")), ("t".into(), key("WORDS#a#b"))]
        );
        let transaction = json!({"TransactItems": [
            {"ConditionCheck": {"TableName": "t", "Key": key("BINDING#b")}},
            {"Update": {"TableName": "t", "Key": key("TASK#2")}},
        ]});
        assert_eq!(
            named_items(&transaction, &attributes),
            vec![("t".into(), key("BINDING#b")), ("t".into(), key("TASK#2"))]
        );
    }
}
