//! What an operator reads of a run: every log line of a request carries its request id (the
//! `X-Request-Id` its response names) and, behind Lambda, its X-Ray trace id; the business
//! metrics are Embedded Metric Format lines CloudWatch can parse, without ids as dimensions;
//! every AWS call and push POST is a client span, exported over OTLP.

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

/// Spans exported to an OTLP receiver the test starts, through this process's subscriber.
async fn exporting() -> forgebench_tests::otlp::OtlpReceiver {
    let receiver = forgebench_tests::otlp::OtlpReceiver::start().await;
    let tracer = forgebench::telemetry::install(Some(&receiver.endpoint)).unwrap();
    forgebench::runtime::init_tracing_with("info", Some(tracer));
    receiver
}

#[tokio::test]
async fn every_aws_call_is_a_client_span_under_the_span_that_made_it() {
    use opentelemetry::trace::TraceContextExt;
    use tracing::Instrument;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let receiver = exporting().await;
    let config = forgebench_tests::dynamodb_config(&forgebench_tests::dynamodb_endpoint())
        .await
        .interceptor(forgebench::telemetry::TraceCalls)
        .build();
    let store =
        forgebench::store::Store::new(aws_sdk_dynamodb::Client::from_conf(config), "no-such-table");
    // A call that fails is a span too, with the status it got.
    let request = tracing::info_span!("request");
    let task_id = forgebench::domain::TaskId::from("t-1".to_owned());
    let _refused = store.get_task(&task_id).instrument(request.clone()).await;
    let parent = request.context().span().span_context().clone();
    drop(request);
    forgebench::telemetry::flush().await;
    let spans = receiver.spans();
    let calls: Vec<_> = spans
        .iter()
        .filter(|span| span.attributes.get("rpc.system").map(String::as_str) == Some("aws-api"))
        .collect();
    assert_eq!(calls.len(), 1, "{spans:#?}");
    let call = calls[0];
    assert_eq!(call.name, "DynamoDB.GetItem");
    assert_eq!(call.attributes["rpc.service"], "DynamoDB");
    assert_eq!(call.attributes["rpc.method"], "GetItem");
    assert_eq!(call.attributes["http.response.status_code"], "400");
    assert_eq!(call.trace_id, parent.trace_id().to_string());
    assert_eq!(call.parent_span_id, Some(parent.span_id().to_string()));
    let made_it = spans.iter().find(|span| span.name == "request").unwrap();
    assert_eq!(made_it.span_id, parent.span_id().to_string());
}

#[tokio::test]
async fn a_push_post_is_a_client_span_of_its_call_with_the_status_it_got() {
    use forgebench_tests::{spawn_app_with, Answer, Callee, Options};
    let receiver = exporting().await;
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.push_pair(&callee.url).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("hi"), 0)
        .await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    forgebench::telemetry::flush().await;
    let spans = receiver.spans();
    let posts: Vec<_> = spans
        .iter()
        .filter(|span| span.name == "push attempt")
        .collect();
    assert_eq!(posts.len(), 1, "{spans:#?}");
    let post = posts[0];
    assert_eq!(post.attributes["server.address"], "127.0.0.1");
    assert_eq!(post.attributes["http.request.method"], "POST");
    assert_eq!(post.attributes["http.response.status_code"], "200");
    assert_eq!(post.attributes["call_id"], opened.field("call_id"));
    // Under its call's span, which names the task and its agents; the POST names the attempt.
    let call = spans
        .iter()
        .find(|span| Some(&span.span_id) == post.parent_span_id.as_ref())
        .expect("the call's span");
    assert_eq!(call.attributes["task_id"], opened.field("id"));
    assert_eq!(call.attributes["caller_agent_id"], pair.caller.id);
    assert_eq!(call.attributes["gen_ai.agent.id"], pair.callee.id);
    let sent = callee.received()[0].headers["traceparent"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(super::trace_context::ids(&sent).1, post.span_id);
}

#[tokio::test]
async fn a_push_notification_is_a_client_span_of_its_call_named_by_its_traceparent() {
    use forgebench_tests::{spawn_app_with, Answer, Callee, Options};
    let receiver_of_exports = exporting().await;
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let config = json!({"id": "hook", "url": receiver.url});
    let message = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    let sent = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": message,
                   "configuration": {"returnImmediately": true, "taskPushNotificationConfig": config}}),
        )
        .await;
    let task_id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(app.claim(&pair.callee.key, 5).await.field("id"), task_id);
    let posts = receiver.wait_for(1).await;
    forgebench::telemetry::flush().await;
    let spans = receiver_of_exports.spans();
    let sent_under = posts[0].headers["traceparent"].to_str().unwrap().to_owned();
    let notification = spans
        .iter()
        .find(|span| super::trace_context::ids(&sent_under).1 == span.span_id)
        .unwrap_or_else(|| panic!("the POST's span was not exported: {spans:#?}"));
    assert_eq!(notification.name, "push notification");
    assert_eq!(notification.attributes["config_id"], "hook");
    assert_eq!(notification.attributes["http.response.status_code"], "200");
    let call = spans
        .iter()
        .find(|span| Some(&span.span_id) == notification.parent_span_id.as_ref())
        .expect("the call's span");
    assert_eq!(call.attributes["task_id"], task_id);
    assert_eq!(call.name, format!("invoke_agent {}", pair.callee.name));
}
