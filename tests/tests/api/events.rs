//! `GET /v1/agents/{callee}/tasks/{id}/events`: a task's updates as server-sent events, each
//! once and in order, resumable with `Last-Event-ID`, closed after the final state.

use std::time::Duration;

use forgebench_tests::sse::{Sse, SseEvent};
use forgebench_tests::{spawn_app, spawn_app_with, text_message, Options, Pair, TestApp};
use serde_json::{json, Value};

/// What a test compares of an event: its id, name and data.
fn seen(event: &SseEvent) -> (String, String, Value) {
    (
        event.id.clone().unwrap_or_default(),
        event.event.clone().unwrap_or_default(),
        event.json(),
    )
}

async fn next(stream: &mut Sse) -> SseEvent {
    stream
        .next_event()
        .await
        .expect("an event before the stream ends")
}

async fn open(app: &TestApp, pair: &Pair) -> String {
    app.open_task(
        &pair.caller.key,
        &pair.callee.name,
        text_message("classify"),
        0,
    )
    .await
    .field("id")
}

async fn progress(app: &TestApp, pair: &Pair, task_id: &str, text: &str) {
    let reply = app
        .post(
            &format!("/v1/agents/me/tasks/{task_id}/progress"),
            &pair.callee.key,
            json!({"message": {"role": "agent", "parts": [{"text": text}]}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

async fn answer(app: &TestApp, pair: &Pair, task_id: &str, text: &str) {
    let reply = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message(text)}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

async fn claim(app: &TestApp, pair: &Pair, task_id: &str) {
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    assert_eq!(claimed.field("id"), task_id);
}

fn text_of(data: &Value) -> &str {
    data["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// The whole conversation, one step at a time; after each step the stream must show it.
#[tokio::test]
async fn a_caller_sees_every_change_once_in_order_and_the_stream_closes_after_the_final_state() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair).await;
    let mut stream = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, None)
        .await;
    let mut second = app
        .events(&pair.callee.key, &pair.callee.name, &task_id, None)
        .await;
    assert_eq!(stream.status, 200);
    assert!(
        stream.content_type.starts_with("text/event-stream"),
        "{}",
        stream.content_type
    );

    let first = next(&mut stream).await;
    assert_eq!(
        (first.id.as_deref(), first.event.as_deref()),
        (Some("0"), Some("task"))
    );
    assert_eq!(first.json()["id"], task_id.as_str());
    assert_eq!(first.json()["status"]["state"], "submitted");

    claim(&app, &pair, &task_id).await;
    let claimed = next(&mut stream).await;
    assert_eq!(seen(&claimed).0, "1");
    assert_eq!(claimed.event.as_deref(), Some("status"));
    assert_eq!(claimed.json()["state"], "working");

    progress(&app, &pair, &task_id, "reading").await;
    let reported = next(&mut stream).await;
    assert_eq!(
        (reported.id.as_deref(), reported.event.as_deref()),
        (Some("2"), Some("progress"))
    );
    assert_eq!(text_of(&reported.json()), "reading");

    let asked = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "input_required", "message": {"role": "agent", "parts": [{"text": "which year?"}]}}),
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    let question = next(&mut stream).await;
    assert_eq!(
        (question.id.as_deref(), question.event.as_deref()),
        (Some("3"), Some("question"))
    );
    assert_eq!(question.json()["state"], "input_required");
    assert_eq!(text_of(&question.json()), "which year?");

    answer(&app, &pair, &task_id, "2026").await;
    let answered = next(&mut stream).await;
    assert_eq!(
        (answered.id.as_deref(), answered.event.as_deref()),
        (Some("4"), Some("answer"))
    );
    assert_eq!(text_of(&answered.json()), "2026");
    assert_eq!(answered.json()["message"]["role"], "user");

    claim(&app, &pair, &task_id).await;
    assert_eq!(next(&mut stream).await.id.as_deref(), Some("5"));
    let done = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": [
                {"name": "total", "parts": [{"text": "42"}]},
                {"name": "detail", "parts": [{"data": {"lines": 3}}]}
            ]}),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let rest: Vec<(String, String, Value)> = stream.rest().await.iter().map(seen).collect();
    let names: Vec<(&str, &str)> = rest
        .iter()
        .map(|(id, name, _)| (id.as_str(), name.as_str()))
        .collect();
    assert_eq!(
        names,
        [("6", "artifact"), ("7", "artifact"), ("8", "final")]
    );
    assert_eq!(rest[0].2["artifact"]["name"], "total");
    assert_eq!(rest[1].2["artifact"]["parts"][0]["data"]["lines"], 3);
    assert_eq!(rest[2].2["state"], "completed");

    // The callee's stream, open all along, saw the very same events.
    let mut theirs = vec![seen(&next(&mut second).await)];
    theirs.extend(second.rest().await.iter().map(seen));
    let ids: Vec<&str> = theirs.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(ids, ["0", "1", "2", "3", "4", "5", "6", "7", "8"]);
    assert_eq!(theirs[6..], rest[..]);
    assert_eq!(theirs[2].2, reported.json());
}

