//! Push deliveries and their ids: each delivery has its own `webhook-id`, shared by its retries.

use forgebench::push::{Job, JobOutcome};
use forgebench_tests::{
    dynamodb_endpoint, spawn_app_with, text_message, Answer, Callee, Options, Pair, Received,
    TestApp,
};
use serde_json::json;

/// A gateway whose own push worker is off (the test runs deliveries itself) and a callee that
/// pushes to `callee`, with a bearer secret when `with_secret`.
async fn quiet_push_pair(callee: &Callee, with_secret: bool) -> (TestApp, Pair) {
    let app = spawn_app_with(Options {
        push_worker: false,
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let endpoint = match with_secret {
        true => json!({"url": callee.url, "auth": {"type": "bearer", "secret": "s3cret-attempts"}}),
        false => json!({ "url": callee.url }),
    };
    let saved = app
        .set_endpoint(&pair.tenant.admin_key, &pair.callee.name, endpoint)
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    (app, pair)
}

/// The SQS message the gateway sends for a task, as the worker receives it.
fn job_for(task_id: &str) -> Job {
    Job {
        message_id: format!("test-{task_id}"),
        receipt_handle: String::new(),
        body: json!({ "task_id": task_id }).to_string(),
    }
}

/// A push task through one question: the first delivery's second attempt gets the question,
/// the delivery that carries the caller's answer succeeds on its third (three attempts per
/// delivery, as Options' schedule has it). Returns the gateway, the pair, the task id and what
/// the endpoint received.
async fn through_one_question() -> (TestApp, Pair, String, Vec<Received>) {
    let callee = Callee::start(|n| match n {
        1 => Answer::json(
            200,
            json!({"state": "input_required",
                   "message": {"role": "agent", "parts": [{"text": "which invoice?"}]}}),
        ),
        4 => Answer::json(200, json!({"state": "completed"})),
        _ => Answer::text(503, "busy"),
    })
    .await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
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
    let answered = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("INV-7")}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    let received = callee.received();
    assert_eq!(received.len(), 5);
    assert_eq!(received[2].body["message"]["parts"][0]["text"], "INV-7");
    (app, pair, task_id, received)
}

#[tokio::test]
async fn each_delivery_has_its_own_webhook_id_shared_by_its_retries() {
    let (_app, _pair, _task_id, received) = through_one_question().await;
    let ids: Vec<&str> = received
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap())
        .collect();
    assert_eq!(ids[0], ids[1], "retries of one delivery share its id");
    assert_eq!(ids[2], ids[3]);
    assert_eq!(ids[3], ids[4]);
    assert_ne!(ids[0], ids[2], "the delivery of the answer has a new id");
}

#[tokio::test]
async fn a_task_stored_without_a_delivery_id_is_delivered_under_its_task_id() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = quiet_push_pair(&callee, false).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    // As the previous version stored it: no delivery id.
    forgebench_tests::dynamodb_client(&dynamodb_endpoint())
        .await
        .update_item()
        .table_name(&app.table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("TASK#{task_id}")),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("TASK".into()),
        )
        .update_expression("REMOVE delivery_id")
        .condition_expression("attribute_exists(delivery_id)")
        .send()
        .await
        .expect("the task had a delivery id");
    assert_eq!(
        app.app.worker().handle(&job_for(&task_id)).await,
        JobOutcome::Done
    );
    let received = callee.wait_for(1).await;
    assert_eq!(received[0].headers["webhook-id"], task_id.as_str());
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "completed");
}
