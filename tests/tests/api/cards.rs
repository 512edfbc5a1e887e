//! Agent cards: generated from live state, signed, verified by an independent implementation.

use std::path::PathBuf;
use std::process::Command;

use std::time::Duration;

use forgebench_tests::{spawn_app, spawn_app_with, text_message, Answer, Callee, Options, TestApp};
use serde_json::{json, Value};

/// The Python of the test tools: `FORGEBENCH_TEST_PYTHON`, else the one scripts/install.sh
/// makes.
fn python() -> PathBuf {
    std::env::var("FORGEBENCH_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.local/venv/bin/python")
        })
}

/// Runs the Python verifier (`cryptography` + `rfc8785`) on a card against a JWKS.
fn verify_independently(card: &Value, jwks: &Value) -> (bool, String) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = python();
    let dir = std::env::temp_dir().join(format!("card-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let (card_path, jwks_path) = (dir.join("card.json"), dir.join("jwks.json"));
    std::fs::write(&card_path, card.to_string()).unwrap();
    std::fs::write(&jwks_path, jwks.to_string()).unwrap();
    let output = Command::new(&python)
        .arg(root.join("verify_card.py"))
        .arg(&card_path)
        .arg(&jwks_path)
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "cannot run {}: {error}; run scripts/install.sh",
                python.display()
            )
        });
    let _ = std::fs::remove_dir_all(&dir);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!text.contains("ModuleNotFoundError"), "{text}");
    (output.status.success(), text)
}

/// The kids of the published keys of `purpose`, in the JWKS's order.
fn kids(jwks: &Value, purpose: &str) -> Vec<String> {
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|key| key["purpose"] == purpose)
        .map(|key| key["kid"].as_str().unwrap().to_owned())
        .collect()
}

/// The `kid` in a card's JWS header.
fn kid_of(card: &Value) -> String {
    use base64::Engine;
    let protected = card["signatures"][0]["protected"].as_str().unwrap();
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(protected)
            .unwrap(),
    )
    .unwrap();
    header["kid"].as_str().unwrap().to_owned()
}

async fn jwks(app: &TestApp, key: &str) -> Value {
    let reply = app.get("/v1/billing/export/pubkey", key).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body
}

