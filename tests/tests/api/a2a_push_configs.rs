//! A2A push notification configs: the caller's own webhook for its task's updates, managed over
//! both bindings, and fed every update of the task in order through the push queue and worker.

use base64::Engine;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use forgebench_tests::{
    spawn_app, spawn_app_with, text_message, Answer, Callee, Options, Pair, Received, TestApp,
};
use serde_json::{json, Value};

const CREDENTIALS: &str = "notify-credentials-7f3a-must-never-show";

fn a2a_message(text: &str, message_id: &str) -> Value {
    json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// Opens a task over JSON-RPC without waiting; its id.
async fn open(app: &TestApp, pair: &Pair, message_id: &str) -> String {
    let reply = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": a2a_message("classify", message_id),
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    reply.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", reply.text))
        .to_owned()
}

fn rpc_error(reply: &forgebench_tests::Reply) -> i64 {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no JSON-RPC error in {}", reply.text))
}

fn rest_reason(reply: &forgebench_tests::Reply) -> (u16, String) {
    let reason = reply.body["error"]["details"][0]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (reply.status, reason)
}

/// A config's token, distinct enough to be looked for in the table.
const TOKEN: &str = "tok-51e4-seal3d";

#[tokio::test]
async fn configs_are_created_read_listed_and_deleted_over_both_bindings_without_their_credentials()
{
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair, "m-1").await;
    let agent = &pair.callee.id;
    let key = &pair.caller.key;

    let created = app
        .a2a_rpc(
            agent,
            key,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "rpc-hook", "url": "http://127.0.0.1:9/hook",
                   "token": TOKEN,
                   "authentication": {"scheme": "Bearer", "credentials": CREDENTIALS}}),
        )
        .await;
    assert_eq!(
        created.body["result"],
        json!({"id": "rpc-hook", "taskId": task_id, "url": "http://127.0.0.1:9/hook",
               "token": TOKEN, "authentication": {"scheme": "Bearer"}}),
        "{}",
        created.text
    );
    let rest = app
        .a2a_rest(
            "POST",
            agent,
            &format!("/tasks/{task_id}/pushNotificationConfigs"),
            key,
            Some(json!({"url": "http://127.0.0.1:9/other",
                        "authentication": {"scheme": "Basic", "credentials": CREDENTIALS}})),
        )
        .await;
    assert_eq!(rest.status, 200, "{}", rest.text);
    let rest_id = rest.body["id"].as_str().unwrap().to_owned();
    assert!(
        uuid::Uuid::parse_str(&rest_id).is_ok(),
        "a made id: {rest_id}"
    );

    let got = app
        .a2a_rest(
            "GET",
            agent,
            &format!("/tasks/{task_id}/pushNotificationConfigs/rpc-hook"),
            key,
            None,
        )
        .await;
    assert_eq!(got.body["url"], "http://127.0.0.1:9/hook", "{}", got.text);
    assert_eq!(
        got.body["token"], TOKEN,
        "the caller's own token is shown back"
    );
    let got = app
        .a2a_rpc(
            agent,
            key,
            "GetTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": rest_id}),
        )
        .await;
    assert_eq!(
        got.body["result"]["authentication"],
        json!({"scheme": "Basic"})
    );
    let listed = app
        .a2a_rpc(
            agent,
            key,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        )
        .await;
    assert_eq!(
        listed.body["result"]["configs"].as_array().unwrap().len(),
        2
    );
    assert_eq!(listed.body["result"]["nextPageToken"], "");
    let listed_rest = app
        .a2a_rest(
            "GET",
            agent,
            &format!("/tasks/{task_id}/pushNotificationConfigs"),
            key,
            None,
        )
        .await;
    assert_eq!(
        listed_rest.body["configs"],
        listed.body["result"]["configs"]
    );
    for text in [
        &created.text,
        &rest.text,
        &got.text,
        &listed.text,
        &listed_rest.text,
    ] {
        assert!(!text.contains(CREDENTIALS), "credentials shown: {text}");
    }
    let stored = format!("{:?}", app.scan_all().await);
    assert!(
        !stored.contains(CREDENTIALS),
        "credentials stored in the clear"
    );
    assert!(!stored.contains(TOKEN), "a token stored in the clear");

    let deleted = app
        .a2a_rest(
            "DELETE",
            agent,
            &format!("/tasks/{task_id}/pushNotificationConfigs/rpc-hook"),
            key,
            None,
        )
        .await;
    assert_eq!((deleted.status, deleted.body.clone()), (200, json!({})));
    let deleted = app
        .a2a_rpc(
            agent,
            key,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": rest_id}),
        )
        .await;
    assert_eq!(deleted.body["result"], Value::Null, "{}", deleted.text);
    assert!(deleted.body.get("error").is_none(), "{}", deleted.text);
    let gone = app
        .a2a_rpc(
            agent,
            key,
            "GetTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "rpc-hook"}),
        )
        .await;
    assert_eq!(rpc_error(&gone), -32001);
    let listed = app
        .a2a_rpc(
            agent,
            key,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        )
        .await;
    assert_eq!(
        listed.body["result"]["configs"],
        json!([]),
        "{}",
        listed.text
    );
}

