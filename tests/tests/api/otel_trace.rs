//! One call tree, one trace, as an OpenTelemetry backend receives it: the gateway exports its
//! spans over OTLP to a receiver the test starts, and the agents of the tree are applications
//! instrumented with OpenTelemetry (their spans go to the same receiver, their context goes out
//! and comes in through OpenTelemetry's own W3C propagator, not the gateway's code).

use std::collections::HashMap;

use forgebench_tests::otlp::{ExportedSpan, OtlpReceiver};
use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, TestApp};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::{json, Value};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use super::trace_context::ids;

/// An agent's own span for its work on a task, continuing the `traceparent` the gate handed it,
/// and the `traceparent` it sends on from within that work.
fn agent_work(name: &str, traceparent: &str) -> (tracing::Span, String) {
    let propagator = TraceContextPropagator::new();
    let carried = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let span = tracing::info_span!("agent work", agent = name);
    span.set_parent(propagator.extract(&carried)).unwrap();
    let mut sent = HashMap::new();
    propagator.inject_context(&span.context(), &mut sent);
    (span, sent.remove("traceparent").expect("a traceparent"))
}

/// The span named `name` whose attribute `key` is `value`.
fn span_with<'a>(
    spans: &'a [ExportedSpan],
    name: &str,
    key: &str,
    value: &str,
) -> &'a ExportedSpan {
    spans
        .iter()
        .find(|span| {
            span.name == name && span.attributes.get(key).map(String::as_str) == Some(value)
        })
        .unwrap_or_else(|| panic!("no span {name} with {key}={value} in {spans:#?}"))
}

/// The span ids from `span` up to its trace's root, each in the same trace.
fn ancestry(spans: &[ExportedSpan], span: &ExportedSpan) -> Vec<String> {
    let mut line = vec![span.span_id.clone()];
    let mut parent = span.parent_span_id.clone();
    while let Some(id) = parent {
        let Some(found) = spans.iter().find(|span| span.span_id == id) else {
            panic!("span {id}, a parent, was never exported: {spans:#?}");
        };
        assert_eq!(found.trace_id, span.trace_id, "{found:?}");
        line.push(id);
        parent = found.parent_span_id.clone();
    }
    line
}