#[tokio::test]
async fn a_card_is_read_by_name_or_id_and_points_at_the_gate() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let by_name = app
        .get(
            "/v1/agents/invoice-classifier/.well-known/agent-card.json",
            &pair.caller.key,
        )
        .await;
    assert_eq!(by_name.status, 200, "{}", by_name.text);
    let by_id = app
        .get(
            &format!("/v1/agents/{}/.well-known/agent-card.json", pair.callee.id),
            &pair.tenant.admin_key,
        )
        .await;
    assert_eq!(by_name.body, by_id.body);
    let card = &by_name.body;
    let agent_url = format!("{}/v1/agents/{}", app.base, pair.callee.id);
    let url = format!("{agent_url}/tasks");
    assert_eq!(card["url"], url.as_str());
    // The gate's A2A interfaces for this agent, JSON-RPC first.
    assert_eq!(
        card["supportedInterfaces"],
        json!([
            {"url": format!("{agent_url}/a2a/jsonrpc"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{agent_url}/a2a"), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        ])
    );
    assert_eq!(card["name"], "invoice-classifier");
    assert_eq!(
        card["capabilities"],
        json!({"streaming": true, "pushNotifications": true, "extendedAgentCard": false})
    );
    let scheme = &card["securitySchemes"]["forgebenchAgentKey"]["httpAuthSecurityScheme"];
    assert_eq!(scheme["scheme"], "Bearer");
    assert_eq!(
        card["securityRequirements"],
        json!([{"schemes": {"forgebenchAgentKey": {"list": []}}}])
    );
    for field in [
        "description",
        "version",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
        "signatures",
    ] {
        assert!(card.get(field).is_some(), "{field} missing");
    }
    assert_eq!(card["signatures"].as_array().map(Vec::len), Some(2));
    // The card never shows where the agent itself runs.
    let admin = &pair.tenant.admin_key;
    app.set_endpoint(
        admin,
        &pair.callee.name,
        json!({"url": "https://93.184.216.34/private-a2a"}),
    )
    .await;
    let again = app
        .get(
            "/v1/agents/invoice-classifier/.well-known/agent-card.json",
            admin,
        )
        .await;
    assert!(!again.text.contains("private-a2a"));
    assert_eq!(again.body["url"], url.as_str());
    assert_eq!(
        again.body["supportedInterfaces"],
        card["supportedInterfaces"]
    );
}

#[tokio::test]
async fn skills_follow_tool_grants_and_revokes_on_the_next_read() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let card_path = format!("/v1/agents/{}/.well-known/agent-card.json", pair.callee.id);
    // No tools: one skill, the agent itself (A2A 1.0 requires at least one).
    let bare = app.get(&card_path, admin).await.body;
    assert_eq!(bare["skills"].as_array().map(Vec::len), Some(1), "{bare}");
    assert_eq!(bare["skills"][0]["id"], pair.callee.name);
    assert_eq!(bare["skills"][0]["tags"], json!(["agent"]));
    let put = app
        .send(
            "PUT",
            &format!("/v1/agents/{}/tools/classify", pair.callee.id),
            Some(admin),
            Some(json!({"description": "Classifies an invoice", "tags": ["finance"]})),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.text);
    app.send(
        "PUT",
        &format!("/v1/agents/{}/tools/lookup", pair.callee.id),
        Some(admin),
        Some(json!({"description": "Looks up an invoice"})),
    )
    .await;
    let card = app.get(&card_path, admin).await.body;
    assert_eq!(
        card["skills"],
        json!([
            {"id": "classify", "name": "classify", "description": "Classifies an invoice", "tags": ["finance"]},
            // A tool granted without tags gets the default one: A2A wants at least one.
            {"id": "lookup", "name": "lookup", "description": "Looks up an invoice", "tags": ["tool"]}
        ])
    );
    let removed = app
        .send(
            "DELETE",
            &format!("/v1/agents/{}/tools/classify", pair.callee.id),
            Some(admin),
            None,
        )
        .await;
    assert_eq!(removed.status, 200);
    let card = app.get(&card_path, admin).await.body;
    assert_eq!(card["skills"].as_array().map(Vec::len), Some(1));
    assert_eq!(card["skills"][0]["id"], "lookup");
    let listed = app
        .get(&format!("/v1/agents/{}/tools", pair.callee.id), admin)
        .await;
    assert_eq!(listed.body["items"].as_array().map(Vec::len), Some(1));
    // Only the owner or an admin grants tools: another member is refused, an agent does not
    // even see the other agent.
    let (_, member) = app.create_member(&pair.tenant, "member").await;
    let tool_path = format!("/v1/agents/{}/tools/x", pair.callee.id);
    let refused = app
        .send(
            "PUT",
            &tool_path,
            Some(&member),
            Some(json!({"description": "x"})),
        )
        .await;
    assert_eq!(refused.status, 403);
    let hidden = app
        .send(
            "PUT",
            &tool_path,
            Some(&pair.caller.key),
            Some(json!({"description": "x"})),
        )
        .await;
    assert_eq!(hidden.status, 404);
}

#[tokio::test]
async fn the_registry_leaves_retired_agents_out_and_other_tenants_see_nothing() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let spare = app.create_agent(admin, "spare").await;
    let registry = app.get("/v1/agents/cards", &pair.caller.key).await;
    assert_eq!(registry.status, 200, "{}", registry.text);
    assert_eq!(registry.body["cards"].as_array().map(Vec::len), Some(3));
    app.send(
        "PATCH",
        "/v1/agents/spare",
        Some(admin),
        Some(json!({"status": "retired"})),
    )
    .await;
    let registry = app.get("/v1/agents/cards", admin).await;
    let names: Vec<&str> = registry.body["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|card| card["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["billing-orchestrator", "invoice-classifier"]);
    assert_eq!(
        app.get("/v1/agents/spare/.well-known/agent-card.json", admin)
            .await
            .status,
        404
    );

    let other = app.create_tenant().await;
    let foreign = app
        .get(
            &format!("/v1/agents/{}/.well-known/agent-card.json", pair.callee.id),
            &other.admin_key,
        )
        .await;
    assert_eq!(foreign.status, 404);
    assert_eq!(
        app.get("/v1/agents/cards", &other.admin_key).await.body["cards"],
        json!([])
    );
    let _ = spare;
}

#[tokio::test]
async fn cards_carry_an_etag_and_revalidate() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let path = "/v1/agents/invoice-classifier/.well-known/agent-card.json";
    let first = app.get(path, &pair.caller.key).await;
    let etag = first.headers["etag"].to_str().unwrap().to_owned();
    assert!(etag.starts_with('"'));
    assert_eq!(first.headers["cache-control"], "private, max-age=60");
    // When the agent last changed, as an HTTP date.
    let agent = app
        .get("/v1/agents/invoice-classifier", &pair.tenant.admin_key)
        .await;
    let changed = agent.body["updated_at"].as_str().unwrap();
    assert_eq!(
        first.headers["last-modified"].to_str().unwrap(),
        forgebench::domain::clock::http_date(changed).unwrap()
    );
    let request = app
        .http
        .get(format!("{}{path}", app.base))
        .bearer_auth(&pair.caller.key)
        .header("if-none-match", &etag);
    let revalidated = app.finish(request).await;
    assert_eq!(revalidated.status, 304);
    // A change to the agent is a new card and a new tag.
    app.send(
        "PATCH",
        "/v1/agents/invoice-classifier",
        Some(&pair.tenant.admin_key),
        Some(json!({"description": "new"})),
    )
    .await;
    let request = app
        .http
        .get(format!("{}{path}", app.base))
        .bearer_auth(&pair.caller.key)
        .header("if-none-match", &etag);
    let changed = app.finish(request).await;
    assert_eq!(changed.status, 200);
    assert_ne!(changed.headers["etag"].to_str().unwrap(), etag);
}

