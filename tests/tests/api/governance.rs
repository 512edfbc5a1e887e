//! Call-tree limits (docs/api.md, "Governance"): how deep a chain of calls may go, whether it
//! may come back to an agent on its path, how many tasks one call may open and how many of one
//! tree may be open at once. Each refusal is the gate's one `403 not_permitted` on REST, A2A
//! JSON-RPC and A2A HTTP+JSON alike, its reason on the audit log with the lineage the call would
//! have had, and nothing else written for it.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::AttributeValue;
use forgebench_tests::{
    spawn_app, spawn_app_with, text_message, Options, Recorder, Reply, Tenant, TestAgent, TestApp,
};
use serde_json::{json, Value};

/// The three ways a caller opens a task.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Binding {
    Rest,
    JsonRpc,
    HttpJson,
}

pub(crate) const BINDINGS: [Binding; 3] = [Binding::Rest, Binding::JsonRpc, Binding::HttpJson];

/// Opens a task on `callee` through `binding`, its parent call named in `X-Parent-Call`.
async fn open_via(
    app: &TestApp,
    binding: Binding,
    key: &str,
    callee: &str,
    parent: Option<&str>,
) -> Reply {
    open_naming(app, binding, key, callee, parent, None).await
}

/// [`open_via`], naming a skill of the callee (REST body `skill`, A2A `metadata.skill`).
pub(crate) async fn open_naming(
    app: &TestApp,
    binding: Binding,
    key: &str,
    callee: &str,
    parent: Option<&str>,
    skill: Option<&str>,
) -> Reply {
    let message_id = uuid::Uuid::new_v4().to_string();
    let mut a2a_message =
        json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hop"}]});
    let mut rest_body = json!({"message": text_message("hop")});
    if let Some(skill) = skill {
        a2a_message["metadata"] = json!({ "skill": skill });
        rest_body["skill"] = json!(skill);
    }
    let request = match binding {
        Binding::Rest => app
            .http
            .post(format!("{}/v1/agents/{callee}/tasks", app.base))
            .json(&rest_body),
        Binding::JsonRpc => app
            .http
            .post(format!("{}/v1/agents/{callee}/a2a/jsonrpc", app.base))
            .header("a2a-version", "1.0")
            .header("content-type", "application/a2a+json")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": {"message": a2a_message,
                                  "configuration": {"returnImmediately": true}}})
                .to_string(),
            ),
        Binding::HttpJson => app
            .http
            .post(format!("{}/v1/agents/{callee}/a2a/message:send", app.base))
            .header("a2a-version", "1.0")
            .header("content-type", "application/a2a+json")
            .body(
                json!({"message": a2a_message, "configuration": {"returnImmediately": true}})
                    .to_string(),
            ),
    };
    let mut request = request.bearer_auth(key);
    if let Some(parent) = parent {
        request = request.header("X-Parent-Call", parent);
    }
    app.finish(request).await
}

/// A REST open that must be admitted; its call id.
pub(crate) async fn open_call(
    app: &TestApp,
    key: &str,
    callee: &str,
    parent: Option<&str>,
) -> String {
    let opened = open_via(app, Binding::Rest, key, callee, parent).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    opened.field("call_id")
}

/// An open through `binding` that must be admitted (a JSON-RPC one without an error object).
async fn admitted(app: &TestApp, binding: Binding, key: &str, callee: &str, parent: &str) {
    let opened = open_via(app, binding, key, callee, Some(parent)).await;
    assert_eq!(opened.status, 200, "{binding:?}: {}", opened.text);
    assert!(
        !opened.body["error"].is_object(),
        "{binding:?}: {}",
        opened.text
    );
}

/// An open through `binding` that must be the gate's one refusal.
async fn refused(app: &TestApp, binding: Binding, key: &str, callee: &str, parent: &str) {
    let refused = open_via(app, binding, key, callee, Some(parent)).await;
    assert_eq!(refused.status, 403, "{binding:?}: {}", refused.text);
    assert_eq!(
        refused.body["detail"]["code"], "not_permitted",
        "{binding:?}"
    );
}

