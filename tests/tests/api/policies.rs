//! Tenant policies (docs/api.md, "Tenant policies"): Cedar `forbid` rules over the caller, the
//! action, the callee, its skill and the call's context, saved by an admin through `PATCH
//! /v1/tenant/policies` after a check against the schema; enforced on REST, A2A JSON-RPC and
//! A2A HTTP+JSON alike (the one 403, the policy on the audit log), or tried (`dry_run`: the
//! audit log says `would_refuse`, nothing is refused); and `POST /v1/tenant/policies/check`
//! says whether a call would be allowed, and why.

use forgebench_tests::{spawn_app, Reply, Tenant, TestApp};
use serde_json::{json, Value};

use super::binding_terms::assert_admitted;
use super::governance::{agents_with_bindings, open_call, open_naming, Binding, BINDINGS};

const NO_REFUNDS: &str = r#"forbid(principal, action == Action::"open", resource)
  when { resource.name == "agent-b" && context has skill && context.skill == "refund" };"#;

async fn patch_policies(app: &TestApp, key: &str, policies: Value) -> Reply {
    let body = json!({ "policies": policies });
    app.send("PATCH", "/v1/tenant/policies", Some(key), Some(body))
        .await
}

async fn set_policies(app: &TestApp, tenant: &Tenant, policies: Value) -> Value {
    let reply = patch_policies(app, &tenant.admin_key, policies).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body
}

/// The tenant's audit entries of `outcome` decided by policies: (action, policy, count).
async fn policy_entries(
    app: &TestApp,
    tenant: &Tenant,
    outcome: &str,
) -> Vec<(String, String, u64)> {
    let page = app
        .get(
            &format!("/v1/audit?outcome={outcome}&limit=100"),
            &tenant.admin_key,
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let mut entries: Vec<_> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["reason"] == "policy")
        .map(|entry| {
            assert_eq!(entry["outcome"], outcome, "{entry}");
            (
                entry["action"].as_str().unwrap().to_owned(),
                entry["policy"].as_str().unwrap().to_owned(),
                entry["count"].as_u64().unwrap(),
            )
        })
        .collect();
    entries.sort();
    entries
}

fn assert_refused(reply: &Reply, binding: Binding) {
    assert_eq!(reply.status, 403, "{binding:?}: {}", reply.text);
    assert_eq!(reply.body["detail"]["code"], "not_permitted", "{binding:?}");
}

#[tokio::test]
async fn an_enforced_policy_refuses_on_every_binding_and_the_audit_log_names_it() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("a", "c")]).await;
    let (a, b, c) = (&agents["a"], &agents["b"], &agents["c"]);
    set_policies(
        &app,
        &tenant,
        json!({"no-refunds": {"policy": NO_REFUNDS, "mode": "enforce"}}),
    )
    .await;

    for binding in BINDINGS {
        let refused = open_naming(&app, binding, &a.key, &b.id, None, Some("refund")).await;
        assert_refused(&refused, binding);
        let other_skill = open_naming(&app, binding, &a.key, &b.id, None, Some("lookup")).await;
        assert_admitted(&other_skill, binding);
        let other_callee = open_naming(&app, binding, &a.key, &c.id, None, Some("refund")).await;
        assert_admitted(&other_callee, binding);
    }
    assert_eq!(
        policy_entries(&app, &tenant, "refused").await,
        vec![("task.open".to_owned(), "no-refunds".to_owned(), 3)]
    );
    // Refused opens write nothing else: the only tasks are the six admitted.
    let tasks = app.get("/v1/tasks?limit=100", &tenant.admin_key).await;
    assert_eq!(tasks.status, 200, "{}", tasks.text);
    assert_eq!(
        tasks.body["items"].as_array().unwrap().len(),
        6,
        "{}",
        tasks.text
    );
}

#[tokio::test]
async fn a_dry_run_refuses_nothing_and_logs_what_it_would_refuse_until_it_is_enforced() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b")]).await;
    let (a, b) = (&agents["a"], &agents["b"]);
    // A new policy is tried unless it says otherwise.
    let saved = set_policies(&app, &tenant, json!({"no-refunds": {"policy": NO_REFUNDS}})).await;
    assert_eq!(saved["items"][0]["mode"], "dry_run", "{saved}");

    for binding in BINDINGS {
        let tried = open_naming(&app, binding, &a.key, &b.id, None, Some("refund")).await;
        assert_admitted(&tried, binding);
    }
    assert_eq!(
        policy_entries(&app, &tenant, "would_refuse").await,
        vec![("task.open".to_owned(), "no-refunds".to_owned(), 3)]
    );
    assert!(policy_entries(&app, &tenant, "refused").await.is_empty());

    // Enforced by changing its mode alone.
    set_policies(&app, &tenant, json!({"no-refunds": {"mode": "enforce"}})).await;
    for binding in BINDINGS {
        let refused = open_naming(&app, binding, &a.key, &b.id, None, Some("refund")).await;
        assert_refused(&refused, binding);
    }
    // Removed, the policy refuses nothing more.
    set_policies(&app, &tenant, json!({"no-refunds": null})).await;
    let open = open_naming(&app, Binding::Rest, &a.key, &b.id, None, Some("refund")).await;
    assert_admitted(&open, Binding::Rest);
}