#[tokio::test]
async fn a_sixth_config_is_refused_and_a_deleted_one_makes_room() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair, "m-1").await;
    let create = |id: String| {
        let (app, pair, task_id) = (&app, &pair, &task_id);
        async move {
            app.a2a_rest(
                "POST",
                &pair.callee.id,
                &format!("/tasks/{task_id}/pushNotificationConfigs"),
                &pair.caller.key,
                Some(json!({"id": id, "url": "http://127.0.0.1:9/hook"})),
            )
            .await
        }
    };
    for n in 0..5 {
        let reply = create(format!("hook-{n}")).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
    }
    // The same id again replaces, it does not count.
    assert_eq!(create("hook-0".into()).await.status, 200);
    let sixth = create("hook-5".into()).await;
    assert_eq!(
        rest_reason(&sixth),
        (400, "INVALID_PARAMS".into()),
        "{}",
        sixth.text
    );
    assert!(sixth.text.contains("at most 5"), "{}", sixth.text);
    let deleted = app
        .a2a_rest(
            "DELETE",
            &pair.callee.id,
            &format!("/tasks/{task_id}/pushNotificationConfigs/hook-2"),
            &pair.caller.key,
            None,
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(create("hook-5".into()).await.status, 200);
}

#[tokio::test]
async fn a_tenant_holds_at_most_its_configs_with_updates_to_send_and_finished_ones_free_their_place(
) {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let app = spawn_app_with(Options {
        tenant_max_configs: 2,
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let create = |task_id: String, id: &'static str| {
        let (app, pair, url) = (&app, &pair, receiver.url.clone());
        async move {
            app.a2a_rest(
                "POST",
                &pair.callee.id,
                &format!("/tasks/{task_id}/pushNotificationConfigs"),
                &pair.caller.key,
                Some(json!({"id": id, "url": url})),
            )
            .await
        }
    };
    let first = open(&app, &pair, "m-1").await;
    let second = open(&app, &pair, "m-2").await;
    let third = open(&app, &pair, "m-3").await;
    assert_eq!(create(first.clone(), "a").await.status, 200);
    assert_eq!(create(second.clone(), "b").await.status, 200);
    let refused = create(third.clone(), "c").await;
    assert_eq!(refused.status, 429, "{}", refused.text);
    assert_eq!(refused.headers["retry-after"], "1");
    // Another tenant is not held back.
    let other = app.pair().await;
    let others_task = open(&app, &other, "m-1").await;
    let elsewhere = app
        .a2a_rest(
            "POST",
            &other.callee.id,
            &format!("/tasks/{others_task}/pushNotificationConfigs"),
            &other.caller.key,
            Some(json!({"id": "x", "url": receiver.url})),
        )
        .await;
    assert_eq!(elsewhere.status, 200, "{}", elsewhere.text);

    // A deleted config frees its place.
    let deleted = app
        .a2a_rest(
            "DELETE",
            &pair.callee.id,
            &format!("/tasks/{second}/pushNotificationConfigs/b"),
            &pair.caller.key,
            None,
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    assert_eq!(create(third.clone(), "c").await.status, 200);
    assert_eq!(create(second.clone(), "b").await.status, 429);

    // So does one whose task finished and whose every update was sent.
    let callee = &pair.callee.key;
    // Claims come in no fixed order: the first claimed task whose config stands.
    let with_config = loop {
        let claimed = app.claim(callee, 5).await.field("id");
        if claimed == first || claimed == third {
            break claimed;
        }
    };
    let done =
        json!({"state": "completed", "message": {"role": "agent", "parts": [{"text": "ok"}]}});
    assert_eq!(
        app.post_result(callee, &with_config, done).await.status,
        200
    );
    let started = std::time::Instant::now();
    loop {
        let again = create(second.clone(), "b").await;
        if again.status == 200 {
            break;
        }
        assert_eq!(again.status, 429, "{}", again.text);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the finished task's config never freed its place"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn only_the_caller_manages_configs_and_others_find_no_task() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair, "m-1").await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    for key in [&pair.callee.key, &stranger.key] {
        let reply = app
            .a2a_rpc(
                &pair.callee.id,
                key,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task_id, "url": "http://127.0.0.1:9/hook"}),
            )
            .await;
        assert_eq!(rpc_error(&reply), -32001, "{}", reply.text);
        let listed = app
            .a2a_rest(
                "GET",
                &pair.callee.id,
                &format!("/tasks/{task_id}/pushNotificationConfigs"),
                key,
                None,
            )
            .await;
        assert_eq!(rest_reason(&listed), (404, "TASK_NOT_FOUND".into()));
    }
}

/// The tenant's audit entries of push notification configs, oldest first: (action, target,
/// task), with the entry's agents checked to be the pair's.
async fn config_entries(app: &TestApp, pair: &Pair) -> Vec<(String, String, String)> {
    let page = app
        .get(
            "/v1/audit?action=task.push_config.&limit=100",
            &pair.tenant.admin_key,
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let mut entries: Vec<_> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            assert_eq!(entry["actor"]["id"], pair.caller.id.as_str(), "{entry}");
            assert_eq!(entry["caller_agent_id"], pair.caller.id.as_str(), "{entry}");
            assert_eq!(entry["callee_agent_id"], pair.callee.id.as_str(), "{entry}");
            assert_eq!(entry["outcome"], "allowed", "{entry}");
            let text = |field: &str| entry[field].as_str().unwrap_or_default().to_owned();
            (text("action"), text("target"), text("task_id"))
        })
        .collect();
    entries.reverse();
    entries
}