pub(crate) async fn set_limits(app: &TestApp, tenant: &Tenant, limits: Value) -> Reply {
    let reply = app
        .send(
            "PATCH",
            "/v1/tenant/settings",
            Some(&tenant.admin_key),
            Some(limits),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply
}

/// A tenant with agents `a` to `d` and the bindings `edges` names (caller, callee), approved.
pub(crate) async fn agents_with_bindings(
    app: &TestApp,
    edges: &[(&str, &str)],
) -> (Tenant, BTreeMap<String, TestAgent>) {
    let tenant = app.create_tenant().await;
    let mut agents = BTreeMap::new();
    for name in ["a", "b", "c", "d"] {
        let agent = app
            .create_agent(&tenant.admin_key, &format!("agent-{name}"))
            .await;
        agents.insert(name.to_owned(), agent);
    }
    for (caller, callee) in edges {
        let granted = app
            .grant(
                &tenant.admin_key,
                &agents[*caller].id,
                &[&agents[*callee].name],
            )
            .await;
        assert_eq!(granted.status, 200, "{}", granted.text);
    }
    (tenant, agents)
}

/// The tenant's refused opens: (reason, parent_call_id, root_call_id) of each, each as many
/// times as its entry counts it (the log keeps one entry a minute per caller, callee and
/// reason, placed at its first refusal: among many other entries, found by its filters).
pub(crate) async fn refusals(app: &TestApp, tenant: &Tenant) -> Vec<(String, String, String)> {
    let path = "/v1/audit?action=task.open&outcome=refused&limit=100";
    let page = app.get(path, &tenant.admin_key).await;
    assert_eq!(page.status, 200, "{}", page.text);
    let mut entries: Vec<(String, String, String)> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["action"] == "task.open" && entry["outcome"] == "refused")
        .flat_map(|entry| {
            let count = entry["count"].as_u64().unwrap_or(1);
            let one = (
                entry["reason"].as_str().unwrap_or_default().to_owned(),
                entry["parent_call_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                entry["root_call_id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
            std::iter::repeat_n(one, usize::try_from(count).unwrap())
        })
        .collect();
    entries.sort();
    entries
}

async fn calls_in_tree(app: &TestApp, tenant: &Tenant, root: &str) -> usize {
    let tree = app
        .get(&format!("/v1/calls?root_call_id={root}"), &tenant.admin_key)
        .await;
    assert_eq!(tree.status, 200, "{}", tree.text);
    tree.body["items"].as_array().unwrap().len()
}

#[tokio::test]
async fn the_settings_hold_the_call_tree_limits_and_only_an_admin_changes_them() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let tenant = &pair.tenant;
    let read = app.get("/v1/tenant/settings", &tenant.admin_key).await;
    assert_eq!(read.status, 200, "{}", read.text);
    assert_eq!(
        (
            &read.body["max_call_depth"],
            &read.body["refuse_cycles"],
            &read.body["max_fan_out"],
            &read.body["max_open_in_tree"]
        ),
        (&json!(16), &json!(false), &Value::Null, &Value::Null)
    );
    let changed = set_limits(
        &app,
        tenant,
        json!({"max_call_depth": 3, "refuse_cycles": true, "max_fan_out": 5, "max_open_in_tree": 9}),
    )
    .await;
    assert_eq!(changed.body["max_call_depth"], 3);
    assert_eq!(changed.body["max_open_in_tree"], 9);
    assert_eq!(changed.body["word_search"], true);
    let cleared = set_limits(&app, tenant, json!({"max_fan_out": null})).await;
    assert_eq!(cleared.body["max_fan_out"], Value::Null);
    assert_eq!(cleared.body["max_open_in_tree"], 9);
    for bad in [
        json!({"max_call_depth": 0}),
        json!({"max_call_depth": 65}),
        json!({"max_call_depth": null}),
        json!({"max_call_depth": 2.5}),
        json!({"refuse_cycles": "yes"}),
        json!({"max_fan_out": 0}),
        json!({"max_open_in_tree": 10001}),
        json!({"max_open_in_tree": -1}),
    ] {
        let reply = app
            .send(
                "PATCH",
                "/v1/tenant/settings",
                Some(&tenant.admin_key),
                Some(bad.clone()),
            )
            .await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text);
    }
    let (_, viewer) = app.create_member(tenant, "viewer").await;
    let by_viewer = app
        .send(
            "PATCH",
            "/v1/tenant/settings",
            Some(&viewer),
            Some(json!({"max_call_depth": 2})),
        )
        .await;
    assert_eq!(by_viewer.status, 403, "{}", by_viewer.text);
    assert_eq!(
        app.get("/v1/tenant/settings", &viewer).await.body["max_call_depth"],
        3
    );
    // Two changes of the limits, each on the audit log; a PATCH that changes nothing is not.
    set_limits(&app, tenant, json!({"max_call_depth": 3})).await;
    let changes = app
        .audit(&tenant.admin_key)
        .await
        .into_iter()
        .filter(|entry| entry["action"] == "tenant.call_tree")
        .count();
    assert_eq!(changes, 2);
}

