//! Signing in with OpenID Connect tokens from a real provider (`oauth2-mock-server`): trusted
//! issuers per tenant, tokens that act exactly as the agent's key would on REST and both A2A
//! bindings, the card and the protected resource metadata that say how to get one, every bad
//! token a 401 that changes nothing, and the one credential form.

use base64::Engine;
use forgebench_tests::{
    spawn_app_with, text_message, LogCapture, OidcProvider, Options, Pair, Reply, TestApp,
};
use serde_json::{json, Value};

/// A gateway that may reach the provider on this machine's loopback.
async fn app() -> TestApp {
    spawn_app_with(Options {
        public_url: true,
        ..Options::local_push()
    })
    .await
}

/// The pair's tenant trusts `provider` for a fresh audience, with subject `svc-caller` signing
/// in as the pair's caller; the audience and the issuer's id.
async fn trust(app: &TestApp, provider: &OidcProvider, pair: &Pair) -> (String, String) {
    let audience = format!("gate-{}", uuid::Uuid::new_v4().simple());
    let trusted = app
        .post(
            "/v1/issuers",
            &pair.tenant.admin_key,
            json!({"issuer": provider.issuer, "audience": audience,
                   "subjects": [{"subject": "svc-caller", "agent": pair.caller.name}]}),
        )
        .await;
    assert_eq!(trusted.status, 201, "{}", trusted.text);
    assert_eq!(trusted.body["subjects"][0]["agent_id"], pair.caller.id);
    assert_eq!(trusted.body["discovery"], json!({"read": true}));
    (audience, trusted.field("id"))
}

fn header_of(token: &str) -> Value {
    let part = token.split('.').next().unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(part)
            .unwrap(),
    )
    .unwrap()
}

