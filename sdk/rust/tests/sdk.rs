//! The Rust SDK against the real gateway (in-process, on the local emulators): every test gets
//! its own table and tenant from `forgebench_tests::spawn_app`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use forgebench_sdk::{
    CallOptions, Client, Direction, Error, ServeOptions, StopSignal, Task, TaskReply, TaskSearch,
    TaskState, API_KEY_VARIABLE, URL_VARIABLE,
};
use forgebench_tests::{spawn_app, Pair, TestApp};
use futures::StreamExt;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn client(app: &TestApp, key: &str) -> Client {
    Client::new(key, &app.base).expect("client")
}

fn clients(app: &TestApp, pair: &Pair) -> (Client, Client) {
    (client(app, &pair.caller.key), client(app, &pair.callee.key))
}

/// Serves `pair`'s callee in the background with `handler` until `stop`.
fn serve_in_background<H, F, R>(
    callee: Client,
    handler: H,
    stop: &StopSignal,
) -> tokio::task::JoinHandle<forgebench_sdk::Result<usize>>
where
    H: Fn(Task) -> F + Send + Sync + 'static,
    F: std::future::Future<Output = R> + Send,
    R: forgebench_sdk::IntoReply,
{
    let options = ServeOptions {
        wait: 1,
        stop: Some(stop.clone()),
        ..ServeOptions::default()
    };
    tokio::spawn(async move { callee.serve(handler, options).await })
}

