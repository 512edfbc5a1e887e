//! The behaviour every Forgebench SDK shares (docs/sdks.md), against a scripted local server
//! that answers what the real gateway cannot be made to answer on demand (502, 503, 429 with a
//! `Retry-After`): the default retries, what is retried for which request, the `Retry-After`
//! pause, and what an error carries.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forgebench_sdk::{Client, Error, TaskReply, DEFAULT_MAX_RETRIES};
use serde_json::{json, Value};

/// One scripted answer: status, extra headers, JSON body (`Value::Null` for none).
struct Answer {
    status: u16,
    headers: Vec<(&'static str, &'static str)>,
    body: Value,
}

fn answer(status: u16, body: Value) -> Answer {
    Answer {
        status,
        headers: Vec::new(),
        body,
    }
}

fn with_header(mut answer: Answer, name: &'static str, value: &'static str) -> Answer {
    answer.headers.push((name, value));
    answer
}

fn a_task() -> Value {
    json!({
        "id": "t1",
        "context_id": "c1",
        "status": {"state": "completed", "message": null, "timestamp": "t"},
        "artifacts": [],
        "error": null,
    })
}

/// A server on 127.0.0.1 answering with `script` in order, then its last answer again; it
/// records each request's line (`POST /path HTTP/1.1`) and when it came.
struct Scripted {
    url: String,
    received: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl Scripted {
    fn start(script: Vec<Answer>) -> Scripted {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let recorded = received.clone();
        std::thread::spawn(move || {
            for (number, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { break };
                let head = read_request(&mut stream);
                let line = head.lines().next().unwrap_or_default().to_owned();
                recorded.lock().unwrap().push((line, Instant::now()));
                let Answer {
                    status,
                    headers,
                    body,
                } = &script[number.min(script.len() - 1)];
                let text = if body.is_null() {
                    String::new()
                } else {
                    body.to_string()
                };
                let mut response = format!(
                    "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n",
                    text.len()
                );
                for (name, value) in headers {
                    response.push_str(&format!("{name}: {value}\r\n"));
                }
                response.push_str("\r\n");
                response.push_str(&text);
                let _ = stream.write_all(response.as_bytes());
            }
        });
        Scripted { url, received }
    }

    fn client(&self) -> Client {
        Client::new(format!("fb_agt_{}", "7".repeat(64)), &self.url).unwrap()
    }

    fn lines(&self) -> Vec<String> {
        let received = self.received.lock().unwrap();
        received.iter().map(|(line, _)| line.clone()).collect()
    }

    fn times(&self) -> Vec<Instant> {
        let received = self.received.lock().unwrap();
        received.iter().map(|(_, at)| *at).collect()
    }
}

/// The request's head, and its body read off the stream (by `content-length`).
fn read_request(stream: &mut std::net::TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && matches!(stream.read(&mut byte), Ok(1)) {
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    let _ = stream.read_exact(&mut body);
    head
}

#[tokio::test]
async fn by_default_a_request_is_retried_twice_half_a_second_then_a_second_apart() {
    let server = Scripted::start(vec![answer(
        503,
        json!({"detail": {"code": "unavailable", "message": "store"}}),
    )]);
    let error = server.client().task("callee", "t1", 0).await.unwrap_err();

    assert_eq!(DEFAULT_MAX_RETRIES, 2);
    assert!(
        matches!(&error, Error::Server(body) if body.status == 503),
        "{error:?}"
    );
    let times = server.times();
    assert_eq!(times.len(), 3, "{:?}", server.lines());
    let first = times[1] - times[0];
    let second = times[2] - times[1];
    // 0.5 s doubling, each give or take 25 %
    assert!(
        first >= Duration::from_millis(375) && first <= Duration::from_millis(800),
        "{first:?}"
    );
    assert!(
        second >= Duration::from_millis(750) && second <= Duration::from_millis(1400),
        "{second:?}"
    );
}

#[tokio::test]
async fn a_502_is_retried_for_a_get_but_not_for_a_post_that_is_not_safe_to_repeat() {
    let bad_gateway = || answer(502, json!("<html>502 Bad Gateway</html>"));
    let read = Scripted::start(vec![bad_gateway(), answer(200, a_task())]);
    let result = Scripted::start(vec![bad_gateway(), answer(200, a_task())]);

    let task = read
        .client()
        .task("callee", "t1", 0)
        .await
        .expect("the retry");
    let error = result
        .client()
        .reply("t1", TaskReply::done().text("done")) // no message_id
        .await
        .unwrap_err();

    assert_eq!(task.id, "t1");
    assert_eq!(read.lines().len(), 2);
    assert_eq!(error.status(), Some(502));
    assert_eq!(
        result.lines(),
        vec!["POST /v1/agents/me/tasks/t1/result HTTP/1.1"],
        "a result without message_id is sent once"
    );
}

#[tokio::test]
async fn a_504_on_a_call_is_retried_since_its_message_id_makes_it_safe_to_repeat() {
    let server = Scripted::start(vec![answer(504, Value::Null), answer(200, a_task())]);
    server
        .client()
        .call("callee", forgebench_sdk::CallOptions::new().text("hi"))
        .await
        .expect("the retry");
    assert_eq!(server.lines().len(), 2);
}

#[tokio::test]
async fn a_429_waits_its_retry_after_even_for_a_post_not_safe_to_repeat() {
    let limited = with_header(
        answer(
            429,
            json!({"detail": {"code": "too_many_requests", "message": "x"}}),
        ),
        "retry-after",
        "1.2",
    );
    let server = Scripted::start(vec![limited, answer(200, a_task())]);
    server
        .client()
        .reply("t1", TaskReply::done().text("done"))
        .await
        .expect("the retry");

    let times = server.times();
    assert_eq!(times.len(), 2);
    let pause = times[1] - times[0];
    // the backoff alone would be at most 0.625 s
    assert!(
        pause >= Duration::from_millis(1150) && pause <= Duration::from_millis(2000),
        "{pause:?}"
    );
}

#[tokio::test]
async fn a_retry_after_longer_than_30_seconds_is_not_waited_for() {
    let limited = with_header(
        answer(429, json!({"detail": {"code": "too_many_requests"}})),
        "retry-after",
        "31",
    );
    let server = Scripted::start(vec![limited, answer(200, a_task())]);
    let error = server.client().task("callee", "t1", 0).await.unwrap_err();
    assert!(matches!(error, Error::RateLimited { .. }), "{error:?}");
    assert_eq!(error.retry_after(), Some(Duration::from_secs(31)));
    assert_eq!(server.lines().len(), 1);
}

#[tokio::test]
async fn an_error_carries_status_code_and_the_request_id_of_its_body() {
    let server = Scripted::start(vec![with_header(
        answer(
            403,
            json!({"detail": {"code": "forbidden", "message": "no", "request_id": "req-body"}}),
        ),
        "x-request-id",
        "req-body",
    )]);
    let error = server.client().cancel("callee", "t1").await.unwrap_err();
    assert!(matches!(error, Error::PermissionDenied(_)), "{error:?}");
    assert_eq!(
        (error.status(), error.code(), error.request_id()),
        (Some(403), Some("forbidden"), Some("req-body"))
    );
}

#[tokio::test]
async fn a_422_is_the_unprocessable_variant_and_is_not_retried() {
    let server = Scripted::start(vec![answer(
        422,
        json!({"detail": "a pull result must be completed"}),
    )]);
    let error = server
        .client()
        .reply("t1", TaskReply::done())
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Unprocessable(_)), "{error:?}");
    assert_eq!(error.status(), Some(422));
    assert_eq!(server.lines().len(), 1);
}
