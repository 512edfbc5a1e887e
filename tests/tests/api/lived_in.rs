//! Tenants that have lived a while: reads after refusals, revocations and items a page cannot
//! decode, and the audit log's filters over a long log. Each test is a defect found in such a
//! tenant (by hand or by the histories in `tests/tests/histories.rs`), kept as a regression.

use std::collections::HashSet;

use forgebench_tests::{spawn_app, text_message, Reply, TestApp};
use serde_json::Value;

fn ids(reply: &Reply) -> Vec<String> {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every entry of the audit log at `path` (a query with its filters), page after page.
async fn all_entries(app: &TestApp, key: &str, path: &str) -> (Vec<Value>, usize) {
    let mut entries = Vec::new();
    let mut pages = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page_path = match &cursor {
            Some(cursor) => format!("{path}&cursor={cursor}"),
            None => path.to_owned(),
        };
        let page = app.get(&page_path, key).await;
        assert_eq!(page.status, 200, "{}", page.text);
        pages += 1;
        entries.extend(page.body["items"].as_array().unwrap().iter().cloned());
        match page.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (entries, pages),
        }
    }
}

/// The four calls: two agents, one with a key, an open without a binding (a refusal),
/// then the tenant's search. The refused open's audit entry has no task; the search walked it.
#[tokio::test]
async fn the_tenants_task_search_answers_after_a_refused_open() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let admin = &tenant.admin_key;
    let caller = app.create_agent(admin, "billing-orchestrator").await;
    let callee = app.create_agent(admin, "invoice-classifier").await;
    let refused = app
        .open_task(&caller.key, &callee.name, text_message("Classify"), 0)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    let searched = app.get("/v1/tasks", admin).await;
    assert_eq!(ids(&searched), Vec::<String>::new());

    // And once a task exists beside the refusal, the search finds it, for a viewer too.
    app.grant(admin, &caller.id, &[&callee.name]).await;
    let opened = app
        .open_task(&caller.key, &callee.name, text_message("Classify"), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let (_, viewer) = app.create_member(&tenant, "viewer").await;
    for key in [admin, &viewer] {
        assert_eq!(ids(&app.get("/v1/tasks", key).await), [opened.field("id")]);
    }
}

/// A task item a page cannot decode is left out (logged and counted): the rest of the page is
/// served, where the whole page was a 500.
#[tokio::test]
async fn a_page_is_served_without_the_one_item_it_cannot_decode() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let mut opened = Vec::new();
    for text in ["first", "second", "third"] {
        let reply = app
            .open_task(&pair.caller.key, &pair.callee.name, text_message(text), 0)
            .await;
        opened.push(reply.field("id"));
    }
    app.update_task_item(&opened[1])
        .update_expression("SET #state = :broken")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(
            ":broken",
            aws_sdk_dynamodb::types::AttributeValue::N("7".into()),
        )
        .send()
        .await
        .unwrap();
    let admin = &pair.tenant.admin_key;
    let expected = [opened[2].clone(), opened[0].clone()];
    assert_eq!(ids(&app.get("/v1/tasks", admin).await), expected);
    let path = format!("/v1/tasks?agent={}", pair.callee.name);
    assert_eq!(ids(&app.get(&path, admin).await), expected);
}

