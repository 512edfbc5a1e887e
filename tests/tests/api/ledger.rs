//! The ledger: task and audit written together, audit entries for every governed change, cursor
//! paging, and call lineage across several hops.

use std::collections::HashSet;

use forgebench::domain::content::Stored;
use forgebench::domain::task::Delivery;
use forgebench::domain::{clock, Task, TaskState};
use forgebench::store::{AuditEntry, ContextJoin, OpenTask};
use forgebench_tests::{spawn_app, text_message};
use serde_json::{json, Value};

#[tokio::test]
async fn a_failure_between_the_task_and_its_audit_row_leaves_neither() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let now = clock::now();
    let task_id = forgebench::domain::TaskId::generate();
    let call_id = uuid::Uuid::new_v4().to_string();
    let principal = forgebench::domain::TenantPrincipal {
        tenant_id: pair.tenant.id.as_str().into(),
        kind: forgebench::domain::PrincipalKind::Agent {
            agent_id: pair.caller.id.as_str().into(),
        },
    };
    let audit = AuditEntry::new(&principal, "task.open", &pair.callee.id);
    // Injected failure: the audit row's key is already taken, so its write fails inside the
    // transaction that also writes the task.
    app.app.store.record_audit(&audit).await.unwrap();
    let open = OpenTask {
        task: Task {
            id: task_id.clone(),
            tenant_id: pair.tenant.id.as_str().into(),
            context_id: uuid::Uuid::new_v4().to_string(),
            caller_agent_id: pair.caller.id.as_str().into(),
            callee_agent_id: pair.callee.id.as_str().into(),
            callee_name: pair.callee.name.clone(),
            state: TaskState::Submitted,
            status_message: None,
            status_timestamp: now.clone(),
            input: Stored::from_value(&text_message("x")).unwrap(),
            artifacts: Stored::Inline(Vec::new()),
            error: None,
            history: vec![Stored::from_value(&text_message("x")).unwrap()],
            call_id: call_id.clone(),
            parent_call_id: None,
            root_call_id: call_id,
            delivery: Delivery::Pull,
            claim_timeout_seconds: 900,
            deadline_at: None,
            delivery_attempts: 0,
            attempt_number: 0,
            delivery_id: None,
            delivered_at: None,
            content_bytes: 0,
            expires_at: None,
            created_at: now.clone(),
            updated_at: now,
            changes: Vec::new(),
            message_keys: Vec::new(),
            notify_configs: 0,
        },
        binding_id: pair.binding_id.clone(),
        context: ContextJoin::Start,
        audit,
    };
    assert!(app.app.store.open_task(&open).await.is_err());
    assert!(
        app.app.store.get_task(&task_id).await.unwrap().is_none(),
        "no task without its audit row"
    );
    let opens = app
        .audit(&pair.tenant.admin_key)
        .await
        .into_iter()
        .filter(|entry| entry["action"] == "task.open")
        .count();
    assert_eq!(opens, 1, "only the pre-existing row");
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);

    // And the normal path writes both.
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("y"), 0)
        .await;
    let entries = app.audit(&pair.tenant.admin_key).await;
    let entry = entries
        .iter()
        .find(|entry| entry["task_id"] == opened.field("id").as_str())
        .expect("audit row");
    assert_eq!(entry["outcome"], "allowed");
    assert_eq!(entry["call_id"], opened.field("call_id").as_str());
    assert_eq!(
        entry["actor"],
        json!({"kind": "agent", "id": pair.caller.id})
    );
}

#[tokio::test]
async fn every_governed_change_is_on_the_audit_log() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let (_, member) = app.create_member(&pair.tenant, "member").await;
    let other = app.create_agent(&member, "other").await;
    app.grant(&member, &other.id, &[&pair.callee.name]).await;
    let pending = app
        .get(&format!("/v1/agents/{}/agents", other.id), admin)
        .await;
    let binding_id = pending.body["outbound"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post(
        &format!("/v1/agents/{}/agents/{binding_id}/approve", pair.callee.id),
        admin,
        json!({}),
    )
    .await;
    app.send(
        "DELETE",
        &format!("/v1/agents/{}/agents/{binding_id}", other.id),
        Some(admin),
        None,
    )
    .await;
    let issued = app
        .post(&format!("/v1/agents/{}/keys", other.id), admin, json!({}))
        .await;
    app.send(
        "DELETE",
        &format!("/v1/agents/{}/keys/{}", other.id, issued.field("key_id")),
        Some(admin),
        None,
    )
    .await;
    app.send(
        "PATCH",
        &format!("/v1/agents/{}", other.id),
        Some(admin),
        Some(json!({"status": "paused"})),
    )
    .await;
    app.set_endpoint(
        admin,
        &other.name,
        json!({"url": "https://93.184.216.34/a2a"}),
    )
    .await;
    app.set_endpoint(admin, &other.name, json!({"url": null}))
        .await;
    app.send(
        "PUT",
        &format!("/v1/agents/{}/tools/lookup", other.id),
        Some(admin),
        Some(json!({"description": "Looks up"})),
    )
    .await;
    app.send(
        "DELETE",
        &format!("/v1/agents/{}/tools/lookup", other.id),
        Some(admin),
        None,
    )
    .await;

    let actions: HashSet<String> = app
        .audit(admin)
        .await
        .iter()
        .map(|entry| entry["action"].as_str().unwrap().to_owned())
        .collect();
    for expected in [
        "member.create.member",
        "agent.create",
        "binding.grant",
        "binding.grant.pending",
        "binding.approve",
        "binding.revoke",
        "agent.key.issue",
        "agent.key.revoke",
        "agent.status.paused",
        "agent.endpoint.set",
        "agent.endpoint.clear",
        "agent.tool.grant",
        "agent.tool.revoke",
    ] {
        assert!(
            actions.contains(expected),
            "{expected} missing from {actions:?}"
        );
    }
}

