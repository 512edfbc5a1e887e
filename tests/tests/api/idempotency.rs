//! Opening a task with `message.message_id` is safe to repeat: the same caller, callee and
//! message id give back the task the first open wrote, never a second one.

use forgebench_tests::{spawn_app, spawn_app_with, text_message, Answer, Callee, Options};
use futures::future::join_all;
use serde_json::{json, Value};

fn keyed_message(text: &str, message_id: &str) -> Value {
    let mut message = text_message(text);
    message["message_id"] = json!(message_id);
    message
}

fn opens_of(audit: &[Value], task_id: &str) -> usize {
    audit
        .iter()
        .filter(|entry| entry["action"] == "task.open" && entry["task_id"] == task_id)
        .count()
}

#[tokio::test]
async fn a_repeated_open_returns_the_first_task_and_writes_nothing() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let message = keyed_message("refund order 4182", "order-4182-refund");
    let first = app
        .open_task(&pair.caller.key, &pair.callee.name, message.clone(), 0)
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let items_after_first = app.scan_all().await.len();

    let again = app
        .open_task(&pair.caller.key, &pair.callee.name, message, 0)
        .await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.field("id"), first.field("id"));
    assert_eq!(again.field("context_id"), first.field("context_id"));
    assert_eq!(
        again.headers.get("x-call-id"),
        first.headers.get("x-call-id"),
        "the first open's call"
    );
    assert_eq!(app.scan_all().await.len(), items_after_first, "nothing new");
    let audit = app.audit(&pair.tenant.admin_key).await;
    assert_eq!(opens_of(&audit, &first.field("id")), 1);

    // One task to work on, not two.
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn a_repeat_after_the_answer_returns_the_finished_task() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let message = keyed_message("classify invoice 77", "invoice-77");
    let first = app
        .open_task(&pair.caller.key, &pair.callee.name, message.clone(), 0)
        .await;
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.field("id"), first.field("id"));
    let answered = app
        .post_result(
            &pair.callee.key,
            &first.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);

    let again = app
        .open_task(&pair.caller.key, &pair.callee.name, message, 0)
        .await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.field("id"), first.field("id"));
    assert_eq!(again.state(), "completed");
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn the_message_id_is_scoped_to_the_caller_and_the_callee() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let other_callee = app
        .create_agent(&pair.tenant.admin_key, "second-classifier")
        .await;
    let other_caller = app
        .create_agent(&pair.tenant.admin_key, "second-orchestrator")
        .await;
    for (caller, callees) in [
        (
            &pair.caller.id,
            vec![pair.callee.name.as_str(), other_callee.name.as_str()],
        ),
        (&other_caller.id, vec![pair.callee.name.as_str()]),
    ] {
        let granted = app.grant(&pair.tenant.admin_key, caller, &callees).await;
        assert_eq!(granted.status, 200, "{}", granted.text);
    }
    let message = keyed_message("same words", "shared-id");
    let mut ids = std::collections::HashSet::new();
    for (key, callee) in [
        (&pair.caller.key, &pair.callee.name),
        (&pair.caller.key, &other_callee.name),
        (&other_caller.key, &pair.callee.name),
    ] {
        let opened = app.open_task(key, callee, message.clone(), 0).await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        ids.insert(opened.field("id"));
    }
    assert_eq!(ids.len(), 3, "three callers/callees, three tasks");
    // Without a message_id every open is a new task.
    let plain = text_message("no id");
    let a = app
        .open_task(&pair.caller.key, &pair.callee.name, plain.clone(), 0)
        .await;
    let b = app
        .open_task(&pair.caller.key, &pair.callee.name, plain, 0)
        .await;
    assert_ne!(a.field("id"), b.field("id"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_repeats_make_one_task_and_all_get_it() {
    const CLIENTS: usize = 8;
    let app = spawn_app().await;
    let pair = app.pair().await;
    let message = keyed_message("exactly once", "retry-storm-1");
    let replies = join_all((0..CLIENTS).map(|_| {
        let (app, key, callee, message) = (&app, &pair.caller.key, &pair.callee.name, &message);
        async move { app.open_task(key, callee, message.clone(), 0).await }
    }))
    .await;
    let ids: std::collections::HashSet<String> = replies
        .iter()
        .map(|reply| {
            assert_eq!(reply.status, 200, "{}", reply.text);
            reply.field("id")
        })
        .collect();
    assert_eq!(ids.len(), 1, "every client got the same task");
    let task_id = ids.into_iter().next().unwrap_or_default();
    let audit = app.audit(&pair.tenant.admin_key).await;
    assert_eq!(opens_of(&audit, &task_id), 1);
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn a_repeated_push_open_is_delivered_once() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let endpoint = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": "s3cret-push"}}),
        )
        .await;
    assert_eq!(endpoint.status, 200, "{}", endpoint.text);
    let message = keyed_message("push me once", "push-once");
    let first = app
        .open_task(&pair.caller.key, &pair.callee.name, message.clone(), 10)
        .await;
    assert_eq!(first.state(), "completed", "{}", first.text);
    let again = app
        .open_task(&pair.caller.key, &pair.callee.name, message, 0)
        .await;
    assert_eq!(again.field("id"), first.field("id"));
    assert_eq!(again.state(), "completed");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(callee.received().len(), 1, "one POST for one task");
}

fn agent_message(text: &str, message_id: &str) -> Value {
    json!({"role": "agent", "parts": [{"text": text}], "message_id": message_id})
}

fn history_texts(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|message| {
            message["parts"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

fn actions_of(audit: &[Value], task_id: &str, action: &str) -> usize {
    audit
        .iter()
        .filter(|entry| entry["action"] == action && entry["task_id"] == task_id)
        .count()
}

/// Progress, a question, the caller's answer and the result, each sent twice with its
/// `message_id`: each lands once (history, change log, audit), and a repeat, even after the
/// task has moved on, answers what the first did (`200` with the task) instead of a `409`.
#[tokio::test]
async fn repeated_progress_questions_answers_and_results_land_once() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("pay"), 0)
        .await;
    let task_id = opened.field("id");
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    let progress_path = format!("/v1/agents/me/tasks/{task_id}/progress");
    let progress = json!({"message": agent_message("checking", "p-1")});
    for _ in 0..2 {
        let reply = app
            .post(&progress_path, &pair.callee.key, progress.clone())
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(history_texts(&reply.body), ["pay", "checking"]);
    }
    let question =
        json!({"state": "input_required", "message": agent_message("which account?", "q-1")});
    for _ in 0..2 {
        let reply = app
            .post_result(&pair.callee.key, &task_id, question.clone())
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.state(), "input_required");
    }
    let answer_path = format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name);
    let answer = json!({"message": keyed_message("ACC-9", "a-1")});
    for _ in 0..2 {
        let reply = app
            .post(&answer_path, &pair.caller.key, answer.clone())
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(
            history_texts(&reply.body),
            ["pay", "checking", "which account?", "ACC-9"]
        );
    }
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    let done = json!({"state": "completed", "message": agent_message("paid", "r-1")});
    for _ in 0..2 {
        let reply = app
            .post_result(&pair.callee.key, &task_id, done.clone())
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.state(), "completed");
    }

    // After the task finished: every repeat still answers 200 with the finished task.
    let late_progress = app.post(&progress_path, &pair.callee.key, progress).await;
    assert_eq!(late_progress.status, 200, "{}", late_progress.text);
    assert_eq!(late_progress.state(), "completed");
    let late_question = app.post_result(&pair.callee.key, &task_id, question).await;
    assert_eq!(late_question.status, 200, "{}", late_question.text);
    let late_answer = app.post(&answer_path, &pair.caller.key, answer).await;
    assert_eq!(late_answer.status, 200, "{}", late_answer.text);
    assert_eq!(late_answer.state(), "completed");

    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(
        history_texts(&read.body),
        ["pay", "checking", "which account?", "ACC-9", "paid"]
    );
    let stored = app
        .app
        .store
        .get_task(&task_id.clone().into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.event_count(),
        6,
        "claim, progress, question, answer, claim, result"
    );
    let audit = app.audit(&pair.tenant.admin_key).await;
    assert_eq!(actions_of(&audit, &task_id, "task.progress"), 1);
    assert_eq!(actions_of(&audit, &task_id, "task.message"), 1);

    // A new message_id is a new write, refused as usual now that the task is finished.
    let other = json!({"message": agent_message("more", "p-2")});
    let refused = app.post(&progress_path, &pair.callee.key, other).await;
    assert_eq!(refused.status, 409, "{}", refused.text);
}

/// The same message_id from the other side of the task is another message.
#[tokio::test]
async fn a_message_id_is_the_writers_own() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("pay"), 0)
        .await;
    let task_id = opened.field("id");
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    let question =
        json!({"state": "input_required", "message": agent_message("which?", "same-id")});
    assert_eq!(
        app.post_result(&pair.callee.key, &task_id, question)
            .await
            .status,
        200
    );
    let answer = json!({"message": keyed_message("this one", "same-id")});
    let answered = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            answer,
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(history_texts(&answered.body), ["pay", "which?", "this one"]);
    assert_eq!(answered.state(), "working");
}
