//! Tenants that have lived a while: reads after refusals, revocations and items a page cannot
//! decode, and the audit log's filters over a long log. Each test is a defect found in such a
//! tenant (by hand or by the histories in `tests/tests/histories.rs`), kept as a regression.

use forgebench_tests::{spawn_app, text_message, Reply};

fn ids(reply: &Reply) -> Vec<String> {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["id"].as_str().unwrap().to_owned())
        .collect()
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
