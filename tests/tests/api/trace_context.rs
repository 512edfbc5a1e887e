//! W3C trace context through the gate: a `traceparent` (and `tracestate`) an open brings is
//! continued by the gateway's own span and kept with the task, which passes it on: in the
//! claimed task, on its push delivery (headers), and to the tasks its call opens, over REST and
//! both A2A bindings, so that a call tree is one trace. A context the gateway cannot read
//! starts a new trace, as a root call without one does.

use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, TestApp};
use serde_json::{json, Value};

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const TRACESTATE: &str = "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE";

/// A `traceparent`'s trace id and span id, of a sampled trace in version `00`'s form.
pub(crate) fn ids(traceparent: &str) -> (String, String) {
    let fields: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(fields.len(), 4, "{traceparent}");
    assert_eq!((fields[0], fields[3]), ("00", "01"), "{traceparent}");
    assert_eq!(
        (fields[1].len(), fields[2].len()),
        (32, 16),
        "{traceparent}"
    );
    (fields[1].to_owned(), fields[2].to_owned())
}

/// A REST open by `key` of a task on `callee`, with the headers given.
async fn open(app: &TestApp, key: &str, callee: &str, headers: &[(&str, &str)]) -> Value {
    let mut request = app
        .http
        .post(format!("{}/v1/agents/{callee}/tasks?wait=0", app.base))
        .bearer_auth(key)
        .json(&json!({"message": text_message("traced")}));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let reply = app.finish(request).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body
}

/// A three-level call tree, each level opened another way (REST with the caller's context; A2A
/// JSON-RPC and A2A HTTP+JSON below it without one), answered by pull and by push: one trace,
/// each task under a span of its own, the pull callee's claim and the push POST carrying it.
#[tokio::test]
async fn a_call_tree_over_rest_and_both_a2a_bindings_is_one_trace() {
    let app = spawn_app_with(Options::local_push()).await;
    let receiver = Callee::start(|_| Answer::json(200, json!({"state": "working"}))).await;
    let tenant = app.create_tenant().await;
    let admin = &tenant.admin_key;
    let planner = app.create_agent(admin, "planner").await;
    let researcher = app.create_agent(admin, "researcher").await;
    let fetcher = app.create_agent(admin, "fetcher").await;
    app.create_agent(admin, "archiver").await;
    app.grant(admin, &planner.id, &["researcher"]).await;
    app.grant(admin, &researcher.id, &["fetcher", "archiver"])
        .await;
    app.grant(admin, &fetcher.id, &["archiver"]).await;
    let pushed = app
        .set_endpoint(admin, "archiver", json!({"url": receiver.url}))
        .await;
    assert_eq!(pushed.status, 200, "{}", pushed.text);

    // Level 1, REST, with the caller's context: continued under a span of the gateway's.
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let root = open(
        &app,
        &planner.key,
        "researcher",
        &[("traceparent", &traceparent), ("tracestate", TRACESTATE)],
    )
    .await;
    let (trace, root_span) = ids(root["traceparent"].as_str().unwrap());
    assert_eq!(trace, TRACE_ID);
    assert_ne!(
        root_span, CALLER_SPAN,
        "the gateway's span, under the caller's"
    );
    assert_eq!(root["tracestate"], TRACESTATE);
    // The pull callee's claim carries it, so its work joins the trace.
    let claimed = app.claim(&researcher.key, 5).await;
    assert_eq!(claimed.field("id"), root["id"].as_str().unwrap());
    assert_eq!(claimed.body["traceparent"], root["traceparent"]);

    // Level 2, A2A JSON-RPC and HTTP+JSON, naming the parent call and no context of their own.
    let parent = root["call_id"].as_str().unwrap();
    let over_rpc = app
        .finish(
            app.http
                .post(format!("{}/v1/agents/fetcher/a2a/jsonrpc", app.base))
                .bearer_auth(&researcher.key)
                .header("a2a-version", "1.0")
                .header("content-type", "application/a2a+json")
                .header("X-Parent-Call", parent)
                .body(
                    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                        "message": {"messageId": "m-rpc", "role": "ROLE_USER", "parts": [{"text": "fetch"}]},
                        "configuration": {"returnImmediately": true}}})
                    .to_string(),
                ),
        )
        .await;
    assert_eq!(over_rpc.status, 200, "{}", over_rpc.text);
    let over_rest = app
        .finish(
            app.http
                .post(format!("{}/v1/agents/archiver/a2a/message:send", app.base))
                .bearer_auth(&researcher.key)
                .header("a2a-version", "1.0")
                .header("content-type", "application/a2a+json")
                .header("X-Parent-Call", parent)
                .body(
                    json!({"message": {"messageId": "m-rest", "role": "ROLE_USER", "parts": [{"text": "archive"}]},
                           "configuration": {"returnImmediately": true}})
                    .to_string(),
                ),
        )
        .await;
    assert_eq!(over_rest.status, 200, "{}", over_rest.text);
    let fetched = app.claim(&fetcher.key, 5).await;
    assert_eq!(fetched.status, 200, "{}", fetched.text);
    let (fetch_trace, fetch_span) = ids(&fetched.field("traceparent"));
    assert_eq!(
        fetch_trace, TRACE_ID,
        "the child joins its parent call's trace"
    );
    assert_ne!(fetch_span, root_span);
    assert_eq!(fetched.body["parent_call_id"], parent);

    // The push child: its POST carries the trace, under a span of its own (the attempt's).
    let posts = receiver.wait_for(1).await;
    let sent = posts[0].headers["traceparent"].to_str().unwrap().to_owned();
    let (push_trace, push_span) = ids(&sent);
    assert_eq!(push_trace, TRACE_ID);
    let archive_id = posts[0].body["task_id"].as_str().unwrap().to_owned();
    let archive = app
        .get(
            &format!("/v1/agents/archiver/tasks/{archive_id}"),
            &researcher.key,
        )
        .await;
    let (_, archive_span) = ids(&archive.field("traceparent"));
    assert_ne!(
        push_span, archive_span,
        "the POST is a span under the task's"
    );
    assert!(
        posts[0].headers.get("tracestate").is_none(),
        "a child without a state of its own"
    );

    // Level 3: the fetcher, working its task, opens one more over REST without a context.
    let leaf = open(
        &app,
        &fetcher.key,
        "archiver",
        &[("X-Parent-Call", fetched.body["call_id"].as_str().unwrap())],
    )
    .await;
    let (leaf_trace, leaf_span) = ids(leaf["traceparent"].as_str().unwrap());
    assert_eq!(leaf_trace, TRACE_ID);
    assert!(![root_span, fetch_span, archive_span].contains(&leaf_span));
    assert_eq!(leaf["root_call_id"], root["call_id"]);
}