async fn tasks_of_tenant(app: &TestApp, pair: &Pair) -> usize {
    let found = app
        .get("/v1/tasks?direction=both", &pair.tenant.admin_key)
        .await;
    assert_eq!(found.status, 200, "{}", found.text);
    found.body["items"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_client_credentials_token_of_each_algorithm_acts_as_the_agent_it_names() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (audience, _) = trust(&app, &provider, &pair).await;
    let mut algorithms = std::collections::BTreeSet::new();
    // The provider signs with its RS256, ES256 and EdDSA keys in turn.
    for _ in 0..3 {
        let token = provider.client_credentials("svc-caller", &audience).await;
        algorithms.insert(header_of(&token)["alg"].as_str().unwrap().to_owned());
        let me = app.get("/v1/agents/me", &token).await;
        assert_eq!(me.status, 200, "{}", me.text);
        assert_eq!(me.field("id"), pair.caller.id);
    }
    assert_eq!(
        algorithms.into_iter().collect::<Vec<_>>(),
        ["ES256", "EdDSA", "RS256"]
    );
}

#[tokio::test]
async fn a_token_opens_tasks_through_the_binding_on_rest_and_both_a2a_bindings_and_is_audited() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (audience, _) = trust(&app, &provider, &pair).await;
    let token = provider.client_credentials("svc-caller", &audience).await;

    let opened = app
        .open_task(&token, &pair.callee.name, text_message("over REST"), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    assert_eq!(opened.body["caller_agent_id"], pair.caller.id);

    let message =
        |id: &str| json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "over A2A"}]});
    let rpc = app
        .a2a_rpc(
            &pair.callee.id,
            &token,
            "SendMessage",
            json!({"message": message("m-rpc"), "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert_eq!(rpc.status, 200, "{}", rpc.text);
    assert!(rpc.body["result"]["task"]["id"].is_string(), "{}", rpc.text);
    let rest = app
        .a2a_rest(
            "POST",
            &pair.callee.id,
            "/message:send",
            &token,
            Some(
                json!({"message": message("m-rest"), "configuration": {"returnImmediately": true}}),
            ),
        )
        .await;
    assert_eq!(rest.status, 200, "{}", rest.text);
    assert_eq!(tasks_of_tenant(&app, &pair).await, 3);

    let audit = app.audit(&pair.tenant.admin_key).await;
    let opens: Vec<&Value> = audit
        .iter()
        .filter(|entry| entry["action"] == "task.open")
        .collect();
    assert_eq!(opens.len(), 3, "{audit:?}");
    for entry in opens {
        assert_eq!(entry["actor"]["id"], pair.caller.id);
        assert_eq!(
            entry["actor"]["signed_in_with"],
            json!({"issuer": provider.issuer, "subject": "svc-caller"}),
            "{entry}"
        );
    }
}

#[tokio::test]
async fn a_token_needs_the_binding_its_agent_s_key_would() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (audience, _) = trust(&app, &provider, &pair).await;
    let revoked = app.revoke_binding(&pair).await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    let token = provider.client_credentials("svc-caller", &audience).await;
    let refused = app
        .open_task(&token, &pair.callee.name, text_message("x"), 0)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_eq!(tasks_of_tenant(&app, &pair).await, 0);
}

/// Each bad token: a 401 that says only "invalid token", points to where a token is got, logs
/// its reason, and changes nothing.
#[tokio::test]
async fn every_bad_token_is_a_401_with_its_reason_in_the_log_only() {
    let captured = LogCapture::install().expect("the first subscriber of this process");
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (audience, _) = trust(&app, &provider, &pair).await;
    // Another tenant trusts the same provider for its own audience, and lists another subject.
    let other = app.create_tenant().await;
    let other_agent = app.create_agent(&other.admin_key, "elsewhere").await;
    let other_audience = format!("other-{}", uuid::Uuid::new_v4().simple());
    let trusted = app
        .post(
            "/v1/issuers",
            &other.admin_key,
            json!({"issuer": provider.issuer, "audience": other_audience,
                   "subjects": [{"subject": "svc-other", "agent": other_agent.name}]}),
        )
        .await;
    assert_eq!(trusted.status, 201, "{}", trusted.text);

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let good = json!({"sub": "svc-caller", "aud": audience});
    let with = |extra: Value| {
        let mut claims = good.clone();
        claims
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        claims
    };
    let cases = [
        (
            "expired",
            provider
                .signed(
                    "rs",
                    with(json!({"exp": now - 600, "iat": now - 4200, "nbf": now - 4200})),
                    &[],
                )
                .await,
        ),
        // The pair (iss, aud) finds the tenant: an audience no tenant trusts with the issuer is
        // an untrusted pair, as is an issuer no tenant trusts.
        (
            "untrusted_issuer",
            provider
                .signed("es", with(json!({"aud": "not-this-gate"})), &[])
                .await,
        ),
        (
            "untrusted_issuer",
            provider
                .signed(
                    "ed",
                    with(json!({"iss": format!("{}/elsewhere", provider.issuer)})),
                    &[],
                )
                .await,
        ),
        (
            "unknown_key",
            provider.forged("unpublished-key", good.clone()).await,
        ),
        ("algorithm", provider.forged("none", good.clone()).await),
        (
            "algorithm",
            provider.forged("hs256-public-key", good.clone()).await,
        ),
        (
            "unknown_subject",
            provider
                .signed(
                    "rs",
                    with(json!({"aud": other_audience, "sub": "svc-caller"})),
                    &[],
                )
                .await,
        ),
        (
            "unknown_subject",
            provider
                .signed("rs", with(json!({"sub": "nobody-listed"})), &[])
                .await,
        ),
        (
            "not_yet_valid",
            provider
                .signed("es", with(json!({"nbf": now + 3600})), &[])
                .await,
        ),
        (
            "issued_in_future",
            provider
                .signed("ed", with(json!({"iat": now + 3600})), &[])
                .await,
        ),
        (
            "malformed",
            provider.signed("rs", good.clone(), &["exp"]).await,
        ),
        (
            "too_large",
            format!("eyJ{}.e30.c2ln", "A".repeat(64 * 1024)),
        ),
    ];
    for (reason, token) in &cases {
        let reply = app
            .open_task(token, &pair.callee.name, text_message("x"), 0)
            .await;
        assert_refused_token(&reply, reason);
        let rpc = app
            .a2a_rpc(&pair.callee.id, token, "GetTask", json!({"id": "t"}))
            .await;
        assert_refused_token(&rpc, reason);
        let rest = app
            .a2a_rest("GET", &pair.callee.id, "/tasks/t", token, None)
            .await;
        assert_refused_token(&rest, reason);
    }
    assert_eq!(tasks_of_tenant(&app, &pair).await, 0);
    let logs = captured.text();
    for (reason, token) in &cases {
        assert!(
            logs.contains(&format!("\"reason\":\"{reason}\"")),
            "no log line gives the reason {reason}"
        );
        assert!(!logs.contains(token.as_str()), "a token was logged");
    }
}

fn assert_refused_token(reply: &Reply, reason: &str) {
    assert_eq!(reply.status, 401, "{reason}: {}", reply.text);
    assert_eq!(reply.body["detail"]["message"], "invalid token", "{reason}");
    let challenge = reply.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\", resource_metadata=\""),
        "{challenge}"
    );
}