/// Refusals scattered in a long log: a filtered page reads on until it holds `limit` of them,
/// where it used to filter one read's entries and come back empty with a cursor.
#[tokio::test]
async fn an_audit_filter_fills_its_page_from_a_long_log() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    // Three refusals (three unbound callees), then enough allowed entries to bury them.
    for name in ["unbound-a", "unbound-b", "unbound-c"] {
        let agent = app.create_agent(admin, name).await;
        let refused = app
            .open_task(&pair.caller.key, &agent.name, text_message("hi"), 0)
            .await;
        assert_eq!(refused.status, 403);
    }
    for index in 0..60 {
        let text = format!("task {index}");
        app.open_task(&pair.caller.key, &pair.callee.name, text_message(&text), 0)
            .await;
    }
    let first = app.get("/v1/audit?outcome=refused&limit=2", admin).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let items = first.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{}", first.text);
    let (refusals, pages) = all_entries(&app, admin, "/v1/audit?outcome=refused&limit=2").await;
    assert_eq!(
        pages, 2,
        "two full pages' worth, and no empty page after the last"
    );
    let reasons: Vec<&str> = refusals
        .iter()
        .map(|entry| entry["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["no_binding"; 3]);
    // The filter in the store agrees with filtering the whole log by hand.
    let (everything, _) = all_entries(&app, admin, "/v1/audit?limit=100").await;
    let by_hand: Vec<&Value> = everything
        .iter()
        .filter(|entry| entry["outcome"] == "refused")
        .collect();
    assert_eq!(refusals.iter().collect::<Vec<_>>(), by_hand);
    // A prefix of an action, and `since`, filter in the store as well.
    let since = everything[10]["at"].as_str().unwrap();
    let path = format!("/v1/audit?action=task.&since={since}&limit=7");
    let (recent, _) = all_entries(&app, admin, &path).await;
    let by_hand: Vec<&Value> = everything
        .iter()
        .filter(|entry| {
            entry["action"].as_str().unwrap().starts_with("task.")
                && entry["at"].as_str().unwrap() > since
        })
        .collect();
    assert_eq!(recent.iter().collect::<Vec<_>>(), by_hand);
    // A cursor older than `since` has nothing after it (it was a 500: the read's start lay
    // outside the range `since` sets).
    let oldest = everything.last().unwrap();
    let cursor = format!(
        "{}_{}",
        oldest["at"].as_str().unwrap(),
        oldest["id"].as_str().unwrap()
    );
    let past = app
        .get(&format!("/v1/audit?since={since}&cursor={cursor}"), admin)
        .await;
    assert_eq!(past.status, 200, "{}", past.text);
    assert_eq!(
        past.body,
        serde_json::json!({"items": [], "next_cursor": null})
    );
}

/// `agent` names an agent by name or by id alike, and an agent's trail holds the bindings that
/// concern it (their entries name the caller and the callee); actors that are people show their
/// names.
#[tokio::test]
async fn an_agents_trail_is_found_by_its_name_and_holds_its_bindings() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    app.open_task(&pair.caller.key, &pair.callee.name, text_message("hi"), 0)
        .await;
    let (by_name, _) = all_entries(
        &app,
        admin,
        &format!("/v1/audit?agent={}&limit=5", pair.callee.name),
    )
    .await;
    let (by_id, _) = all_entries(
        &app,
        admin,
        &format!("/v1/audit?agent={}&limit=5", pair.callee.id),
    )
    .await;
    assert_eq!(by_name, by_id);
    let actions: HashSet<&str> = by_name
        .iter()
        .map(|entry| entry["action"].as_str().unwrap())
        .collect();
    assert!(
        actions.contains("binding.grant") && actions.contains("task.open"),
        "{actions:?}"
    );
    let grant = by_name
        .iter()
        .find(|entry| entry["action"] == "binding.grant")
        .unwrap();
    assert_eq!(grant["caller_agent_id"], pair.caller.id);
    assert_eq!(grant["callee_agent_id"], pair.callee.id);
    assert_eq!(grant["actor"]["kind"], "admin");
    assert!(
        grant["actor"]["name"]
            .as_str()
            .is_some_and(|name| !name.is_empty()),
        "{grant}"
    );
    let unknown = app.get("/v1/audit?agent=nobody-here", admin).await;
    assert_eq!(unknown.status, 404, "{}", unknown.text);
    assert_eq!(unknown.body["detail"]["code"], "not_found");
}

/// What a filtered audit page costs in read units, against the unfiltered log: the filter
/// reads the whole stretch it passes over once, and never more than its budget a page.
#[tokio::test]
async fn a_filtered_audit_page_reads_the_log_once_within_its_budget() {
    use forgebench::store::{AuditSearch, AUDIT_READ_UNITS};
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let unbound = app.create_agent(admin, "unbound").await;
    let refused = app
        .open_task(&pair.caller.key, &unbound.name, text_message("hi"), 0)
        .await;
    assert_eq!(refused.status, 403);
    for index in 0..120 {
        let text = format!("task {index}");
        app.open_task(&pair.caller.key, &pair.callee.name, text_message(&text), 0)
            .await;
    }
    let tenant_id = pair.tenant.id.as_str().into();
    let search = |limit, outcome| AuditSearch {
        tenant_id: &tenant_id,
        after: None,
        limit,
        agent: None,
        action: None,
        outcome,
        since: None,
    };
    let store = &app.app.store;
    let whole = store.list_audit(&search(100, None)).await.unwrap();
    let rest = store
        .list_audit(&AuditSearch {
            after: whole.next.as_deref(),
            ..search(100, None)
        })
        .await
        .unwrap();
    let log_units = whole.read_units + rest.read_units;
    let refusals = store
        .list_audit(&search(50, Some("refused")))
        .await
        .unwrap();
    assert_eq!(refusals.entries.len(), 1);
    assert!(refusals.next.is_none(), "the log's end is its end");
    println!(
        "audit log of {} entries: {log_units} read units unfiltered (two pages of 100), \
         {} for the one page that finds its one refusal",
        whole.entries.len() + rest.entries.len(),
        refusals.read_units
    );
    assert!(
        refusals.read_units <= log_units,
        "a filter reads the log once"
    );
    assert!(refusals.read_units <= AUDIT_READ_UNITS);
}
