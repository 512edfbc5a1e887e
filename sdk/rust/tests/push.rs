//! `push`: the handler `serve` takes, served as a push endpoint ([`PushEndpoint`]) over a real
//! HTTP server on loopback, answering real signed deliveries of the gateway (in-process, on the
//! local emulators).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use ed25519_dalek::{Signer, SigningKey};
use forgebench_sdk::webhooks::{fetch_jwks, verify_delivery, Expected, WebhookCheck};
use forgebench_sdk::{
    CallOptions, Client, IntoReply, JwksSource, Part, PushEndpoint, PushOptions, ServeOptions,
    SigningKeyPurpose, Task, TaskReply, TaskState, DEFAULT_JWKS_REFRESH_COOLDOWN,
};
use forgebench_tests::{spawn_app_with, Options, Pair, TestApp};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// One request the endpoint's server received, and the status it answered.
#[derive(Debug, Clone)]
struct Exchange {
    headers: http::HeaderMap,
    body: Vec<u8>,
    status: u16,
}

impl Exchange {
    fn webhook_id(&self) -> String {
        self.headers["webhook-id"].to_str().unwrap().to_owned()
    }
}

/// A real HTTP server on loopback whose every request goes to a [`PushEndpoint`].
struct Server {
    url: String,
    log: Arc<Mutex<Vec<Exchange>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Server {
    /// Binds a free port; `endpoint` makes the adapter for the server's URL.
    async fn start<H, F, R>(endpoint: impl FnOnce(&str) -> PushEndpoint<H>) -> Server
    where
        H: Fn(Task) -> F + Send + Sync + 'static,
        F: Future<Output = R> + Send + 'static,
        R: IntoReply + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://127.0.0.1:{}/a2a",
            listener.local_addr().unwrap().port()
        );
        let endpoint = Arc::new(endpoint(&url));
        let log: Arc<Mutex<Vec<Exchange>>> = Arc::default();
        let held = Arc::clone(&log);
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (endpoint, log) = (Arc::clone(&endpoint), Arc::clone(&held));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(
                        move |request: hyper::Request<hyper::body::Incoming>| {
                            let (endpoint, log) = (Arc::clone(&endpoint), Arc::clone(&log));
                            async move {
                                let (parts, body) = request.into_parts();
                                let body = body.collect().await.unwrap().to_bytes();
                                // Kept to send again: without the framing headers.
                                let mut headers = parts.headers.clone();
                                headers.remove(http::header::CONTENT_LENGTH);
                                headers.remove(http::header::HOST);
                                let request = http::Request::from_parts(parts, body.clone());
                                let response = endpoint.handle(request).await;
                                log.lock().unwrap().push(Exchange {
                                    headers,
                                    body: body.to_vec(),
                                    status: response.status().as_u16(),
                                });
                                Ok::<_, std::convert::Infallible>(response.map(|body| {
                                    http_body_util::Full::new(hyper::body::Bytes::from(body))
                                }))
                            }
                        },
                    );
                    let _closed = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Server { url, log, task }
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap().clone()
    }

    fn statuses(&self) -> Vec<u16> {
        self.exchanges()
            .iter()
            .map(|exchange| exchange.status)
            .collect()
    }
}

/// The handler, as it would be given to `serve`: the invoice named in the text, a failure, or a
/// question back.
async fn classify(task: Task) -> TaskReply {
    let text = newest_text(&task);
    if let Some(invoice_id) = text.strip_prefix("invoice ") {
        return task
            .done()
            .data(json!({"category": "software", "invoice_id": invoice_id}));
    }
    if text == "unknown invoice" {
        return task.fail("no such invoice");
    }
    task.ask("which invoice?")
}

/// The caller's newest message, as under `serve`: the last `user` message of the history (the
/// answer to a question), else the opening one.
fn newest_text(task: &Task) -> String {
    let history = task.history.as_deref().unwrap_or_default();
    match history.iter().rev().find(|message| message.role == "user") {
        Some(message) => message.text(),
        None => task.text(),
    }
}

/// `classify`, counting its runs and keeping the last task it got.
fn counted(
    calls: &Arc<AtomicUsize>,
) -> impl Fn(Task) -> futures::future::BoxFuture<'static, TaskReply> + Send + Sync + 'static {
    let calls = Arc::clone(calls);
    move |task| {
        calls.fetch_add(1, Ordering::SeqCst);
        *LAST_TASK.lock().unwrap() = Some(task.clone());
        Box::pin(classify(task))
    }
}