#[tokio::test]
async fn the_card_and_the_resource_metadata_say_how_to_get_a_token() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let before = app
        .get(
            &format!("/v1/agents/{}/.well-known/agent-card.json", pair.callee.id),
            &pair.caller.key,
        )
        .await;
    assert_eq!(
        before.body["securityRequirements"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let (audience, issuer_id) = trust(&app, &provider, &pair).await;

    let card = app
        .get(
            &format!("/v1/agents/{}/.well-known/agent-card.json", pair.callee.id),
            &pair.caller.key,
        )
        .await;
    let name = format!("openIdConnect-{}", &issuer_id[..8]);
    let scheme = &card.body["securitySchemes"][&name]["openIdConnectSecurityScheme"];
    let discovery = format!("{}/.well-known/openid-configuration", provider.issuer);
    assert_eq!(
        scheme["openIdConnectUrl"],
        discovery.as_str(),
        "{}",
        card.text
    );
    assert!(scheme["description"].as_str().unwrap().contains(&audience));
    assert_eq!(
        card.body["securityRequirements"][1],
        json!({"schemes": {name: {"list": []}}})
    );

    // A 401 on the agent's routes points to the agent's metadata, which names the issuer.
    let refused = app
        .a2a_rpc(
            &pair.callee.id,
            "fb_agt_unknown",
            "GetTask",
            json!({"id": "t"}),
        )
        .await;
    assert_eq!(refused.status, 401);
    let metadata_url = format!(
        "{}/v1/agents/{}/.well-known/oauth-protected-resource",
        app.base, pair.callee.id
    );
    assert_eq!(
        refused.headers["www-authenticate"],
        format!("Bearer resource_metadata=\"{metadata_url}\"").as_str()
    );
    let metadata = app.finish(app.http.get(&metadata_url)).await;
    assert_eq!(metadata.status, 200, "{}", metadata.text);
    assert_eq!(
        metadata.body,
        json!({
            "resource": format!("{}/v1/agents/{}", app.base, pair.callee.id),
            "authorization_servers": [provider.issuer],
            "bearer_methods_supported": ["header"],
            "resource_name": pair.callee.name,
        })
    );
    let gateway = app
        .finish(
            app.http
                .get(format!("{}/.well-known/oauth-protected-resource", app.base)),
        )
        .await;
    assert_eq!(gateway.status, 200);
    assert_eq!(gateway.body["resource"], app.base.as_str());
    let nobody = app
        .finish(app.http.get(format!(
            "{}/v1/agents/{}/.well-known/oauth-protected-resource",
            app.base,
            uuid::Uuid::new_v4()
        )))
        .await;
    assert_eq!(nobody.status, 404);
}

/// A provider that cannot be read yet is trusted all the same (it may come up after its trust,
/// as a push URL's host may resolve after it is saved), and the answer says what was found;
/// its tokens are refused until its keys can be read. An address the outbound guard never
/// dials is refused outright.
#[tokio::test]
async fn an_issuer_not_readable_yet_is_trusted_and_its_tokens_wait_for_it() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let not_yet = format!("{}/not-yet", provider.issuer);
    let audience = format!("gate-{}", uuid::Uuid::new_v4().simple());
    let trusted = app
        .post(
            "/v1/issuers",
            &pair.tenant.admin_key,
            json!({"issuer": not_yet, "audience": audience,
                   "subjects": [{"subject": "svc-caller", "agent": pair.caller.name}]}),
        )
        .await;
    assert_eq!(trusted.status, 201, "{}", trusted.text);
    assert_eq!(trusted.body["discovery"]["read"], false, "{}", trusted.text);
    let problem = trusted.body["discovery"]["problem"].as_str().unwrap();
    assert!(problem.contains("404"), "{problem}");
    let listed = app.get("/v1/issuers", &pair.tenant.admin_key).await;
    assert_eq!(listed.body["items"][0]["issuer"], not_yet.as_str());
    assert!(listed.body["items"][0].get("discovery").is_none());

    let token = provider
        .signed(
            "rs",
            json!({"iss": not_yet, "aud": audience, "sub": "svc-caller"}),
            &[],
        )
        .await;
    let refused = app.get("/v1/agents/me", &token).await;
    assert_eq!(refused.status, 401, "{}", refused.text);

    for guarded in ["https://169.254.169.254/oidc", "https://10.0.0.7"] {
        let refused = app
            .post(
                "/v1/issuers",
                &pair.tenant.admin_key,
                json!({"issuer": guarded, "audience": "guarded"}),
            )
            .await;
        assert_eq!(refused.status, 403, "{guarded}: {}", refused.text);
        assert!(!refused.text.contains("169.254"), "{}", refused.text);
    }
    let listed = app.get("/v1/issuers", &pair.tenant.admin_key).await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn only_an_admin_changes_the_trusted_issuers_and_a_change_takes_effect_at_once() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (_, viewer_key) = app.create_member(&pair.tenant, "viewer").await;
    let body = json!({"issuer": provider.issuer, "audience": "a"});
    for key in [&viewer_key, &pair.caller.key] {
        let refused = app.post("/v1/issuers", key, body.clone()).await;
        assert_eq!(refused.status, 403, "{}", refused.text);
    }
    for (bad, why) in [
        (
            json!({"issuer": "http://example.com", "audience": "a"}),
            "http",
        ),
        (json!({"issuer": provider.issuer}), "no audience"),
        (
            json!({"issuer": provider.issuer, "audience": "a", "extra": 1}),
            "unknown field",
        ),
        (
            json!({"issuer": provider.issuer, "audience": "a", "subjects": [{"subject": "s"}]}),
            "subject of nobody",
        ),
    ] {
        let refused = app.post("/v1/issuers", &pair.tenant.admin_key, bad).await;
        assert_eq!(refused.status, 400, "{why}: {}", refused.text);
    }
    let (audience, issuer_id) = trust(&app, &provider, &pair).await;
    let listed = app.get("/v1/issuers", &viewer_key).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body["items"][0]["id"], issuer_id.as_str());
    // The pair is the tenant's: another tenant cannot trust it too.
    let other = app.create_tenant().await;
    let taken = app
        .post(
            "/v1/issuers",
            &other.admin_key,
            json!({"issuer": provider.issuer, "audience": audience}),
        )
        .await;
    assert_eq!(taken.status, 409, "{}", taken.text);

    let token = provider.client_credentials("svc-caller", &audience).await;
    assert_eq!(app.get("/v1/agents/me", &token).await.status, 200);
    // The subject now signs in as the callee.
    let patched = app
        .send(
            "PATCH",
            &format!("/v1/issuers/{issuer_id}"),
            Some(&pair.tenant.admin_key),
            Some(json!({"subjects": [{"subject": "svc-caller", "agent": pair.callee.id}]})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    let me = app.get("/v1/agents/me", &token).await;
    assert_eq!(me.field("id"), pair.callee.id);
    // Paused, its agent's tokens are refused as its keys are.
    let paused = app
        .send(
            "PATCH",
            &format!("/v1/agents/{}", pair.callee.id),
            Some(&pair.tenant.admin_key),
            Some(json!({"status": "paused"})),
        )
        .await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    assert_eq!(app.get("/v1/agents/me", &token).await.status, 403);

    let removed = app
        .send(
            "DELETE",
            &format!("/v1/issuers/{issuer_id}"),
            Some(&pair.tenant.admin_key),
            None,
        )
        .await;
    assert_eq!(removed.status, 200, "{}", removed.text);
    assert_eq!(app.get("/v1/agents/me", &token).await.status, 401);
    // Given up, the pair may be trusted by another tenant.
    let now_free = app
        .post(
            "/v1/issuers",
            &other.admin_key,
            json!({"issuer": provider.issuer, "audience": audience}),
        )
        .await;
    assert_eq!(now_free.status, 201, "{}", now_free.text);
    let audit = app.audit(&pair.tenant.admin_key).await;
    for action in ["issuer.trust", "issuer.subjects", "issuer.distrust"] {
        assert!(
            audit.iter().any(|entry| entry["action"] == action),
            "{action} is audited"
        );
    }
}

#[tokio::test]
async fn only_the_canonical_bearer_form_is_taken_and_a_401_says_what_is() {
    let app = app().await;
    let pair = app.pair().await;
    let key = &pair.caller.key;
    for value in [
        format!("bearer {key}"),
        format!("BEARER {key}"),
        format!("Bearer  {key}"),
        format!("Bearer\t{key}"),
        format!("Bearer {key} {key}"),
        format!("Basic {key}"),
        format!("bEaReR {key}"),
    ] {
        let reply = app
            .finish(
                app.http
                    .get(format!("{}/v1/agents/me", app.base))
                    .header("authorization", &value),
            )
            .await;
        assert_eq!(reply.status, 401, "{value:?} was taken");
        assert!(
            reply.body["detail"]["message"]
                .as_str()
                .unwrap()
                .contains("Bearer <credential>"),
            "{}",
            reply.text
        );
        assert!(reply.headers.contains_key("www-authenticate"));
    }
    assert_eq!(app.get("/v1/agents/me", key).await.status, 200);
}

#[tokio::test]
async fn an_unknown_key_is_looked_up_once_then_remembered_as_unknown() {
    let recorder = forgebench_tests::Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::local_push()
    })
    .await;
    let made_up = format!("fb_agt_{}", uuid::Uuid::new_v4().simple());
    recorder.take();
    for round in 0..3 {
        let reply = app.get("/v1/agents/me", &made_up).await;
        assert_eq!(reply.status, 401, "{}", reply.text);
        let reads = recorder.take_dynamodb();
        let expected: Vec<String> = if round == 0 {
            vec!["GetItem".into()]
        } else {
            Vec::new()
        };
        assert_eq!(reads, expected, "round {round}");
    }
}