async fn a2a_post(
    app: &TestApp,
    key: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Value,
) -> Value {
    let mut request = app
        .http
        .post(format!("{}{path}", app.base))
        .bearer_auth(key)
        .header("a2a-version", "1.0")
        .header("content-type", "application/a2a+json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let reply = app.finish(request).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body
}

/// A root call opened over REST by a caller with no trace of its own, a child over A2A
/// JSON-RPC answered by push, and a grandchild over A2A HTTP+JSON answered by pull: every span
/// the gateway and the agents exported is in the root call's trace, each under the right
/// parent: call under the request (or the work) that opened it, the push POST under its call,
/// the agents' work under what the gate handed them.
#[tokio::test]
async fn a_call_tree_opened_over_rest_and_a2a_and_answered_by_pull_and_push_is_one_exported_trace()
{
    let collector = OtlpReceiver::start().await;
    let tracer = forgebench::telemetry::install(Some(&collector.endpoint)).unwrap();
    forgebench::runtime::init_tracing_with("info", Some(tracer));
    let app = spawn_app_with(Options::local_push()).await;
    let pushed = Callee::start(|_| Answer::json(200, json!({"state": "working"}))).await;
    let tenant = app.create_tenant().await;
    let admin = &tenant.admin_key;
    let planner = app.create_agent(admin, "planner").await;
    let researcher = app.create_agent(admin, "researcher").await;
    let fetcher = app.create_agent(admin, "fetcher").await;
    let archiver = app.create_agent(admin, "archiver").await;
    app.grant(admin, &planner.id, &["researcher"]).await;
    app.grant(admin, &researcher.id, &["fetcher"]).await;
    app.grant(admin, &fetcher.id, &["archiver"]).await;
    let set = app
        .set_endpoint(admin, "fetcher", json!({"url": pushed.url}))
        .await;
    assert_eq!(set.status, 200, "{}", set.text);

    // Level 1: REST, no context; the researcher claims it (pull) and works under its context.
    let root = app
        .finish(
            app.http
                .post(format!("{}/v1/agents/researcher/tasks?wait=0", app.base))
                .bearer_auth(&planner.key)
                .json(&json!({"message": text_message("research")})),
        )
        .await;
    assert_eq!(root.status, 200, "{}", root.text);
    let claimed = app.claim(&researcher.key, 5).await;
    assert_eq!(claimed.field("id"), root.field("id"));
    let (research, sent) = agent_work("researcher", &claimed.field("traceparent"));

    // Level 2: A2A JSON-RPC from within that work; the fetcher takes it by push.
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-fetch", "role": "ROLE_USER", "parts": [{"text": "fetch"}]},
        "configuration": {"returnImmediately": true}}});
    let headers = [
        ("traceparent", sent.as_str()),
        ("X-Parent-Call", root.body["call_id"].as_str().unwrap()),
    ];
    a2a_post(
        &app,
        &researcher.key,
        "/v1/agents/fetcher/a2a/jsonrpc",
        &headers,
        rpc,
    )
    .await;
    drop(research);
    let post = pushed.wait_for(1).await.remove(0);
    let fetch_call = post.body["call_id"].as_str().unwrap().to_owned();
    let delivered = post.headers["traceparent"].to_str().unwrap().to_owned();
    let (fetch, sent) = agent_work("fetcher", &delivered);

    // Level 3: A2A HTTP+JSON from within the fetcher's work; the archiver claims it.
    let send = json!({"message": {"messageId": "m-archive", "role": "ROLE_USER", "parts": [{"text": "archive"}]},
                      "configuration": {"returnImmediately": true}});
    let headers = [
        ("traceparent", sent.as_str()),
        ("X-Parent-Call", fetch_call.as_str()),
    ];
    a2a_post(
        &app,
        &fetcher.key,
        "/v1/agents/archiver/a2a/message:send",
        &headers,
        send,
    )
    .await;
    drop(fetch);
    let archived = app.claim(&archiver.key, 5).await;
    assert_eq!(archived.status, 200, "{}", archived.text);

    forgebench::telemetry::flush().await;
    let spans = collector.spans();
    let root_call = root.field("call_id");
    let trace = root_call.replace('-', "");
    // The root call's span is its trace's root, named by the call (nothing was stored for it).
    let research_call = span_with(&spans, "invoke_agent researcher", "call_id", &root_call);
    assert_eq!(research_call.trace_id, trace);
    assert_eq!(research_call.parent_span_id, None);
    assert_eq!(research_call.attributes["root_call_id"], root_call);
    assert_eq!(
        research_call.attributes["gen_ai.operation.name"],
        "invoke_agent"
    );
    assert_eq!(
        ids(&claimed.field("traceparent")).1,
        research_call.span_id,
        "the claim hands on the call's span"
    );
    let research_work = span_with(&spans, "agent work", "agent", "researcher");
    assert_eq!(
        research_work.parent_span_id.as_deref(),
        Some(research_call.span_id.as_str())
    );

    // The JSON-RPC open: its call under the request's span, under the researcher's work.
    let fetch_span = span_with(&spans, "invoke_agent fetcher", "call_id", &fetch_call);
    assert_eq!(fetch_span.attributes["parent_call_id"], root_call);
    assert_eq!(fetch_span.attributes["root_call_id"], root_call);
    let line = ancestry(&spans, fetch_span);
    assert_eq!(line.last(), Some(&research_call.span_id), "{line:?}");
    assert!(line.contains(&research_work.span_id), "{line:?}");
    // Its push POST: a span under the call, the one the POST's traceparent names.
    let attempt = spans
        .iter()
        .find(|span| span.span_id == ids(&delivered).1)
        .unwrap_or_else(|| panic!("the POST's span was not exported: {spans:#?}"));
    assert_eq!(attempt.name, "push attempt");
    assert_eq!(
        attempt.parent_span_id.as_deref(),
        Some(fetch_span.span_id.as_str())
    );

    // The HTTP+JSON open below the fetcher's work, and the archiver's claim of it.
    let archive_span = span_with(
        &spans,
        "invoke_agent archiver",
        "call_id",
        &archived.field("call_id"),
    );
    let line = ancestry(&spans, archive_span);
    let fetch_work = span_with(&spans, "agent work", "agent", "fetcher");
    for (above, what) in [
        (&fetch_work.span_id, "the fetcher's work"),
        (&attempt.span_id, "the push POST it works on"),
        (&fetch_span.span_id, "the fetcher's call"),
        (&research_call.span_id, "the root call"),
    ] {
        assert!(
            line.contains(above),
            "{what} is above the archiver's call: {line:?}"
        );
    }
    assert_eq!(ids(&archived.field("traceparent")).1, archive_span.span_id);
    // Everything the tree exported is in one trace.
    for span in spans
        .iter()
        .filter(|span| span.attributes.get("root_call_id") == Some(&root_call))
    {
        assert_eq!(span.trace_id, trace, "{span:?}");
    }
}