/// Two admins changing different settings at once each keep their change: a change is applied
/// to the settings as they stand when it is written, not as they were read before another
/// change landed (a lost update would put back a limit the other admin had just changed).
#[tokio::test]
async fn concurrent_changes_to_different_settings_are_all_kept() {
    let app = spawn_app().await;
    let tenant = app.pair().await.tenant;
    for round in 1..=20u32 {
        let (fan_out, open_in_tree, word_search) = tokio::join!(
            set_limits(&app, &tenant, json!({"max_fan_out": round})),
            set_limits(&app, &tenant, json!({"max_open_in_tree": round + 100})),
            set_limits(&app, &tenant, json!({"word_search": round % 2 == 0})),
        );
        for reply in [&fan_out, &open_in_tree, &word_search] {
            assert_eq!(reply.status, 200, "{}", reply.text);
        }
        let read = app.get("/v1/tenant/settings", &tenant.admin_key).await;
        assert_eq!(
            (
                &read.body["max_fan_out"],
                &read.body["max_open_in_tree"],
                &read.body["word_search"]
            ),
            (&json!(round), &json!(round + 100), &json!(round % 2 == 0)),
            "round {round}: a change was lost"
        );
    }
}

#[tokio::test]
async fn a_call_deeper_than_the_limit_is_refused_on_every_binding() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("b", "c"), ("c", "d")]).await;
    set_limits(&app, &tenant, json!({"max_call_depth": 2})).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    let second = open_call(&app, &b.key, &c.name, Some(&root)).await;
    for binding in BINDINGS {
        refused(&app, binding, &c.key, &agents["d"].name, &second).await;
    }
    // The same call at the tree's top, or one level up, is within the limit.
    assert_eq!(
        open_via(&app, Binding::Rest, &c.key, &agents["d"].name, None)
            .await
            .status,
        200
    );
    admitted(&app, Binding::JsonRpc, &b.key, &c.name, &root).await;
    let expected = vec![("depth_exceeded".to_owned(), second.clone(), root.clone()); 3];
    assert_eq!(refusals(&app, &tenant).await, expected);
    assert_eq!(
        calls_in_tree(&app, &tenant, &root).await,
        3,
        "no refused call on the ledger"
    );

    // Raised, the same call goes through.
    set_limits(&app, &tenant, json!({"max_call_depth": 3})).await;
    admitted(&app, Binding::HttpJson, &c.key, &agents["d"].name, &second).await;
}

#[tokio::test]
async fn a_call_back_to_an_agent_on_its_path_is_refused_only_when_cycles_are() {
    let app = spawn_app().await;
    let (tenant, agents) =
        agents_with_bindings(&app, &[("a", "b"), ("b", "a"), ("b", "c"), ("c", "a")]).await;
    let (a, b, c) = (&agents["a"], &agents["b"], &agents["c"]);
    // Off (the default), a loop is only lineage.
    let root = open_call(&app, &a.key, &b.name, None).await;
    open_call(&app, &b.key, &a.name, Some(&root)).await;

    set_limits(&app, &tenant, json!({"refuse_cycles": true})).await;
    let root = open_call(&app, &a.key, &b.name, None).await;
    let down = open_call(&app, &b.key, &c.name, Some(&root)).await;
    for binding in BINDINGS {
        refused(&app, binding, &b.key, &a.name, &root).await;
        refused(&app, binding, &c.key, &a.name, &down).await;
    }
    let reasons: Vec<String> = refusals(&app, &tenant)
        .await
        .into_iter()
        .map(|(reason, _, tree)| {
            assert_eq!(tree, root);
            reason
        })
        .collect();
    assert_eq!(reasons, vec!["cycle".to_owned(); 6]);
    // A new tree from the agent that was refused is no cycle.
    assert_eq!(
        open_via(&app, Binding::JsonRpc, &c.key, &a.name, None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn a_call_that_opened_its_share_of_tasks_opens_no_more() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("b", "c")]).await;
    set_limits(&app, &tenant, json!({"max_fan_out": 2})).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    admitted(&app, Binding::Rest, &b.key, &c.name, &root).await;
    admitted(&app, Binding::JsonRpc, &b.key, &c.name, &root).await;
    for binding in BINDINGS {
        refused(&app, binding, &b.key, &c.name, &root).await;
    }
    assert_eq!(
        refusals(&app, &tenant).await,
        vec![("fan_out_exceeded".to_owned(), root.clone(), root.clone()); 3]
    );
    // Another call of the same caller has a share of its own.
    let other = open_call(&app, &agents["a"].key, &b.name, None).await;
    admitted(&app, Binding::HttpJson, &b.key, &c.name, &other).await;
    assert_eq!(calls_in_tree(&app, &tenant, &root).await, 3);
}