/// The official `a2a-sdk` (`tests/a2a_oidc_client.py`) finds how to sign in from the gate's 401
/// alone (the protected resource metadata, the issuer's discovery), gets a client-credentials
/// token from the provider, and calls over both bindings with the card's openIdConnect scheme.
#[tokio::test]
async fn the_official_a2a_sdk_signs_in_with_a_token_the_card_declares() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (audience, issuer_id) = trust(&app, &provider, &pair).await;
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("FORGEBENCH_TEST_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| root.join("../.local/venv/bin/python"));
    let args = [
        app.base.clone(),
        pair.callee.id.clone(),
        "svc-caller".to_owned(),
        audience,
    ];
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&python)
            .arg(root.join("a2a_oidc_client.py"))
            .args(args)
            .output()
    })
    .await
    .unwrap()
    .expect("run the A2A SDK client; scripts/install.sh installs it");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(
        printed["scheme"],
        format!("openIdConnect-{}", &issuer_id[..8])
    );
    let tasks = printed["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2, "{printed}");
    for task in tasks {
        let id = task["id"].as_str().unwrap();
        let read = app.get_task(&pair.caller.key, &pair.callee.name, id).await;
        assert_eq!(read.status, 200, "{}", read.text);
        assert_eq!(read.body["caller_agent_id"], pair.caller.id);
    }
}

