//! What an operator reads of a run: every log line of a request carries its request id (the
//! `X-Request-Id` its response names) and, behind Lambda, its X-Ray trace id; the business
//! metrics are Embedded Metric Format lines CloudWatch can parse, without ids as dimensions.

use std::collections::BTreeMap;
use std::sync::Arc;

use forgebench::metrics;
use forgebench::Route;
use forgebench_tests::{spawn_app, text_message, LogCapture};
use lambda_http::RequestExt;
use serde_json::{json, Value};

/// The JSON log lines captured so far.
fn log_lines(capture: &LogCapture) -> Vec<Value> {
    capture
        .text()
        .lines()
        .map(|line| serde_json::from_str(line).expect("every log line is JSON"))
        .collect()
}

/// Each EMF line's metric values by name, with the dimensions it declares, after checking the
/// line is what CloudWatch parses: one `_aws` member declaring a namespace, dimension sets
/// whose every name has a string value, and metrics whose every name has a number.
fn parse_emf(line: &str) -> Vec<(String, f64, BTreeMap<String, String>)> {
    let value: Value = serde_json::from_str(line).expect("an EMF line is JSON");
    let aws = &value["_aws"];
    assert!(aws["Timestamp"].is_u64(), "{line}");
    let mut metrics = Vec::new();
    for directive in aws["CloudWatchMetrics"].as_array().expect("directives") {
        assert!(directive["Namespace"].is_string(), "{line}");
        let mut dimensions = BTreeMap::new();
        for set in directive["Dimensions"].as_array().expect("dimension sets") {
            for name in set.as_array().expect("a dimension set") {
                let name = name.as_str().expect("a dimension name");
                let value = value[name]
                    .as_str()
                    .expect("a dimension's value is a string");
                dimensions.insert(name.to_owned(), value.to_owned());
            }
        }
        for metric in directive["Metrics"].as_array().expect("metrics") {
            let name = metric["Name"].as_str().expect("a metric name");
            assert!(metric["Unit"].is_string(), "{line}");
            let number = value[name].as_f64().expect("a metric's value is a number");
            metrics.push((name.to_owned(), number, dimensions.clone()));
        }
    }
    metrics
}

#[tokio::test]
async fn a_runs_logs_carry_request_ids_and_its_metrics_are_emf() {
    let capture = LogCapture::install().expect("the first subscriber of this process");
    metrics::capture();
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("hi"), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let claimed = app.claim(&pair.callee.key, 1).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    let answered = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    // The callee has no binding to call back: a refusal, by its reason.
    let refused = app
        .open_task(&pair.callee.key, &pair.caller.name, text_message("back"), 0)
        .await;
    assert_eq!(refused.status, 403);

    let lines = log_lines(&capture);
    let mut request_ids = Vec::new();
    for reply in [&opened, &claimed, &answered, &refused] {
        let id = reply.headers["x-request-id"].to_str().unwrap().to_owned();
        let served: Vec<&Value> = lines
            .iter()
            .filter(|line| line["span"]["request_id"] == id.as_str())
            .collect();
        assert!(
            served
                .iter()
                .any(|line| line["fields"]["message"] == "request served"),
            "no log line of request {id}"
        );
        request_ids.push(id);
    }
    request_ids.dedup();
    assert_eq!(request_ids.len(), 4, "each request has its own id");
    // Every line logged inside a request's span names its request.
    for line in &lines {
        if line["span"]["name"] == "request" {
            assert!(line["span"]["request_id"].is_string(), "{line}");
        }
    }

    let emitted: Vec<_> = metrics::captured()
        .iter()
        .flat_map(|line| parse_emf(line))
        .collect();
    let seen = |name: &str, dimension: Option<(&str, &str)>| {
        emitted.iter().any(|(metric, _, dimensions)| {
            metric == name
                && dimension.is_none_or(|(key, value)| {
                    dimensions.get(key).map(String::as_str) == Some(value)
                })
        })
    };
    assert!(
        seen("TasksOpened", Some(("Delivery", "pull"))),
        "{emitted:?}"
    );
    assert!(seen("TasksClaimed", None), "{emitted:?}");
    assert!(
        seen("TasksAnswered", Some(("State", "completed"))),
        "{emitted:?}"
    );
    assert!(
        seen("Refusals", Some(("Reason", "no_binding"))),
        "{emitted:?}"
    );
    assert!(
        seen("LongPollWait", Some(("Route", "claim"))),
        "{emitted:?}"
    );
    // No dimension carries an id.
    let ids = [&pair.caller.id, &pair.callee.id, &pair.tenant.id];
    for (_, _, dimensions) in &emitted {
        for value in dimensions.values() {
            assert!(!ids.contains(&value), "an id as a dimension: {value}");
        }
    }
}