#[tokio::test]
async fn an_independent_verifier_accepts_the_signature_and_refuses_a_tampered_card() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let card = app
        .get(
            "/v1/agents/invoice-classifier/.well-known/agent-card.json",
            &pair.caller.key,
        )
        .await
        .body;
    let keys = jwks(&app, &pair.caller.key).await;
    assert_eq!(keys["keys"][0]["kty"], "OKP");
    assert_eq!(keys["keys"][0]["crv"], "Ed25519");
    assert_eq!(keys["keys"][0]["alg"], "EdDSA");
    let (valid, text) = verify_independently(&card, &keys);
    assert!(valid, "{text}");

    let mut tampered = card.clone();
    tampered["url"] = json!("https://evil.example.com/v1/agents/x/tasks");
    let (valid, text) = verify_independently(&tampered, &keys);
    assert!(!valid, "a tampered card verified: {text}");
    let mut reordered_skill = card.clone();
    reordered_skill["name"] = json!("invoice-classifier-2");
    assert!(!verify_independently(&reordered_skill, &keys).0);
    // The second signature covers the A2A form only, never the whole card: alone, it does not
    // make the card valid here.
    let mut a2a_only = card.clone();
    a2a_only["signatures"].as_array_mut().unwrap().remove(0);
    let (valid, text) = verify_independently(&a2a_only, &keys);
    assert!(!valid, "{text}");
    assert!(text.contains("no signature verifies"), "{text}");
}

#[tokio::test]
async fn after_rotation_old_cards_still_verify_and_new_ones_use_the_new_key() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let path = "/v1/agents/invoice-classifier/.well-known/agent-card.json";
    let old_card = app.get(path, &pair.caller.key).await.body;
    let refused = app
        .post("/v1/signing-keys/rotate", &pair.tenant.admin_key, json!({}))
        .await;
    assert_eq!(refused.status, 403);
    let rotated = app
        .post(
            "/v1/signing-keys/rotate",
            &app.operator_key.clone(),
            json!({}),
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let new_kid = rotated.field("kid");

    let keys = jwks(&app, &pair.caller.key).await;
    assert_eq!(
        kids(&keys, "card-signing").len(),
        2,
        "the old public key stays listed"
    );
    let (valid, text) = verify_independently(&old_card, &keys);
    assert!(valid, "{text}");
    let new_card = app.get(path, &pair.caller.key).await.body;
    assert_eq!(kid_of(&new_card), new_kid.as_str());
    assert!(verify_independently(&new_card, &keys).0);
}