#[tokio::test]
async fn creating_replacing_and_deleting_a_config_is_audited_on_both_bindings_and_inline() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let (agent, key) = (&pair.callee.id, &pair.caller.key);
    let task_id = open(&app, &pair, "m-1").await;
    let config = |id: &str, url: &str| json!({"taskId": task_id, "id": id, "url": url});
    let gateway = &app;
    let rpc = |method: &'static str, params: Value| async move {
        let reply = gateway.a2a_rpc(agent, key, method, params).await;
        assert!(reply.body["error"].is_null(), "{}", reply.text);
    };
    rpc(
        "CreateTaskPushNotificationConfig",
        config("hook", "http://127.0.0.1:9/a"),
    )
    .await;
    // The same id again replaces it.
    rpc(
        "CreateTaskPushNotificationConfig",
        config("hook", "http://127.0.0.1:9/b"),
    )
    .await;
    let configs = format!("/tasks/{task_id}/pushNotificationConfigs");
    let rest = app
        .a2a_rest(
            "POST",
            agent,
            &configs,
            key,
            Some(json!({"id": "rest-hook", "url": "http://127.0.0.1:9/c"})),
        )
        .await;
    assert_eq!(rest.status, 200, "{}", rest.text);
    rpc(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": "hook"}),
    )
    .await;
    let deleted = app
        .a2a_rest("DELETE", agent, &format!("{configs}/rest-hook"), key, None)
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    // Deleting one already gone succeeds, and records nothing: nothing changed.
    rpc(
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": "hook"}),
    )
    .await;
    // Refused: another agent manages no config of this task, and nothing is recorded.
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let refused = app
        .a2a_rpc(
            agent,
            &stranger.key,
            "CreateTaskPushNotificationConfig",
            config("x", "http://127.0.0.1:9/x"),
        )
        .await;
    assert_eq!(rpc_error(&refused), -32001, "{}", refused.text);
    // A config sent with the message that opens the task.
    let inline = app
        .a2a_rpc(
            agent,
            key,
            "SendMessage",
            json!({"message": a2a_message("classify", "m-2"),
                   "configuration": {"returnImmediately": true,
                                     "taskPushNotificationConfig": {"id": "inline", "url": "http://127.0.0.1:9/d"}}}),
        )
        .await;
    let inline_task = inline.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", inline.text))
        .to_owned();
    let entry = |action: &str, target: &str, task: &str| {
        (
            format!("task.push_config.{action}"),
            target.to_owned(),
            task.to_owned(),
        )
    };
    assert_eq!(
        config_entries(&app, &pair).await,
        vec![
            entry("create", "hook", &task_id),
            entry("replace", "hook", &task_id),
            entry("create", "rest-hook", &task_id),
            entry("delete", "hook", &task_id),
            entry("delete", "rest-hook", &task_id),
            entry("create", "inline", &inline_task),
        ]
    );
}

#[tokio::test]
async fn loopback_and_metadata_urls_are_refused_when_private_addresses_are_not_allowed() {
    // No operator allowlist: the guard as deployed.
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair, "m-1").await;
    // A destination the guard refuses is a refusal (a 403 on both bindings, as a call the
    // caller may not make); a URL that is none is bad params.
    for (url, refused) in [
        ("http://127.0.0.1:9/hook", true),
        ("https://[::1]/hook", true),
        ("https://169.254.169.254/latest/meta-data/", true),
        ("https://10.0.0.5/hook", true),
        ("https://localhost/hook", true),
        ("ftp://a.example/hook", false),
    ] {
        let reply = app
            .a2a_rpc(
                &pair.callee.id,
                &pair.caller.key,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task_id, "url": url}),
            )
            .await;
        let inline = app
            .a2a_rpc(
                &pair.callee.id,
                &pair.caller.key,
                "SendMessage",
                json!({"message": a2a_message("x", &format!("inline-{url}")),
                       "configuration": {"returnImmediately": true,
                                         "taskPushNotificationConfig": {"url": url}}}),
            )
            .await;
        let rest = app
            .a2a_rest(
                "POST",
                &pair.callee.id,
                &format!("/tasks/{task_id}/pushNotificationConfigs"),
                &pair.caller.key,
                Some(json!({"url": url})),
            )
            .await;
        for reply in [&reply, &inline] {
            match refused {
                true => assert_eq!(reply.status, 403, "{url}: {}", reply.text),
                false => assert_eq!(rpc_error(reply), -32602, "{url}: {}", reply.text),
            }
        }
        assert_eq!(
            rest.status,
            if refused { 403 } else { 400 },
            "{url}: {}",
            rest.text
        );
    }
    // Nothing was opened by the refused sends.
    let listed = app
        .a2a_rpc(&pair.callee.id, &pair.caller.key, "ListTasks", json!({}))
        .await;
    assert_eq!(listed.body["result"]["tasks"].as_array().unwrap().len(), 1);
}

