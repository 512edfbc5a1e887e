//! The callee's pull side: claim, answer, the 409 and 422 rules, the claim deadline.

use std::time::Duration;

use forgebench_tests::{spawn_app, text_message};
use serde_json::json;

#[tokio::test]
async fn nothing_to_claim_is_a_204_after_the_wait() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let started = std::time::Instant::now();
    let reply = app.claim(&pair.callee.key, 1).await;
    assert_eq!(reply.status, 204);
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn a_claimed_task_is_working_and_a_completed_result_finishes_it() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    assert_eq!(claimed.field("id"), opened.field("id"));
    assert_eq!(claimed.state(), "working");
    // The caller sees it working too; nobody else can claim it.
    assert_eq!(
        app.get_task(&pair.caller.key, &pair.callee.name, &opened.field("id"))
            .await
            .state(),
        "working"
    );
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);

    let result = json!({"state": "completed", "artifacts": [{"name": "response", "parts": [{"data": {"category": "software"}}]}]});
    let done = app
        .post_result(&pair.callee.key, &opened.field("id"), result)
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    assert_eq!(done.state(), "completed");
    assert_eq!(
        done.body["artifacts"][0]["parts"][0]["data"]["category"],
        "software"
    );
    assert_eq!(done.body["history"].as_array().map(Vec::len), Some(2));
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(read.body, done.body);
}

#[tokio::test]
async fn a_failed_result_carries_its_error() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    app.claim(&pair.callee.key, 0).await;
    let failed = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "failed", "error": "no such invoice"}),
        )
        .await;
    assert_eq!(failed.state(), "failed");
    assert_eq!(failed.field("error"), "no such invoice");
}

#[tokio::test]
async fn a_pull_result_saying_working_is_the_documented_422() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    app.claim(&pair.callee.key, 0).await;
    let reply = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "working"}),
        )
        .await;
    assert_eq!(reply.status, 422);
    assert_eq!(
        reply.text,
        r#"{"detail":"a pull result must be completed, failed, or input_required"}"#
    );
    // The task is untouched and still answerable.
    let done = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(done.status, 200);
}

#[tokio::test]
async fn a_result_for_a_task_that_is_not_working_is_the_documented_409() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    // Not claimed yet: submitted.
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let early = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(early.status, 409);
    assert_eq!(
        early.text,
        r#"{"detail":{"code":"task_not_working","state":"submitted"}}"#
    );

    // Canceled while the callee was mid-handler.
    app.claim(&pair.callee.key, 0).await;
    app.cancel(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    let late = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(late.status, 409);
    assert_eq!(
        late.text,
        r#"{"detail":{"code":"task_not_working","state":"canceled"}}"#
    );
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(read.state(), "canceled");
}

#[tokio::test]
async fn only_the_callee_that_claimed_a_task_answers_it() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    app.claim(&pair.callee.key, 0).await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let by_stranger = app
        .post_result(
            &stranger.key,
            &opened.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(by_stranger.status, 404);
    let by_caller = app
        .post_result(
            &pair.caller.key,
            &opened.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(by_caller.status, 403);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(read.state(), "working");
}

#[tokio::test]
async fn a_claimed_task_past_its_deadline_fails_and_is_never_handed_out_again() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let patched = app
        .send(
            "PATCH",
            &format!("/v1/agents/{}", pair.callee.id),
            Some(admin),
            Some(json!({"claim_timeout_seconds": 1})),
        )
        .await;
    assert_eq!(patched.body["claim_timeout_seconds"], 1);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.state(), "working");
    tokio::time::sleep(Duration::from_millis(1500)).await;

    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(read.state(), "failed");
    assert!(
        read.field("error").contains("claim deadline exceeded"),
        "{}",
        read.text
    );
    let late = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(
        late.text,
        r#"{"detail":{"code":"task_not_working","state":"failed"}}"#
    );
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn the_sweeper_fails_overdue_tasks_nobody_reads() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    app.send(
        "PATCH",
        &format!("/v1/agents/{}", pair.callee.id),
        Some(&pair.tenant.admin_key),
        Some(json!({"claim_timeout_seconds": 1})),
    )
    .await;
    let overdue = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("a"), 0)
        .await;
    // The claim's deadline is at least a second after the claim was sent, and at most a second
    // after its answer came back.
    let claim_sent = std::time::Instant::now();
    app.claim(&pair.callee.key, 0).await;
    let claim_answered = std::time::Instant::now();
    let early = forgebench::sweeper::sweep_overdue(&app.app.store, &app.app.queue, &app.app.bodies)
        .await
        .done;
    // A sweep that finished within the second has nothing overdue to take (on a machine too busy
    // to finish it in time, there is nothing to observe here).
    if claim_sent.elapsed() < Duration::from_secs(1) {
        assert_eq!(early, 0);
    }
    // A second task, claimed and answered in time, must be left alone.
    let answered = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("b"), 0)
        .await;
    app.claim(&pair.callee.key, 0).await;
    app.post_result(
        &pair.callee.key,
        &answered.field("id"),
        json!({"state": "completed"}),
    )
    .await;
    // Past the first claim's deadline.
    tokio::time::sleep_until((claim_answered + Duration::from_millis(1100)).into()).await;

    let swept = forgebench::sweeper::sweep_overdue(&app.app.store, &app.app.queue, &app.app.bodies)
        .await
        .done;
    // The overdue task, unless the early sweep (on a busy machine) took it already.
    assert_eq!(swept + early, 1);
    let stored = app
        .app
        .store
        .get_task(&overdue.field("id").into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.state, forgebench::domain::TaskState::Failed);
    let other = app
        .app
        .store
        .get_task(&answered.field("id").into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.state, forgebench::domain::TaskState::Completed);
    assert_eq!(
        forgebench::sweeper::sweep_overdue(&app.app.store, &app.app.queue, &app.app.bodies)
            .await
            .done,
        0
    );
}
