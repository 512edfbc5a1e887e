//! A2A streams at the gate: `SendStreamingMessage` and `SubscribeToTask` over JSON-RPC (each
//! event a JSON-RPC response) and HTTP+JSON (`message:stream`, `tasks/{id}:subscribe` by GET or
//! POST), ending at a final or interrupted state.

use forgebench_tests::sse::SseEvent;
use forgebench_tests::{spawn_app, text_message, Pair, TestApp};
use serde_json::{json, Value};

fn rpc(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "req-7", "method": method, "params": params})
}

fn send_params(text: &str) -> Value {
    json!({"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                       "parts": [{"text": text}]}})
}

/// The `StreamResponse` of a JSON-RPC event, checking the envelope.
fn result(event: &SseEvent) -> Value {
    let body = event.json();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["id"], "req-7", "{body}");
    body["result"].clone()
}

fn kind(response: &Value) -> &str {
    ["task", "statusUpdate", "artifactUpdate", "message"]
        .into_iter()
        .find(|kind| response.get(*kind).is_some())
        .unwrap_or("none")
}

async fn callee_works(app: &TestApp, pair: &Pair, task_id: &str, answer: Value) {
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.field("id"), task_id);
    let reported = app
        .post(
            &format!("/v1/agents/me/tasks/{task_id}/progress"),
            &pair.callee.key,
            json!({"message": {"role": "agent", "parts": [{"text": "reading"}]}}),
        )
        .await;
    assert_eq!(reported.status, 200, "{}", reported.text);
    let done = app.post_result(&pair.callee.key, task_id, answer).await;
    assert_eq!(done.status, 200, "{}", done.text);
}

#[tokio::test]
async fn a_streaming_send_over_json_rpc_follows_the_task_to_its_end() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let path = format!("/v1/agents/{}/a2a/jsonrpc", pair.callee.id);
    let mut stream = app
        .a2a_stream(
            "POST",
            &path,
            &pair.caller.key,
            Some(rpc("SendStreamingMessage", send_params("classify"))),
        )
        .await;
    assert_eq!(stream.status, 200);
    assert!(stream.content_type.starts_with("text/event-stream"));
    let first = result(&stream.next_event().await.expect("the task"));
    assert_eq!(kind(&first), "task");
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_SUBMITTED");
    let task_id = first["task"]["id"].as_str().unwrap().to_owned();

    let answer = json!({"state": "completed", "artifacts": [{"name": "label", "parts": [{"text": "utilities"}]}]});
    callee_works(&app, &pair, &task_id, answer).await;
    let events: Vec<Value> = stream.rest().await.iter().map(result).collect();
    let kinds: Vec<&str> = events.iter().map(kind).collect();
    assert_eq!(
        kinds,
        [
            "statusUpdate",
            "statusUpdate",
            "artifactUpdate",
            "statusUpdate"
        ]
    );
    assert_eq!(
        events[0]["statusUpdate"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert_eq!(
        events[1]["statusUpdate"]["status"]["message"]["parts"][0]["text"],
        "reading"
    );
    assert_eq!(
        events[2]["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "utilities"
    );
    assert_eq!(events[2]["artifactUpdate"]["taskId"], task_id.as_str());
    assert_eq!(
        events[3]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(
        events[3]["statusUpdate"]["contextId"],
        first["task"]["contextId"]
    );
}

#[tokio::test]
async fn an_a2a_stream_stops_at_a_question_and_the_answer_streams_on() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let base = format!("/v1/agents/{}/a2a", pair.callee.id);
    let mut stream = app
        .a2a_stream(
            "POST",
            &format!("{base}/message:stream"),
            &pair.caller.key,
            Some(send_params("pay")),
        )
        .await;
    assert_eq!(stream.status, 200);
    let first = stream.next_event().await.expect("the task").json();
    let task_id = first["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(app.claim(&pair.callee.key, 5).await.status, 200);
    let asked = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "input_required", "message": {"role": "agent", "parts": [{"text": "which account?"}]}}),
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    let events: Vec<Value> = stream.rest().await.iter().map(SseEvent::json).collect();
    let last = events.last().expect("events");
    assert_eq!(
        last["statusUpdate"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert_eq!(
        last["statusUpdate"]["status"]["message"]["parts"][0]["text"],
        "which account?"
    );

    // The answer, sent on a new stream, continues the same task.
    let mut answer = send_params("ACC-9");
    answer["message"]["taskId"] = json!(task_id);
    let mut resumed = app
        .a2a_stream(
            "POST",
            &format!("{base}/message:stream"),
            &pair.caller.key,
            Some(answer),
        )
        .await;
    let first = resumed.next_event().await.expect("the task").json();
    assert_eq!(first["task"]["id"], task_id.as_str());
    assert_eq!(first["task"]["status"]["state"], "TASK_STATE_WORKING");
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.field("id"), task_id);
    let done = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "failed", "error": "account closed"}),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let events: Vec<Value> = resumed.rest().await.iter().map(SseEvent::json).collect();
    let last = events.last().expect("events");
    assert_eq!(last["statusUpdate"]["status"]["state"], "TASK_STATE_FAILED");
    assert_eq!(
        last["statusUpdate"]["status"]["message"]["parts"][0]["text"],
        "account closed"
    );
}