/// The webhook-signing public keys of the JWKS.
async fn webhook_keys(app: &TestApp, key: &str) -> Vec<VerifyingKey> {
    let jwks = app.get("/v1/billing/export/pubkey", key).await;
    jwks.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|jwk| jwk["purpose"] == "webhook-signing")
        .map(|jwk| {
            let x = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(jwk["x"].as_str().unwrap())
                .unwrap();
            VerifyingKey::from_bytes(&x.try_into().unwrap()).unwrap()
        })
        .collect()
}

fn verifies(keys: &[VerifyingKey], received: &Received) -> bool {
    let header = |name: &str| received.headers[name].to_str().unwrap().to_owned();
    let signature = header("webhook-signature");
    let signature = base64::engine::general_purpose::STANDARD
        .decode(signature.strip_prefix("v1a,").unwrap())
        .unwrap();
    let signature = Signature::from_slice(&signature).unwrap();
    let content = format!(
        "{}.{}.{}",
        header("webhook-id"),
        header("webhook-timestamp"),
        String::from_utf8_lossy(&received.raw_body)
    );
    keys.iter()
        .any(|key| key.verify(content.as_bytes(), &signature).is_ok())
}

/// What each notification said: its kind and state (or artifact name), with its message text.
fn summary(received: &Received) -> (String, String, String) {
    if let Some(update) = received.body.get("artifactUpdate") {
        return (
            "artifact".into(),
            update["artifact"]["name"]
                .as_str()
                .unwrap_or_default()
                .into(),
            String::new(),
        );
    }
    let status = &received.body["statusUpdate"]["status"];
    (
        "status".into(),
        status["state"].as_str().unwrap_or_default().into(),
        status["message"]["parts"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .into(),
    )
}

/// Drives a pull task through claim, progress, a question, the caller's answer and the result,
/// with a config made at `configure` (inline on the send when `inline`).
async fn conversation(receiver: &Callee, inline: bool) -> (TestApp, Pair, String) {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let config = json!({"id": "hook", "url": receiver.url, "token": "tok-9",
                        "authentication": {"scheme": "Bearer", "credentials": CREDENTIALS}});
    let mut configuration = json!({"returnImmediately": true});
    if inline {
        configuration["taskPushNotificationConfig"] = config.clone();
    }
    let sent = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": a2a_message("classify", "m-1"), "configuration": configuration}),
        )
        .await;
    let task_id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    if !inline {
        let mut config = config;
        config["taskId"] = json!(task_id);
        let created = app
            .a2a_rpc(
                &pair.callee.id,
                &pair.caller.key,
                "CreateTaskPushNotificationConfig",
                config,
            )
            .await;
        assert!(created.body["result"].is_object(), "{}", created.text);
    }
    let callee = &pair.callee.key;
    assert_eq!(app.claim(callee, 5).await.field("id"), task_id);
    let progress = app
        .post(
            &format!("/v1/agents/me/tasks/{task_id}/progress"),
            callee,
            json!({"message": {"parts": [{"text": "half way"}]}}),
        )
        .await;
    assert_eq!(progress.status, 200, "{}", progress.text);
    let question = json!({"state": "input_required",
                          "message": {"role": "agent", "parts": [{"text": "which account?"}]}});
    assert_eq!(
        app.post_result(callee, &task_id, question).await.status,
        200
    );
    let answer = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("ACC-9")}),
        )
        .await;
    assert_eq!(answer.status, 200, "{}", answer.text);
    assert_eq!(app.claim(callee, 5).await.field("id"), task_id);
    let done = json!({"state": "completed",
                      "artifacts": [{"name": "label", "parts": [{"text": "utilities"}]}],
                      "message": {"role": "agent", "parts": [{"text": "paid"}]}});
    assert_eq!(app.post_result(callee, &task_id, done).await.status, 200);
    (app, pair, task_id)
}

fn expected() -> Vec<(String, String, String)> {
    [
        ("status", "TASK_STATE_WORKING", ""),
        ("status", "TASK_STATE_WORKING", "half way"),
        ("status", "TASK_STATE_INPUT_REQUIRED", "which account?"),
        ("status", "TASK_STATE_WORKING", "ACC-9"),
        ("status", "TASK_STATE_WORKING", ""),
        ("artifact", "label", ""),
        ("status", "TASK_STATE_COMPLETED", "paid"),
    ]
    .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c.to_owned()))
    .to_vec()
}

/// Waits for `count` notifications, then a little longer to see that no repeat follows.
async fn settle(receiver: &Callee, count: usize) -> Vec<Received> {
    receiver.wait_for(count).await;
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    receiver.received()
}

#[tokio::test]
async fn a_config_receives_every_update_of_its_task_once_in_order_signed_and_authorized() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let (app, pair, task_id) = conversation(&receiver, false).await;
    let received = settle(&receiver, expected().len()).await;
    let summaries: Vec<_> = received.iter().map(summary).collect();
    assert_eq!(summaries, expected());
    let keys = webhook_keys(&app, &pair.caller.key).await;
    assert_addressed_in_order(&received, &pair, &task_id, &receiver.url);
    for (n, notification) in received.iter().enumerate() {
        assert_eq!(notification.headers["x-a2a-notification-token"], "tok-9");
        assert!(verifies(&keys, notification), "notification {n} verifies");
        // The destination is signed: the body sent to another receiver no longer verifies.
        let mut elsewhere = notification.clone();
        let moved = String::from_utf8(elsewhere.raw_body.clone())
            .unwrap()
            .replace(&receiver.url, "https://elsewhere.example/hook");
        assert_ne!(moved.as_bytes(), notification.raw_body.as_slice());
        elsewhere.raw_body = moved.into_bytes();
        assert!(!verifies(&keys, &elsewhere), "notification {n} is bound");
    }
}