/// The task `counted` handlers got last (tests run in processes of their own under nextest).
static LAST_TASK: Mutex<Option<Task>> = Mutex::new(None);

fn client(app: &TestApp, key: &str) -> Client {
    Client::new(key, &app.base).unwrap()
}

/// A gateway allowing loopback endpoints, a caller bound to a callee, and the callee's push
/// endpoint served by `handler` with `options` changed by `change`.
async fn pushed<H, F, R>(
    app: &TestApp,
    pair: &Pair,
    handler: H,
    change: impl FnOnce(&mut PushOptions),
) -> Server
where
    H: Fn(Task) -> F + Send + Sync + 'static,
    F: Future<Output = R> + Send + 'static,
    R: IntoReply + Send + 'static,
{
    let callee = client(app, &pair.callee.key);
    let options = PushOptions::for_agent("unset", callee).await.unwrap();
    assert_eq!(options.agent_id, pair.callee.id);
    let server = Server::start(|url| {
        let mut options = PushOptions {
            endpoint_url: url.to_owned(),
            ..options
        };
        change(&mut options);
        PushEndpoint::new(handler, options)
    })
    .await;
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": server.url}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    server
}

async fn gateway() -> (TestApp, Pair) {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    (app, pair)
}

/// Opens a task on `pair`'s callee, waiting up to 10 s for its answer.
async fn open(caller: &Client, pair: &Pair, text: &str) -> Task {
    let options = CallOptions::new().text(text).wait(10);
    caller.call(&pair.callee.name, options).await.unwrap()
}

fn data_of(task: &Task) -> Value {
    match &task.artifacts[0].parts[0] {
        Part::Data(data) => data.clone(),
        other => panic!("not a data part: {other:?}"),
    }
}