#[tokio::test]
async fn reconnecting_with_last_event_id_resumes_without_gaps_or_repeats() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair).await;
    let mut stream = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, None)
        .await;
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("task"));
    claim(&app, &pair, &task_id).await;
    progress(&app, &pair, &task_id, "one").await;
    let mut got = Vec::new();
    while got.len() < 2 {
        got.push(seen(&next(&mut stream).await));
    }
    drop(stream);

    // While nobody listens, more happens.
    progress(&app, &pair, &task_id, "two").await;
    progress(&app, &pair, &task_id, "three").await;
    let last = got.last().map(|(id, _, _)| id.clone()).unwrap_or_default();
    assert_eq!(last, "2");
    let mut resumed = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, Some(&last))
        .await;
    assert_eq!(resumed.status, 200);
    let two = next(&mut resumed).await;
    let three = next(&mut resumed).await;
    assert_eq!(
        (two.id.as_deref(), text_of(&two.json())),
        (Some("3"), "two")
    );
    assert_eq!(
        (three.id.as_deref(), text_of(&three.json())),
        (Some("4"), "three")
    );
    let done = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "failed", "error": "no invoice"}),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let rest = resumed.rest().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0].id.as_deref(), Some("5"));
    assert_eq!(rest[0].json()["error"], "no invoice");

    // Resuming a finished task after its last event: nothing more, and the stream closes.
    let mut after_end = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, Some("5"))
        .await;
    assert_eq!(after_end.status, 200);
    assert_eq!(after_end.content_type, "text/event-stream");
    assert!(after_end.rest().await.is_empty());
    // Resuming from the start replays the log.
    let mut replay = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, Some("0"))
        .await;
    let ids: Vec<String> = replay
        .rest()
        .await
        .iter()
        .filter_map(|e| e.id.clone())
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"]);
}

#[tokio::test]
async fn a_finished_task_streams_itself_once_and_closes() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair).await;
    assert_eq!(
        app.cancel(&pair.caller.key, &pair.callee.name, &task_id)
            .await
            .status,
        200
    );
    let mut stream = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, None)
        .await;
    let events = stream.rest().await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].event.as_deref(), Some("task"));
    assert_eq!(events[0].id.as_deref(), Some("1"));
    assert_eq!(events[0].json()["status"]["state"], "canceled");
}

#[tokio::test]
async fn only_the_tasks_readers_may_stream_it_and_a_bad_last_event_id_is_refused() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair).await;
    let stranger = app.pair().await;
    let refused = app
        .events(&stranger.caller.key, &pair.callee.name, &task_id, None)
        .await;
    assert_eq!(refused.status, 404);
    assert!(refused.text().await.contains("task not found"));
    let unknown = app
        .events(
            &pair.caller.key,
            &pair.callee.name,
            &uuid::Uuid::new_v4().to_string(),
            None,
        )
        .await;
    assert_eq!(unknown.status, 404);
    let bad = app
        .events(
            &pair.caller.key,
            &pair.callee.name,
            &task_id,
            Some("latest"),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.text().await.contains("Last-Event-ID"));
    let anonymous = app
        .http
        .get(format!(
            "{}/v1/agents/{}/tasks/{task_id}/events",
            app.base, pair.callee.name
        ))
        .send()
        .await
        .expect("answer");
    assert_eq!(anonymous.status().as_u16(), 401);
}

#[tokio::test]
async fn an_idle_stream_sends_keep_alive_comments_and_ends_when_its_time_is_up() {
    let app = spawn_app_with(Options {
        stream_keepalive: Duration::from_secs(1),
        stream_max_seconds: 3,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair).await;
    let mut stream = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, None)
        .await;
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("task"));
    let idle = stream
        .next_within(Duration::from_secs(5))
        .await
        .expect("a comment");
    assert_eq!(idle.comment.as_deref(), Some("keep-alive"));
    let mut comments = Vec::new();
    while let Some(entry) = stream.next_within(Duration::from_secs(5)).await {
        comments.extend(entry.comment);
    }
    assert!(
        comments
            .last()
            .is_some_and(|text| text.contains("Last-Event-ID")),
        "{comments:?}"
    );
}

/// A stream judges its reader again once per key-cache time: revoking the key that opened it
/// ends it within that time (with an error event), as the key stops working everywhere else,
/// not when the stream's 840 s run out.
#[tokio::test]
async fn a_stream_ends_within_the_key_cache_time_once_its_key_is_revoked() {
    let app = spawn_app_with(Options {
        key_cache_seconds: 1,
        stream_keepalive: Duration::from_secs(1),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair).await;
    let reader = app
        .issue_key(&pair.tenant.admin_key, &pair.caller.name)
        .await;
    let mut stream = app.events(&reader, &pair.callee.name, &task_id, None).await;
    assert_eq!(next(&mut stream).await.event.as_deref(), Some("task"));
    let keys = app
        .get(
            &format!("/v1/agents/{}/keys", pair.caller.name),
            &pair.tenant.admin_key,
        )
        .await;
    let newest = keys.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|item| item["created_at"].as_str().unwrap_or_default().to_owned())
        .map(|item| item["key_id"].as_str().unwrap().to_owned())
        .unwrap();
    let revoked = app
        .send(
            "DELETE",
            &format!("/v1/agents/{}/keys/{newest}", pair.caller.name),
            Some(&pair.tenant.admin_key),
            None,
        )
        .await;
    assert!(revoked.status < 300, "{}", revoked.text);
    let revoked_at = std::time::Instant::now();
    let mut ended_with = None;
    while revoked_at.elapsed() < Duration::from_secs(8) {
        let Some(entry) = stream.next_within(Duration::from_secs(6)).await else {
            break;
        };
        if entry.event.is_some() {
            ended_with = Some(entry);
            break;
        }
    }
    let error = ended_with.expect("the stream ended with an event, not only keep-alives");
    assert_eq!(error.event.as_deref(), Some("error"), "{error:?}");
    assert_eq!(
        error.json()["detail"]["code"],
        "unauthenticated",
        "{error:?}"
    );
    assert!(
        revoked_at.elapsed() < Duration::from_secs(6),
        "within the key-cache time and a read"
    );
    // The caller's own key still reads the task.
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.status, 200);
}
