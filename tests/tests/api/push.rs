//! Push delivery against real callee HTTP servers on loopback (allowed here through the
//! operator allowlist, as for local development).

use std::time::Duration;

use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Pair, TestApp};
use serde_json::{json, Value};

const SECRET: &str = "s3cret-7f1c2b9e-never-shown";

async fn push_pair(callee: &Callee) -> (TestApp, Pair) {
    push_pair_with(callee, Options::local_push()).await
}

async fn push_pair_with(callee: &Callee, options: Options) -> (TestApp, Pair) {
    let app = spawn_app_with(options).await;
    let pair = app.pair().await;
    let reply = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": SECRET}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    (app, pair)
}

async fn open(app: &TestApp, pair: &Pair, wait: u32) -> forgebench_tests::Reply {
    let reply = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("Classify"),
            wait,
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply
}

#[tokio::test]
async fn the_endpoint_post_carries_the_documented_headers_and_body() {
    let callee = Callee::start(|_| {
        Answer::json(200, json!({"state": "completed", "artifacts": [{"name": "response", "parts": [{"text": "handled"}]}]}))
    })
    .await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 10).await;
    assert_eq!(opened.state(), "completed", "{}", opened.text);
    assert_eq!(opened.body["delivery"], "push");
    assert_eq!(opened.body["artifacts"][0]["parts"][0]["text"], "handled");

    let received = callee.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(
        request.headers["x-forgebench-task"],
        opened.field("id").as_str()
    );
    assert_eq!(
        request.headers["x-parent-call"],
        opened.field("call_id").as_str()
    );
    assert_eq!(
        request.headers["authorization"],
        format!("Bearer {SECRET}").as_str()
    );
    assert_eq!(request.headers["content-type"], "application/json");
    assert_eq!(
        request.body,
        json!({"task_id": opened.field("id"), "call_id": opened.field("call_id"),
               "message": text_message("Classify"),
               "destination": {"tenant_id": pair.tenant.id, "agent_id": pair.callee.id,
                               "url": callee.url}})
    );
}

#[tokio::test]
async fn a_named_header_carries_the_secret_instead() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = push_pair(&callee).await;
    let reply = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "header", "name": "X-Api-Key", "secret": SECRET}}),
        )
        .await;
    assert_eq!(
        reply.body["endpoint"]["auth"],
        json!({"type": "header", "name": "X-Api-Key", "configured": true})
    );
    open(&app, &pair, 10).await;
    let request = &callee.wait_for(1).await[0];
    assert_eq!(request.headers["x-api-key"], SECRET);
    assert!(request.headers.get("authorization").is_none());
}

#[tokio::test]
async fn a_json_answer_without_state_is_one_data_artifact() {
    let callee = Callee::start(|_| Answer::json(200, json!({"category": "software"}))).await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 10).await;
    assert_eq!(opened.state(), "completed");
    assert_eq!(
        opened.body["artifacts"],
        json!([{"name": "response", "parts": [{"data": {"category": "software"}}]}])
    );
}

#[tokio::test]
async fn a_plain_text_answer_is_one_text_artifact() {
    let callee = Callee::start(|_| Answer::text(200, "handled: Classify")).await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 10).await;
    assert_eq!(opened.state(), "completed");
    assert_eq!(
        opened.body["artifacts"],
        json!([{"name": "response", "parts": [{"text": "handled: Classify"}]}])
    );
}

#[tokio::test]
async fn working_means_the_callee_finishes_later_through_the_result_route() {
    let callee = Callee::start(|_| Answer::json(202, json!({"state": "working"}))).await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 0).await;
    let task_id = opened.field("id");
    callee.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "working");
    let done = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "later"}]}]}),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.state(), "completed");
    // Accepted once: it is never POSTed again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(callee.received().len(), 1);
}

#[tokio::test]
async fn transient_failures_are_retried_until_the_endpoint_answers() {
    let callee = Callee::start(|n| match n {
        0 => Answer::text(503, "busy"),
        1 => Answer::text(500, "oops"),
        _ => Answer::json(200, json!({"state": "completed"})),
    })
    .await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 0).await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    assert_eq!(callee.received().len(), 3);
    let statuses: Vec<Value> = app
        .delivery_attempts(&pair, &opened.field("id"))
        .await
        .iter()
        .map(|a| a["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(503), json!(500), json!(200)]);
}

#[tokio::test]
async fn retries_that_never_succeed_fail_the_task_with_a_delivery_error() {
    let callee = Callee::start(|_| Answer::text(502, "bad gateway")).await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 0).await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "failed");
    assert!(
        settled
            .field("error")
            .starts_with("delivery failed after 3 attempts"),
        "{}",
        settled.text
    );
    assert_eq!(callee.received().len(), 3);
    let recorded = app.delivery_attempts(&pair, &opened.field("id")).await;
    assert_eq!(recorded.len(), 3);
    assert!(recorded
        .iter()
        .all(|a| a["status"] == 502 && a["error"].is_string() && a["latency_ms"].is_u64()));
}

