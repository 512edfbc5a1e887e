//! Bindings: grant, two-sided approval, listing, revoke, re-grant.

use forgebench_tests::{spawn_app, text_message};
use serde_json::json;

#[tokio::test]
async fn an_admin_grant_is_approved_at_once_with_one_entry_per_callee() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let caller = app.create_agent(&tenant.admin_key, "billing").await;
    let first = app
        .create_agent(&tenant.admin_key, "invoice-classifier")
        .await;
    let second = app.create_agent(&tenant.admin_key, "refund-approver").await;
    let reply = app
        .grant(
            &tenant.admin_key,
            &caller.id,
            &["invoice-classifier", &second.id],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let entries = reply.body.as_array().expect("a list");
    assert_eq!(entries.len(), 2);
    for (entry, callee) in entries.iter().zip([&first, &second]) {
        assert_eq!(entry["caller_agent_id"], caller.id.as_str());
        assert_eq!(entry["callee_agent_id"], callee.id.as_str());
        assert_eq!(entry["source"], "api");
        assert_eq!(entry["revoked"], false);
        assert!(entry["approved_at"].is_string());
        assert!(entry["id"].is_string());
    }
}

#[tokio::test]
async fn a_grant_across_owners_waits_for_the_callee_owner() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let (_, alice) = app.create_member(&tenant, "member").await;
    let (_, bob) = app.create_member(&tenant, "member").await;
    let caller = app.create_agent(&alice, "alice-agent").await;
    let callee = app.create_agent(&bob, "bob-agent").await;
    let reply = app.grant(&alice, &caller.id, &["bob-agent"]).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let binding = &reply.body[0];
    assert!(binding["approved_at"].is_null());
    let binding_id = binding["id"].as_str().unwrap();

    let pending = app
        .open_task(&caller.key, "bob-agent", text_message("hi"), 0)
        .await;
    assert_eq!(pending.status, 403);

    // The caller's owner cannot approve its own request; the callee's owner can.
    let approve_path = format!("/v1/agents/{}/agents/{binding_id}/approve", callee.id);
    assert_eq!(app.post(&approve_path, &alice, json!({})).await.status, 403);
    let approved = app.post(&approve_path, &bob, json!({})).await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert!(approved.body["approved_at"].is_string());

    let opened = app
        .open_task(&caller.key, "bob-agent", text_message("hi"), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
}

#[tokio::test]
async fn only_the_callers_owner_or_an_admin_may_grant() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let (_, mallory) = app.create_member(&tenant, "member").await;
    let caller = app.create_agent(&tenant.admin_key, "caller").await;
    app.create_agent(&mallory, "callee").await;
    let refused = app.grant(&mallory, &caller.id, &["callee"]).await;
    assert_eq!(refused.status, 403);
    let unknown = app
        .grant(&tenant.admin_key, &caller.id, &["callee", "nobody"])
        .await;
    assert_eq!(unknown.status, 404);
    // All or nothing: the known callee was not bound either.
    let listed = app
        .get(
            &format!("/v1/agents/{}/agents", caller.id),
            &tenant.admin_key,
        )
        .await;
    assert_eq!(listed.body["outbound"], json!([]));
}

#[tokio::test]
async fn bindings_are_listed_from_both_sides() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let out = app
        .get(&format!("/v1/agents/{}/agents", pair.caller.id), admin)
        .await;
    assert_eq!(out.status, 200);
    assert_eq!(out.body["outbound"][0]["id"], pair.binding_id.as_str());
    assert_eq!(out.body["inbound"], json!([]));
    let inbound = app
        .get(&format!("/v1/agents/{}/agents", pair.callee.name), admin)
        .await;
    assert_eq!(inbound.body["inbound"][0]["id"], pair.binding_id.as_str());
    assert_eq!(inbound.body["outbound"], json!([]));
}

#[tokio::test]
async fn revoking_keeps_the_row_bites_on_the_next_task_and_regrant_reuses_it() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let before = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("one"), 0)
        .await;
    assert_eq!(before.status, 200);

    // Revoked from the callee's side.
    let revoked = app
        .send(
            "DELETE",
            &format!("/v1/agents/{}/agents/{}", pair.callee.id, pair.binding_id),
            Some(admin),
            None,
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(revoked.body["revoked"], true);
    let listed = app
        .get(&format!("/v1/agents/{}/agents", pair.caller.id), admin)
        .await;
    assert_eq!(listed.body["outbound"][0]["revoked"], true);

    let after = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("two"), 0)
        .await;
    assert_eq!(after.status, 403);
    // The task opened before the revocation is still there for its callee.
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.field("id"), before.field("id"));

    let regrant = app
        .grant(admin, &pair.caller.id, &[&pair.callee.name])
        .await;
    assert_eq!(regrant.body[0]["id"], pair.binding_id.as_str());
    assert_eq!(regrant.body[0]["revoked"], false);
    let listed = app
        .get(&format!("/v1/agents/{}/agents", pair.caller.id), admin)
        .await;
    assert_eq!(listed.body["outbound"].as_array().map(Vec::len), Some(1));
    let again = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("three"),
            0,
        )
        .await;
    assert_eq!(again.status, 200);
}
