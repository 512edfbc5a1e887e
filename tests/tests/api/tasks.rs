//! The caller's side: open, read, cancel, refusals, conversations, lineage.

use std::time::{Duration, Instant};

use forgebench_tests::{spawn_app, text_message, TestApp};
use serde_json::{json, Value};

const NOT_PERMITTED: &str =
    r#"{"detail":{"code":"not_permitted","message":"not permitted to call that agent"}}"#;

/// The reasons of the refused `task.open` audit entries on `target`. Repeated refusals share
/// one entry a minute (per caller, target and reason), so entries of one minute are not in
/// request order; each reason is there once.
async fn refusal_reasons(app: &TestApp, admin_key: &str, target: &str) -> Vec<String> {
    let entries = app.audit(admin_key).await;
    entries
        .iter()
        .filter(|entry| {
            entry["action"] == "task.open"
                && entry["outcome"] == "refused"
                && entry["target"] == target
        })
        .filter_map(|entry| entry["reason"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn every_refusal_is_the_same_403_and_the_audit_log_has_the_reason() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.clone();
    let caller = pair.caller.clone();
    let open = |callee: String| {
        let app = &app;
        let key = caller.key.clone();
        async move { app.open_task(&key, &callee, text_message("hi"), 0).await }
    };
    let mut seen = Vec::new();

    // unknown callee
    let reply = open("no-such-agent".into()).await;
    seen.push((reply, "no-such-agent".to_owned(), "unknown_callee"));

    // another tenant's callee, by id
    let other = app.create_tenant().await;
    let foreign = app.create_agent(&other.admin_key, "foreign").await;
    let reply = open(foreign.id.clone()).await;
    seen.push((reply, foreign.id.clone(), "other_tenant"));

    // no binding
    let unbound = app.create_agent(&admin, "unbound").await;
    let reply = open(unbound.name.clone()).await;
    seen.push((reply, unbound.id.clone(), "no_binding"));

    // pending: a member who owns the caller side only
    let (_, member) = app.create_member(&pair.tenant, "member").await;
    let member_caller = app.create_agent(&member, "member-caller").await;
    let grant = app
        .grant(&member, &member_caller.id, &[&pair.callee.name])
        .await;
    assert!(grant.body[0]["approved_at"].is_null());
    let reply = app
        .open_task(&member_caller.key, &pair.callee.name, text_message("hi"), 0)
        .await;
    seen.push((reply, pair.callee.id.clone(), "binding_pending"));

    // paused, then retired callee
    let callee_path = format!("/v1/agents/{}", pair.callee.id);
    let patch = |status: &'static str| {
        app.send(
            "PATCH",
            &callee_path,
            Some(&admin),
            Some(json!({ "status": status })),
        )
    };
    assert_eq!(patch("paused").await.status, 200);
    let reply = open(pair.callee.name.clone()).await;
    seen.push((reply, pair.callee.id.clone(), "callee_paused"));
    assert_eq!(patch("retired").await.status, 200);
    let reply = open(pair.callee.name.clone()).await;
    seen.push((reply, pair.callee.id.clone(), "callee_retired"));

    // revoked: a fresh live pair, then cut
    let second = app.create_agent(&admin, "second-callee").await;
    let granted = app.grant(&admin, &caller.id, &[&second.name]).await;
    let binding_id = granted.body[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(open(second.name.clone()).await.status, 200);
    app.send(
        "DELETE",
        &format!("/v1/agents/{}/agents/{binding_id}", caller.id),
        Some(&admin),
        None,
    )
    .await;
    let reply = open(second.name.clone()).await;
    seen.push((reply, second.id.clone(), "binding_revoked"));

    for (reply, target, expected) in seen {
        assert_eq!(reply.status, 403, "{expected}");
        assert_eq!(reply.text, NOT_PERMITTED, "{expected}");
        assert!(!reply.text.contains(expected));
        let reasons = refusal_reasons(&app, &admin, &target).await;
        assert!(
            reasons.iter().any(|reason| reason == expected),
            "{expected}: {reasons:?}"
        );
    }
}

#[tokio::test]
async fn a_task_is_opened_by_name_or_id_and_carries_its_call_id_twice() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    for callee in [&pair.callee.name, &pair.callee.id] {
        let message = json!({"role": "user", "parts": [
            {"text": "Classify this invoice"}, {"data": {"invoice_id": "INV-2026-0912"}}
        ]});
        let reply = app
            .open_task(&pair.caller.key, callee, message.clone(), 0)
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.state(), "submitted");
        assert_eq!(reply.body["input"]["message"], message);
        assert_eq!(reply.body["callee_agent_id"], pair.callee.id.as_str());
        assert_eq!(reply.body["caller_agent_id"], pair.caller.id.as_str());
        assert_eq!(reply.body["delivery"], "pull");
        let call_id = reply.field("call_id");
        assert_eq!(reply.headers["x-call-id"].to_str().unwrap(), call_id);
        assert_eq!(reply.field("root_call_id"), call_id);
        assert!(reply.body["parent_call_id"].is_null());
    }
}

