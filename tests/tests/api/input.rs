//! `POST /v1/agents/{agent}/tasks/{id}/messages`: the caller answers the callee's question on
//! the same task, which goes back to `working` and reaches the callee again (claimed or pushed).

use forgebench_tests::{
    spawn_app, spawn_app_with, text_message, Answer, Callee, Options, Reply, TestApp,
};
use futures::future::join_all;
use serde_json::{json, Value};

const NOT_PERMITTED: &str =
    r#"{"detail":{"code":"not_permitted","message":"not permitted to call that agent"}}"#;

async fn add_message(app: &TestApp, key: &str, callee: &str, task_id: &str, text: &str) -> Reply {
    app.post(
        &format!("/v1/agents/{callee}/tasks/{task_id}/messages"),
        key,
        json!({"message": text_message(text)}),
    )
    .await
}

fn texts(task: &Value) -> Vec<String> {
    task["history"]
        .as_array()
        .map(|history| {
            history
                .iter()
                .map(|message| {
                    message["parts"][0]["text"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn the_answer_puts_the_task_back_to_work_for_the_callee() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = app.asked(&pair).await;

    let answered = add_message(&app, &pair.caller.key, &pair.callee.name, &task_id, "INV-7").await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(answered.state(), "working");
    assert_eq!(answered.field("id"), task_id);
    assert_eq!(
        texts(&answered.body),
        ["Classify", "which invoice?", "INV-7"]
    );
    assert_eq!(answered.body["history"][2]["role"], "user");

    // Claimable again: the callee gets the same task with the whole exchange.
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    assert_eq!(claimed.field("id"), task_id);
    assert_eq!(texts(&claimed.body).len(), 3);
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204, "once");
    let done = app
        .post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "completed");

    // On the ledger, with the task's call.
    let audit = app.audit(&pair.tenant.admin_key).await;
    let entry = audit
        .iter()
        .find(|entry| entry["action"] == "task.message")
        .expect("task.message on the audit log");
    assert_eq!(entry["task_id"], task_id);
    assert_eq!(entry["call_id"], answered.body["call_id"]);
    assert_eq!(entry["outcome"], "allowed");
}

#[tokio::test]
async fn only_the_caller_answers_and_only_a_waiting_task() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = app.asked(&pair).await;
    let callee = &pair.callee.name;

    let by_callee = add_message(&app, &pair.callee.key, callee, &task_id, "me").await;
    assert_eq!(by_callee.status, 403, "{}", by_callee.text);
    let by_admin = add_message(&app, &pair.tenant.admin_key, callee, &task_id, "me").await;
    assert_eq!(by_admin.status, 403, "{}", by_admin.text);
    let stranger = app.create_agent(&pair.tenant.admin_key, "bystander").await;
    let by_stranger = add_message(&app, &stranger.key, callee, &task_id, "me").await;
    assert_eq!(by_stranger.status, 404, "{}", by_stranger.text);
    let wrong_path = add_message(&app, &pair.caller.key, &stranger.name, &task_id, "x").await;
    assert_eq!(wrong_path.status, 404, "{}", wrong_path.text);
    let other = app.pair().await;
    let across = add_message(&app, &other.caller.key, callee, &task_id, "x").await;
    assert_eq!(across.status, 404, "{}", across.text);
    let bad = app
        .post(
            &format!("/v1/agents/{callee}/tasks/{task_id}/messages"),
            &pair.caller.key,
            json!({"message": {"role": "agent", "parts": [{"text": "x"}]}}),
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);

    // Still waiting, nothing added by the refused calls.
    let read = app.get_task(&pair.caller.key, callee, &task_id).await;
    assert_eq!(read.state(), "input_required");
    assert_eq!(texts(&read.body).len(), 2);

    // Once answered it is working, not waiting: a second answer is a 409.
    assert_eq!(
        add_message(&app, &pair.caller.key, callee, &task_id, "INV-7")
            .await
            .status,
        200
    );
    let again = add_message(&app, &pair.caller.key, callee, &task_id, "INV-8").await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_eq!(again.body["detail"]["code"], "conflict");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn of_concurrent_answers_exactly_one_is_taken() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = app.asked(&pair).await;
    let replies = join_all((0..6).map(|index| {
        let (app, pair, task_id) = (&app, &pair, &task_id);
        async move {
            add_message(
                app,
                &pair.caller.key,
                &pair.callee.name,
                task_id,
                &format!("answer {index}"),
            )
            .await
        }
    }))
    .await;
    let taken = replies.iter().filter(|reply| reply.status == 200).count();
    let refused = replies.iter().filter(|reply| reply.status == 409).count();
    assert_eq!((taken, refused), (1, 5), "{replies:?}");
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(texts(&read.body).len(), 3, "one answer in the history");
}

#[tokio::test]
async fn a_revoked_binding_refuses_the_answer_with_the_one_403() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = app.asked(&pair).await;
    let revoked = app.revoke_binding(&pair).await;
    assert!(revoked.status < 300, "{}", revoked.text);
    let refused = add_message(&app, &pair.caller.key, &pair.callee.name, &task_id, "INV-7").await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.text, NOT_PERMITTED);
    let audit = app.audit(&pair.tenant.admin_key).await;
    let entry = audit
        .iter()
        .find(|entry| entry["action"] == "task.message")
        .expect("the refusal is on the audit log");
    assert_eq!(entry["outcome"], "refused");
    assert_eq!(entry["reason"], "binding_revoked");
    assert_eq!(entry["task_id"], task_id);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "input_required");
    assert_eq!(texts(&read.body).len(), 2);
}

#[tokio::test]
async fn a_push_task_is_delivered_again_with_the_answer() {
    let callee = Callee::start(|delivery| {
        if delivery == 0 {
            Answer::json(
                200,
                json!({"state": "input_required",
                       "message": {"role": "agent", "parts": [{"text": "which invoice?"}]}}),
            )
        } else {
            Answer::json(200, json!({"state": "completed"}))
        }
    })
    .await;
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
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("Classify"),
            10,
        )
        .await;
    assert_eq!(opened.state(), "input_required", "{}", opened.text);
    let task_id = opened.field("id");

    let answered = add_message(&app, &pair.caller.key, &pair.callee.name, &task_id, "INV-7").await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    let received = callee.received();
    assert_eq!(
        received.len(),
        2,
        "delivered twice: the question, then the answer"
    );
    assert_eq!(received[0].body["message"]["parts"][0]["text"], "Classify");
    let second = &received[1].body;
    assert_eq!(second["task_id"], task_id);
    assert_eq!(second["call_id"], opened.body["call_id"]);
    assert_eq!(second["message"]["parts"][0]["text"], "INV-7");
    // The whole exchange in order, then the endpoint's final answer.
    let history = texts(&settled.body);
    assert_eq!(history[..3], ["Classify", "which invoice?", "INV-7"]);
    assert_eq!(history.len(), 4);
}
