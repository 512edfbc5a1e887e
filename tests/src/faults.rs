//! A fault-injecting HTTP proxy for the fault suite: it stands between the gateway and one
//! emulator (DynamoDB Local, or moto for SQS, KMS and S3) or between the push worker and a
//! callee, forwards every request as it is, and, while a fault is set, answers the way a
//! failing service does: no answer at all (a reset connection), a slow answer, a 5xx, or the
//! service's own throttling error. The emulators stay real; only the path to them misbehaves.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How the path to the service misbehaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Fault {
    /// Every request goes through.
    #[default]
    None,
    /// Each connection is closed without an answer (the service is down or restarting).
    Reset,
    /// Each request waits this long, then goes through.
    Delay(Duration),
    /// Each request is answered with this status and body, as the service's own error.
    Answer { status: u16, body: String },
}

impl Fault {
    /// DynamoDB's throttling error, as the service sends it (HTTP 400).
    pub fn dynamodb_throttling() -> Fault {
        Fault::Answer {
            status: 400,
            body: r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#.into(),
        }
    }

    /// A service's internal error (HTTP 500), with no body it could parse.
    pub fn internal_error() -> Fault {
        Fault::Answer {
            status: 500,
            body: String::new(),
        }
    }

    /// A short name for reports.
    pub fn label(&self) -> String {
        match self {
            Fault::None => "none".into(),
            Fault::Reset => "connections reset".into(),
            Fault::Delay(delay) => format!("{} ms delay", delay.as_millis()),
            Fault::Answer { status, body } if body.contains("Throttling") => {
                format!("{status} throttling")
            }
            Fault::Answer { status, .. } => format!("{status} errors"),
        }
    }
}

/// The fault set, and how many requests met one (answered by it, dropped or delayed).
#[derive(Default)]
struct State {
    fault: Mutex<Fault>,
    /// When set, only requests whose body holds this text meet the fault.
    only_where: Mutex<Option<String>>,
    faulted: AtomicU64,
}

/// The proxy: `endpoint` is where clients reach it.
pub struct FaultProxy {
    pub endpoint: String,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Answer = hyper::Response<Full<Bytes>>;

impl FaultProxy {
    /// A proxy to `target` (`http://host:port`), with no fault set.
    pub async fn start(target: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("address"));
        let state = Arc::new(State::default());
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .expect("client");
        let (target, shared) = (
            Arc::new(target.trim_end_matches('/').to_owned()),
            Arc::clone(&state),
        );
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (client, target, state) =
                    (client.clone(), Arc::clone(&target), Arc::clone(&shared));
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                            let (client, target, state) =
                                (client.clone(), Arc::clone(&target), Arc::clone(&state));
                            async move { pass(request, &client, &target, &state).await }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        FaultProxy {
            endpoint,
            state,
            task,
        }
    }

    /// Sets the fault every later request meets.
    pub fn set(&self, fault: Fault) {
        *self.state.only_where.lock().expect("proxy state") = None;
        *self.state.fault.lock().expect("proxy state") = fault;
    }

    /// Sets the fault that every later request whose body holds `text` meets (a throttled
    /// partition: DynamoDB throttles the requests that write one key, not the others).
    pub fn set_where(&self, text: &str, fault: Fault) {
        *self.state.only_where.lock().expect("proxy state") = Some(text.to_owned());
        *self.state.fault.lock().expect("proxy state") = fault;
    }

    /// How many requests met a fault so far.
    pub fn faulted(&self) -> u64 {
        self.state.faulted.load(Ordering::Relaxed)
    }
}

/// One request: faulted, or forwarded to `target` and its answer sent back unchanged.
async fn pass(
    request: hyper::Request<Incoming>,
    client: &reqwest::Client,
    target: &str,
    state: &State,
) -> Result<Answer, std::io::Error> {
    let (parts, body) = request.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|body| body.to_bytes())
        .unwrap_or_default();
    let mut fault = state.fault.lock().expect("proxy state").clone();
    let only_where = state.only_where.lock().expect("proxy state").clone();
    if let Some(text) = only_where {
        if !String::from_utf8_lossy(&bytes).contains(&text) {
            fault = Fault::None;
        }
    }
    if fault != Fault::None {
        state.faulted.fetch_add(1, Ordering::Relaxed);
    }
    match fault {
        Fault::Reset => {
            // An error from the service closes the connection without a response.
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "fault: reset",
            ));
        }
        Fault::Answer { status, body } => {
            let mut answer = hyper::Response::new(Full::new(Bytes::from(body)));
            *answer.status_mut() = hyper::StatusCode::from_u16(status).expect("status");
            answer.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/x-amz-json-1.0"),
            );
            return Ok(answer);
        }
        Fault::Delay(delay) => tokio::time::sleep(delay).await,
        Fault::None => {}
    }
    let path = parts.uri.path_and_query().map_or("/", |path| path.as_str());
    let mut outbound = client.request(parts.method.clone(), format!("{target}{path}"));
    for (name, value) in &parts.headers {
        if !matches!(
            name.as_str(),
            "host" | "content-length" | "transfer-encoding" | "connection"
        ) {
            outbound = outbound.header(name.as_str(), value.as_bytes());
        }
    }
    let response = outbound
        .body(bytes)
        .send()
        .await
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::ConnectionReset, error))?;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response
        .bytes()
        .await
        .map_err(|error| std::io::Error::new(std::io::ErrorKind::ConnectionReset, error))?;
    let mut answer = hyper::Response::new(Full::new(body));
    *answer.status_mut() = status;
    for (name, value) in &headers {
        if !matches!(
            name.as_str(),
            "content-length" | "transfer-encoding" | "connection"
        ) {
            answer.headers_mut().append(name, value.clone());
        }
    }
    Ok(answer)
}