#[tokio::test]
async fn only_the_caller_the_callee_and_console_readers_see_a_task() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    let (_, viewer) = app.create_member(&pair.tenant, "viewer").await;
    let (_, member) = app.create_member(&pair.tenant, "member").await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let other = app.create_tenant().await;

    for key in [
        &pair.caller.key,
        &pair.callee.key,
        &viewer,
        &pair.tenant.admin_key,
    ] {
        let reply = app.get_task(key, &pair.callee.name, &task_id).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert_eq!(reply.field("id"), task_id);
    }
    for key in [&stranger.key, &member, &other.admin_key] {
        let reply = app.get_task(key, &pair.callee.name, &task_id).await;
        assert_eq!(reply.status, 404);
        assert_eq!(reply.text, r#"{"detail":"task not found"}"#);
    }
    // Naming the wrong callee in the path is the same 404.
    let wrong = app.get_task(&pair.caller.key, "stranger", &task_id).await;
    assert_eq!(wrong.status, 404);
    let missing = app
        .get_task(
            &pair.caller.key,
            &pair.callee.name,
            &uuid::Uuid::new_v4().to_string(),
        )
        .await;
    assert_eq!(missing.text, r#"{"detail":"task not found"}"#);
}

#[tokio::test]
async fn only_the_caller_cancels_and_cancel_is_idempotent() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    let by_callee = app
        .cancel(&pair.callee.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(by_callee.status, 403);
    let by_admin = app
        .cancel(&pair.tenant.admin_key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(by_admin.status, 403);
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    assert_eq!(
        app.cancel(&stranger.key, &pair.callee.name, &task_id)
            .await
            .status,
        404
    );

    let first = app
        .cancel(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.state(), "canceled");
    let second = app
        .cancel(&pair.caller.key, &pair.callee.id, &task_id)
        .await;
    assert_eq!(second.status, 200);
    assert_eq!(second.state(), "canceled");
    assert_eq!(second.body["updated_at"], first.body["updated_at"]);
    // A canceled task is never handed out.
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn canceling_a_finished_task_returns_it_unchanged() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    app.claim(&pair.callee.key, 1).await;
    let done = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": []}),
        )
        .await;
    assert_eq!(done.state(), "completed");
    let cancel = app
        .cancel(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(cancel.status, 200);
    assert_eq!(cancel.state(), "completed");
    assert_eq!(cancel.body, done.body);
}

#[tokio::test]
async fn wait_returns_the_answer_as_soon_as_the_callee_posts_it() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let callee_key = pair.callee.key.clone();
    let base = app.base.clone();
    let worker = tokio::spawn(async move {
        let http = reqwest::Client::new();
        let claimed: Value = http
            .get(format!("{base}/v1/agents/me/tasks/next?wait=10"))
            .bearer_auth(&callee_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = claimed["id"].as_str().unwrap().to_owned();
        http.post(format!("{base}/v1/agents/me/tasks/{id}/result"))
            .bearer_auth(&callee_key)
            .json(&json!({"state": "completed", "artifacts": [{"name": "response", "parts": [{"text": "software"}]}]}))
            .send()
            .await
            .unwrap();
        Instant::now()
    });
    let reply = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 20)
        .await;
    let returned = Instant::now();
    let answered = worker.await.unwrap();
    assert_eq!(reply.state(), "completed", "{}", reply.text);
    assert_eq!(reply.body["artifacts"][0]["parts"][0]["text"], "software");
    // Returned well before the 20 s wait ran out: within a few poll intervals of the answer.
    assert!(returned.duration_since(answered) < Duration::from_secs(5));
}

#[tokio::test]
async fn a_wait_that_runs_out_returns_the_task_as_it_stands() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let reply = app
        .get(
            &format!(
                "/v1/agents/{}/tasks/{}?wait=1",
                pair.callee.name,
                opened.field("id")
            ),
            &pair.caller.key,
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.state(), "submitted");
}