/// An open repeated with its `message_id` answers with the task it opened, even once the call
/// has opened its share: it opens nothing, and takes nothing of the share.
#[tokio::test]
async fn a_repeated_open_is_answered_with_its_task_past_the_fan_out() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("b", "c")]).await;
    set_limits(&app, &tenant, json!({"max_fan_out": 1})).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    let mut keyed = text_message("once");
    keyed["message_id"] = json!("m-once");
    let keyed = || {
        app.http
            .post(format!("{}/v1/agents/{}/tasks", app.base, c.name))
            .bearer_auth(&b.key)
            .header("X-Parent-Call", &root)
            .json(&json!({"message": keyed}))
    };
    let first = app.finish(keyed()).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let again = app.finish(keyed()).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.field("id"), first.field("id"));
    refused(&app, Binding::Rest, &b.key, &c.name, &root).await;
    assert_eq!(calls_in_tree(&app, &tenant, &root).await, 2);
}

#[tokio::test]
async fn a_tree_at_its_open_limit_admits_a_call_again_once_a_task_finishes() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("b", "c")]).await;
    set_limits(&app, &tenant, json!({"max_open_in_tree": 2})).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    admitted(&app, Binding::HttpJson, &b.key, &c.name, &root).await;
    for binding in BINDINGS {
        refused(&app, binding, &b.key, &c.name, &root).await;
    }
    assert_eq!(
        refusals(&app, &tenant).await,
        vec![("tree_open_limit".to_owned(), root.clone(), root.clone()); 3]
    );
    // The callee answers its task: the tree holds one open task, and takes one more.
    let claimed = app.claim(&c.key, 5).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    let answered = app
        .post_result(
            &c.key,
            &claimed.field("id"),
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "done"}]}]}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    admitted(&app, Binding::JsonRpc, &b.key, &c.name, &root).await;
    refused(&app, Binding::Rest, &b.key, &c.name, &root).await;
    // A canceled task leaves the count too.
    let open = app.claim(&c.key, 5).await;
    assert_eq!(open.status, 200, "{}", open.text);
    let canceled = app.cancel(&b.key, &c.name, &open.field("id")).await;
    assert_eq!(canceled.status, 200, "{}", canceled.text);
    admitted(&app, Binding::Rest, &b.key, &c.name, &root).await;
}

/// A count that missed a finish (a process stopped between the two) says the tree is full when
/// it is not: the gate counts the tree's open tasks again from the tasks before it refuses.
#[tokio::test]
async fn a_tree_count_that_missed_a_finish_is_counted_again_before_it_refuses() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("b", "c")]).await;
    set_limits(&app, &tenant, json!({"max_open_in_tree": 2})).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    app.app
        .store
        .client()
        .update_item()
        .table_name(&app.table)
        .key(
            "pk",
            AttributeValue::S(format!("TREE#{}#{root}", tenant.id)),
        )
        .key("sk", AttributeValue::S("OPEN".into()))
        .update_expression("SET #count = :full")
        .expression_attribute_names("#count", "count")
        .expression_attribute_values(":full", AttributeValue::N("2".into()))
        .send()
        .await
        .unwrap();
    admitted(&app, Binding::Rest, &b.key, &c.name, &root).await;
    refused(&app, Binding::Rest, &b.key, &c.name, &root).await;
}