#[tokio::test]
async fn subscribing_follows_an_open_task_and_refuses_a_finished_one() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("classify"),
            0,
        )
        .await;
    let task_id = opened.field("id");
    let base = format!("/v1/agents/{}/a2a", pair.callee.id);
    let path = format!("{base}/tasks/{task_id}:subscribe");
    let mut by_get = app.a2a_stream("GET", &path, &pair.caller.key, None).await;
    let mut by_post = app.a2a_stream("POST", &path, &pair.caller.key, None).await;
    let mut by_rpc = app
        .a2a_stream(
            "POST",
            &format!("{base}/jsonrpc"),
            &pair.caller.key,
            Some(rpc("SubscribeToTask", json!({"id": task_id}))),
        )
        .await;
    for stream in [&mut by_get, &mut by_post] {
        assert_eq!(stream.status, 200);
        let first = stream.next_event().await.expect("the task").json();
        assert_eq!(first["task"]["id"], task_id.as_str());
    }
    assert_eq!(
        kind(&result(&by_rpc.next_event().await.expect("the task"))),
        "task"
    );
    callee_works(&app, &pair, &task_id, json!({"state": "completed"})).await;
    let over_get: Vec<Value> = by_get.rest().await.iter().map(SseEvent::json).collect();
    let over_post: Vec<Value> = by_post.rest().await.iter().map(SseEvent::json).collect();
    let over_rpc: Vec<Value> = by_rpc.rest().await.iter().map(result).collect();
    assert_eq!(over_get, over_post);
    assert_eq!(over_get, over_rpc);
    assert_eq!(over_get.len(), 3, "{over_get:?}");

    // Finished: UnsupportedOperation, as a plain answer on each binding.
    let late = app.a2a_stream("GET", &path, &pair.caller.key, None).await;
    assert_eq!(late.status, 400);
    assert!(late.text().await.contains("UNSUPPORTED_OPERATION"));
    let late_rpc = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SubscribeToTask",
            json!({"id": task_id}),
        )
        .await;
    assert_eq!(late_rpc.body["error"]["code"], -32004, "{}", late_rpc.text);
    // Another pair's caller cannot follow the task.
    let stranger = app.pair().await;
    let refused = app
        .a2a_rpc(
            &pair.callee.id,
            &stranger.caller.key,
            "SubscribeToTask",
            json!({"id": task_id}),
        )
        .await;
    assert_eq!(refused.body["error"]["code"], -32001, "{}", refused.text);
}
