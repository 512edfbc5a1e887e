//! Operating deliveries (docs/api.md, "Operating deliveries"), against real receivers on
//! loopback: an endpoint's health, its disabling after failures in a row spanning long enough
//! (audited, its tasks failed at once without a POST), an admin enabling it again, a replay of a
//! waiting delivery with its own `webhook-id`, and a redrive of the deliveries waiting since a
//! moment.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use forgebench::domain::endpoint_health::DisableRule;
use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Pair, TestApp};
use serde_json::{json, Value};

/// A receiver that answers 503 until `healed` is set, then completes each task.
async fn receiver(healed: &Arc<AtomicBool>) -> Callee {
    let healed = Arc::clone(healed);
    Callee::start(move |_| {
        if healed.load(Ordering::SeqCst) {
            Answer::json(
                200,
                json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}),
            )
        } else {
            Answer::text(503, "down")
        }
    })
    .await
}

async fn health(app: &TestApp, pair: &Pair, key: &str) -> (u16, Value) {
    let path = format!("/v1/agents/{}/endpoint/health", pair.callee.name);
    let reply = app.get(&path, key).await;
    (reply.status, reply.body)
}

/// Waits until the task has `count` recorded attempts.
async fn attempts_reach(app: &TestApp, pair: &Pair, task_id: &str, count: usize) {
    for _ in 0..150 {
        if app.delivery_attempts(pair, task_id).await.len() >= count {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {task_id} never reached {count} attempts");
}

#[tokio::test]
async fn health_shows_failures_then_the_success_that_ends_them() {
    let app = spawn_app_with(Options::local_push()).await;
    let healed = Arc::new(AtomicBool::new(false));
    let endpoint = receiver(&healed).await;
    let pair = app.push_pair(&endpoint.url).await;
    let (status, before) = health(&app, &pair, &pair.tenant.admin_key).await;
    assert_eq!(status, 200, "{before}");
    assert_eq!(before["state"], "active");
    assert_eq!(before["success_rate"], Value::Null);

    let failed = app.opened(&pair, "first").await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &failed)
        .await;
    assert_eq!(settled.state(), "failed", "{}", settled.text);
    let (_, failing) = health(&app, &pair, &pair.tenant.admin_key).await;
    assert_eq!(failing["state"], "failing", "{failing}");
    assert_eq!(failing["consecutive_failures"], 3, "three attempts");
    assert!(failing["last_error"].as_str().unwrap().contains("503"));
    assert!(failing["failing_since"].is_string());

    healed.store(true, Ordering::SeqCst);
    let answered = app.opened(&pair, "second").await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &answered)
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    // Any person of the tenant reads it; the agent itself too.
    let (_, viewer_key) = app.create_member(&pair.tenant, "viewer").await;
    for key in [&viewer_key, &pair.callee.key] {
        let (status, active) = health(&app, &pair, key).await;
        assert_eq!(status, 200, "{active}");
        assert_eq!(active["state"], "active", "{active}");
        assert_eq!(active["consecutive_failures"], 0);
        assert_eq!(active["failing_since"], Value::Null);
        assert_eq!(active["attempts"]["ok"], 1);
        assert_eq!(active["attempts"]["failed"], 3);
        assert_eq!(active["success_rate"], json!(0.25));
    }
    // A pull agent has no endpoint health; another URL starts afresh.
    let (status, _) = health(&app, &pair_of_caller(&pair), &pair.tenant.admin_key).await;
    assert_eq!(status, 404);
    let other = Callee::start(|_| Answer::text(503, "down")).await;
    let moved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": other.url}),
        )
        .await;
    assert_eq!(moved.status, 200, "{}", moved.text);
    let (_, fresh) = health(&app, &pair, &pair.tenant.admin_key).await;
    assert_eq!(
        fresh["attempts"],
        json!({"ok": 0, "failed": 0, "since": fresh["attempts"]["since"]})
    );
}

/// The pair's caller as a "callee" path segment: a pull-only agent.
fn pair_of_caller(pair: &Pair) -> Pair {
    Pair {
        callee: pair.caller.clone(),
        ..pair.clone()
    }
}

