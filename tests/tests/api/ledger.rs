//! The ledger: task and audit entry written one after the other (a failure between made good by
//! the sweeper), audit entries for every governed change, cursor paging, and call lineage across
//! several hops.

use std::collections::HashSet;

use forgebench_tests::{spawn_app, spawn_app_with, text_message, Options, Recorder, TestApp};
use serde_json::{json, Value};

/// The `task.open` audit entries of a tenant that name `task_id`.
async fn open_entries(app: &TestApp, admin_key: &str, task_id: &str) -> Vec<Value> {
    app.audit(admin_key)
        .await
        .into_iter()
        .filter(|entry| entry["action"] == "task.open" && entry["task_id"] == task_id)
        .collect()
}

#[tokio::test]
async fn a_failure_before_the_task_is_written_leaves_nothing_behind() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    recorder.fail_next("PutItem");
    let failed = app
        .post(
            &format!("/v1/agents/{}/tasks", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("never written")}),
        )
        .await;
    assert_eq!(failed.status, 503, "{}", failed.text);
    let opens: Vec<Value> = app
        .audit(&pair.tenant.admin_key)
        .await
        .into_iter()
        .filter(|entry| entry["action"] == "task.open")
        .collect();
    assert!(
        opens.is_empty(),
        "an audit entry without its task: {opens:?}"
    );
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn a_failure_after_the_task_is_written_is_made_good_by_the_sweeper() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    // The batch after the task's write (its call, audit entry, conversation and word postings)
    // fails: the task stands and is answered, flagged for the sweeper.
    recorder.fail_next("BatchWriteItem");
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("Lisbon manifest"),
            0,
        )
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let task_id = opened.field("id");
    let root = opened.field("call_id");
    let context = opened.field("context_id");
    assert!(open_entries(&app, admin, &task_id).await.is_empty());
    let calls = app
        .get(&format!("/v1/calls?root_call_id={root}"), admin)
        .await;
    assert!(
        calls.body["items"].as_array().is_none_or(Vec::is_empty),
        "{}",
        calls.text
    );

    let swept = forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~").await;
    assert_eq!(swept.done, 1, "{swept:?}");
    let entries = open_entries(&app, admin, &task_id).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["outcome"], "allowed");
    assert_eq!(entries[0]["call_id"], root.as_str());
    assert_eq!(
        entries[0]["actor"],
        json!({"kind": "agent", "id": pair.caller.id, "name": null})
    );
    let calls = app
        .get(&format!("/v1/calls?root_call_id={root}"), admin)
        .await;
    assert_eq!(calls.status, 200, "{}", calls.text);
    assert_eq!(
        calls.body["items"][0]["task_id"],
        task_id.as_str(),
        "{}",
        calls.text
    );
    let found = app.get("/v1/tasks?q=lisbon", &pair.caller.key).await;
    assert_eq!(
        found.body["items"][0]["id"],
        task_id.as_str(),
        "{}",
        found.text
    );
    // The conversation it started was written too: the caller can go on in it.
    let next = app
        .post(
            &format!("/v1/agents/{}/tasks", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("and the next"), "context_id": context}),
        )
        .await;
    assert_eq!(next.status, 200, "{}", next.text);

    // Nothing is due any more, and a second repair writes the same items.
    let again = forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~").await;
    assert_eq!(again.done, 0, "{again:?}");
    forgebench::search::index_words(&app.app.store, &app.app.bodies, &task_id.as_str().into())
        .await
        .unwrap();
    assert_eq!(open_entries(&app, admin, &task_id).await.len(), 1);

    // And the normal path writes the entry with the task.
    let plain = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("y"), 0)
        .await;
    let entries = open_entries(&app, admin, &plain.field("id")).await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["call_id"], plain.field("call_id").as_str());
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