#[tokio::test]
async fn input_required_is_answered_by_a_new_task_in_the_same_conversation() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let first = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("Classify"),
            0,
        )
        .await;
    let context_id = first.field("context_id");
    app.claim(&pair.callee.key, 1).await;
    let question = json!({"role": "agent", "parts": [{"text": "which invoice_id?"}]});
    let asked = app
        .post_result(
            &pair.callee.key,
            &first.field("id"),
            json!({"state": "input_required", "message": question}),
        )
        .await;
    assert_eq!(asked.state(), "input_required");
    assert_eq!(
        asked.body["status"]["message"]["parts"][0]["text"],
        "which invoice_id?"
    );

    let follow_up = app
        .post(
            &format!("/v1/agents/{}/tasks", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("INV-1"), "context_id": context_id}),
        )
        .await;
    assert_eq!(follow_up.status, 200, "{}", follow_up.text);
    assert_eq!(follow_up.field("context_id"), context_id);
    assert_ne!(follow_up.field("id"), first.field("id"));

    let unknown = app
        .post(
            &format!("/v1/agents/{}/tasks", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("x"), "context_id": uuid::Uuid::new_v4().to_string()}),
        )
        .await;
    assert_eq!(unknown.status, 404);
    // A conversation belongs to its two agents: a third agent cannot join it.
    let third = app.create_agent(&pair.tenant.admin_key, "third").await;
    app.grant(&pair.tenant.admin_key, &third.id, &[&pair.callee.name])
        .await;
    let intruder = app
        .post(
            &format!("/v1/agents/{}/tasks", pair.callee.name),
            &third.key,
            json!({"message": text_message("x"), "context_id": context_id}),
        )
        .await;
    assert_eq!(intruder.status, 404);
}

#[tokio::test]
async fn x_parent_call_stamps_parent_and_root_and_a_task_call_id_chains_on() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let third = app.create_agent(admin, "third").await;
    app.grant(admin, &pair.callee.id, &[&third.name]).await;

    let root = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("a"), 0)
        .await;
    let root_call = root.field("call_id");
    // The callee, working on it, calls a third agent with the task's call_id as parent.
    let request = app
        .http
        .post(format!("{}/v1/agents/third/tasks", app.base))
        .bearer_auth(&pair.callee.key)
        .header("X-Parent-Call", &root_call)
        .json(&json!({"message": text_message("b")}));
    let child = app.finish(request).await;
    assert_eq!(child.status, 200, "{}", child.text);
    assert_eq!(child.field("parent_call_id"), root_call);
    assert_eq!(child.field("root_call_id"), root_call);
    assert_ne!(child.field("call_id"), root_call);

    let bad = app
        .http
        .post(format!("{}/v1/agents/third/tasks", app.base))
        .bearer_auth(&pair.callee.key)
        .header("X-Parent-Call", "not a call id")
        .json(&json!({"message": text_message("b")}));
    assert_eq!(app.finish(bad).await.status, 400);
}