#[tokio::test]
async fn an_endpoint_failing_long_enough_is_disabled_audited_and_fails_its_tasks_without_a_post() {
    let app = spawn_app_with(Options {
        endpoint_disable: DisableRule {
            failures: 3,
            span: Duration::ZERO,
        },
        ..Options::local_push()
    })
    .await;
    let healed = Arc::new(AtomicBool::new(false));
    let endpoint = receiver(&healed).await;
    let pair = app.push_pair(&endpoint.url).await;

    let tripped = app.opened(&pair, "first").await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &tripped)
        .await;
    assert_eq!(settled.state(), "failed", "{}", settled.text);
    let error = settled.body["error"].as_str().unwrap().to_owned();
    assert!(
        error.starts_with(
            "delivery failed: the endpoint was disabled after 3 failures in a row since"
        ),
        "{error}"
    );
    let agent = app
        .get(
            &format!("/v1/agents/{}", pair.callee.name),
            &pair.tenant.admin_key,
        )
        .await;
    assert!(
        agent.body["endpoint"]["disabled"]["at"].is_string(),
        "{}",
        agent.text
    );
    let (_, disabled) = health(&app, &pair, &pair.tenant.admin_key).await;
    assert_eq!(disabled["state"], "disabled", "{disabled}");
    let audit = app.audit(&pair.tenant.admin_key).await;
    let entry = audit
        .iter()
        .find(|entry| entry["action"] == "agent.endpoint.disable")
        .expect("the disabling is audited");
    assert_eq!(entry["actor"]["kind"], "gateway");
    assert_eq!(entry["target"], pair.callee.id.as_str());
    assert!(entry["reason"]
        .as_str()
        .unwrap()
        .starts_with("3 failures in a row"));

    // A task for a disabled endpoint fails at once: no POST, no attempt.
    healed.store(true, Ordering::SeqCst);
    let posts = endpoint.received().len();
    let refused = app.opened(&pair, "second").await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &refused)
        .await;
    assert_eq!(settled.state(), "failed", "{}", settled.text);
    assert_eq!(settled.body["error"], forgebench::push::ENDPOINT_DISABLED);
    assert!(app.delivery_attempts(&pair, &refused).await.is_empty());
    assert_eq!(endpoint.received().len(), posts, "nothing was POSTed");
    // Neither a replay nor a redrive reaches a disabled endpoint.
    let replay = app
        .post(
            &format!("/v1/agents/{}/tasks/{refused}/replay", pair.callee.name),
            &pair.tenant.admin_key,
            json!({}),
        )
        .await;
    assert_eq!(replay.status, 409, "{}", replay.text);

    // Only an admin enables it again; then tasks are delivered.
    let (_, member_key) = app.create_member(&pair.tenant, "member").await;
    let enable = format!("/v1/agents/{}/endpoint/enable", pair.callee.name);
    let refused_enable = app.post(&enable, &member_key, json!({})).await;
    assert_eq!(refused_enable.status, 403, "{}", refused_enable.text);
    let enabled = app.post(&enable, &pair.tenant.admin_key, json!({})).await;
    assert_eq!(enabled.status, 200, "{}", enabled.text);
    assert_eq!(enabled.body["state"], "active", "{}", enabled.text);
    assert_eq!(enabled.body["consecutive_failures"], 0);
    let audit = app.audit(&pair.tenant.admin_key).await;
    assert!(audit
        .iter()
        .any(|entry| entry["action"] == "agent.endpoint.enable"));
    let answered = app.opened(&pair, "third").await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &answered)
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
}

#[tokio::test]
async fn failures_in_a_row_that_span_too_little_time_do_not_disable() {
    let app = spawn_app_with(Options {
        endpoint_disable: DisableRule {
            failures: 3,
            span: Duration::from_secs(3600),
        },
        ..Options::local_push()
    })
    .await;
    let endpoint = Callee::start(|_| Answer::text(503, "down")).await;
    let pair = app.push_pair(&endpoint.url).await;
    let task_id = app.opened(&pair, "first").await;
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert!(
        settled.body["error"]
            .as_str()
            .unwrap()
            .starts_with("delivery failed after 3 attempts"),
        "{}",
        settled.text
    );
    let (_, failing) = health(&app, &pair, &pair.tenant.admin_key).await;
    assert_eq!(failing["state"], "failing", "{failing}");
    assert_eq!(failing["consecutive_failures"], 3);
}