/// Reads `path` as `key` naming a hostile host in every header a proxy might trust.
async fn read_as_evil_host(app: &TestApp, path: &str, key: &str) -> forgebench_tests::Reply {
    let request = app
        .http
        .get(format!("{}{path}", app.base))
        .bearer_auth(key)
        .header("host", "evil.test")
        .header("x-forwarded-host", "evil.test")
        .header("x-forwarded-proto", "https")
        .header("forwarded", "host=evil.test;proto=https");
    app.finish(request).await
}

#[tokio::test]
async fn a_card_names_the_configured_url_whatever_host_the_request_names() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let card_path = "/v1/agents/invoice-classifier/.well-known/agent-card.json";
    let agent_url = format!("{}/v1/agents/{}", app.base, pair.callee.id);
    let card = read_as_evil_host(&app, card_path, &pair.caller.key).await;
    assert_eq!(card.status, 200, "{}", card.text);
    assert_eq!(card.body["url"], format!("{agent_url}/tasks"));
    assert_eq!(
        card.body["supportedInterfaces"][0]["url"],
        format!("{agent_url}/a2a/jsonrpc")
    );
    assert_eq!(
        card.body["supportedInterfaces"][1]["url"],
        format!("{agent_url}/a2a")
    );
    assert_eq!(card.body["provider"]["url"], app.base.as_str());
    let registry = read_as_evil_host(&app, "/v1/agents/cards", &pair.caller.key).await;
    assert_eq!(registry.status, 200, "{}", registry.text);
    for text in [&card.text, &registry.text] {
        assert!(!text.contains("evil.test"), "{text}");
    }
    let keys = jwks(&app, &pair.caller.key).await;
    assert!(verify_independently(&card.body, &keys).0);

    // Without the setting and outside API Gateway there is no URL to name: no card at all,
    // rather than one naming the request's host.
    let unconfigured = spawn_app_with(Options {
        public_url: false,
        ..Options::default()
    })
    .await;
    let pair = unconfigured.pair().await;
    for path in [card_path, "/v1/agents/cards"] {
        let reply = read_as_evil_host(&unconfigured, path, &pair.caller.key).await;
        assert_eq!(reply.status, 500, "{path}: {}", reply.text);
        assert!(!reply.text.contains("evil.test"), "{}", reply.text);
    }
}

const CARD: &str = "/v1/agents/invoice-classifier/.well-known/agent-card.json";

#[tokio::test]
async fn a_rotation_reaches_a_warm_process_within_the_key_lifetime() {
    let lifetime = Duration::from_secs(1);
    let options = || Options {
        signing_key_lifetime: lifetime,
        ..Options::default()
    };
    let rotating = spawn_app_with(options()).await;
    let warm = spawn_app_with(Options {
        table: Some(rotating.table.clone()),
        ..options()
    })
    .await;
    let pair = rotating.pair().await;
    let before = kid_of(&warm.get(CARD, &pair.caller.key).await.body);
    let rotated = rotating
        .post("/v1/signing-keys/rotate", &rotating.operator_key, json!({}))
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    let new_kid = rotated.field("kid");
    assert_ne!(before, new_kid);
    // The other process opened the old key; within the lifetime it signs with the new one.
    tokio::time::sleep(lifetime + Duration::from_millis(200)).await;
    let after = warm.get(CARD, &pair.caller.key).await.body;
    assert_eq!(kid_of(&after), new_kid);
    assert!(verify_independently(&after, &jwks(&warm, &pair.caller.key).await).0);
}