#[tokio::test]
async fn the_audit_log_pages_newest_first_without_skipping_or_repeating() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    for index in 0..7 {
        app.open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message(&format!("{index}")),
            0,
        )
        .await;
    }
    let everything = app.audit(&pair.tenant.admin_key).await;
    let mut paged: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(cursor) => format!("/v1/audit?limit=3&cursor={cursor}"),
            None => "/v1/audit?limit=3".to_owned(),
        };
        let page = app.get(&path, &pair.tenant.admin_key).await;
        assert_eq!(page.status, 200, "{}", page.text);
        paged.extend(page.body["items"].as_array().unwrap().iter().cloned());
        match page.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(paged, everything);
    let times: Vec<&str> = paged
        .iter()
        .map(|entry| entry["at"].as_str().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|pair| pair[0] >= pair[1]),
        "newest first"
    );
    assert_eq!(
        app.get("/v1/audit?cursor=zz", &pair.tenant.admin_key)
            .await
            .status,
        400
    );
    assert_eq!(app.get("/v1/audit", &pair.caller.key).await.status, 403);
}

#[tokio::test]
async fn a_three_hop_workflow_is_one_call_tree() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let admin = &tenant.admin_key;
    let a = app.create_agent(admin, "agent-a").await;
    let b = app.create_agent(admin, "agent-b").await;
    let c = app.create_agent(admin, "agent-c").await;
    let d = app.create_agent(admin, "agent-d").await;
    app.grant(admin, &a.id, &["agent-b"]).await;
    app.grant(admin, &b.id, &["agent-c"]).await;
    app.grant(admin, &c.id, &["agent-d"]).await;

    let open = |key: String, callee: &'static str, parent: Option<String>| {
        let app = &app;
        async move {
            let mut request = app
                .http
                .post(format!("{}/v1/agents/{callee}/tasks", app.base))
                .bearer_auth(key)
                .json(&json!({"message": text_message("hop")}));
            if let Some(parent) = parent {
                request = request.header("X-Parent-Call", parent);
            }
            let reply = app.finish(request).await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            reply
        }
    };
    let ab = open(a.key.clone(), "agent-b", None).await;
    let root = ab.field("call_id");
    let bc = open(b.key.clone(), "agent-c", Some(root.clone())).await;
    let cd = open(c.key.clone(), "agent-d", Some(bc.field("call_id"))).await;
    assert_eq!(cd.field("callee_agent_id"), d.id);
    assert_eq!(cd.field("root_call_id"), root);
    assert_eq!(cd.field("parent_call_id"), bc.field("call_id"));

    let (_, viewer) = app.create_member(&tenant, "viewer").await;
    let tree = app
        .get(&format!("/v1/calls?root_call_id={root}"), &viewer)
        .await;
    assert_eq!(tree.status, 200, "{}", tree.text);
    let items = tree.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    let by_call = |id: &str| {
        items
            .iter()
            .find(|item| item["call_id"] == id)
            .expect("call in tree")
            .clone()
    };
    assert!(by_call(&root)["parent_call_id"].is_null());
    assert_eq!(
        by_call(&bc.field("call_id"))["parent_call_id"],
        root.as_str()
    );
    assert_eq!(
        by_call(&cd.field("call_id"))["parent_call_id"],
        bc.field("call_id").as_str()
    );
    assert_eq!(
        by_call(&cd.field("call_id"))["task_id"],
        cd.field("id").as_str()
    );
    assert!(items
        .iter()
        .all(|item| item["root_call_id"] == root.as_str()));

    // Another tenant sees nothing of it; agents do not read the ledger.
    let other = app.create_tenant().await;
    let foreign = app
        .get(&format!("/v1/calls?root_call_id={root}"), &other.admin_key)
        .await;
    assert_eq!(foreign.body["items"], json!([]));
    assert_eq!(
        app.get(&format!("/v1/calls?root_call_id={root}"), &a.key)
            .await
            .status,
        403
    );
}