/// Replays as soon as the attempt before has ended (its lease given back): a replay while an
/// attempt is under way is a `409` that says so.
async fn replay_once_released(app: &TestApp, path: &str, key: &str) -> forgebench_tests::Reply {
    let mut reply = app.post(path, key, json!({})).await;
    for _ in 0..50 {
        if !(reply.status == 409 && reply.text.contains("under way")) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        reply = app.post(path, key, json!({})).await;
    }
    reply
}

/// A gateway whose failed deliveries wait half a minute for their retry.
async fn slow_retries() -> TestApp {
    spawn_app_with(Options {
        retry_seconds: "30,30",
        ..Options::local_push()
    })
    .await
}

#[tokio::test]
async fn a_replay_attempts_a_waiting_delivery_now_with_its_own_webhook_id() {
    let app = slow_retries().await;
    let healed = Arc::new(AtomicBool::new(false));
    let endpoint = receiver(&healed).await;
    let pair = app.push_pair(&endpoint.url).await;
    let task_id = app.opened(&pair, "first").await;
    attempts_reach(&app, &pair, &task_id, 1).await;
    healed.store(true, Ordering::SeqCst);

    let path = format!("/v1/agents/{}/tasks/{task_id}/replay", pair.callee.name);
    let (_, member_key) = app.create_member(&pair.tenant, "member").await;
    let not_owner = app.post(&path, &member_key, json!({})).await;
    assert_eq!(not_owner.status, 403, "{}", not_owner.text);
    let replayed = replay_once_released(&app, &path, &pair.tenant.admin_key).await;
    assert_eq!(replayed.status, 202, "{}", replayed.text);
    assert_eq!(replayed.body["task_id"], task_id.as_str());
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "completed", "long before the 30 s retry");
    let received = endpoint.received();
    assert_eq!(received.len(), 2);
    for post in &received {
        assert_eq!(
            post.headers["webhook-id"].to_str().unwrap(),
            replayed.body["webhook_id"].as_str().unwrap(),
            "a replay is a retry of the same delivery"
        );
    }
    let attempts = app.delivery_attempts(&pair, &task_id).await;
    let numbers: Vec<&Value> = attempts.iter().map(|attempt| &attempt["attempt"]).collect();
    assert_eq!(numbers, [&json!(1), &json!(2)], "attempt numbers run on");

    let audit = app.audit(&pair.tenant.admin_key).await;
    assert!(
        audit
            .iter()
            .any(|entry| entry["action"] == "task.delivery.replay"
                && entry["target"] == task_id.as_str()),
        "the replay is audited"
    );
    let again = app.post(&path, &pair.tenant.admin_key, json!({})).await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert!(again.text.contains("completed"), "{}", again.text);
}

#[tokio::test]
async fn a_pull_task_is_not_replayed() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let task_id = app.opened(&pair, "pulled").await;
    let path = format!("/v1/agents/{}/tasks/{task_id}/replay", pair.callee.name);
    let no_endpoint = app.post(&path, &pair.tenant.admin_key, json!({})).await;
    assert_eq!(no_endpoint.status, 404, "{}", no_endpoint.text);
    // Tasks keep the delivery they were opened with.
    let endpoint = Callee::start(|_| Answer::text(503, "down")).await;
    let reply = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": endpoint.url}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let refused = app.post(&path, &pair.tenant.admin_key, json!({})).await;
    assert_eq!(refused.status, 409, "{}", refused.text);
    assert!(refused.text.contains("pull"), "{}", refused.text);
}