#[tokio::test]
async fn one_handler_answers_a_pushed_task_through_the_endpoint_and_a_pulled_one_through_serve() {
    let (app, pair) = gateway().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let server = pushed(&app, &pair, counted(&calls), |_| {}).await;
    let caller = client(&app, &pair.caller.key);

    let task = open(&caller, &pair, "invoice INV-1").await;
    assert_eq!(task.state(), TaskState::Completed, "{task:?}");
    assert_eq!(
        data_of(&task),
        json!({"category": "software", "invoice_id": "INV-1"})
    );
    assert_eq!(task.artifacts[0].name.as_deref(), Some("response"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(server.statuses(), [200]);
    let delivery: Value = serde_json::from_slice(&server.exchanges()[0].body).unwrap();
    assert_eq!(delivery["task_id"], task.id.as_str());
    // The handler got the task as `serve` claims it, read from the gateway.
    let got = LAST_TASK.lock().unwrap().clone().unwrap();
    assert_eq!(got.id, task.id);
    assert_eq!(got.context_id, task.context_id);
    assert!(!got.context_id.is_empty());
    assert_eq!(
        got.caller_agent_id.as_deref(),
        Some(pair.caller.id.as_str())
    );
    assert_eq!(got.text(), "invoice INV-1");

    // The same handler, pulled: a callee with no endpoint, served by `serve`.
    let pulled = app.pair().await;
    let serving = {
        let callee = client(&app, &pulled.callee.key);
        let handler = counted(&calls);
        let options = ServeOptions {
            max_tasks: Some(1),
            wait: 1,
            ..ServeOptions::default()
        };
        tokio::spawn(async move { callee.serve(handler, options).await })
    };
    let task = open(&client(&app, &pulled.caller.key), &pulled, "invoice INV-1").await;
    assert_eq!(task.state(), TaskState::Completed, "{task:?}");
    assert_eq!(
        data_of(&task),
        json!({"category": "software", "invoice_id": "INV-1"})
    );
    assert_eq!(serving.await.unwrap().unwrap(), 1);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(server.statuses(), [200], "the pulled task was not pushed");
}

#[tokio::test]
async fn a_question_then_the_callers_answer_is_a_second_delivery_the_handler_completes() {
    let (app, pair) = gateway().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let server = pushed(&app, &pair, counted(&calls), |_| {}).await;
    let caller = client(&app, &pair.caller.key);

    let asked = open(&caller, &pair, "Classify").await;
    assert_eq!(asked.state(), TaskState::InputRequired, "{asked:?}");
    assert_eq!(asked.question().as_deref(), Some("which invoice?"));

    caller
        .answer(&pair.callee.name, &asked.id, "invoice INV-2")
        .await
        .unwrap();
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &asked.id)
        .await;
    let task: Task = serde_json::from_value(settled.body).unwrap();
    assert_eq!(task.state(), TaskState::Completed, "{task:?}");
    assert_eq!(data_of(&task)["invoice_id"], "INV-2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // The second delivery's task: the opening message, the question, then the answer.
    let got = LAST_TASK.lock().unwrap().clone().unwrap();
    assert_eq!(got.text(), "Classify");
    let history: Vec<String> = got.history.unwrap().iter().map(|m| m.text()).collect();
    assert_eq!(history, ["Classify", "which invoice?", "invoice INV-2"]);
    let exchanges = server.exchanges();
    assert_eq!(server.statuses(), [200, 200]);
    assert_ne!(exchanges[0].webhook_id(), exchanges[1].webhook_id());
}

#[tokio::test]
async fn a_fail_reply_fails_the_task_with_its_error() {
    let (app, pair) = gateway().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let server = pushed(&app, &pair, counted(&calls), |_| {}).await;
    let caller = client(&app, &pair.caller.key);

    let task = open(&caller, &pair, "unknown invoice").await;
    assert_eq!(task.state(), TaskState::Failed, "{task:?}");
    assert_eq!(task.error(), Some("no such invoice"));
    assert_eq!(server.statuses(), [200]);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn forged_tampered_misdirected_and_replayed_deliveries_get_401_and_never_run_the_handler() {
    let (app, pair) = gateway().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let server = pushed(&app, &pair, counted(&calls), |_| {}).await;
    let caller = client(&app, &pair.caller.key);
    let task = open(&caller, &pair, "invoice INV-3").await;
    assert_eq!(task.state(), TaskState::Completed, "{task:?}");
    let genuine = server.exchanges().remove(0);
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let web = reqwest::Client::new();
    let post = |headers: http::HeaderMap, body: Vec<u8>| {
        let request = web.post(&server.url).headers(headers).body(body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let body: Value = response.json().await.unwrap();
            (status, body)
        }
    };
    let mut json_only = http::HeaderMap::new();
    json_only.insert("content-type", "application/json".parse().unwrap());

    // replayed as it came: every check passes but the replay check
    let (status, body) = post(genuine.headers.clone(), genuine.body.clone()).await;
    assert_eq!(
        (status, body["check"].as_str()),
        (401, Some("replay")),
        "{body}"
    );
    // unsigned
    let (status, body) = post(json_only.clone(), genuine.body.clone()).await;
    assert_eq!(
        (status, body["check"].as_str()),
        (401, Some("timestamp")),
        "{body}"
    );
    // signed by a key the gateway never published, with fresh headers
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    let forger = SigningKey::from_bytes(&seed);
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let forged_body = String::from_utf8(genuine.body.clone())
        .unwrap()
        .replace("INV-3", "INV-666")
        .into_bytes();
    let mut signed = format!("msg_forged.{now}.").into_bytes();
    signed.extend_from_slice(&forged_body);
    let mut forged = json_only.clone();
    forged.insert("webhook-id", "msg_forged".parse().unwrap());
    forged.insert("webhook-timestamp", now.to_string().parse().unwrap());
    let signature = format!("v1a,{}", STANDARD.encode(forger.sign(&signed).to_bytes()));
    forged.insert("webhook-signature", signature.parse().unwrap());
    let (status, body) = post(forged, forged_body.clone()).await;
    assert_eq!(
        (status, body["check"].as_str()),
        (401, Some("signature")),
        "{body}"
    );
    // the genuine signature over another body, under a new id
    let mut tampered = genuine.headers.clone();
    tampered.insert("webhook-id", "msg_tampered".parse().unwrap());
    let (status, body) = post(tampered, genuine.body.clone()).await;
    assert_eq!(
        (status, body["check"].as_str()),
        (401, Some("signature")),
        "{body}"
    );
    let (status, body) = post(genuine.headers.clone(), forged_body).await;
    assert_eq!(status, 401, "{body}");
    // not a POST
    let status = web.get(&server.url).send().await.unwrap().status();
    assert_eq!(status.as_u16(), 405);

    // A genuine delivery forwarded to another endpoint (its own JWKS and replay cache): the
    // destination check refuses it.
    let misdirected = Arc::new(AtomicUsize::new(0));
    let elsewhere = PushEndpoint::new(
        counted(&misdirected),
        PushOptions::new(
            server.url.replace("127.0.0.1", "localhost"),
            &pair.callee.id,
            client(&app, &pair.callee.key),
        ),
    );
    let response = elsewhere
        .handle_delivery(&genuine.headers, &genuine.body)
        .await;
    assert_eq!(response.status().as_u16(), 401);
    let body: Value = serde_json::from_str(response.body()).unwrap();
    assert_eq!(body["check"], "destination", "{body}");
    assert_eq!(misdirected.load(Ordering::SeqCst), 0);

    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the handler ran on a refused delivery"
    );
    assert_eq!(server.statuses(), [200, 401, 401, 401, 401, 401, 405]);
    let read = caller.task(&pair.callee.name, &task.id, 0).await.unwrap();
    assert_eq!(data_of(&read)["invoice_id"], "INV-3");
}

#[tokio::test]
async fn a_handler_that_panics_is_answered_500_and_the_gateways_retry_is_handled() {
    let (app, pair) = gateway().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&calls);
    let handler = move |task: Task| {
        let first = counter.fetch_add(1, Ordering::SeqCst) == 0;
        async move {
            assert!(!first, "the handler's first run fails");
            classify(task).await
        }
    };
    let server = pushed(&app, &pair, handler, |_| {}).await;
    let caller = client(&app, &pair.caller.key);

    let task = open(&caller, &pair, "invoice INV-4").await;
    let task = if task.state().is_final() {
        task
    } else {
        let settled = app
            .settled(&pair.caller.key, &pair.callee.name, &task.id)
            .await;
        serde_json::from_value(settled.body).unwrap()
    };
    assert_eq!(task.state(), TaskState::Completed, "{task:?}");
    assert_eq!(data_of(&task)["invoice_id"], "INV-4");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let exchanges = server.exchanges();
    assert_eq!(server.statuses(), [500, 200]);
    assert_eq!(exchanges[0].webhook_id(), exchanges[1].webhook_id());
}

#[tokio::test]
async fn a_rotated_webhook_signing_key_is_fetched_when_no_cached_key_verifies() {
    let app = spawn_app_with(Options {
        signing_key_lifetime: Duration::ZERO,
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let calls = Arc::new(AtomicUsize::new(0));
    let server = pushed(&app, &pair, counted(&calls), |options| {
        assert_eq!(options.jwks_refresh_cooldown, DEFAULT_JWKS_REFRESH_COOLDOWN);
        options.jwks_refresh_cooldown = Duration::ZERO;
    })
    .await;
    let caller = client(&app, &pair.caller.key);
    let operator = client(&app, &app.operator_key);

    let first = open(&caller, &pair, "invoice INV-5").await;
    assert_eq!(first.state(), TaskState::Completed, "{first:?}");
    let before = fetch_jwks(&reqwest::Client::new(), &app.base, &pair.callee.key)
        .await
        .unwrap();
    operator
        .rotate_signing_key(Some(SigningKeyPurpose::WebhookSigning))
        .await
        .unwrap();
    let second = open(&caller, &pair, "invoice INV-6").await;
    assert_eq!(second.state(), TaskState::Completed, "{second:?}");
    assert_eq!(data_of(&second)["invoice_id"], "INV-6");
    assert_eq!(server.statuses(), [200, 200]);

    // The second delivery was signed with a key the JWKS cached before the rotation lacks.
    let exchanges = server.exchanges();
    let me = Expected {
        url: &server.url,
        agent_id: &pair.callee.id,
    };
    let check = |jwks: &Value| {
        verify_delivery(
            &exchanges[1].headers,
            &exchanges[1].body,
            jwks,
            &me,
            Duration::from_secs(300),
            SystemTime::now(),
            None,
        )
    };
    assert_eq!(check(&before).unwrap_err().check(), WebhookCheck::Signature);
    let after = fetch_jwks(&reqwest::Client::new(), &app.base, &pair.callee.key)
        .await
        .unwrap();
    assert!(check(&after).is_ok());
}

#[tokio::test]
async fn a_jwks_that_cannot_be_fetched_is_answered_503_to_be_tried_again() {
    let unreachable = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", unreachable.local_addr().unwrap());
    drop(unreachable);
    let client = Client::builder()
        .api_key("fb_agent_key")
        .base_url(base)
        .max_retries(0)
        .build()
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let endpoint = PushEndpoint::new(
        counted(&calls),
        PushOptions::new("https://me.example/a2a", "agent-1", client),
    );
    let request = http::Request::post("/a2a").body(b"{}".to_vec()).unwrap();
    let response = endpoint.handle(request).await;
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "5");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

/// Deliveries signed here, verified with a fixed JWKS: what the endpoint answers for each reply.
#[tokio::test]
async fn each_reply_is_answered_as_the_taskresultin_the_pull_path_posts() {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    let key = SigningKey::from_bytes(&seed);
    let jwks = json!({"keys": [{
        "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "kid": "k1",
        "purpose": "webhook-signing", "x": URL_SAFE_NO_PAD.encode(key.verifying_key().as_bytes()),
    }]});
    let url = "https://me.example/a2a";
    let deliver = |id: &str, text: &str| {
        let body = json!({
            "task_id": "task-1", "call_id": "call-1",
            "message": {"role": "user", "parts": [{"text": text}]},
            "destination": {"tenant_id": "tenant-1", "agent_id": "agent-1", "url": url},
        })
        .to_string();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let signature = key.sign(format!("{id}.{now}.{body}").as_bytes());
        http::Request::post("/a2a")
            .header("webhook-id", id)
            .header("webhook-timestamp", now.to_string())
            .header(
                "webhook-signature",
                format!("v1a,{}", STANDARD.encode(signature.to_bytes())),
            )
            .body(body)
            .unwrap()
    };
    let options = |replay| PushOptions {
        jwks: JwksSource::Fixed(jwks.clone()),
        replay,
        ..PushOptions::new(
            url,
            "agent-1",
            Client::new("fb_unused", "http://127.0.0.1:9").unwrap(),
        )
    };
    let endpoint = PushEndpoint::new(
        |task: Task| async move {
            match task.text().as_str() {
                "later" => TaskReply::working(),
                "err" => Err::<String, _>("it broke").into_reply(),
                text => task.ask(format!("{text}?")),
            }
        },
        options(Some(Arc::default())),
    );
    for (id, text, expected) in [
        ("msg_1", "later", json!({"state": "working"})),
        (
            "msg_2",
            "err",
            json!({"state": "failed", "error": "it broke"}),
        ),
    ] {
        let response = endpoint.handle(deliver(id, text)).await;
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.headers()["content-type"], "application/json");
        let body: Value = serde_json::from_str(response.body()).unwrap();
        assert_eq!(body, expected);
    }
    let response = endpoint.handle(deliver("msg_3", "which")).await;
    let body: Value = serde_json::from_str(response.body()).unwrap();
    assert_eq!(body["state"], "input_required");
    assert_eq!(body["message"]["parts"], json!([{"text": "which?"}]));
    assert_eq!(body["message"]["role"], "agent");
    let again = endpoint.handle(deliver("msg_3", "which")).await;
    assert_eq!(again.status().as_u16(), 401);

    // Without a replay cache a repeated id is let through.
    let open = PushEndpoint::new(|_task: Task| async {}, options(None));
    for _ in 0..2 {
        let response = open.handle(deliver("msg_4", "x")).await;
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.body(), r#"{"state":"completed"}"#);
    }
}

mod otel;

/// An application with OpenTelemetry: its push handler runs in the trace of the delivery, under
/// the span its POST names, which is in the trace of the span the task was opened in.
#[tokio::test]
async fn the_handler_runs_in_the_trace_of_the_delivery() {
    otel::instrument();
    let (app, pair) = gateway().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = {
        let seen = Arc::clone(&seen);
        move |task: Task| {
            seen.lock().unwrap().push(otel::current_ids());
            async move { task.done().text("traced") }
        }
    };
    let server = pushed(&app, &pair, handler, |_| {}).await;
    let caller = client(&app, &pair.caller.key);
    let (task, planned) = otel::in_span(open(&caller, &pair, "traced")).await;
    assert_eq!(task.state(), TaskState::Completed, "{task:?}");
    let delivered = server.exchanges()[0].headers["traceparent"]
        .to_str()
        .unwrap()
        .to_owned();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, [otel::ids(Some(&delivered))], "under the POST's span");
    assert_eq!(seen[0].0, planned.0, "in the caller's trace");
    let (_, task_span) = otel::ids(task.traceparent.as_deref());
    assert_ne!(
        seen[0].1, task_span,
        "the POST's own span, under the task's"
    );
}