#[tokio::test]
async fn behind_lambda_the_logs_carry_the_invocations_trace_id() {
    let capture = LogCapture::install().expect("the first subscriber of this process");
    let app = spawn_app().await;
    let mut context = lambda_http::lambda_runtime::Context::default();
    context.request_id = "invocation-1".into();
    context.xray_trace_id = Some("Root=1-67890abc-0123456789abcdef01234567;Sampled=1".into());
    let request = lambda_http::http::Request::builder()
        .method("GET")
        .uri("/v1/agents/me")
        .body(lambda_http::Body::Empty)
        .unwrap()
        .with_lambda_context(context);
    let response = Route::GetMe.handle(&Arc::clone(&app.app), request).await;
    assert_eq!(response.status(), 401);
    assert_eq!(response.headers()["x-request-id"], "invocation-1");
    let served = log_lines(&capture)
        .into_iter()
        .find(|line| line["fields"]["message"] == "request served")
        .expect("the request was logged");
    assert_eq!(
        served["span"]["trace_id"],
        "Root=1-67890abc-0123456789abcdef01234567;Sampled=1"
    );
    assert_eq!(served["span"]["request_id"], "invocation-1");
}

/// An X-Ray daemon stand-in: a UDP socket; the subsegments it received, parsed.
struct Daemon(tokio::net::UdpSocket);

impl Daemon {
    /// Binds the socket and points this process's traced invocation at it, as Lambda would
    /// (`AWS_XRAY_DAEMON_ADDRESS`, and `_X_AMZN_TRACE_ID` of a sampled trace).
    async fn start() -> Daemon {
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        std::env::set_var(
            "AWS_XRAY_DAEMON_ADDRESS",
            socket.local_addr().unwrap().to_string(),
        );
        std::env::set_var("_X_AMZN_TRACE_ID", TRACE);
        Daemon(socket)
    }

    /// The subsegments received within `for_ms` of quiet.
    async fn received(&self, for_ms: u64) -> Vec<Value> {
        let mut documents = Vec::new();
        let mut buffer = vec![0_u8; 65_536];
        while let Ok(Ok(length)) = tokio::time::timeout(
            std::time::Duration::from_millis(for_ms),
            self.0.recv(&mut buffer),
        )
        .await
        {
            let text = String::from_utf8_lossy(&buffer[..length]).into_owned();
            let (header, body) = text
                .split_once('\n')
                .expect("a header line, then the document");
            assert_eq!(
                serde_json::from_str::<Value>(header).unwrap(),
                json!({"format": "json", "version": 1})
            );
            documents.push(serde_json::from_str(body).expect("the document is JSON"));
        }
        documents
    }
}

const TRACE: &str = "Root=1-67890abc-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1";

#[tokio::test]
async fn every_aws_call_of_a_traced_invocation_is_a_subsegment_of_its_trace() {
    let daemon = Daemon::start().await;
    let config = forgebench_tests::dynamodb_config(&forgebench_tests::dynamodb_endpoint())
        .await
        .interceptor(forgebench::xray::TraceCalls)
        .build();
    let store =
        forgebench::store::Store::new(aws_sdk_dynamodb::Client::from_conf(config), "no-such-table");
    // A call that fails is traced too, as a fault or an error; inside a request that named
    // its task, with the task's ids.
    let task_id = forgebench::domain::TaskId::from("t-1".to_owned());
    forgebench::xray::with_annotations(async {
        forgebench::xray::annotate(forgebench::xray::Annotations {
            task_id: Some("t-1".into()),
            call_id: Some("c-1".into()),
            ..Default::default()
        });
        let _refused = store.get_task(&task_id).await;
    })
    .await;
    let subsegments = daemon.received(500).await;
    assert_eq!(subsegments.len(), 1, "{subsegments:?}");
    let call = &subsegments[0];
    assert_eq!(call["trace_id"], "1-67890abc-0123456789abcdef01234567");
    assert_eq!(call["parent_id"], "53995c3f42cd8ad8");
    assert_eq!(call["type"], "subsegment");
    assert_eq!(call["namespace"], "aws");
    assert_eq!(call["aws"]["operation"], "GetItem");
    assert_eq!(call["http"]["response"]["status"], 400);
    assert_eq!(call["error"], true);
    assert!(call["end_time"].as_f64() >= call["start_time"].as_f64());
    assert_eq!(call["id"].as_str().unwrap().len(), 16);
    assert_eq!(
        call["annotations"],
        json!({"task_id": "t-1", "call_id": "c-1"})
    );
}

#[tokio::test]
async fn a_push_post_of_a_traced_invocation_is_a_remote_subsegment() {
    use forgebench_tests::{spawn_app_with, Answer, Callee, Options};
    let daemon = Daemon::start().await;
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("hi"), 0)
        .await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    let posts: Vec<Value> = daemon
        .received(500)
        .await
        .into_iter()
        .filter(|document| document["namespace"] == "remote")
        .collect();
    assert_eq!(posts.len(), 1, "{posts:?}");
    assert_eq!(posts[0]["name"], "127.0.0.1");
    assert_eq!(posts[0]["aws"]["operation"], "POST");
    assert_eq!(posts[0]["http"]["response"]["status"], 200);
    assert_eq!(posts[0]["parent_id"], "53995c3f42cd8ad8");
    // The delivery's ids, searchable in X-Ray.
    let annotations = &posts[0]["annotations"];
    assert_eq!(annotations["task_id"], opened.field("id").as_str());
    assert_eq!(annotations["call_id"], opened.field("call_id").as_str());
    assert_eq!(annotations["callee_agent_id"], pair.callee.id.as_str());
    assert_eq!(annotations["caller_agent_id"], pair.caller.id.as_str());
}