/// A tree that grew before a limit was set is held to it all the same: its first count under
/// the limit is made from the ledger, and calls written before calls kept their depth are
/// placed by walking up their parents.
#[tokio::test]
async fn limits_set_on_a_lived_in_tenant_hold_its_older_trees_too() {
    let app = spawn_app().await;
    let edges = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "a")];
    let (tenant, agents) = agents_with_bindings(&app, &edges).await;
    let (b, c, d) = (&agents["b"], &agents["c"], &agents["d"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    let second = open_call(&app, &b.key, &c.name, Some(&root)).await;
    let sibling = open_call(&app, &b.key, &c.name, Some(&root)).await;
    let third = open_call(&app, &c.key, &d.name, Some(&second)).await;
    // As the ledger held calls before they kept their depth.
    for call in [&second, &third] {
        app.app
            .store
            .client()
            .update_item()
            .table_name(&app.table)
            .key("pk", AttributeValue::S(format!("CALL#{call}")))
            .key("sk", AttributeValue::S("CALL".into()))
            .update_expression("REMOVE #depth")
            .expression_attribute_names("#depth", "depth")
            .send()
            .await
            .unwrap();
    }
    set_limits(
        &app,
        &tenant,
        json!({"max_call_depth": 3, "max_fan_out": 2, "max_open_in_tree": 5}),
    )
    .await;
    // The root's two tasks were opened before the limit: a third is past its share.
    refused(&app, Binding::Rest, &b.key, &c.name, &root).await;
    // Below `third` (depth 3) is depth 4.
    refused(&app, Binding::JsonRpc, &d.key, &agents["a"].name, &third).await;
    // The tree holds 4 open tasks: one more, then it is full.
    admitted(&app, Binding::HttpJson, &c.key, &d.name, &second).await;
    refused(&app, Binding::Rest, &c.key, &d.name, &sibling).await;
    let mut reasons: Vec<String> = refusals(&app, &tenant)
        .await
        .into_iter()
        .map(|(reason, _, _)| reason)
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        ["depth_exceeded", "fan_out_exceeded", "tree_open_limit"]
    );
}

/// A refusal at a big tree's open limit is cheap: the tree's tasks are counted again when its
/// count first stands at the limit, and for a tree of more than 100 calls not again for 30 s,
/// so a caller that keeps knocking costs a read each time, not a read of every task.
#[tokio::test]
async fn a_big_tree_at_its_open_limit_is_counted_again_at_most_every_so_often() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("b", "c")]).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    // 101 calls below the root, each canceled: a tree of 102 calls, one task open.
    for _ in 0..101 {
        let opened = open_via(&app, Binding::Rest, &b.key, &c.name, Some(&root)).await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        let canceled = app.cancel(&b.key, &c.name, &opened.field("id")).await;
        assert_eq!(canceled.status, 200, "{}", canceled.text);
    }
    set_limits(&app, &tenant, json!({"max_open_in_tree": 2})).await;
    let tree_reads = |recorder: &Recorder| {
        recorder
            .take_dynamodb_round_trips()
            .into_iter()
            .filter(|(operation, _)| operation == "Query gsi1")
            .count()
    };
    recorder.take_dynamodb_round_trips();
    // The first count under the limit is made from the ledger: one open task, so one more.
    admitted(&app, Binding::Rest, &b.key, &c.name, &root).await;
    assert!(tree_reads(&recorder) >= 1, "the tree's calls read");
    // Full now: the count was just made, so the refusals read no tree.
    for binding in BINDINGS {
        refused(&app, binding, &b.key, &c.name, &root).await;
    }
    assert_eq!(tree_reads(&recorder), 0, "no tree read again within 30 s");
    let reasons: Vec<String> = refusals(&app, &tenant)
        .await
        .into_iter()
        .map(|(reason, _, _)| reason)
        .collect();
    assert_eq!(reasons, vec!["tree_open_limit".to_owned(); 3]);
}

