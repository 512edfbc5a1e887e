//! Tenants, members, agents and keys.

use forgebench_tests::{spawn_app, spawn_app_with, Options};
use serde_json::json;

#[tokio::test]
async fn a_missing_or_unknown_key_is_401_with_the_documented_body() {
    let app = spawn_app().await;
    let missing = app.send("GET", "/v1/agents", None, None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(missing.body["detail"]["code"], "unauthenticated");
    let unknown = app.get("/v1/agents", "fb_adm_not-a-real-key").await;
    assert_eq!(unknown.status, 401);
    assert_eq!(unknown.body["detail"]["code"], "unauthenticated");
}

#[tokio::test]
async fn only_the_operator_creates_tenants_and_the_admin_key_is_shown_once() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    assert!(tenant.admin_key.starts_with("fb_adm_"));
    let refused = app
        .post("/v1/tenants", &tenant.admin_key, json!({"name": "other"}))
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(refused.body["detail"]["code"], "forbidden");
    // Only the hash is stored: the key's text appears in no item of the table.
    let items = format!("{:?}", app.scan_all().await);
    assert!(!items.contains(&tenant.admin_key));
    assert!(!items.contains(&tenant.admin_key["fb_adm_".len()..]));
}

#[tokio::test]
async fn an_admin_adds_members_and_viewers_and_a_member_cannot() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let (_, member_key) = app.create_member(&tenant, "member").await;
    let (_, viewer_key) = app.create_member(&tenant, "viewer").await;
    assert!(member_key.starts_with("fb_mem_") && viewer_key.starts_with("fb_view_"));
    let refused = app
        .post(
            "/v1/members",
            &member_key,
            json!({"name": "x", "role": "admin"}),
        )
        .await;
    assert_eq!(refused.status, 403);
    let bad_role = app
        .post(
            "/v1/members",
            &tenant.admin_key,
            json!({"name": "x", "role": "boss"}),
        )
        .await;
    assert_eq!(bad_role.status, 400);
}

#[tokio::test]
async fn agents_are_named_by_the_documented_pattern_and_unique_in_a_tenant() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    for name in [
        "Bad Name",
        "me",
        "cards",
        "-x",
        "706608c0-4160-452a-86ac-ded1186326ac",
    ] {
        let reply = app
            .post("/v1/agents", &tenant.admin_key, json!({ "name": name }))
            .await;
        assert_eq!(reply.status, 400, "{name}: {}", reply.text);
        assert_eq!(reply.body["detail"]["code"], "invalid_request");
    }
    let first = app
        .post("/v1/agents", &tenant.admin_key, json!({"name": "worker"}))
        .await;
    assert_eq!(first.status, 201);
    let again = app
        .post("/v1/agents", &tenant.admin_key, json!({"name": "worker"}))
        .await;
    assert_eq!(again.status, 409);
    // The same name in another tenant is a different agent.
    let other = app.create_tenant().await;
    let elsewhere = app
        .post("/v1/agents", &other.admin_key, json!({"name": "worker"}))
        .await;
    assert_eq!(elsewhere.status, 201);
    assert_ne!(elsewhere.field("id"), first.field("id"));
}

#[tokio::test]
async fn an_agent_is_read_by_name_or_id_and_never_across_tenants() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let agent = app
        .create_agent(&tenant.admin_key, "invoice-classifier")
        .await;
    let by_name = app
        .get("/v1/agents/invoice-classifier", &tenant.admin_key)
        .await;
    let by_id = app
        .get(&format!("/v1/agents/{}", agent.id), &tenant.admin_key)
        .await;
    assert_eq!(by_name.status, 200);
    assert_eq!(by_name.body, by_id.body);
    assert_eq!(by_name.body["endpoint"], serde_json::Value::Null);
    let other = app.create_tenant().await;
    let foreign = app
        .get(&format!("/v1/agents/{}", agent.id), &other.admin_key)
        .await;
    assert_eq!(foreign.status, 404);
    let me = app.get("/v1/agents/me", &agent.key).await;
    assert_eq!(me.status, 200);
    assert_eq!(me.field("id"), agent.id);
    let listed = app.get("/v1/agents", &tenant.admin_key).await;
    assert_eq!(listed.body["items"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn a_member_owns_what_it_creates_and_manages_nothing_else() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let (member_id, member_key) = app.create_member(&tenant, "member").await;
    let own = app.create_agent(&member_key, "mine").await;
    let reply = app.get("/v1/agents/mine", &member_key).await;
    assert_eq!(reply.field("owner_member_id"), member_id);
    let theirs = app.create_agent(&tenant.admin_key, "theirs").await;
    let patch = app
        .send(
            "PATCH",
            "/v1/agents/theirs",
            Some(&member_key),
            Some(json!({"status": "paused"})),
        )
        .await;
    assert_eq!(patch.status, 403);
    let key = app
        .post(
            &format!("/v1/agents/{}/keys", theirs.id),
            &member_key,
            json!({}),
        )
        .await;
    assert_eq!(key.status, 403);
    let own_patch = app
        .send(
            "PATCH",
            &format!("/v1/agents/{}", own.id),
            Some(&member_key),
            Some(json!({"status": "paused"})),
        )
        .await;
    assert_eq!(own_patch.status, 200);
    assert_eq!(own_patch.field("status"), "paused");
}

#[tokio::test]
async fn status_moves_between_active_and_paused_and_retired_is_final() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    app.create_agent(&tenant.admin_key, "worker").await;
    let patch = |status: &'static str| {
        app.send(
            "PATCH",
            "/v1/agents/worker",
            Some(&tenant.admin_key),
            Some(json!({ "status": status })),
        )
    };
    assert_eq!(patch("paused").await.status, 200);
    assert_eq!(patch("active").await.status, 200);
    assert_eq!(patch("retired").await.status, 200);
    let back = patch("active").await;
    assert_eq!(back.status, 409);
    assert_eq!(patch("sleeping").await.status, 400);
}

#[tokio::test]
async fn a_revoked_agent_key_stops_authenticating_at_once() {
    // The key cache is on (10 s): the revoking process must drop the key immediately.
    let app = spawn_app_with(Options::default()).await;
    let tenant = app.create_tenant().await;
    let agent = app.create_agent(&tenant.admin_key, "worker").await;
    assert_eq!(app.get("/v1/agents/me", &agent.key).await.status, 200);
    let issued = app
        .post(
            &format!("/v1/agents/{}/keys", agent.id),
            &tenant.admin_key,
            json!({}),
        )
        .await;
    let key_id = issued.field("key_id");
    let second_key = issued.field("key");
    let revoked = app
        .send(
            "DELETE",
            &format!("/v1/agents/worker/keys/{key_id}"),
            Some(&tenant.admin_key),
            None,
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(app.get("/v1/agents/me", &second_key).await.status, 401);
    // The other key of the agent still works; revoking twice is a 404.
    assert_eq!(app.get("/v1/agents/me", &agent.key).await.status, 200);
    let again = app
        .send(
            "DELETE",
            &format!("/v1/agents/worker/keys/{key_id}"),
            Some(&tenant.admin_key),
            None,
        )
        .await;
    assert_eq!(again.status, 404);
}