/// A root call that brings no context, or one the gateway cannot read, is a trace of its own,
/// named by its call id; two such calls are two traces.
#[tokio::test]
async fn a_root_call_without_a_readable_context_starts_its_own_trace() {
    let app = spawn_app_with(Options::default()).await;
    let pair = app.pair().await;
    let (caller, callee) = (&pair.caller.key, pair.callee.name.as_str());
    let plain = open(&app, caller, callee, &[]).await;
    // Its trace is its root call's id; its span, its own call's (nothing stored for either).
    let (plain_trace, plain_span) = ids(plain["traceparent"].as_str().unwrap());
    let call_hex = plain["call_id"].as_str().unwrap().replace('-', "");
    assert_eq!(plain_trace, call_hex);
    assert_eq!(plain_span, call_hex[16..]);
    let unreadable = [
        format!("00-{}-{CALLER_SPAN}-01", "0".repeat(32)),
        format!("00-{}-{CALLER_SPAN}-01", TRACE_ID.to_uppercase()),
        format!("ff-{TRACE_ID}-{CALLER_SPAN}-01"),
        "not a traceparent".to_owned(),
    ];
    let mut traces = vec![ids(plain["traceparent"].as_str().unwrap()).0];
    for traceparent in &unreadable {
        let task = open(
            &app,
            caller,
            callee,
            &[("traceparent", traceparent), ("tracestate", TRACESTATE)],
        )
        .await;
        traces.push(ids(task["traceparent"].as_str().unwrap()).0);
        assert!(
            task["tracestate"].is_null(),
            "no state without its parent: {task}"
        );
    }
    let distinct: std::collections::HashSet<&String> = traces.iter().collect();
    assert_eq!(distinct.len(), traces.len(), "{traces:?}");
    assert!(!traces.contains(&TRACE_ID.to_owned()));
    // Two traceparent headers are no context either.
    let request = app
        .http
        .post(format!("{}/v1/agents/{callee}/tasks?wait=0", app.base))
        .bearer_auth(caller)
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
        .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-00"))
        .json(&json!({"message": text_message("twice")}));
    let twice = app.finish(request).await;
    assert_ne!(ids(&twice.field("traceparent")).0, TRACE_ID);
}
