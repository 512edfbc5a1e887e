//! The [`Callee`]: a real HTTP server on loopback standing in for an agent's push endpoint, which
//! answers each request as its script says ([`Answer`]) and keeps what it was sent ([`Received`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One request a test callee received.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    pub raw_body: Vec<u8>,
    pub at: std::time::Instant,
}

/// What a test callee answers: status, content type, body, and how long to wait first.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: &'static str,
    pub body: String,
    pub delay: Duration,
    pub retry_after: Option<u64>,
}

impl Answer {
    pub fn json(status: u16, body: Value) -> Answer {
        Answer {
            status,
            content_type: "application/json",
            body: body.to_string(),
            delay: Duration::ZERO,
            retry_after: None,
        }
    }

    pub fn text(status: u16, body: &str) -> Answer {
        Answer {
            status,
            content_type: "text/plain",
            body: body.to_owned(),
            delay: Duration::ZERO,
            retry_after: None,
        }
    }
}

type Script = Arc<dyn Fn(usize) -> Answer + Send + Sync>;

/// A real HTTP server on loopback standing in for a callee's push endpoint. `script(n)` decides
/// the answer to the n-th request (0-based); every request is recorded.
pub struct Callee {
    pub url: String,
    pub port: u16,
    received: Arc<std::sync::Mutex<Vec<Received>>>,
    task: JoinHandle<()>,
}

impl Drop for Callee {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Callee {
    pub async fn start(script: impl Fn(usize) -> Answer + Send + Sync + 'static) -> Callee {
        Callee::start_with_capacity(tokio::sync::Semaphore::MAX_PERMITS, script).await
    }

    /// A callee that works on at most `capacity` requests at once: a request beyond them waits
    /// for one to be answered (each taking its answer's `delay`), as a real agent's limited
    /// capacity would make it.
    pub async fn start_with_capacity(
        capacity: usize,
        script: impl Fn(usize) -> Answer + Send + Sync + 'static,
    ) -> Callee {
        let capacity = Arc::new(tokio::sync::Semaphore::new(capacity));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind callee");
        let port = listener.local_addr().expect("address").port();
        let received: Arc<std::sync::Mutex<Vec<Received>>> = Arc::default();
        let script: Script = Arc::new(script);
        let log = Arc::clone(&received);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (log, script) = (Arc::clone(&log), Arc::clone(&script));
                let capacity = Arc::clone(&capacity);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let (log, script) = (Arc::clone(&log), Arc::clone(&script));
                            let capacity = Arc::clone(&capacity);
                            answer(request, log, script, capacity)
                        },
                    );
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Callee {
            url: format!("http://127.0.0.1:{port}/a2a"),
            port,
            received,
            task,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().expect("log").clone()
    }

    /// Forgets the requests received so far (a long run's receiver keeps no history).
    pub fn forget(&self) {
        self.received.lock().expect("log").clear();
    }

    /// Waits until at least `count` requests arrived (or 15 s passed).
    pub async fn wait_for(&self, count: usize) -> Vec<Received> {
        for _ in 0..150 {
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.received()
    }
}

/// Records `request` in `log`, then answers it as `script` says, once `capacity` lets the callee
/// work on it.
async fn answer(
    request: hyper::Request<hyper::body::Incoming>,
    log: Arc<std::sync::Mutex<Vec<Received>>>,
    script: Script,
    capacity: Arc<tokio::sync::Semaphore>,
) -> Result<hyper::Response<http_body_util::Full<hyper::body::Bytes>>, std::convert::Infallible> {
    use http_body_util::BodyExt;
    let (parts, body) = request.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in parts.headers.iter() {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(name.as_str().as_bytes()),
            reqwest::header::HeaderValue::from_bytes(value.as_bytes()),
        ) {
            headers.append(name, value);
        }
    }
    let index = {
        let mut log = log.lock().expect("log");
        log.push(Received {
            headers,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            raw_body: bytes.to_vec(),
            at: std::time::Instant::now(),
        });
        log.len() - 1
    };
    let answer = script(index);
    let working = capacity.acquire().await.expect("never closed");
    tokio::time::sleep(answer.delay).await;
    drop(working);
    let mut response = hyper::Response::builder()
        .status(answer.status)
        .header("content-type", answer.content_type);
    if let Some(seconds) = answer.retry_after {
        response = response.header("retry-after", seconds.to_string());
    }
    Ok::<_, std::convert::Infallible>(
        response
            .body(http_body_util::Full::new(hyper::body::Bytes::from(
                answer.body,
            )))
            .expect("response"),
    )
}