#[tokio::test]
async fn a_4xx_fails_the_task_at_once() {
    let callee = Callee::start(|_| Answer::text(404, "no such route")).await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 0).await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "failed");
    assert_eq!(
        settled.field("error"),
        "the endpoint refused the task: HTTP 404"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(callee.received().len(), 1);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let callee = Callee::start(|n| match n {
        0 => Answer {
            retry_after: Some(2),
            ..Answer::text(429, "slow down")
        },
        _ => Answer::json(200, json!({"state": "completed"})),
    })
    .await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 0).await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "completed");
    let received = callee.received();
    // The schedule says 0.2 s; the endpoint asked for 2 s.
    assert!(received[1].at.duration_since(received[0].at) >= Duration::from_millis(1900));
}

#[tokio::test]
async fn an_answer_after_the_caller_canceled_is_discarded() {
    let callee = Callee::start(|_| Answer {
        delay: Duration::from_millis(1500),
        ..Answer::json(200, json!({"state": "completed"}))
    })
    .await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 0).await;
    let task_id = opened.field("id");
    callee.wait_for(1).await;
    let canceled = app
        .cancel(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(canceled.state(), "canceled");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "canceled");
    assert_eq!(read.body["artifacts"], json!([]));
    assert_eq!(callee.received().len(), 1);
}

#[tokio::test]
async fn a_redelivered_message_does_not_post_a_finished_task_again() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = push_pair(&callee).await;
    let opened = open(&app, &pair, 10).await;
    assert_eq!(opened.state(), "completed");
    // SQS delivers at least once: the same message again, twice.
    app.app
        .queue
        .enqueue(&opened.field("id"), None)
        .await
        .unwrap();
    app.app
        .queue
        .enqueue(&opened.field("id"), None)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(callee.received().len(), 1);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(read.body, opened.body);
}

#[tokio::test]
async fn a_task_whose_enqueue_was_lost_is_delivered_from_the_outbox() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let proxy = forgebench_tests::Proxy::start(&forgebench_tests::moto_endpoint()).await;
    let (app, pair) = push_pair_with(
        &callee,
        Options {
            moto_endpoint: proxy.endpoint.clone(),
            push_worker: false,
            ..Options::local_push()
        },
    )
    .await;
    proxy.cut();
    let opened = open(&app, &pair, 0).await;
    proxy.restore();
    assert_eq!(opened.state(), "submitted");
    // Nothing was enqueued; the sweep finds the task on the outbox once its grace has passed.
    let later = forgebench::domain::clock::after(120);
    let enqueued = forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &later)
        .await
        .done;
    assert_eq!(enqueued, 1);
    let _worker = forgebench_local::run_push_worker(
        app.app.clone(),
        forgebench_local::PUSH_WORKER_CONCURRENCY,
    );
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "completed");
    assert_eq!(callee.received().len(), 1);
    // Delivered tasks leave the outbox.
    let again = forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &later)
        .await
        .done;
    assert_eq!(again, 0);
}

#[tokio::test]
async fn every_delivery_is_signed_and_verifies_against_the_published_keys() {
    use base64::Engine;
    use ed25519_dalek::Verifier;
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = push_pair(&callee).await;
    open(&app, &pair, 10).await;
    let request = &callee.received()[0];
    let id = request.headers["webhook-id"].to_str().unwrap().to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "a delivery id: {id}");
    let timestamp = request.headers["webhook-timestamp"]
        .to_str()
        .unwrap()
        .to_owned();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!(now.abs_diff(timestamp.parse::<u64>().unwrap()) < 60);
    let signature = request.headers["webhook-signature"].to_str().unwrap();
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature.strip_prefix("v1a,").expect("v1a scheme"))
        .unwrap();
    let signature = ed25519_dalek::Signature::from_slice(&signature).unwrap();
    let signed = [
        id.as_bytes(),
        b".",
        timestamp.as_bytes(),
        b".",
        &request.raw_body,
    ]
    .concat();

    // A callee verifies with the public JWKS: some published key verifies, and a changed body
    // fails with all of them.
    let jwks = app
        .get("/v1/billing/export/pubkey", &pair.callee.key)
        .await
        .body;
    let keys: Vec<ed25519_dalek::VerifyingKey> = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| {
            let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(key["x"].as_str().unwrap())
                .unwrap();
            ed25519_dalek::VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap()
        })
        .collect();
    assert!(keys
        .iter()
        .any(|key| key.verify(&signed, &signature).is_ok()));
    let mut tampered = signed.clone();
    *tampered.last_mut().unwrap() ^= 1;
    assert!(keys
        .iter()
        .all(|key| key.verify(&tampered, &signature).is_err()));
}

