//! Signed deliveries are bound to their destination: the verification `docs/api.md` prints, run
//! as printed, accepts a genuine delivery at the endpoint it was made to (with the JWKS read with
//! a key, or from the public `/.well-known/jwks.json`) and refuses the same headers and body
//! replayed to another tenant's endpoint.

use std::path::PathBuf;
use std::process::Command;

use base64::Engine;
use forgebench_tests::{
    spawn_app_with, text_message, Answer, Callee, Options, Pair, Received, TestApp,
};
use serde_json::{json, Map, Value};

/// Runs the verification snippet of `docs/api.md` (through `tests/verify_webhook.py`) on a
/// received delivery, as the endpoint `my_url` of agent `my_agent_id` whose clock is
/// `clock_offset` seconds ahead. Returns whether it accepted, and what it printed.
fn documented_verifier(
    request: &Received,
    jwks: &Value,
    my_url: &str,
    my_agent_id: &str,
    clock_offset: i64,
) -> (bool, String) {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("FORGEBENCH_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("../.local/venv/bin/python"));
    let dir = std::env::temp_dir().join(format!("webhook-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let headers: Map<String, Value> = request
        .headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                Value::String(value.to_str().unwrap().to_owned()),
            )
        })
        .collect();
    let body = base64::engine::general_purpose::STANDARD.encode(&request.raw_body);
    let (request_path, jwks_path) = (dir.join("request.json"), dir.join("jwks.json"));
    std::fs::write(
        &request_path,
        json!({"headers": headers, "body_b64": body}).to_string(),
    )
    .unwrap();
    std::fs::write(&jwks_path, jwks.to_string()).unwrap();
    let output = Command::new(&python)
        .arg(root.join("verify_webhook.py"))
        .arg(root.join("../docs/api.md"))
        .arg(&request_path)
        .arg(&jwks_path)
        .arg(my_url)
        .arg(my_agent_id)
        .arg(clock_offset.to_string())
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
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "the verifier did not run: {text}"
    );
    (output.status.success(), text)
}

/// A new tenant whose callee pushes to `callee`.
async fn push_tenant(app: &TestApp, callee: &Callee) -> Pair {
    let pair = app.pair().await;
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["endpoint"]["url"], callee.url.as_str());
    pair
}

#[tokio::test]
async fn a_delivery_replayed_to_another_tenants_endpoint_is_refused_by_the_documented_check() {
    let endpoint_a = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let endpoint_b = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let (a, b) = (
        push_tenant(&app, &endpoint_a).await,
        push_tenant(&app, &endpoint_b).await,
    );
    let opened = app
        .open_task(&a.caller.key, &a.callee.name, text_message("Classify"), 10)
        .await;
    assert_eq!(opened.state(), "completed", "{}", opened.text);
    let genuine = endpoint_a.received().remove(0);
    assert_eq!(
        genuine.body["destination"],
        json!({"tenant_id": a.tenant.id, "agent_id": a.callee.id, "url": endpoint_a.url})
    );
    let jwks = app
        .get("/v1/billing/export/pubkey", &b.callee.key)
        .await
        .body;
    // A receiver without a key of the tenant reads the same set at the public path.
    let public = app
        .finish(app.http.get(format!("{}/.well-known/jwks.json", app.base)))
        .await;
    assert_eq!(public.status, 200, "{}", public.text);
    assert_eq!(public.body, jwks);

    for jwks in [&jwks, &public.body] {
        let (accepted, said) =
            documented_verifier(&genuine, jwks, &endpoint_a.url, &a.callee.id, 0);
        assert!(
            accepted,
            "the genuine delivery is accepted where it was sent: {said}"
        );
    }

    // The owner of endpoint A forwards the same headers and body to B, within the tolerance.
    let mut replay = app
        .http
        .post(&endpoint_b.url)
        .body(genuine.raw_body.clone());
    for name in [
        "content-type",
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
        "x-forgebench-task",
        "x-parent-call",
    ] {
        replay = replay.header(name, genuine.headers[name].clone());
    }
    assert!(replay.send().await.unwrap().status().is_success());
    let replayed = endpoint_b.wait_for(1).await.remove(0);
    assert_eq!(replayed.raw_body, genuine.raw_body);
    let (accepted, said) = documented_verifier(&replayed, &jwks, &endpoint_b.url, &b.callee.id, 0);
    assert!(!accepted, "B accepted a delivery made to A");
    assert!(said.contains("another endpoint"), "{said}");

    // Rewriting the destination to B's breaks the signature instead.
    let mut forged = replayed.clone();
    let mut body = forged.body.clone();
    body["destination"] =
        json!({"tenant_id": b.tenant.id, "agent_id": b.callee.id, "url": endpoint_b.url});
    forged.raw_body = body.to_string().into_bytes();
    let (accepted, said) = documented_verifier(&forged, &jwks, &endpoint_b.url, &b.callee.id, 0);
    assert!(!accepted, "a rewritten destination was accepted");
    assert!(said.contains("no published key"), "{said}");

    // And at A itself, the genuine delivery is refused once its timestamp is out of tolerance.
    let (accepted, said) = documented_verifier(&genuine, &jwks, &endpoint_a.url, &a.callee.id, 301);
    assert!(!accepted, "a stale delivery was accepted");
    assert!(said.contains("tolerance"), "{said}");
}
