//! `POST /v1/agents/me/tasks/{id}/progress`: the callee holding a working task says what it is
//! doing; the task stays working, the message becomes its status and joins its history.

use forgebench_tests::{spawn_app, spawn_app_with, text_message, Options, Reply, TestApp};
use serde_json::{json, Value};

fn progress_message(text: &str) -> Value {
    json!({"message": {"role": "agent", "parts": [{"text": text}]}})
}

async fn report(app: &TestApp, key: &str, task_id: &str, body: Value) -> Reply {
    app.post(
        &format!("/v1/agents/me/tasks/{task_id}/progress"),
        key,
        body,
    )
    .await
}

#[tokio::test]
async fn progress_keeps_the_task_working_and_joins_its_history() {
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
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);

    for step in ["reading the invoice", "checking the vendor"] {
        let reply = report(&app, &pair.callee.key, &task_id, progress_message(step)).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.state(), "working");
        assert_eq!(reply.body["status"]["message"]["parts"][0]["text"], step);
    }
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "working");
    let history = read.body["history"].as_array().cloned().unwrap_or_default();
    let texts: Vec<&str> = history
        .iter()
        .map(|message| message["parts"][0]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        texts,
        ["classify", "reading the invoice", "checking the vendor"]
    );
    assert_eq!(history[1]["role"], "agent");

    // The answer still closes it, after the progress in the history.
    let done = app
        .post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let late = report(&app, &pair.callee.key, &task_id, progress_message("late")).await;
    assert_eq!(late.status, 409, "{}", late.text);
    assert_eq!(late.body["detail"]["code"], "task_not_working");
}

#[tokio::test]
async fn only_the_callee_holding_a_working_task_reports_progress() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");

    // Not claimed yet: submitted, not working.
    let early = report(&app, &pair.callee.key, &task_id, progress_message("early")).await;
    assert_eq!(early.status, 409, "{}", early.text);
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);

    let by_caller = report(&app, &pair.caller.key, &task_id, progress_message("me?")).await;
    assert_eq!(by_caller.status, 403, "{}", by_caller.text);
    let stranger = app.create_agent(&pair.tenant.admin_key, "bystander").await;
    let by_stranger = report(&app, &stranger.key, &task_id, progress_message("hi")).await;
    assert_eq!(by_stranger.status, 404, "{}", by_stranger.text);
    let other_tenant = app.pair().await;
    let across = report(
        &app,
        &other_tenant.callee.key,
        &task_id,
        progress_message("x"),
    )
    .await;
    assert_eq!(across.status, 404, "{}", across.text);
    let console = report(
        &app,
        &pair.tenant.admin_key,
        &task_id,
        progress_message("admin"),
    )
    .await;
    assert_eq!(console.status, 403, "{}", console.text);

    // Nothing of the refused reports landed.
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.body["history"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn bad_progress_bodies_are_400_and_change_nothing() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    for body in [
        json!({}),
        json!({"message": {"role": "user", "parts": [{"text": "as the caller"}]}}),
        json!({"message": {"parts": []}}),
        json!({"message": {"parts": [{"text": "x"}]}, "state": "completed"}),
    ] {
        let reply = report(&app, &pair.callee.key, &task_id, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
        assert_eq!(reply.body["detail"]["code"], "invalid_request");
    }
    let bad_id = report(&app, &pair.callee.key, "not-a-uuid", progress_message("x")).await;
    assert_eq!(bad_id.status, 404);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "working");
    assert_eq!(read.body["history"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn progress_after_the_claim_deadline_is_refused_and_the_task_failed() {
    let app = spawn_app_with(Options::default()).await;
    let pair = app.pair().await;
    let updated = app
        .send(
            "PATCH",
            &format!("/v1/agents/{}", pair.callee.name),
            Some(&pair.tenant.admin_key),
            Some(json!({"claim_timeout_seconds": 1})),
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("slow"), 0)
        .await;
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;
    let late = report(
        &app,
        &pair.callee.key,
        &opened.field("id"),
        progress_message("still here"),
    )
    .await;
    assert_eq!(late.status, 409, "{}", late.text);
    assert_eq!(late.body["detail"]["state"], "failed", "{}", late.text);
}

#[tokio::test]
async fn a_task_holds_at_most_500_messages_the_last_kept_for_the_answer() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("long job"),
            0,
        )
        .await;
    let task_id = opened.field("id");
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    // The opening message plus 498 reports leave one place, for the answer.
    for step in 0..498 {
        let reply = report(
            &app,
            &pair.callee.key,
            &task_id,
            progress_message(&format!("{step}")),
        )
        .await;
        assert_eq!(reply.status, 200, "step {step}: {}", reply.text);
    }
    let full = report(
        &app,
        &pair.callee.key,
        &task_id,
        progress_message("one more"),
    )
    .await;
    assert_eq!(full.status, 409, "{}", full.text);
    assert_eq!(full.body["detail"]["code"], "limit_reached");
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.body["history"].as_array().map(Vec::len), Some(499));
    assert_eq!(read.state(), "working");
    let done = app
        .post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.body["history"].as_array().map(Vec::len), Some(500));
}
