//! Security fixes from the review: answers after a commit, the operator key, the Authorization
//! scheme, agents that stop being active, key listing and revocation.

use std::time::Duration;

use forgebench::store::schema::TEMPLATE;
use forgebench_tests::{
    dynamodb_endpoint, spawn_app, spawn_app_with, text_message, Options, Proxy,
};

#[tokio::test]
async fn an_open_that_committed_answers_with_its_task_when_reading_it_again_fails() {
    let proxy = Proxy::start(&dynamodb_endpoint()).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: proxy.endpoint.clone(),
        key_cache_seconds: 60,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let opening = {
        let (base, key, callee) = (
            app.base.clone(),
            pair.caller.key.clone(),
            pair.callee.id.clone(),
        );
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}/v1/agents/{callee}/tasks?wait=3"))
                .bearer_auth(key)
                .json(&serde_json::json!({"message": text_message("kept once")}))
                .send()
                .await
                .expect("open")
        })
    };
    tokio::time::sleep(Duration::from_millis(600)).await;
    proxy.cut();
    let response = opening.await.unwrap();
    proxy.restore();
    assert_eq!(
        response.status(),
        200,
        "the open committed: no error inviting a retry"
    );
    let call_id = response.headers()["x-call-id"].to_str().unwrap().to_owned();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"]["state"], "submitted");
    assert_eq!(body["call_id"], call_id.as_str());
    assert_eq!(body["input"]["message"], text_message("kept once"));
    let read = app
        .get_task(
            &pair.caller.key,
            &pair.callee.name,
            body["id"].as_str().unwrap(),
        )
        .await;
    assert_eq!(read.status, 200, "{}", read.text);
}

#[test]
fn the_operator_key_is_deployed_as_its_hash_only() {
    let template: serde_yaml::Value = serde_yaml::from_str(TEMPLATE).unwrap();
    let parameter = &template["Parameters"]["OperatorKeyHash"];
    assert_eq!(parameter["NoEcho"], true);
    assert_eq!(parameter["AllowedPattern"], "^[0-9a-f]{64}$");
    assert!(template["Parameters"].get("OperatorKey").is_none());
    let mut hashed = 0;
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let variables = &resource["Properties"]["Environment"]["Variables"];
        assert!(
            variables.get("FORGEBENCH_OPERATOR_KEY").is_none(),
            "{name:?} carries the operator key in plain text"
        );
        hashed += usize::from(variables.get("FORGEBENCH_OPERATOR_KEY_HASH").is_some());
    }
    assert_eq!(hashed, 2, "create-tenant and rotate-signing-key");
}

#[tokio::test]
async fn the_authorization_scheme_is_matched_in_any_case() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"] {
        let reply = app
            .http
            .get(format!("{}/v1/agents/me", app.base))
            .header("authorization", format!("{scheme} {}", pair.caller.key))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), 200, "{scheme}");
    }
    let reply = app
        .http
        .get(format!("{}/v1/agents/me", app.base))
        .header("authorization", format!("Basic {}", pair.caller.key))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 401);
}