/// The classifier of the docs' serving sample.
async fn classify(task: Task) -> TaskReply {
    match task.data().get("invoice_id").and_then(|id| id.as_str()) {
        None => task.ask("which invoice_id should I classify?"),
        Some("INV-BAD") => task.fail("no such invoice: INV-BAD"),
        Some(id) => task
            .done()
            .data(json!({"category": "software", "invoice_id": id})),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_four_loops_answers_each_of_200_tasks_exactly_once() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let opened: Vec<Task> = futures::stream::iter(0..200)
        .map(|number| {
            let caller = caller.clone();
            let callee_name = pair.callee.name.clone();
            async move {
                let options = CallOptions::new().text(format!("task-{number}"));
                caller.call(&callee_name, options).await.expect("opened")
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;

    let runs: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most_in_flight = Arc::new(AtomicUsize::new(0));
    let handler = |task: Task| {
        let (runs, in_flight, most) = (runs.clone(), in_flight.clone(), most_in_flight.clone());
        async move {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            *runs.lock().unwrap().entry(task.id.clone()).or_default() += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
            in_flight.fetch_sub(1, Ordering::SeqCst);
            format!("answer to {}", task.text())
        }
    };
    let options = ServeOptions {
        concurrency: 4,
        max_tasks: Some(200),
        wait: 2,
        stop: None,
    };
    let handled = callee.serve(handler, options).await.expect("serve");

    assert_eq!(handled, 200);
    let runs = runs.lock().unwrap().clone();
    assert_eq!(
        runs.values().sum::<usize>(),
        200,
        "the handler ran 200 times"
    );
    assert!(
        runs.values().all(|count| *count == 1),
        "no task handled twice"
    );
    let most = most_in_flight.load(Ordering::SeqCst);
    assert!((2..=4).contains(&most), "{most} handlers ran at once");
    for task in opened {
        let read = caller
            .task(&pair.callee.name, &task.id, 0)
            .await
            .expect("read");
        assert_eq!(read.state(), TaskState::Completed, "{}", task.id);
        assert_eq!(read.artifact_text(), format!("answer to {}", task.text()));
        assert_eq!(runs.get(&task.id), Some(&1));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_lets_the_tasks_in_flight_finish_then_serve_returns_their_count() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let callee_name = pair.callee.name.as_str();
    let first = caller
        .call(callee_name, CallOptions::new().text("one"))
        .await
        .unwrap();
    let second = caller
        .call(callee_name, CallOptions::new().text("two"))
        .await
        .unwrap();

    let stop = StopSignal::new();
    let started = Arc::new(AtomicUsize::new(0));
    let handler = {
        let started = started.clone();
        move |task: Task| {
            let started = started.clone();
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(700)).await;
                format!("finished {}", task.text())
            }
        }
    };
    let options = ServeOptions {
        concurrency: 2,
        wait: 1,
        stop: Some(stop.clone()),
        ..ServeOptions::default()
    };
    let serving = tokio::spawn(async move { callee.serve(handler, options).await });
    while started.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.stop();
    let after_stop = caller
        .call(callee_name, CallOptions::new().text("three"))
        .await
        .unwrap();

    let handled = tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serve returned after the stop")
        .unwrap()
        .expect("serve ended cleanly");
    assert_eq!(handled, 2);
    for (task, text) in [(first, "one"), (second, "two")] {
        let read = caller.task(callee_name, &task.id, 0).await.unwrap();
        assert_eq!(read.state(), TaskState::Completed);
        assert_eq!(read.artifact_text(), format!("finished {text}"));
    }
    let untouched = caller.task(callee_name, &after_stop.id, 0).await.unwrap();
    assert_eq!(
        untouched.state(),
        TaskState::Submitted,
        "no claim after the stop"
    );
}

/// A TCP proxy to `target` that forwards the first connection's request, waits for the first
/// bytes of its response, then drops the connection; later connections pass through. It
/// counts the connections it accepted.
async fn proxy_dropping_first_response(target: String) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        loop {
            let (inbound, _) = listener.accept().await.unwrap();
            let number = counter.fetch_add(1, Ordering::SeqCst);
            let outbound = TcpStream::connect(&target).await.unwrap();
            tokio::spawn(async move {
                if number == 0 {
                    drop_after_response_starts(inbound, outbound).await;
                } else {
                    let (mut inbound, mut outbound) = (inbound, outbound);
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
    (address, accepted)
}

async fn drop_after_response_starts(inbound: TcpStream, outbound: TcpStream) {
    let (mut from_client, _to_client) = inbound.into_split();
    let (mut from_gateway, mut to_gateway) = outbound.into_split();
    let forward = tokio::spawn(async move {
        let mut buffer = [0u8; 8192];
        while let Ok(read) = from_client.read(&mut buffer).await {
            if read == 0 || to_gateway.write_all(&buffer[..read]).await.is_err() {
                break;
            }
        }
    });
    let mut first = [0u8; 1];
    let _ = from_gateway.read(&mut first).await;
    forward.abort();
    // Both halves drop here: the client's connection closes with no response.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_retried_after_a_dropped_connection_opens_one_task() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let target = app.base.trim_start_matches("http://").to_owned();
    let (proxy, accepted) = proxy_dropping_first_response(target).await;
    let caller = Client::new(&pair.caller.key, &proxy).unwrap();

    let task = caller
        .call(&pair.callee.name, CallOptions::new().text("only once"))
        .await
        .expect("the retry was answered");

    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2,
        "the first connection dropped, then a retry"
    );
    let direct = client(&app, &pair.caller.key);
    let search = TaskSearch {
        direction: Some(Direction::Outbound),
        ..TaskSearch::default()
    };
    let page = direct.search_tasks(&search).await.unwrap();
    let ids: Vec<&str> = page.items.iter().map(|task| task.id.as_str()).collect();
    assert_eq!(ids, vec![task.id.as_str()], "exactly one task exists");
    assert_eq!(page.items[0].text(), "only once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_wait_returns_the_completed_answer() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let stop = StopSignal::new();
    let serving = serve_in_background(callee, classify, &stop);

    let options = CallOptions::new()
        .text("Classify this invoice")
        .data(json!({"invoice_id": "INV-2026-0912"}))
        .wait(10);
    let task = caller.call(&pair.callee.id, options).await.unwrap();

    assert_eq!(task.state(), TaskState::Completed);
    let response = &task.artifacts[0];
    assert_eq!(response.name.as_deref(), Some("response"));
    assert_eq!(
        response.parts,
        vec![forgebench_sdk::Part::Data(
            json!({"category": "software", "invoice_id": "INV-2026-0912"})
        )]
    );
    assert!(task.call_id().is_some());
    stop.stop();
    assert_eq!(serving.await.unwrap().unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_task_is_continued_by_its_context_id() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let stop = StopSignal::new();
    let serving = serve_in_background(callee, classify, &stop);
    let callee_name = pair.callee.name.as_str();

    let asked = caller
        .call(
            callee_name,
            CallOptions::new().text("Classify this invoice").wait(10),
        )
        .await
        .unwrap();
    assert_eq!(asked.state(), TaskState::InputRequired);
    assert_eq!(
        asked.question().as_deref(),
        Some("which invoice_id should I classify?")
    );

    let options = CallOptions::new()
        .data(json!({"invoice_id": "INV-7"}))
        .context_id(asked.context_id())
        .wait(10);
    let answered = caller.call(callee_name, options).await.unwrap();
    assert_eq!(answered.state(), TaskState::Completed);
    assert_eq!(answered.context_id(), asked.context_id());
    assert_ne!(answered.id, asked.id);
    assert_eq!(answered.question(), None);
    stop.stop();
    assert_eq!(serving.await.unwrap().unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_reply_and_a_handler_error_reach_the_caller_as_the_task_error() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let stop = StopSignal::new();
    let handler = |task: Task| async move {
        if task.text() == "raise" {
            return Err(format!("handler error on {}", task.text()));
        }
        Ok(classify(task).await)
    };
    let serving = serve_in_background(callee, handler, &stop);
    let callee_name = pair.callee.name.as_str();

    let bad = CallOptions::new()
        .data(json!({"invoice_id": "INV-BAD"}))
        .wait(10);
    let failed = caller.call(callee_name, bad).await.unwrap();
    assert_eq!(failed.state(), TaskState::Failed);
    assert_eq!(failed.error(), Some("no such invoice: INV-BAD"));

    let raised = caller
        .call(callee_name, CallOptions::new().text("raise").wait(10))
        .await
        .unwrap();
    assert_eq!(raised.state(), TaskState::Failed);
    assert_eq!(raised.error(), Some("handler error on raise"));
    stop.stop();
    assert_eq!(serving.await.unwrap().unwrap(), 2);
}

#[tokio::test]
async fn a_call_without_a_binding_is_permission_denied_with_the_documented_body() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let caller = client(&app, &stranger.key);

    let error = caller
        .call(&pair.callee.name, CallOptions::new().text("hello"))
        .await
        .unwrap_err();

    let Error::PermissionDenied(body) = &error else {
        panic!("expected PermissionDenied, got {error:?}");
    };
    assert_eq!(body.status, 403);
    assert_eq!(
        body.body,
        json!({"detail": {"code": "not_permitted", "message": "not permitted to call that agent"}})
    );
    assert_eq!(error.code(), Some("not_permitted"));
}

#[tokio::test]
async fn an_unknown_key_is_unauthenticated() {
    let app = spawn_app().await;
    let error = client(&app, "fb_agt_unknown").me().await.unwrap_err();
    assert!(matches!(error, Error::Unauthenticated(_)), "{error:?}");
    assert_eq!(error.code(), Some("unauthenticated"));
}

#[tokio::test]
async fn a_task_is_read_and_canceled_and_canceling_it_again_is_no_error() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, _) = clients(&app, &pair);
    let callee_name = pair.callee.name.as_str();
    let task = caller
        .call(callee_name, CallOptions::new().text("cancel me"))
        .await
        .unwrap();

    let read = caller.task(&pair.callee.id, &task.id, 0).await.unwrap();
    assert_eq!(read.state(), TaskState::Submitted);
    assert_eq!(read.text(), "cancel me");
    let canceled = caller.cancel(callee_name, &task.id).await.unwrap();
    assert_eq!(canceled.state(), TaskState::Canceled);
    let again = caller.cancel(callee_name, &task.id).await.unwrap();
    assert_eq!(again.state(), TaskState::Canceled);

    let missing = caller
        .task(callee_name, "no-such-task", 0)
        .await
        .unwrap_err();
    let Error::NotFound(body) = &missing else {
        panic!("expected NotFound, got {missing:?}");
    };
    assert_eq!(body.body, json!({"detail": "task not found"}));
    // The exact body names no request id; the response's header does.
    let request_id = missing
        .request_id()
        .expect("the X-Request-Id of the refusal");
    assert!(uuid::Uuid::parse_str(request_id).is_ok(), "{request_id}");
}

#[tokio::test]
async fn a_reply_to_a_task_canceled_meanwhile_is_a_conflict_naming_its_state() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let task = caller
        .call(&pair.callee.name, CallOptions::new().text("x"))
        .await
        .unwrap();
    let claimed = callee.next_task(5).await.unwrap().expect("a task to claim");
    assert_eq!(claimed.id, task.id);
    assert_eq!(claimed.state(), TaskState::Working);
    caller.cancel(&pair.callee.name, &task.id).await.unwrap();

    let error = callee.reply(&claimed.id, "too late").await.unwrap_err();

    let Error::Conflict(body) = &error else {
        panic!("expected Conflict, got {error:?}");
    };
    assert_eq!(
        body.body,
        json!({"detail": {"code": "task_not_working", "state": "canceled"}})
    );
    assert_eq!(body.state(), Some("canceled"));
}

#[tokio::test]
async fn a_pull_reply_that_says_working_is_unprocessable_and_a_manual_reply_returns_the_task() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let task = caller
        .call(&pair.callee.name, CallOptions::new().text("x"))
        .await
        .unwrap();
    let claimed = callee.next_task(5).await.unwrap().expect("claimed");

    let working = TaskReply {
        state: TaskState::Working,
        ..TaskReply::done()
    };
    let error = callee.reply(&claimed.id, working).await.unwrap_err();
    assert!(matches!(error, Error::Unprocessable(_)), "{error:?}");

    let answered = callee
        .reply(&claimed.id, claimed.done().text("done"))
        .await
        .unwrap();
    assert_eq!(answered.id, task.id);
    assert_eq!(answered.state(), TaskState::Completed);
    assert_eq!(answered.artifact_text(), "done");
    assert!(
        callee.next_task(0).await.unwrap().is_none(),
        "nothing left to claim"
    );
}

#[tokio::test]
async fn a_search_finds_tasks_by_state_and_words() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (caller, callee) = clients(&app, &pair);
    let callee_name = pair.callee.name.as_str();
    let refund = caller
        .call(callee_name, CallOptions::new().text("refund order 4182"))
        .await
        .unwrap();
    let other = caller
        .call(callee_name, CallOptions::new().text("classify invoice"))
        .await
        .unwrap();
    caller.cancel(callee_name, &other.id).await.unwrap();

    let by_word = TaskSearch {
        q: Some("refund".into()),
        ..TaskSearch::default()
    };
    let found = callee.search_tasks(&by_word).await.unwrap();
    assert_eq!(
        found.items.iter().map(|t| &t.id).collect::<Vec<_>>(),
        vec![&refund.id]
    );
    let by_state = TaskSearch {
        state: Some(TaskState::Canceled),
        direction: Some(Direction::Outbound),
        ..TaskSearch::default()
    };
    let canceled = caller.search_tasks(&by_state).await.unwrap();
    assert_eq!(
        canceled.items.iter().map(|t| &t.id).collect::<Vec<_>>(),
        vec![&other.id]
    );
    assert_eq!(canceled.next_cursor, None);
}

#[tokio::test]
async fn a_binding_granted_by_a_member_waits_for_the_callee_owner_to_approve_it() {
    let app = spawn_app().await;
    let operator = client(&app, &app.operator_key);
    let tenant = operator.create_tenant("acme").await.unwrap();
    let admin = client(&app, tenant.admin_key.expose());
    let member = admin.create_member("pat", "member").await.unwrap();
    let member = client(&app, member.key.expose());
    let caller = member
        .create_agent("billing-orchestrator", None, None)
        .await
        .unwrap();
    let callee = admin
        .create_agent("invoice-classifier", Some("classifies"), None)
        .await
        .unwrap();

    let granted = member
        .grant(&caller.id, &[callee.name.as_str()])
        .await
        .unwrap();
    assert_eq!(granted.len(), 1);
    assert_eq!(
        granted[0].approved_at, None,
        "pending: the member does not speak for the callee"
    );
    let key = member.issue_key(&caller.name).await.unwrap();
    let calling = client(&app, key.key.expose());
    let refused = calling
        .call(&callee.name, CallOptions::new().text("hi"))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::PermissionDenied(_)));

    let approved = admin.approve(&callee.name, &granted[0].id).await.unwrap();
    assert!(approved.approved_at.is_some());
    let listed = admin.bindings(&callee.id).await.unwrap();
    assert_eq!(listed.inbound.len(), 1);
    assert!(calling
        .call(&callee.name, CallOptions::new().text("hi"))
        .await
        .is_ok());

    let revoked = member
        .revoke_binding(&caller.name, &granted[0].id)
        .await
        .unwrap();
    assert!(revoked.revoked);
    let keys = member.list_keys(&caller.name).await.unwrap();
    assert_eq!(keys.items.len(), 1);
    assert!(
        !keys.items[0].to_string().contains(key.key.expose()),
        "a listing never shows a key"
    );
}