/// Parses each body with the official A2A SDK's `StreamResponse` as a strict ProtoJSON parser
/// does (an unknown field is an error); the SDK's answer, and whether every body parsed.
async fn parsed_by_the_a2a_sdk(bodies: Vec<Vec<u8>>) -> (bool, String) {
    const PARSE: &str = "import json, sys\n\
        from google.protobuf import json_format\n\
        from a2a.types import StreamResponse\n\
        for body in json.load(sys.stdin):\n    \
            parsed = json_format.Parse(body, StreamResponse())\n    \
            print(parsed.WhichOneof('payload'))\n";
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("FORGEBENCH_TEST_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| root.join("../.local/venv/bin/python"));
    let input: Vec<String> = bodies
        .into_iter()
        .map(|body| String::from_utf8(body).unwrap())
        .collect();
    let input = serde_json::to_vec(&input).unwrap();
    let output = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let mut child = std::process::Command::new(&python)
            .args(["-c", PARSE])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        child.stdin.take().unwrap().write_all(&input)?;
        child.wait_with_output()
    })
    .await
    .unwrap()
    .expect("run the A2A SDK; scripts/install.sh installs it");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test]
async fn notifications_naming_their_destination_are_stream_responses_the_a2a_sdk_parses() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let (_app, _pair, _task_id) = conversation(&receiver, false).await;
    let received = settle(&receiver, expected().len()).await;
    let bodies = received.iter().map(|post| post.raw_body.clone()).collect();
    let (parsed, answer) = parsed_by_the_a2a_sdk(bodies).await;
    assert!(parsed, "{answer}");
    let kinds: Vec<&str> = answer.lines().collect();
    assert_eq!(kinds.len(), expected().len(), "{answer}");
    assert!(kinds.contains(&"artifact_update") && kinds.contains(&"status_update"));
    // A destination beside the update, rather than in its metadata, would not parse.
    let mut beside = received[0].body.clone();
    beside["destination"] = json!({"url": receiver.url});
    let (parsed, answer) = parsed_by_the_a2a_sdk(vec![beside.to_string().into_bytes()]).await;
    assert!(!parsed, "{answer}");
}

/// Each notification is about `task_id`, carries the config's credentials, and is numbered in
/// order from the first (`webhook-id` `{task}:hook:1`, `{task}:hook:2`, …): none repeated, none
/// missing. Its body is a StreamResponse (the update alone at the top) naming, in the update's
/// metadata, where it was sent: the tenant, the task, the config `hook` and the receiver's `url`
/// as saved, all covered by the signature.
fn assert_addressed_in_order(received: &[Received], pair: &Pair, task_id: &str, url: &str) {
    let destination = json!({"forgebench": {"destination": {
        "tenant_id": pair.tenant.id, "task_id": task_id, "config_id": "hook", "url": url,
    }}});
    for (n, notification) in received.iter().enumerate() {
        let members = notification.body.as_object().unwrap();
        assert_eq!(members.len(), 1, "{}", notification.body);
        let update = notification
            .body
            .get("statusUpdate")
            .or_else(|| notification.body.get("artifactUpdate"))
            .unwrap();
        assert_eq!(update["taskId"], task_id);
        assert_eq!(update["metadata"], destination, "notification {n}");
        assert_eq!(
            notification.headers["authorization"],
            format!("Bearer {CREDENTIALS}").as_str()
        );
        assert_eq!(
            notification.headers["webhook-id"],
            format!("{task_id}:hook:{}", n + 1).as_str()
        );
    }
}

/// A config id is the caller's choice, so two callers (of two tenants here) may pick the same
/// one for the same receiver: their notifications' ids still differ, each naming its own task,
/// so neither caller can make the receiver drop the other's events as repeats.
#[tokio::test]
async fn notification_ids_name_their_task_so_callers_sharing_a_config_id_never_collide() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let (_first_app, first, first_task) = conversation(&receiver, true).await;
    let (_second_app, second, second_task) = conversation(&receiver, true).await;
    let received = settle(&receiver, 2 * expected().len()).await;
    assert_eq!(received.len(), 2 * expected().len());
    let ids: std::collections::HashSet<String> = received
        .iter()
        .map(|notification| {
            let id = notification.headers["webhook-id"]
                .to_str()
                .unwrap()
                .to_owned();
            let update = notification
                .body
                .get("statusUpdate")
                .or_else(|| notification.body.get("artifactUpdate"))
                .unwrap();
            let task_id = update["taskId"].as_str().unwrap();
            assert!(
                id.starts_with(&format!("{task_id}:hook:")),
                "{id} names {task_id}"
            );
            // The signed body names the same config, and the tenant of its task.
            let destination = &update["metadata"]["forgebench"]["destination"];
            assert_eq!(destination["task_id"], task_id);
            assert_eq!(destination["config_id"], "hook");
            let tenant = if task_id == first_task {
                &first
            } else {
                &second
            };
            assert_eq!(destination["tenant_id"], tenant.tenant.id.as_str());
            id
        })
        .collect();
    assert_eq!(
        ids.len(),
        received.len(),
        "every notification has an id of its own"
    );
    assert_ne!(first_task, second_task);
}