/// The official A2A JavaScript SDK (`tests/a2a-js/client.mjs`, as `a2a.rs` runs it with keys)
/// with client-credentials tokens for the caller and the stranger in place of their keys: both
/// bindings, a send, a read, a listing, and the one refusal for a caller without a binding.
#[tokio::test]
async fn the_official_a2a_js_sdk_calls_with_tokens_in_place_of_keys() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let audience = format!("gate-{}", uuid::Uuid::new_v4().simple());
    let trusted = app
        .post(
            "/v1/issuers",
            &pair.tenant.admin_key,
            json!({"issuer": provider.issuer, "audience": audience, "subjects": [
                {"subject": "svc-caller", "agent": pair.caller.name},
                {"subject": "svc-stranger", "agent": stranger.name},
            ]}),
        )
        .await;
    assert_eq!(trusted.status, 201, "{}", trusted.text);
    let caller_token = provider.client_credentials("svc-caller", &audience).await;
    let stranger_token = provider.client_credentials("svc-stranger", &audience).await;
    let folder = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("a2a-js");
    let args = [
        app.base.clone(),
        pair.callee.id.clone(),
        caller_token,
        pair.callee.key.clone(),
        stranger_token,
    ];
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .current_dir(&folder)
            .arg("client.mjs")
            .args(args)
            .output()
    })
    .await
    .unwrap()
    .expect("run node; scripts/install.sh tests installs the client's packages");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert!(text.contains("all passed"), "{text}");
    let audit = app.audit(&pair.tenant.admin_key).await;
    assert!(
        audit
            .iter()
            .any(|entry| entry["actor"]["signed_in_with"]["subject"] == "svc-stranger"),
        "the stranger's refusal names its token's subject"
    );
}