/// The table's item at `pk`/`sk`, read strongly consistently (empty when there is none).
async fn stored(app: &TestApp, pk: String, sk: &str) -> BTreeMap<String, AttributeValue> {
    let read = app
        .app
        .store
        .client()
        .get_item()
        .table_name(&app.table)
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(sk.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    read.item.unwrap_or_default().into_iter().collect()
}

/// The tenant's item counting tree `root`'s open tasks, and its root's children beside them.
async fn tree_item(app: &TestApp, tenant: &Tenant, root: &str) -> BTreeMap<String, AttributeValue> {
    stored(app, format!("TREE#{}#{root}", tenant.id), "OPEN").await
}

fn number(item: &BTreeMap<String, AttributeValue>, name: &str) -> Option<String> {
    item.get(name).map(|value| value.as_n().unwrap().clone())
}

/// Whether call `call` has an item of its own counting the tasks it opened.
async fn has_own_children_count(app: &TestApp, call: &str) -> bool {
    !stored(app, format!("CALL#{call}"), "CHILDREN")
        .await
        .is_empty()
}

/// A tenant limiting fan-out to 2 and open tasks to 10 a tree, with a root call from `a` to `b`
/// and the two calls below it from `b` to `c` that its fan-out allows; the root's call id.
async fn root_with_two_children(app: &TestApp) -> (Tenant, BTreeMap<String, TestAgent>, String) {
    let (tenant, agents) = agents_with_bindings(app, &[("a", "b"), ("b", "c")]).await;
    set_limits(
        app,
        &tenant,
        json!({"max_fan_out": 2, "max_open_in_tree": 10}),
    )
    .await;
    let (b, c) = (&agents["b"], &agents["c"]);
    let root = open_call(app, &agents["a"].key, &b.name, None).await;
    open_call(app, &b.key, &c.name, Some(&root)).await;
    open_call(app, &b.key, &c.name, Some(&root)).await;
    (tenant, agents, root)
}

/// A call below a root takes its two counts, the root's tasks opened and the tree's open tasks,
/// in one write: the root's count is kept on its tree's item. A call deeper down counts its
/// parent's tasks on an item of the parent's own.
#[tokio::test]
async fn a_roots_children_are_counted_on_its_trees_item() {
    let app = spawn_app().await;
    let (tenant, agents) = agents_with_bindings(&app, &[("a", "b"), ("b", "c"), ("c", "d")]).await;
    set_limits(
        &app,
        &tenant,
        json!({"max_fan_out": 2, "max_open_in_tree": 10}),
    )
    .await;
    let (b, c, d) = (&agents["b"], &agents["c"], &agents["d"]);
    let root = open_call(&app, &agents["a"].key, &b.name, None).await;
    let tree = tree_item(&app, &tenant, &root).await;
    assert_eq!(number(&tree, "count").as_deref(), Some("1"));
    assert_eq!(number(&tree, "children").as_deref(), Some("0"));
    let child = open_call(&app, &b.key, &c.name, Some(&root)).await;
    open_call(&app, &b.key, &c.name, Some(&root)).await;
    let tree = tree_item(&app, &tenant, &root).await;
    assert_eq!(number(&tree, "count").as_deref(), Some("3"));
    assert_eq!(number(&tree, "children").as_deref(), Some("2"));
    assert!(!has_own_children_count(&app, &root).await);
    refused(&app, Binding::JsonRpc, &b.key, &c.name, &root).await;
    open_call(&app, &c.key, &d.name, Some(&child)).await;
    assert!(has_own_children_count(&app, &child).await);
    let tree = tree_item(&app, &tenant, &root).await;
    assert_eq!(number(&tree, "count").as_deref(), Some("4"));
    assert_eq!(number(&tree, "children").as_deref(), Some("2"));
}

/// A tree whose item holds no count of its root's children (written before they were counted
/// there) is held to the fan-out all the same: that count is first made from the ledger.
#[tokio::test]
async fn a_tree_item_without_its_roots_children_counts_them_from_the_ledger() {
    let app = spawn_app().await;
    let (tenant, agents, root) = root_with_two_children(&app).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    app.app
        .store
        .client()
        .update_item()
        .table_name(&app.table)
        .key(
            "pk",
            AttributeValue::S(format!("TREE#{}#{root}", tenant.id)),
        )
        .key("sk", AttributeValue::S("OPEN".into()))
        .update_expression("REMOVE children, children_epoch")
        .send()
        .await
        .unwrap();
    refused(&app, Binding::HttpJson, &b.key, &c.name, &root).await;
    let tree = tree_item(&app, &tenant, &root).await;
    assert_eq!(number(&tree, "children").as_deref(), Some("2"));
}

/// Taking the tree's limit away moves a root's count of its children off the tree's item:
/// counting begins again, from the ledger, so the fan-out still holds.
#[tokio::test]
async fn the_fan_out_holds_when_the_trees_limit_is_taken_away() {
    let app = spawn_app().await;
    let (tenant, agents, root) = root_with_two_children(&app).await;
    let (b, c) = (&agents["b"], &agents["c"]);
    set_limits(&app, &tenant, json!({"max_open_in_tree": null})).await;
    refused(&app, Binding::Rest, &b.key, &c.name, &root).await;
    set_limits(&app, &tenant, json!({"max_open_in_tree": 10})).await;
    refused(&app, Binding::JsonRpc, &b.key, &c.name, &root).await;
    assert_eq!(calls_in_tree(&app, &tenant, &root).await, 3);
}