/// The tests that change this process's variables take this lock (nextest runs each test in a
/// process of its own; `cargo test` runs them as threads of one).
static ENVIRONMENT: Mutex<()> = Mutex::new(());

/// Sets (`Some`) or removes (`None`) variables, and puts back what was there when dropped.
struct Variables(Vec<(&'static str, Option<String>)>);

impl Variables {
    fn set(values: &[(&'static str, Option<&str>)]) -> Variables {
        let saved = values
            .iter()
            .map(|(name, _)| (*name, std::env::var(name).ok()))
            .collect();
        for (name, value) in values {
            match value {
                Some(value) => std::env::set_var(name, value),
                None => std::env::remove_var(name),
            }
        }
        Variables(saved)
    }
}

impl Drop for Variables {
    fn drop(&mut self) {
        for (name, value) in &self.0 {
            match value {
                Some(value) => std::env::set_var(name, value),
                None => std::env::remove_var(name),
            }
        }
    }
}

/// A throwaway HTTP server on 127.0.0.1, on a thread of its own: it answers every request with
/// `body` and records each request's head.
fn recording_server(body: serde_json::Value) -> (String, Arc<Mutex<Vec<String>>>) {
    use std::io::{Read, Write};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let heads = Arc::new(Mutex::new(Vec::new()));
    let recorded = heads.clone();
    let body = body.to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && matches!(stream.read(&mut byte), Ok(1)) {
                head.push(byte[0]);
            }
            recorded
                .lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).into_owned());
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (url, heads)
}

#[test]
fn a_client_from_the_environment_sends_its_key_to_forgebench_url_and_nowhere_else() {
    let _environment = ENVIRONMENT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let (url, heads) = recording_server(
        json!({"id": "a-env", "name": "agent-of-the-env-key", "status": "active"}),
    );
    let key = format!("fb_agt_{}", "5".repeat(64));
    let variables = Variables::set(&[
        (URL_VARIABLE, Some(&format!("{url}/"))),
        (API_KEY_VARIABLE, Some(&key)),
    ]);
    let client = Client::from_env().expect("a client from the environment");
    drop(variables);
    assert_eq!(client.base_url(), url);

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let me = runtime.block_on(client.me()).expect("the server's answer");

    assert_eq!(
        me.name, "agent-of-the-env-key",
        "the answer came from that server"
    );
    let heads = heads.lock().unwrap().clone();
    assert_eq!(heads.len(), 1, "one request, to that server");
    let head = heads[0].to_ascii_lowercase();
    assert!(head.starts_with("get /v1/agents/me http/1.1\r\n"), "{head}");
    let host = url.trim_start_matches("http://");
    assert!(head.contains(&format!("\r\nhost: {host}\r\n")), "{head}");
    assert!(
        head.contains(&format!("\r\nauthorization: bearer {key}\r\n")),
        "the request carries the key from FORGEBENCH_API_KEY"
    );
}

#[test]
fn with_no_url_anywhere_making_a_client_fails_and_sends_nothing() {
    let _environment = ENVIRONMENT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let key = format!("fb_agt_{}", "6".repeat(64));
    let _variables = Variables::set(&[(API_KEY_VARIABLE, Some(&key)), (URL_VARIABLE, None)]);

    let error = Client::from_env().unwrap_err();
    assert!(matches!(error, Error::InvalidArgument(_)), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(URL_VARIABLE), "{message}");
    assert!(!message.contains(&key), "the error never shows the key");

    let _empty = Variables::set(&[(URL_VARIABLE, Some(""))]);
    assert!(matches!(
        Client::from_env().unwrap_err(),
        Error::InvalidArgument(_)
    ));
    assert!(matches!(
        Client::builder().api_key(&key).build().unwrap_err(),
        Error::InvalidArgument(_)
    ));
    assert!(matches!(
        Client::new(&key, "").unwrap_err(),
        Error::InvalidArgument(_)
    ));
}