#[tokio::test]
async fn a_redrive_attempts_the_deliveries_waiting_since_a_moment() {
    let app = slow_retries().await;
    let healed = Arc::new(AtomicBool::new(false));
    let endpoint = receiver(&healed).await;
    let pair = app.push_pair(&endpoint.url).await;
    let before = app.opened(&pair, "before").await;
    attempts_reach(&app, &pair, &before, 1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let since = forgebench::domain::clock::now().to_string();
    let mut after = Vec::new();
    for n in 0..2 {
        let task_id = app.opened(&pair, &format!("after {n}")).await;
        attempts_reach(&app, &pair, &task_id, 1).await;
        after.push(task_id);
    }
    healed.store(true, Ordering::SeqCst);

    let path = format!("/v1/agents/{}/endpoint/redrive", pair.callee.name);
    let bad = app
        .post(&path, &pair.tenant.admin_key, json!({"since": "yesterday"}))
        .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    // A task whose attempt has not yet ended is not waiting yet: redrive until both were.
    let mut redriven: Vec<Value> = Vec::new();
    for _ in 0..50 {
        let reply = app
            .post(&path, &pair.tenant.admin_key, json!({"since": since}))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let ids = reply.body["task_ids"].as_array().unwrap().clone();
        assert_eq!(reply.body["redriven"], ids.len(), "{}", reply.text);
        assert_eq!(reply.body["next_since"], Value::Null);
        let positions: Vec<usize> = ids
            .iter()
            .map(|id| {
                after
                    .iter()
                    .position(|opened| id == opened.as_str())
                    .expect("only tasks opened after the moment")
            })
            .collect();
        assert!(
            positions.windows(2).all(|pair| pair[0] < pair[1]),
            "oldest first"
        );
        redriven.extend(ids);
        if redriven.len() >= after.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    redriven.sort_by_key(|id| after.iter().position(|opened| id == opened.as_str()));
    assert_eq!(Value::from(redriven), json!(after));
    for task_id in &after {
        let settled = app
            .settled(&pair.caller.key, &pair.callee.name, task_id)
            .await;
        assert_eq!(settled.state(), "completed", "{}", settled.text);
    }
    let audit = app.audit(&pair.tenant.admin_key).await;
    assert!(audit
        .iter()
        .any(|entry| entry["action"] == "agent.endpoint.redrive"
            && entry["target"] == pair.callee.id.as_str()));
    // The task opened before the moment still waits for its retry.
    let waiting = app
        .get_task(&pair.caller.key, &pair.callee.name, &before)
        .await;
    assert_eq!(waiting.state(), "working", "{}", waiting.text);
    assert_eq!(app.delivery_attempts(&pair, &before).await.len(), 1);
}

#[tokio::test]
async fn a_notification_config_receives_its_latest_event_again_under_the_same_webhook_id() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let receiver = Callee::start(|_| Answer::text(200, "ok")).await;
    let opened = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    let task_id = opened.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", opened.text))
        .to_owned();
    let created = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "hook", "url": receiver.url}),
        )
        .await;
    assert!(created.body["result"].is_object(), "{}", created.text);
    let path = format!(
        "/v1/agents/{}/tasks/{task_id}/notifications/hook/replay",
        pair.callee.name
    );
    // Nothing received yet: nothing to replay.
    let early = app.post(&path, &pair.caller.key, json!({})).await;
    assert_eq!(early.status, 409, "{}", early.text);

    let answered = app
        .post_result(
            &pair.callee.key,
            &claim(&app, &pair).await,
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "done"}]}]}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    receiver.wait_for(2).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let events = receiver.received();
    let sent = events.len();
    let last = events.last().unwrap().headers["webhook-id"]
        .to_str()
        .unwrap()
        .to_owned();

    let others = [
        (pair.callee.key.clone(), 403),
        (app.create_member(&pair.tenant, "viewer").await.1, 403),
    ];
    for (key, status) in others {
        let refused = app.post(&path, &key, json!({})).await;
        assert_eq!(refused.status, status, "{}", refused.text);
    }
    let gone = app
        .post(
            &path.replace("/hook/", "/nothing/"),
            &pair.caller.key,
            json!({}),
        )
        .await;
    assert_eq!(gone.status, 404, "{}", gone.text);
    let replayed = app.post(&path, &pair.caller.key, json!({})).await;
    assert_eq!(replayed.status, 202, "{}", replayed.text);
    assert_eq!(replayed.body["webhook_id"], last.as_str());
    let again = receiver.wait_for(sent + 1).await;
    assert_eq!(again.len(), sent + 1, "the one event, once");
    assert_eq!(again[sent].headers["webhook-id"].to_str().unwrap(), last);
    assert_eq!(again[sent].body, events.last().unwrap().body);
    // By an admin too, once that send is done.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let by_admin = app.post(&path, &pair.tenant.admin_key, json!({})).await;
    assert_eq!(by_admin.status, 202, "{}", by_admin.text);
    assert_eq!(receiver.wait_for(sent + 2).await.len(), sent + 2);
}

/// Claims the pair's next task as its callee; the task's id.
async fn claim(app: &TestApp, pair: &Pair) -> String {
    let claimed = app
        .get("/v1/agents/me/tasks/next?wait=5", &pair.callee.key)
        .await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    claimed.field("id")
}