#[tokio::test]
async fn the_endpoint_secret_is_opened_once_for_many_deliveries_and_a_new_secret_afresh() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let recorder = forgebench_tests::Recorder::default();
    let options = Options {
        recorder: Some(recorder.clone()),
        ..Options::local_push()
    };
    let (app, pair) = push_pair_with(&callee, options).await;
    let opened_secrets = |recorder: &forgebench_tests::Recorder| {
        recorder
            .take()
            .iter()
            .filter(|action| *action == "kms:Decrypt@endpoint-secret")
            .count()
    };
    opened_secrets(&recorder);
    for _ in 0..3 {
        assert_eq!(open(&app, &pair, 10).await.state(), "completed");
    }
    assert_eq!(
        opened_secrets(&recorder),
        1,
        "three deliveries, one decrypt"
    );

    let changed = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": "s3cret-2-rotated"}}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    recorder.take();
    assert_eq!(open(&app, &pair, 10).await.state(), "completed");
    assert_eq!(
        opened_secrets(&recorder),
        1,
        "the new secret is opened afresh"
    );
    let authorizations: Vec<String> = callee
        .received()
        .iter()
        .map(|post| post.headers["authorization"].to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        authorizations,
        [
            format!("Bearer {SECRET}"),
            format!("Bearer {SECRET}"),
            format!("Bearer {SECRET}"),
            "Bearer s3cret-2-rotated".to_owned()
        ]
    );
}

#[tokio::test]
async fn a_secret_sealed_for_one_agent_never_opens_for_another_even_once_opened() {
    let app = spawn_app_with(Options::local_push()).await;
    let vault = &app.app.vault;
    let sealed = vault.seal("tenant-1", "agent-a", "s3cret-a").await.unwrap();
    assert_eq!(
        vault.unseal("tenant-1", "agent-a", &sealed).await.unwrap(),
        "s3cret-a"
    );
    // Opened (and kept) for agent-a; copied onto agent-b or another tenant it still goes to KMS,
    // whose encryption context refuses it.
    for (tenant, agent) in [("tenant-1", "agent-b"), ("tenant-2", "agent-a")] {
        assert!(
            matches!(
                vault.unseal(tenant, agent, &sealed).await,
                Err(forgebench::vault::VaultError::Refused)
            ),
            "{tenant}/{agent}"
        );
    }
}

/// A receiver that, like many HTTP servers, drops a kept-alive connection once it has idled a
/// few seconds: its first connection answers the first delivery with a 500 and keeps the
/// connection open, then resets it when a second request comes over it. Every other connection
/// answers `completed`. The count of requests per connection is kept.
struct IdleClosingReceiver {
    url: String,
    requests_per_connection: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
}

impl IdleClosingReceiver {
    async fn start() -> IdleClosingReceiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/deliveries", listener.local_addr().unwrap());
        let requests_per_connection: std::sync::Arc<std::sync::Mutex<Vec<usize>>> =
            std::sync::Arc::default();
        let counts = std::sync::Arc::clone(&requests_per_connection);
        tokio::spawn(async move {
            for connection in 0.. {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                counts.lock().unwrap().push(0);
                tokio::spawn(Self::serve(
                    stream,
                    connection,
                    std::sync::Arc::clone(&counts),
                ));
            }
        });
        IdleClosingReceiver {
            url,
            requests_per_connection,
        }
    }

    async fn serve(
        mut stream: tokio::net::TcpStream,
        connection: usize,
        counts: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    ) {
        use tokio::io::AsyncWriteExt;
        while read_request(&mut stream).await {
            let served = {
                let mut counts = counts.lock().unwrap();
                counts[connection] += 1;
                counts[connection]
            };
            let (status, body) = match (connection, served) {
                (0, 1) => ("500 Internal Server Error", "{}"),
                (0, _) => {
                    // Closed while idle: the request that came over it is reset unanswered.
                    let _ = stream.set_zero_linger();
                    return;
                }
                _ => ("200 OK", r#"{"state": "completed"}"#),
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            if stream.write_all(response.as_bytes()).await.is_err() {
                return;
            }
        }
    }
}

/// Reads one HTTP/1.1 request (head and `content-length` body); false when the peer closed.
async fn read_request(stream: &mut tokio::net::TcpStream) -> bool {
    use tokio::io::AsyncReadExt;
    let mut received = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let Ok(read) = stream.read(&mut chunk).await else {
            return false;
        };
        if read == 0 {
            return false;
        }
        received.extend_from_slice(&chunk[..read]);
        let text = String::from_utf8_lossy(&received);
        let Some(head_end) = text.find("\r\n\r\n") else {
            continue;
        };
        let length = text[..head_end]
            .lines()
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, value)| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if received.len() >= head_end + 4 + length {
            return true;
        }
    }
}

/// A retry comes seconds after the failure it retries; by then a receiver may have closed the
/// connection the failure came over (Node's and uvicorn's servers close idle connections after
/// 5 s). The retry goes over a new connection, so the receiver's idle timeout never costs an
/// attempt.
#[tokio::test]
async fn a_retry_never_goes_over_a_connection_the_receiver_may_have_closed_while_idle() {
    let receiver = IdleClosingReceiver::start().await;
    let app = spawn_app_with(Options {
        retry_seconds: "2.5,2.5",
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({ "url": receiver.url }),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let opened = open(&app, &pair, 0).await;
    let task_id = opened.field("id");
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    let statuses: Vec<Value> = app
        .delivery_attempts(&pair, &task_id)
        .await
        .iter()
        .map(|attempt| attempt["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(500), json!(200)]);
    assert_eq!(
        *receiver.requests_per_connection.lock().unwrap(),
        [1, 1],
        "the retry came over a connection of its own"
    );
}