#[tokio::test]
async fn a_replaced_key_leaves_the_jwks_once_no_process_can_sign_with_it() {
    let lifetime = Duration::from_secs(1);
    let app = spawn_app_with(Options {
        signing_key_lifetime: lifetime,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let op = app.operator_key.clone();
    let old = kid_of(&app.get(CARD, &pair.caller.key).await.body);
    let new = app
        .post("/v1/signing-keys/rotate", &op, json!({}))
        .await
        .field("kid");
    let gateway = &app;
    let retire = |kid: &str, key: &str| {
        let path = format!("/v1/signing-keys/{kid}/retire");
        let key = key.to_owned();
        async move { gateway.post(&path, &key, json!({})).await }
    };
    assert_eq!(retire(&old, &pair.tenant.admin_key).await.status, 403);
    assert_eq!(retire("0123456789abcdef", &op).await.status, 404);
    let active = retire(&new, &op).await;
    assert_eq!(active.status, 409, "{}", active.text);
    assert!(active.text.contains("active key"), "{}", active.text);
    // Just replaced: a warm process may still sign with it for the lifetime.
    let early = retire(&old, &op).await;
    assert_eq!(early.status, 409, "{}", early.text);

    tokio::time::sleep(lifetime + forgebench::domain::signing::CLOCK_MARGIN).await;
    let retired = retire(&old, &op).await;
    assert_eq!(retired.status, 200, "{}", retired.text);
    assert_eq!(
        retired.body,
        json!({"kid": old, "purpose": "card-signing", "retired": true})
    );
    assert_eq!(retire(&old, &op).await.status, 200, "retiring twice");
    let keys = jwks(&app, &pair.caller.key).await;
    assert_eq!(kids(&keys, "card-signing"), std::slice::from_ref(&new));
    let card = app.get(CARD, &pair.caller.key).await.body;
    assert_eq!(kid_of(&card), new);
    assert!(verify_independently(&card, &keys).0);
}

#[tokio::test]
async fn deliveries_are_signed_with_a_webhook_key_apart_from_the_card_key() {
    use base64::Engine;
    use ed25519_dalek::Verifier;
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let set = app
        .set_endpoint(admin, &pair.callee.name, json!({ "url": callee.url }))
        .await;
    assert_eq!(set.status, 200, "{}", set.text);
    app.open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 10)
        .await;
    let request = callee.wait_for(1).await.remove(0);
    let header = |name: &str| request.headers[name].to_str().unwrap().to_owned();
    let signed = [
        header("webhook-id").as_bytes(),
        b".",
        header("webhook-timestamp").as_bytes(),
        b".",
        &request.raw_body,
    ]
    .concat();
    let signature = base64::engine::general_purpose::STANDARD
        .decode(header("webhook-signature").trim_start_matches("v1a,"))
        .unwrap();
    let signature = ed25519_dalek::Signature::from_slice(&signature).unwrap();

    app.get(CARD, &pair.caller.key).await;
    let keys = jwks(&app, &pair.caller.key).await;
    let (cards, webhooks) = (kids(&keys, "card-signing"), kids(&keys, "webhook-signing"));
    assert_eq!((cards.len(), webhooks.len()), (1, 1), "{keys}");
    assert_ne!(cards, webhooks);
    let verifies = |kid: &str| {
        let key = keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .find(|key| key["kid"] == kid)
            .unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(key["x"].as_str().unwrap())
            .unwrap();
        ed25519_dalek::VerifyingKey::from_bytes(&x.try_into().unwrap())
            .unwrap()
            .verify(&signed, &signature)
            .is_ok()
    };
    assert!(verifies(&webhooks[0]), "the webhook key signs deliveries");
    assert!(!verifies(&cards[0]), "the card key does not");
}

#[tokio::test]
async fn an_agent_holds_at_most_64_tools_even_under_concurrent_grants() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.clone();
    let tool = |name: String| {
        let (app, admin, agent) = (&app, admin.clone(), pair.callee.id.clone());
        async move {
            app.send(
                "PUT",
                &format!("/v1/agents/{agent}/tools/{name}"),
                Some(&admin),
                Some(json!({"description": "d"})),
            )
            .await
        }
    };
    for index in 0..60 {
        assert_eq!(tool(format!("t{index}")).await.status, 200);
    }
    // Eight new tools at once where four fit: never more than four land.
    let racing = futures::future::join_all((0..8).map(|index| tool(format!("r{index}")))).await;
    let statuses: Vec<u16> = racing.iter().map(|reply| reply.status).collect();
    let landed = statuses.iter().filter(|status| **status == 200).count();
    assert!(landed <= 4, "{statuses:?}");
    assert!(statuses.iter().all(|status| matches!(status, 200 | 409)));
    let count = || async {
        let listed = app
            .get(&format!("/v1/agents/{}/tools", pair.callee.id), &admin)
            .await;
        listed.body["items"].as_array().map(Vec::len).unwrap()
    };
    assert_eq!(count().await, 60 + landed, "{statuses:?}");
    for index in landed..4 {
        assert_eq!(tool(format!("s{index}")).await.status, 200);
    }
    assert_eq!(count().await, 64);
    let over = tool("one-more".into()).await;
    assert_eq!(over.status, 409, "{}", over.text);
    assert_eq!(over.body["detail"]["code"], "limit_reached");
    // Replacing a tool is no new tool; removing one makes room.
    assert_eq!(tool("t0".into()).await.status, 200);
    let removed = app
        .send(
            "DELETE",
            &format!("/v1/agents/{}/tools/t1", pair.callee.id),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(removed.status, 200, "{}", removed.text);
    assert_eq!(tool("one-more".into()).await.status, 200);
    let card = app.get(CARD, &pair.caller.key).await;
    assert_eq!(card.body["skills"].as_array().map(Vec::len), Some(64));
}

#[tokio::test]
async fn the_registry_comes_in_pages_that_cover_every_card_once() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    for name in ["a-first", "m-middle", "z-last", "q-retired"] {
        app.create_agent(admin, name).await;
    }
    app.send(
        "PATCH",
        "/v1/agents/q-retired",
        Some(admin),
        Some(json!({"status": "retired"})),
    )
    .await;
    let mut names = Vec::new();
    let mut path = "/v1/agents/cards?limit=2".to_owned();
    for _ in 0..10 {
        let page = app.get(&path, &pair.caller.key).await;
        assert_eq!(page.status, 200, "{}", page.text);
        let cards = page.body["cards"].as_array().unwrap();
        assert!(cards.len() <= 2, "{}", page.text);
        names.extend(
            cards
                .iter()
                .map(|card| card["name"].as_str().unwrap().to_owned()),
        );
        match page.body["next_cursor"].as_str() {
            Some(cursor) => path = format!("/v1/agents/cards?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(
        names,
        [
            "a-first",
            "billing-orchestrator",
            "invoice-classifier",
            "m-middle",
            "z-last"
        ]
    );
    let whole = app.get("/v1/agents/cards", &pair.caller.key).await;
    assert_eq!(whole.body["cards"].as_array().map(Vec::len), Some(5));
    assert!(whole.body["next_cursor"].is_null());
    for bad in [
        "limit=0",
        "limit=51",
        "limit=x",
        "cursor=bm90LW91cnM",
        "cursor=%25%25",
    ] {
        let reply = app
            .get(&format!("/v1/agents/cards?{bad}"), &pair.caller.key)
            .await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.text);
    }
}

/// Runs `verify_card_a2a.py`: the official A2A Python SDK resolves the card at `url` (`card`
/// mode: an agent's base, the SDK appends `/.well-known/agent-card.json`) or reads every page of
/// the registry at `url` (`registry` mode), verifying with its own verifier against the gateway's
/// JWKS. Returns whether every card verified, and the report of the cards as the SDK parsed
/// them. Off the runtime's thread, since the script calls the gateway this test serves.
async fn read_with_a2a_sdk(app: &TestApp, mode: &str, url: &str, key: &str) -> (bool, Value) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("verify_card_a2a.py");
    let args = [
        mode.to_owned(),
        url.to_owned(),
        format!("{}/v1/billing/export/pubkey", app.base),
        key.to_owned(),
    ];
    let python = python();
    let output = tokio::task::spawn_blocking({
        let python = python.clone();
        move || Command::new(python).arg(script).args(args).output()
    })
    .await
    .unwrap()
    .unwrap_or_else(|error| {
        panic!(
            "cannot run {}: {error}; run scripts/install.sh",
            python.display()
        )
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !text.contains("ModuleNotFoundError"),
        "{text}; run scripts/install.sh"
    );
    let code = output.status.code();
    assert!(matches!(code, Some(0 | 1)), "{text}");
    let report = serde_json::from_slice(&output.stdout).unwrap_or_else(|_| panic!("{text}"));
    (code == Some(0), report)
}

/// What the SDK should see on every card of the gate: interfaces, capabilities and the bearer
/// requirement, which makes its AuthInterceptor send the caller's key.
fn assert_a2a_view(report: &Value, base: &str, agent_id: &str, key: &str) {
    let agent_url = format!("{base}/v1/agents/{agent_id}");
    assert_eq!(report["verified"], true, "{report}");
    assert_eq!(
        report["supported_interfaces"],
        json!([
            {"url": format!("{agent_url}/a2a/jsonrpc"), "protocol_binding": "JSONRPC", "protocol_version": "1.0"},
            {"url": format!("{agent_url}/a2a"), "protocol_binding": "HTTP+JSON", "protocol_version": "1.0"},
        ]),
        "{report}"
    );
    assert_eq!(
        report["capabilities"],
        json!({"streaming": true, "push_notifications": true, "extended_agent_card": false}),
        "{report}"
    );
    assert_eq!(
        report["security_schemes"],
        json!({"forgebenchAgentKey": {"kind": "http_auth_security_scheme", "scheme": "Bearer"}})
    );
    assert_eq!(
        report["security_requirements"],
        json!([["forgebenchAgentKey"]])
    );
    assert_eq!(report["authorization_sent"], format!("Bearer {key}"));
}

#[tokio::test]
async fn the_a2a_sdk_resolves_and_verifies_a_card_with_tools_and_one_without() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    // Text that canonicalizes differently under a careless JSON writer: non-ASCII, an astral
    // character, quotes, a backslash and a control character.
    let description = "Classifies invoices \u{2014} ünïcødé \u{1F9FE} \"quoted\" back\\slash\ttab";
    let patched = app
        .send(
            "PATCH",
            "/v1/agents/invoice-classifier",
            Some(admin),
            Some(json!({ "description": description })),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    for (tool, body) in [
        (
            "classify",
            json!({"description": "Classifies an invoice (€, ✓)", "tags": ["finance", "ocr"]}),
        ),
        ("lookup", json!({"description": "Looks up an invoice"})),
    ] {
        let put = app
            .send(
                "PUT",
                &format!("/v1/agents/{}/tools/{tool}", pair.callee.id),
                Some(admin),
                Some(body),
            )
            .await;
        assert_eq!(put.status, 200, "{}", put.text);
    }
    let key = &pair.caller.key;

    // An agent with tools, by id.
    let (verified, callee) = read_with_a2a_sdk(
        &app,
        "card",
        &format!("{}/v1/agents/{}", app.base, pair.callee.id),
        key,
    )
    .await;
    assert!(verified, "{callee}");
    assert_a2a_view(&callee, &app.base, &pair.callee.id, key);
    assert_eq!(callee["name"], "invoice-classifier");
    assert_eq!(callee["description"], description);
    assert_eq!(
        callee["skills"],
        json!([
            {"id": "classify", "name": "classify", "description": "Classifies an invoice (€, ✓)", "tags": ["finance", "ocr"]},
            {"id": "lookup", "name": "lookup", "description": "Looks up an invoice", "tags": ["tool"]},
        ])
    );
    assert_eq!(callee["missing_required_fields"], json!([]), "{callee}");

    // An agent without tools, by name: its one skill is the agent itself, so the SDK finds every
    // field it requires (with `"skills": []` it said "REQUIRED fields missing or empty: skills").
    let (verified, caller) = read_with_a2a_sdk(
        &app,
        "card",
        &format!("{}/v1/agents/billing-orchestrator", app.base),
        key,
    )
    .await;
    assert!(verified, "{caller}");
    assert_a2a_view(&caller, &app.base, &pair.caller.id, key);
    let own_skill = json!([{"id": "billing-orchestrator", "name": "billing-orchestrator",
        "description": "Forgebench agent billing-orchestrator", "tags": ["agent"]}]);
    assert_eq!(caller["skills"], own_skill, "{caller}");
    assert_eq!(caller["missing_required_fields"], json!([]), "{caller}");
    let raw = app
        .get(
            "/v1/agents/billing-orchestrator/.well-known/agent-card.json",
            key,
        )
        .await;
    assert_eq!(raw.body["skills"], own_skill);

    // The same cards pass the plain RFC 8785 verifier too, by their other signature.
    let keys = jwks(&app, key).await;
    let card_path = format!("/v1/agents/{}/.well-known/agent-card.json", pair.callee.id);
    for card in [app.get(&card_path, key).await.body, raw.body] {
        let (valid, text) = verify_independently(&card, &keys);
        assert!(valid, "{text}");
        let signatures = card["signatures"].as_array().unwrap();
        assert_eq!(signatures[0]["protected"], signatures[1]["protected"]);
        assert_eq!(kid_of(&card), kids(&keys, "card-signing")[0]);
    }
}

#[tokio::test]
async fn the_a2a_sdk_verifies_every_card_of_the_paged_registry() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    app.create_agent(admin, "spare").await;
    let put = app
        .send(
            "PUT",
            "/v1/agents/spare/tools/summarize",
            Some(admin),
            Some(json!({"description": "Summarizes a document"})),
        )
        .await;
    assert_eq!(put.status, 200, "{}", put.text);
    let (verified, reports) = read_with_a2a_sdk(
        &app,
        "registry",
        &format!("{}/v1/agents/cards?limit=2", app.base),
        admin,
    )
    .await;
    assert!(verified, "{reports}");
    let names: Vec<&str> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|report| report["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["billing-orchestrator", "invoice-classifier", "spare"]
    );
    for report in reports.as_array().unwrap() {
        assert_eq!(report["verified"], true, "{report}");
        assert_eq!(
            report["security_requirements"],
            json!([["forgebenchAgentKey"]])
        );
        assert_eq!(report["authorization_sent"], format!("Bearer {admin}"));
    }
    assert_eq!(
        reports[2]["skills"],
        json!([{"id": "summarize", "name": "summarize", "description": "Summarizes a document", "tags": ["tool"]}])
    );
}