#[tokio::test]
async fn a_receiver_that_fails_the_first_post_still_gets_every_update_once() {
    let receiver = Callee::start(|n| {
        if n == 0 {
            Answer::text(503, "busy")
        } else {
            Answer::json(200, json!({}))
        }
    })
    .await;
    let (_app, _pair, _task_id) = conversation(&receiver, false).await;
    let received = settle(&receiver, expected().len() + 1).await;
    // The first POST failed and was sent again; after it, each update exactly once.
    assert_eq!(
        received[0].headers["webhook-id"],
        received[1].headers["webhook-id"]
    );
    let summaries: Vec<_> = received[1..].iter().map(summary).collect();
    assert_eq!(summaries, expected());
}

/// A failed notification costs the config two writes: the lease taken before the POST, and one
/// write after it that counts the attempt and gives the lease back.
#[tokio::test]
async fn a_failed_notification_counts_its_attempt_and_gives_its_lease_back_in_one_write() {
    let recorder = forgebench_tests::Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    // Busy for a minute: the attempt is not sent again while the test looks.
    let receiver = Callee::start(|_| Answer {
        delay: std::time::Duration::from_millis(700),
        retry_after: Some(60),
        ..Answer::text(503, "busy")
    })
    .await;
    claimed_with_config_at(&app, &pair, &receiver.url, "m-1").await;
    // The POST is being answered: the lease is taken, the attempt not counted yet.
    receiver.wait_for(1).await;
    recorder.take_dynamodb_round_trips();
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    let after: Vec<String> = recorder
        .take_dynamodb_round_trips()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with("UpdateItem"))
        .collect();
    assert_eq!(after.len(), 1, "writes after the failed POST: {after:?}");
    let config = app
        .scan_all()
        .await
        .into_iter()
        .find(|item| {
            item.get("sk")
                .and_then(|sk| sk.as_s().ok())
                .map(String::as_str)
                == Some("NOTIFY#hook")
        })
        .expect("the config's item");
    assert_eq!(config["attempts"].as_n().unwrap(), "1");
    assert!(
        !config.contains_key("lease_token"),
        "the lease is still held"
    );
    assert_eq!(receiver.received().len(), 1);
}

/// Opens a task of `pair`'s with a config at `url` and claims it: its first notification is
/// due. Its id.
async fn claimed_with_config_at(app: &TestApp, pair: &Pair, url: &str, message_id: &str) -> String {
    let sent = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": a2a_message("classify", message_id),
                   "configuration": {"returnImmediately": true,
                                     "taskPushNotificationConfig": {"id": "hook", "url": url}}}),
        )
        .await;
    let task_id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", sent.text))
        .to_owned();
    assert_eq!(app.claim(&pair.callee.key, 5).await.field("id"), task_id);
    task_id
}

/// A receiver that fails every POST of a tenant's is not tried again by that tenant for a while
/// once five in a row failed (its configs wait, with no write and no connection), while another
/// tenant's configs at the same host are sent as before.
#[tokio::test]
async fn a_receiver_failing_every_post_is_held_back_for_its_tenant_and_not_for_others() {
    let app = spawn_app_with(Options::local_push()).await;
    let receiver = Callee::start(|_| Answer::text(503, "down")).await;
    let noisy = app.pair().await;
    // Eight tasks, each one event for its config, three attempts each (0.2 s apart in tests):
    // 24 POSTs without a breaker.
    for n in 0..8 {
        claimed_with_config_at(&app, &noisy, &receiver.url, &format!("m-{n}")).await;
    }
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let tried = receiver.received().len();
    assert!(
        (forgebench::push::breaker::FAILURES_TO_OPEN as usize..=12).contains(&tried),
        "{tried} POSTs to a receiver failing every one"
    );
    let quiet = app.pair().await;
    let task_id = claimed_with_config_at(&app, &quiet, &receiver.url, "q-1").await;
    let received = receiver.wait_for(tried + 1).await;
    assert!(
        received[tried..]
            .iter()
            .any(|post| post.headers["webhook-id"]
                .to_str()
                .unwrap()
                .starts_with(&task_id)),
        "another tenant's config was held back too"
    );
}

#[tokio::test]
async fn a_config_sent_with_the_message_receives_every_update_from_the_open() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let (app, pair, task_id) = conversation(&receiver, true).await;
    let received = settle(&receiver, expected().len()).await;
    let summaries: Vec<_> = received.iter().map(summary).collect();
    assert_eq!(summaries, expected());
    assert_addressed_in_order(&received, &pair, &task_id, &receiver.url);
    let listed = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id}),
        )
        .await;
    assert_eq!(
        listed.body["result"]["configs"][0]["id"], "hook",
        "{}",
        listed.text
    );
}