#[tokio::test]
async fn policies_are_checked_against_the_schema_when_saved_and_only_admins_change_them() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let (_, viewer) = app.create_member(&tenant, "viewer").await;
    let (_, member) = app.create_member(&tenant, "member").await;
    let rejected = [
        json!({"open-all": {"policy": "permit(principal, action, resource);"}}),
        json!({"unguarded": {"policy": r#"forbid(principal, action, resource) when { context.skill == "x" };"#}}),
        json!({"no-such-action": {"policy": r#"forbid(principal, action == Action::"delete", resource);"#}}),
        json!({"garbled": {"policy": "forbid everything"}}),
        json!({"Bad Name": {"policy": NO_REFUNDS}}),
        json!({"no-text": {"mode": "enforce"}}),
        json!({"bad-mode": {"policy": NO_REFUNDS, "mode": "sometimes"}}),
        json!({"extra": {"policy": NO_REFUNDS, "priority": 1}}),
    ];
    for policies in rejected {
        let reply = patch_policies(&app, &tenant.admin_key, policies.clone()).await;
        assert_eq!(reply.status, 400, "{policies}: {}", reply.text);
        assert_eq!(
            reply.body["detail"]["code"], "invalid_request",
            "{}",
            reply.text
        );
    }
    for key in [&viewer, &member] {
        let reply = patch_policies(&app, key, json!({"p": {"policy": NO_REFUNDS}})).await;
        assert_eq!(reply.status, 403, "{}", reply.text);
    }
    let empty = app.get("/v1/tenant/policies", &viewer).await;
    assert_eq!(empty.status, 200, "{}", empty.text);
    assert_eq!(empty.body, json!({"version": 0, "items": []}));
    assert_eq!(app.get("/v1/tenant/policies", &member).await.status, 403);

    let saved = set_policies(
        &app,
        &tenant,
        json!({"no-refunds": {"policy": NO_REFUNDS, "description": "no refunds from b"}}),
    )
    .await;
    assert_eq!(saved["version"], 1);
    // The same again changes nothing and writes nothing.
    let again = set_policies(&app, &tenant, json!({"no-refunds": {"policy": NO_REFUNDS}})).await;
    assert_eq!(again["version"], 1, "{again}");
    let read = app.get("/v1/tenant/policies", &viewer).await;
    assert_eq!(read.body["items"][0]["description"], "no refunds from b");
    let audit = app
        .get("/v1/audit?action=tenant.policy&limit=10", &tenant.admin_key)
        .await;
    let actions: Vec<_> = audit.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| (entry["action"].clone(), entry["target"].clone()))
        .collect();
    assert_eq!(
        actions,
        vec![(json!("tenant.policy.set"), json!("no-refunds"))]
    );
}

#[tokio::test]
async fn a_policy_reads_the_calls_depth_and_its_root_caller() {
    let app = spawn_app().await;
    let (tenant, agents) =
        agents_with_bindings(&app, &[("a", "b"), ("b", "c"), ("d", "c"), ("c", "d")]).await;
    let (a, b, c, d) = (&agents["a"], &agents["b"], &agents["c"], &agents["d"]);
    let below_a = r#"forbid(principal, action == Action::"open", resource)
      when { context.depth >= 2 && context has root_caller && context.root_caller.name == "agent-a" };"#;
    set_policies(
        &app,
        &tenant,
        json!({"nothing-below-a": {"policy": below_a, "mode": "enforce"}}),
    )
    .await;
    let root = open_call(&app, &a.key, &b.id, None).await;
    for binding in BINDINGS {
        let below = open_naming(&app, binding, &b.key, &c.id, Some(&root), None).await;
        assert_refused(&below, binding);
    }
    // A tree d started is not a's: its second call goes through.
    let other_root = open_call(&app, &d.key, &c.id, None).await;
    let second = open_call(&app, &c.key, &d.id, Some(&other_root)).await;
    let third = open_naming(&app, Binding::JsonRpc, &d.key, &c.id, Some(&second), None).await;
    assert_admitted(&third, Binding::JsonRpc);
}

#[tokio::test]
async fn a_callers_answer_cancel_and_read_are_judged_too() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let tenant = &pair.tenant;
    let task_id = app.asked(&pair).await;
    let task_path = format!("/v1/agents/{}/tasks/{task_id}", pair.callee.id);
    let forbid =
        |action: &str| format!(r#"forbid(principal, action == Action::"{action}", resource);"#);
    set_policies(
        &app,
        tenant,
        json!({"no-reads": {"policy": forbid("read"), "mode": "enforce"},
               "no-answers": {"policy": forbid("answer"), "mode": "enforce"},
               "no-cancels": {"policy": forbid("cancel"), "mode": "enforce"}}),
    )
    .await;
    let read = app.get(&task_path, &pair.caller.key).await;
    assert_eq!(read.status, 403, "{}", read.text);
    // Policies judge the caller: an admin and the callee still read the task.
    assert_eq!(app.get(&task_path, &tenant.admin_key).await.status, 200);
    assert_eq!(app.get(&task_path, &pair.callee.key).await.status, 200);
    let answer = json!({"message": {"role": "user", "parts": [{"text": "the March one"}]}});
    let answered = app
        .post(&format!("{task_path}/messages"), &pair.caller.key, answer)
        .await;
    assert_eq!(answered.status, 403, "{}", answered.text);
    let cancel = app
        .post(&format!("{task_path}/cancel"), &pair.caller.key, json!({}))
        .await;
    assert_eq!(cancel.status, 403, "{}", cancel.text);
    let still = app.get(&task_path, &tenant.admin_key).await;
    assert_eq!(
        still.body["status"]["state"], "input_required",
        "{}",
        still.text
    );
    assert_eq!(
        still.body["history"].as_array().unwrap().len(),
        2,
        "{}",
        still.text
    );
    let refused = policy_entries(&app, tenant, "refused").await;
    assert_eq!(
        refused,
        vec![
            ("task.cancel".to_owned(), "no-cancels".to_owned(), 1),
            ("task.message".to_owned(), "no-answers".to_owned(), 1),
            ("task.read".to_owned(), "no-reads".to_owned(), 1),
        ]
    );
}

#[tokio::test]
async fn the_check_says_whether_a_call_would_be_allowed_and_why() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b")]).await;
    let (_, viewer) = app.create_member(&tenant, "viewer").await;
    let (_, member) = app.create_member(&tenant, "member").await;
    let check = |key: String, body: Value| {
        let app = &app;
        async move { app.post("/v1/tenant/policies/check", &key, body).await }
    };
    let refund = json!({"caller": "agent-a", "callee": "agent-b", "skill": "refund"});
    let allowed = check(viewer.clone(), refund.clone()).await;
    assert_eq!(allowed.status, 200, "{}", allowed.text);
    assert_eq!(
        allowed.body,
        json!({"allowed": true, "reason": null, "policies": [], "would_refuse": []})
    );
    let unbound = check(
        viewer.clone(),
        json!({"caller": "agent-b", "callee": "agent-a"}),
    )
    .await;
    assert_eq!(unbound.body["reason"], "no_binding", "{}", unbound.text);
    set_policies(&app, &tenant, json!({"no-refunds": {"policy": NO_REFUNDS}})).await;
    let tried = check(viewer.clone(), refund.clone()).await;
    assert_eq!(
        tried.body,
        json!({"allowed": true, "reason": null, "policies": [], "would_refuse": ["no-refunds"]})
    );
    set_policies(&app, &tenant, json!({"no-refunds": {"mode": "enforce"}})).await;
    let refused = check(tenant.admin_key.clone(), refund.clone()).await;
    assert_eq!(
        refused.body,
        json!({"allowed": false, "reason": "policy", "policies": ["no-refunds"], "would_refuse": []})
    );
    let lookup = json!({"caller": agents["a"].id, "callee": "agent-b", "skill": "lookup"});
    assert_eq!(check(viewer.clone(), lookup).await.body["allowed"], true);
    // A check records nothing.
    assert!(policy_entries(&app, &tenant, "refused").await.is_empty());
    assert!(policy_entries(&app, &tenant, "would_refuse")
        .await
        .is_empty());
    assert_eq!(check(member, refund.clone()).await.status, 403);
    let nobody = check(
        viewer.clone(),
        json!({"caller": "agent-z", "callee": "agent-b"}),
    )
    .await;
    assert_eq!(nobody.status, 404, "{}", nobody.text);
    let bad = check(
        viewer,
        json!({"caller": "agent-a", "callee": "agent-b", "action": "fly"}),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.text);
}