/// The SDK's reading of `card` served by a plain HTTP server instead of the gate.
async fn served_elsewhere(app: &TestApp, card: Value, key: &str) -> (bool, Value) {
    let server = Callee::start(move |_| Answer::json(200, card.clone())).await;
    read_with_a2a_sdk(app, "card", &server.url, key).await
}

#[tokio::test]
async fn the_a2a_sdk_refuses_a_tampered_card() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let key = &pair.caller.key;
    let card = app.get(CARD, key).await.body;
    let keys = jwks(&app, key).await;
    // A server other than the gate hands out the card, changed; the SDK still checks it against
    // the gate's keys.
    let served = |card: Value| served_elsewhere(&app, card, key);
    let (verified, report) = served(card.clone()).await;
    assert!(verified, "the untouched card, served elsewhere: {report}");

    let mut redirected = card.clone();
    redirected["supportedInterfaces"][0]["url"] = json!("https://evil.example.com/a2a/jsonrpc");
    let mut renamed = card.clone();
    renamed["description"] = json!("Pays every invoice");
    let mut streaming = card.clone();
    streaming["capabilities"]["streaming"] = json!(false);
    for tampered in [redirected, renamed, streaming] {
        let (verified, report) = served(tampered.clone()).await;
        assert!(!verified, "a tampered card verified: {report}");
        assert!(
            report["error"]
                .as_str()
                .unwrap()
                .contains("InvalidSignaturesError"),
            "{report}"
        );
        assert!(!verify_independently(&tampered, &keys).0);
    }

    // The whole-card signature alone is what every card carried before: the SDK, which checks
    // the A2A form, refuses it.
    let mut whole_only = card.clone();
    whole_only["signatures"].as_array_mut().unwrap().truncate(1);
    assert!(verify_independently(&whole_only, &keys).0);
    let (verified, report) = served(whole_only).await;
    assert!(!verified, "{report}");

    // The seed's `url` is not in the A2A schema, so only the whole-card signature covers it:
    // the SDK accepts a card whose `url` moved (it never reads that field), a plain verifier
    // does not.
    let mut moved = card.clone();
    moved["url"] = json!("https://evil.example.com/v1/agents/x/tasks");
    let (verified, report) = served(moved.clone()).await;
    assert!(verified, "{report}");
    assert!(!verify_independently(&moved, &keys).0);
}