#[tokio::test]
async fn a_deleted_config_gets_nothing_more() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair, "m-1").await;
    let created = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "hook", "url": receiver.url}),
        )
        .await;
    assert!(created.body["result"].is_object(), "{}", created.text);
    assert_eq!(app.claim(&pair.callee.key, 5).await.field("id"), task_id);
    receiver.wait_for(1).await;
    app.a2a_rpc(
        &pair.callee.id,
        &pair.caller.key,
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": "hook"}),
    )
    .await;
    let done = json!({"state": "completed"});
    assert_eq!(
        app.post_result(&pair.callee.key, &task_id, done)
            .await
            .status,
        200
    );
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(receiver.received().len(), 1);
}

/// A gateway whose queue (and KMS, S3) a test can cut, and a task of it claimed, with the config
/// `hook` at `receiver`, which has had the claim's event.
async fn claimed_with_a_config() -> (Callee, forgebench_tests::Proxy, TestApp, Pair, String) {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let proxy = forgebench_tests::Proxy::start(&forgebench_tests::moto_endpoint()).await;
    let app = spawn_app_with(Options {
        moto_endpoint: proxy.endpoint.clone(),
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair, "m-1").await;
    configure(&app, &pair, &task_id, "hook", &receiver.url).await;
    assert_eq!(app.claim(&pair.callee.key, 5).await.field("id"), task_id);
    receiver.wait_for(1).await;
    (receiver, proxy, app, pair, task_id)
}

/// A change whose notification could not be enqueued (the queue unreachable right after the
/// write committed) is not lost: the config stays on the outbox index until its task's last
/// event is delivered, and the sweeper sends what is missing; then the config leaves the index.
#[tokio::test]
async fn a_notification_whose_enqueue_was_lost_is_sent_by_the_sweeper() {
    let (receiver, proxy, app, pair, task_id) = claimed_with_a_config().await;

    proxy.cut();
    let done = app
        .post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    proxy.restore();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(
        receiver.received().len(),
        1,
        "the final event's enqueue was lost"
    );

    // The sweep, a minute on.
    let later = forgebench::domain::clock::after(120);
    let swept =
        forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &later).await;
    assert_eq!(swept.done, 1, "{swept:?}");
    let received = receiver.wait_for(2).await;
    let last = &received[1].body;
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );

    // Delivered in full and finished: nothing more for the sweeper.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let much_later = forgebench::domain::clock::after(600);
    let swept =
        forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &much_later).await;
    assert_eq!(swept.done, 0, "{swept:?}");
    assert_eq!(receiver.received().len(), 2);
}

/// A config whose task sleeps is swept less and less often (1, 2, 4 … 64 minutes), not every
/// minute for as long as the task stays open; a change whose enqueue is lost in that time is
/// still sent by the very next sweep, and a change whose enqueue arrives is sent at once.
#[tokio::test]
async fn an_idle_config_is_swept_less_and_less_often_and_a_lost_change_at_the_next_sweep() {
    let (receiver, proxy, app, pair, task_id) = claimed_with_a_config().await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;

    // An hour of sweeps, one a minute, while the task stays working.
    let minute = |n: u64| forgebench::domain::clock::after(n * 60 + 5);
    let mut enqueued = 0;
    for n in 1..=60 {
        enqueued +=
            forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &minute(n))
                .await
                .done;
    }
    assert!(
        (1..=7).contains(&enqueued),
        "an idle config was enqueued {enqueued} times in an hour of sweeps"
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        receiver.received().len(),
        1,
        "an idle config was sent an event twice"
    );

    // A change whose enqueue is lost: the next sweep sends it.
    proxy.cut();
    let done = app
        .post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    proxy.restore();
    // A receive the cut dropped may still wait at the queue for up to its 1 s: were the sweep's
    // message to arrive then, the queue would hand it to a closed connection and hide it for
    // its visibility timeout. Let such a wait end first.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(
        receiver.received().len(),
        1,
        "the final event's enqueue was lost"
    );
    let swept =
        forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &minute(61)).await;
    assert_eq!(swept.done, 1, "{swept:?}");
    // The worker may be retrying a call the cut broke (its retry waits up to 10 s): allow for it.
    let mut received = receiver.wait_for(2).await;
    if received.len() < 2 {
        received = receiver.wait_for(2).await;
    }
    assert_eq!(
        received.len(),
        2,
        "the change lost at its enqueue never arrived"
    );
    assert_eq!(
        received[1].body["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        received[1].body
    );
}

/// Opens a task over JSON-RPC on a callee whose endpoint is `callee`, with the config `hook`
/// (pointing at `receiver`) sent inline; the task's id once the worker has finished with it.
async fn push_delivered(receiver: &Callee, callee: &Callee) -> (TestApp, Pair, String) {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let endpoint = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url}),
        )
        .await;
    assert_eq!(endpoint.status, 200, "{}", endpoint.text);
    let config = json!({"id": "hook", "url": receiver.url, "token": "tok-9",
                        "authentication": {"scheme": "Bearer", "credentials": CREDENTIALS}});
    let sent = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": a2a_message("classify", "m-1"),
                   "configuration": {"returnImmediately": true,
                                     "taskPushNotificationConfig": config}}),
        )
        .await;
    let task_id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", sent.text))
        .to_owned();
    (app, pair, task_id)
}