/// A refused open is no call, but its audit entry carries the lineage the call would have had, as
/// an allowed open's does: the tree a refusal belongs to is read off the audit log by its root.
#[tokio::test]
async fn a_refused_open_is_on_the_audit_log_with_the_lineage_it_would_have_had() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let outsider = app.create_agent(admin, "outsider").await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("root"), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let root = opened.field("call_id");

    // The callee, answering its task, calls an agent it has no binding to; then one nobody knows.
    for target in [outsider.name.as_str(), "no-such-agent"] {
        let request = app
            .http
            .post(format!("{}/v1/agents/{target}/tasks", app.base))
            .bearer_auth(&pair.callee.key)
            .header("X-Parent-Call", &root)
            .json(&json!({"message": text_message("refused hop")}));
        let refused = app.finish(request).await;
        assert_eq!(refused.status, 403, "{}", refused.text);
    }

    let entries = app.audit(admin).await;
    let refusals: Vec<&Value> = entries
        .iter()
        .filter(|entry| entry["action"] == "task.open" && entry["outcome"] == "refused")
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    for refusal in &refusals {
        assert_eq!(refusal["parent_call_id"], root.as_str(), "{refusal}");
        assert_eq!(refusal["root_call_id"], root.as_str(), "{refusal}");
        assert!(refusal["call_id"].as_str().is_some_and(|id| id != root));
    }
    let reasons: HashSet<&str> = refusals
        .iter()
        .filter_map(|entry| entry["reason"].as_str())
        .collect();
    assert_eq!(reasons, HashSet::from(["no_binding", "unknown_callee"]));

    // The allowed open's entry names its call as its own root, with no parent; so does every
    // later entry about the task.
    let allowed = open_entries(&app, admin, &opened.field("id")).await;
    assert_eq!(allowed.len(), 1);
    assert_eq!(allowed[0]["call_id"], root.as_str());
    assert_eq!(allowed[0]["root_call_id"], root.as_str());
    assert!(allowed[0]["parent_call_id"].is_null());
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    let entries = app.audit(admin).await;
    let claim = entries
        .iter()
        .find(|entry| entry["action"] == "task.claim")
        .expect("the claim's entry");
    assert_eq!(claim["root_call_id"], root.as_str(), "{claim}");
    assert_eq!(claim["call_id"], root.as_str(), "{claim}");
}

/// A caller of another tenant that names one of this tenant's calls in `X-Parent-Call` starts a
/// tree of its own tenant: none of its calls lands in the index partition this tenant's tree is
/// read from (where it would cost this tenant's ledger reads and heat its partition).
#[tokio::test]
async fn a_parent_call_of_another_tenant_never_shares_the_trees_partition() {
    let app = spawn_app().await;
    let ours = app.pair().await;
    let root = app
        .open_task(&ours.caller.key, &ours.callee.name, text_message("ours"), 0)
        .await
        .field("call_id");
    let theirs = app.pair().await;
    for hop in 0..3 {
        let reply = app
            .finish(
                app.http
                    .post(format!(
                        "{}/v1/agents/{}/tasks",
                        app.base, theirs.callee.name
                    ))
                    .bearer_auth(&theirs.caller.key)
                    .header("X-Parent-Call", &root)
                    .json(&json!({"message": text_message(&format!("theirs {hop}"))})),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    let items = app.scan_all().await;
    let text =
        |item: &std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>,
         name: &str| {
            item.get(name)
                .and_then(|value| value.as_s().ok())
                .cloned()
                .unwrap_or_default()
        };
    let calls: Vec<_> = items
        .iter()
        .filter(|item| text(item, "kind") == "call")
        .collect();
    let our_partitions: std::collections::HashSet<String> = calls
        .iter()
        .filter(|item| text(item, "tenant_id") == ours.tenant.id)
        .map(|item| text(item, "gsi1pk"))
        .collect();
    assert_eq!(our_partitions.len(), 1, "{our_partitions:?}");
    let intruders = calls
        .iter()
        .filter(|item| text(item, "tenant_id") != ours.tenant.id)
        .filter(|item| our_partitions.contains(&text(item, "gsi1pk")))
        .count();
    assert_eq!(
        intruders, 0,
        "another tenant's calls share this tenant's tree partition"
    );

    let (_, viewer) = app.create_member(&ours.tenant, "viewer").await;
    let tree = app
        .get(&format!("/v1/calls?root_call_id={root}"), &viewer)
        .await;
    assert_eq!(
        tree.body["items"].as_array().map(Vec::len),
        Some(1),
        "{}",
        tree.text
    );
}