/// A tenant that has lived with tokens: opens allowed and refused (a revoked binding, a paused
/// callee), a rotated key, a token and a key of one agent side by side. Its reads all answer,
/// with a token as with a key, and the audit trail of the agent holds both sign-ins.
#[tokio::test]
async fn a_tenant_that_lived_with_tokens_reads_as_one_that_did_not() {
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (audience, _) = trust(&app, &provider, &pair).await;
    let token = provider.client_credentials("svc-caller", &audience).await;
    let admin = &pair.tenant.admin_key;

    let by_token = app
        .open_task(&token, &pair.callee.name, text_message("by token"), 0)
        .await;
    assert_eq!(by_token.status, 200, "{}", by_token.text);
    let by_key = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("by key"),
            0,
        )
        .await;
    assert_eq!(by_key.status, 200, "{}", by_key.text);
    assert_eq!(app.revoke_binding(&pair).await.status, 200);
    let refused = app
        .open_task(&token, &pair.callee.name, text_message("refused"), 0)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    let regranted = app
        .grant(admin, &pair.caller.id, &[&pair.callee.name])
        .await;
    assert_eq!(regranted.status, 200, "{}", regranted.text);
    let paused = app
        .send(
            "PATCH",
            &format!("/v1/agents/{}", pair.callee.id),
            Some(admin),
            Some(json!({"status": "paused"})),
        )
        .await;
    assert_eq!(paused.status, 200, "{}", paused.text);
    let refused = app
        .open_task(&token, &pair.callee.name, text_message("paused"), 0)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    let rotated = app.issue_key(admin, &pair.caller.name).await;

    for key in [admin.as_str(), &token, &rotated] {
        let found = app.get("/v1/tasks?direction=both", key).await;
        assert_eq!(found.status, 200, "{}", found.text);
        assert_eq!(
            found.body["items"].as_array().unwrap().len(),
            2,
            "{}",
            found.text
        );
        let read = app
            .get_task(key, &pair.callee.name, &by_token.field("id"))
            .await;
        assert_eq!(read.status, 200, "{}", read.text);
    }
    let listed = app
        .a2a_rest("GET", &pair.callee.id, "/tasks", &token, None)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let cards = app.get("/v1/agents/cards", &token).await;
    assert_eq!(cards.status, 200, "{}", cards.text);
    let calls = app
        .get(
            &format!("/v1/calls?root_call_id={}", by_token.field("call_id")),
            admin,
        )
        .await;
    assert_eq!(calls.status, 200, "{}", calls.text);
    let trail = app
        .get(
            &format!("/v1/audit?agent={}&limit=100", pair.caller.name),
            admin,
        )
        .await;
    assert_eq!(trail.status, 200, "{}", trail.text);
    let entries = trail.body["items"].as_array().unwrap();
    let signed = |entry: &&Value| entry["actor"]["signed_in_with"]["subject"] == "svc-caller";
    let by_token_entries: Vec<&Value> = entries.iter().filter(signed).collect();
    assert!(
        by_token_entries
            .iter()
            .any(|entry| entry["outcome"] == "refused")
            && by_token_entries
                .iter()
                .any(|entry| entry["action"] == "task.open"),
        "{}",
        trail.text
    );
    assert!(
        entries.iter().any(|entry| entry["action"] == "task.open"
            && entry["actor"].get("signed_in_with").is_none()),
        "the key's open is the key's: {}",
        trail.text
    );
}