#[tokio::test]
async fn a_config_on_a_push_delivered_task_receives_the_callees_answer_once_in_order() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let callee = Callee::start(|_| {
        Answer::json(
            200,
            json!({"state": "completed",
                   "artifacts": [{"name": "label", "parts": [{"text": "utilities"}]}]}),
        )
    })
    .await;
    let (_app, pair, task_id) = push_delivered(&receiver, &callee).await;
    let received = settle(&receiver, 2).await;
    let summaries: Vec<_> = received.iter().map(summary).collect();
    assert_eq!(
        summaries,
        [
            ("artifact".to_owned(), "label".to_owned(), String::new()),
            (
                "status".into(),
                "TASK_STATE_COMPLETED".into(),
                String::new()
            ),
        ],
        "{received:#?}"
    );
    assert_addressed_in_order(&received, &pair, &task_id, &receiver.url);
    assert_eq!(callee.received().len(), 1, "the callee got the task once");
}

#[tokio::test]
async fn a_config_on_a_push_task_whose_delivery_is_refused_receives_the_failure() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let callee = Callee::start(|_| Answer::text(410, "gone")).await;
    let (app, pair, task_id) = push_delivered(&receiver, &callee).await;
    let received = settle(&receiver, 1).await;
    let summaries: Vec<_> = received.iter().map(summary).collect();
    assert_eq!(summaries.len(), 1, "{received:#?}");
    assert_eq!(summaries[0].1, "TASK_STATE_FAILED", "{received:#?}");
    let task = app
        .get(
            &format!("/v1/agents/{}/tasks/{task_id}", pair.callee.name),
            &pair.caller.key,
        )
        .await;
    assert_eq!(task.state(), "failed", "{}", task.text);
}

/// A receiver that accepts connections and never answers; its URL.
async fn hanging_receiver() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    (url, held)
}

/// Adds a config of `url` to the caller's task `task_id`.
async fn configure(app: &TestApp, pair: &Pair, task_id: &str, id: &str, url: &str) {
    let created = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": id, "url": url}),
        )
        .await;
    assert!(created.body["result"].is_object(), "{}", created.text);
}

/// The notify job of `task_id`, as the queue carries it.
fn notify_job(message_id: &str, task_id: &str) -> forgebench::push::Job {
    forgebench::push::Job {
        message_id: message_id.to_owned(),
        receipt_handle: String::new(),
        body: json!({"task_id": task_id, "kind": "notify"}).to_string(),
    }
}

#[tokio::test]
async fn receivers_that_never_answer_hold_their_own_job_not_the_batch_past_its_invocation() {
    let app = spawn_app_with(Options {
        push_worker: false,
        push_timeout: std::time::Duration::from_secs(1),
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    // One caller's task with three configs at a receiver that never answers ...
    let (hanging, _held) = hanging_receiver().await;
    let hostile = open(&app, &pair, "m-hostile").await;
    for n in 0..3 {
        configure(&app, &pair, &hostile, &format!("hang-{n}"), &hanging).await;
    }
    // ... and another task's config at a receiver that answers at once.
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let healthy = open(&app, &pair, "m-healthy").await;
    configure(&app, &pair, &healthy, "hook", &receiver.url).await;
    for _ in 0..2 {
        app.claim(&pair.callee.key, 0).await;
    }

    // One batch of the two notify jobs, in an invocation of 2.5 s that gives its jobs 2 s: one
    // POST's time (1 s) for the hostile job, whose three configs wait side by side.
    let worker = app.app.worker();
    let jobs = [notify_job("m-1", &hostile), notify_job("m-2", &healthy)];
    let batch = worker.handle_batch(&jobs, std::time::Duration::from_secs(2));
    let failed = tokio::time::timeout(std::time::Duration::from_millis(2500), batch)
        .await
        .expect("the batch answered before its invocation ended");
    assert_eq!(failed, ["m-1"], "only the hostile job's message comes back");
    receiver.wait_for(1).await;
    let id = receiver.received()[0].headers["webhook-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(id.ends_with(":hook:1"), "{id}");
}

/// Replacing a config (the same id again) replaces its token too: the next notification carries
/// the new token, and a read shows the new one, never the old.
#[tokio::test]
async fn a_replaced_config_sends_its_new_token_not_the_old_one() {
    let receiver = Callee::start(|_| Answer::json(200, json!({}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let task_id = open(&app, &pair, "m-1").await;
    for token in ["tok-old-1d2c", "tok-new-8e4f"] {
        let created = app
            .a2a_rpc(
                &pair.callee.id,
                &pair.caller.key,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task_id, "id": "hook", "url": receiver.url, "token": token}),
            )
            .await;
        assert_eq!(created.body["result"]["token"], token, "{}", created.text);
    }
    let read = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "GetTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "hook"}),
        )
        .await;
    assert_eq!(
        read.body["result"]["token"], "tok-new-8e4f",
        "{}",
        read.text
    );
    assert_eq!(app.claim(&pair.callee.key, 5).await.field("id"), task_id);
    let received = receiver.wait_for(1).await;
    assert_eq!(
        received[0].headers["x-a2a-notification-token"], "tok-new-8e4f",
        "the notification carried the replaced config's old token"
    );
}