/// A tenant that has lived before its endpoint was operated: pull tasks answered and canceled,
/// an open refused after a revocation, then a push endpoint that fails, and a notification
/// config stored before configs kept where they started. Each operation answers as documented,
/// takes only what waits, and the tenant's search still answers.
#[tokio::test]
async fn delivery_operations_in_a_tenant_that_has_lived() {
    let app = slow_retries().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let answered = app.opened(&pair, "pulled and answered").await;
    let claimed = claim(&app, &pair).await;
    assert_eq!(claimed, answered);
    let result = json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]});
    let posted = app.post_result(&pair.callee.key, &claimed, result).await;
    assert_eq!(posted.status, 200, "{}", posted.text);
    let canceled = app.opened(&pair, "pulled and canceled").await;
    let cancel = app
        .cancel(&pair.caller.key, &pair.callee.name, &canceled)
        .await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    assert_eq!(app.revoke_binding(&pair).await.status, 200);
    let refused = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("no"), 0)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    let regranted = app
        .grant(admin, &pair.caller.id, &[&pair.callee.name])
        .await;
    assert_eq!(regranted.status, 200, "{}", regranted.text);

    let healed = Arc::new(AtomicBool::new(false));
    let endpoint = receiver(&healed).await;
    let reply = app
        .set_endpoint(admin, &pair.callee.name, json!({"url": endpoint.url}))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let waiting = app.opened(&pair, "pushed").await;
    attempts_reach(&app, &pair, &waiting, 1).await;

    let (status, failing) = health(&app, &pair, admin).await;
    assert_eq!(status, 200, "{failing}");
    for (task_id, status) in [
        (&answered, 409),
        (&canceled, 409),
        (&"00000000-0000-4000-8000-000000000000".to_owned(), 404),
    ] {
        let path = format!("/v1/agents/{}/tasks/{task_id}/replay", pair.callee.name);
        let reply = app.post(&path, admin, json!({})).await;
        assert_eq!(reply.status, status, "{task_id}: {}", reply.text);
    }
    healed.store(true, Ordering::SeqCst);
    let path = format!("/v1/agents/{}/endpoint/redrive", pair.callee.name);
    let mut redriven = Vec::new();
    for _ in 0..50 {
        let reply = app
            .post(&path, admin, json!({"since": "2026-01-01T00:00:00Z"}))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        redriven.extend(reply.body["task_ids"].as_array().unwrap().clone());
        if !redriven.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(Value::from(redriven), json!([waiting]), "only what waits");
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &waiting)
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    let searched = app.get("/v1/tasks", admin).await;
    assert_eq!(searched.status, 200, "{}", searched.text);
    assert_eq!(searched.body["items"].as_array().unwrap().len(), 3);
}

/// A notification config stored before configs kept where they started (no `start`) is
/// replayed from what it received.
#[tokio::test]
async fn a_config_stored_before_configs_kept_their_start_is_replayed() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let receiver = Callee::start(|_| Answer::text(200, "ok")).await;
    let task_id = app.opened(&pair, "hi").await;
    let created = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "old-hook", "url": receiver.url}),
        )
        .await;
    assert!(created.body["result"].is_object(), "{}", created.text);
    let cancel = app
        .cancel(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(cancel.status, 200, "{}", cancel.text);
    receiver.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut key = std::collections::HashMap::new();
    for (name, value) in [
        ("pk", format!("TASK#{task_id}")),
        ("sk", "NOTIFY#old-hook".to_owned()),
    ] {
        key.insert(
            name.to_owned(),
            aws_sdk_dynamodb::types::AttributeValue::S(value),
        );
    }
    app.app
        .store
        .client()
        .update_item()
        .table_name(app.app.store.table())
        .set_key(Some(key))
        .update_expression("REMOVE #start")
        .expression_attribute_names("#start", "start")
        .send()
        .await
        .unwrap();
    let sent = receiver.received().len();
    let path = format!(
        "/v1/agents/{}/tasks/{task_id}/notifications/old-hook/replay",
        pair.callee.name
    );
    let replayed = app.post(&path, &pair.caller.key, json!({})).await;
    assert_eq!(replayed.status, 202, "{}", replayed.text);
    assert_eq!(receiver.wait_for(sent + 1).await.len(), sent + 1);
}
