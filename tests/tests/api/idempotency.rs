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