/// The issuer's keys are read once and kept: a key it adds later is read when a token names
/// it, but made-up key ids read the keys again at most once per interval, whatever their number.
#[tokio::test]
async fn keys_are_read_again_for_a_new_key_id_at_a_bounded_rate() {
    let captured = LogCapture::install().expect("the first subscriber of this process");
    let (app, provider) = tokio::join!(app(), OidcProvider::start());
    let pair = app.pair().await;
    let (audience, _) = trust(&app, &provider, &pair).await;
    let reads = || captured.text().matches("reading an issuer's keys").count();
    let claims = json!({"sub": "svc-caller", "aud": audience});
    let signed = provider.signed("rs", claims.clone(), &[]).await;
    assert_eq!(app.get("/v1/agents/me", &signed).await.status, 200);
    assert_eq!(reads(), 1);
    for _ in 0..20 {
        let forged = provider.forged("unpublished-key", claims.clone()).await;
        assert_eq!(app.get("/v1/agents/me", &forged).await.status, 401);
    }
    assert_eq!(
        reads(),
        1,
        "made-up key ids within the interval read nothing"
    );
    provider.add_key("ES256", "es-next").await;
    let next = provider.signed("es-next", claims.clone(), &[]).await;
    tokio::time::sleep(forgebench::oidc::REFETCH_AT_MOST_EVERY).await;
    assert_eq!(app.get("/v1/agents/me", &next).await.status, 200);
    assert_eq!(reads(), 2, "a new key id reads the keys again");
    for _ in 0..20 {
        let forged = provider.forged("unpublished-key", claims.clone()).await;
        assert_eq!(app.get("/v1/agents/me", &forged).await.status, 401);
    }
    assert_eq!(reads(), 2);
}
