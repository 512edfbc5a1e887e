//! Least privilege: every AWS call each function makes, observed while a tour drives every route,
//! the push worker and the sweeper, is allowed by that function's policy in the template; and
//! the functions that only read have no write permission at all.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use forgebench::store::schema::TEMPLATE;
use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Recorder, Reply};
use serde_json::{json, Value};

/// `function (its FORGEBENCH_ROUTE) -> its policy statements`, read from the template's inline policies.
fn statements() -> BTreeMap<String, Vec<serde_norway::Value>> {
    let document: serde_norway::Value = serde_norway::from_str(TEMPLATE).unwrap();
    let mut all = BTreeMap::new();
    for (_, resource) in document["Resources"].as_mapping().unwrap() {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let binary = crate::deployment::route_of(resource).expect("FORGEBENCH_ROUTE");
        let mut statements = Vec::new();
        for policy in resource["Properties"]["Policies"].as_sequence().unwrap() {
            statements.extend(
                policy["Statement"]
                    .as_sequence()
                    .cloned()
                    .unwrap_or_else(|| {
                        panic!("{binary}: policies are inline statements, not templates")
                    }),
            );
        }
        all.insert(binary, statements);
    }
    all
}

fn actions_of(statement: &serde_norway::Value) -> Vec<String> {
    statement["Action"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|action| action.as_str().unwrap().to_owned())
        .collect()
}

/// The encryption-context purposes a statement's `kms:EncryptionContext:purpose` condition
/// allows (empty: no such condition).
fn purposes_of(statement: &serde_norway::Value) -> Vec<String> {
    match &statement["Condition"]["StringEquals"]["kms:EncryptionContext:purpose"] {
        serde_norway::Value::String(one) => vec![one.clone()],
        serde_norway::Value::Sequence(many) => many
            .iter()
            .map(|purpose| purpose.as_str().unwrap().to_owned())
            .collect(),
        _ => Vec::new(),
    }
}

/// Whether a statement holds only for calls KMS receives from S3 (the body bucket's keys).
fn via_s3(statement: &serde_norway::Value) -> bool {
    serde_norway::to_string(&statement["Condition"])
        .unwrap()
        .contains("kms:ViaService")
}

/// `binary -> allowed actions`, read from the template's inline policies; a KMS action under a
/// purpose condition is also allowed as `kms:<Action>@<purpose>` for each purpose it names.
fn allowed_actions() -> BTreeMap<String, BTreeSet<String>> {
    statements()
        .into_iter()
        .map(|(binary, statements)| {
            let mut actions = BTreeSet::new();
            for statement in &statements {
                for action in actions_of(statement) {
                    for purpose in purposes_of(statement) {
                        actions.insert(format!("{action}@{purpose}"));
                    }
                    actions.insert(action);
                }
            }
            (binary, actions)
        })
        .collect()
}

/// The route table declares what each route's function may touch; its role in the template
/// allows exactly that: no action more (least privilege), none less (the tour below sees each
/// function's calls allowed).
#[test]
fn each_route_function_s_policy_allows_exactly_the_actions_its_table_line_declares() {
    let allowed = allowed_actions();
    for route in forgebench::Route::ALL {
        let in_template: BTreeSet<String> = allowed
            .get(&route.name())
            .unwrap_or_else(|| panic!("{} has no function in the template", route.name()))
            .iter()
            .filter(|action| !action.contains('@'))
            .cloned()
            .collect();
        let declared: BTreeSet<String> = route.touches().into_iter().collect();
        assert_eq!(in_template, declared, "{}", route.name());
    }
}

/// `binary -> (KMS action, purpose)` pairs its direct KMS grants allow.
fn kms_grants() -> BTreeMap<String, BTreeSet<(String, String)>> {
    let mut grants: BTreeMap<String, BTreeSet<(String, String)>> = BTreeMap::new();
    for (binary, statements) in statements() {
        for statement in statements.iter().filter(|statement| !via_s3(statement)) {
            for action in actions_of(statement)
                .into_iter()
                .filter(|action| action.starts_with("kms:"))
            {
                let purposes = purposes_of(statement);
                assert!(
                    !purposes.is_empty(),
                    "{binary}: {action} is not conditioned on kms:EncryptionContext:purpose"
                );
                for purpose in purposes {
                    grants
                        .entry(binary.clone())
                        .or_default()
                        .insert((action.clone(), purpose));
                }
            }
        }
    }
    grants
}

#[test]
fn every_kms_grant_names_its_purpose_and_only_the_push_worker_opens_endpoint_secrets() {
    let grants = kms_grants();
    let pairs = |list: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        list.iter()
            .map(|(action, purpose)| (action.to_string(), purpose.to_string()))
            .collect()
    };
    let cards = pairs(&[
        ("kms:Encrypt", "card-signing"),
        ("kms:Decrypt", "card-signing"),
    ]);
    assert_eq!(grants["get-agent-card"], cards);
    assert_eq!(grants["list-agent-cards"], cards);
    assert_eq!(
        grants["set-endpoint"],
        pairs(&[("kms:Encrypt", "endpoint-secret")])
    );
    let notify = pairs(&[
        ("kms:Encrypt", "notify-credentials"),
        ("kms:Encrypt", "notify-token"),
    ]);
    assert_eq!(grants["a2a-create-push-config"], notify);
    assert!(grants["a2a-json-rpc"].is_superset(&notify));
    assert!(grants["a2a-send-message"].is_superset(&notify));
    // A token is opened to be shown back; credentials only by the worker that sends them.
    let show_token = pairs(&[("kms:Decrypt", "notify-token")]);
    assert_eq!(grants["a2a-get-push-config"], show_token);
    assert_eq!(grants["a2a-list-push-configs"], show_token);
    assert!(grants["a2a-json-rpc"].is_superset(&show_token));
    assert_eq!(
        grants["push-worker"],
        pairs(&[
            ("kms:Decrypt", "notify-credentials"),
            ("kms:Decrypt", "notify-token"),
            ("kms:Decrypt", "endpoint-secret"),
            ("kms:Encrypt", "webhook-signing"),
            ("kms:Decrypt", "webhook-signing"),
        ])
    );
    let publish = pairs(&[
        ("kms:Encrypt", "card-signing"),
        ("kms:Encrypt", "webhook-signing"),
    ]);
    assert_eq!(grants["get-signing-keys"], publish);
    assert_eq!(grants["rotate-signing-key"], publish);
    assert_eq!(grants["get-public-signing-keys"], publish);
    let openers: Vec<&String> = grants
        .iter()
        .filter(|(_, pairs)| {
            pairs.contains(&("kms:Decrypt".to_owned(), "endpoint-secret".to_owned()))
        })
        .map(|(binary, _)| binary)
        .collect();
    assert_eq!(openers, ["push-worker"]);
    // The purposes are the ones the code seals under.
    let sealed = forgebench::domain::signing::KeyPurpose::ALL
        .map(|purpose| purpose.name())
        .into_iter()
        .chain([
            forgebench::vault::ENDPOINT_SECRET_PURPOSE,
            forgebench::vault::NOTIFY_CREDENTIALS_PURPOSE,
            forgebench::vault::NOTIFY_TOKEN_PURPOSE,
        ]);
    for purpose in sealed {
        assert!(
            grants
                .values()
                .any(|pairs| pairs.iter().any(|(_, p)| p == purpose)),
            "no grant names {purpose}"
        );
    }
}

/// A message too large to stay inside a task item, from `role`.
fn large_message(role: &str) -> serde_json::Value {
    json!({"role": role, "parts": [{"text": "b".repeat(4096)}]})
}

/// The one write every route function may make: noting when a key was last used, on key
/// records only, touching `last_used_at` only.
fn is_key_use_statement(statement: &serde_norway::Value) -> bool {
    let condition = &statement["Condition"];
    statement["Sid"] == "RecordKeyUse"
        && statement["Action"].as_sequence().map(Vec::len) == Some(1)
        && statement["Action"][0] == "dynamodb:UpdateItem"
        && condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
            == serde_norway::from_str::<serde_norway::Value>(r#"["KEY#*"]"#).unwrap()
        && condition["ForAllValues:StringEquals"]["dynamodb:Attributes"]
            == serde_norway::from_str::<serde_norway::Value>("[pk, sk, last_used_at]").unwrap()
}

/// `function (its FORGEBENCH_ROUTE) -> allowed actions`, leaving out the key-use statement.
fn actions_beyond_key_use() -> BTreeMap<String, BTreeSet<String>> {
    let document: serde_norway::Value = serde_norway::from_str(TEMPLATE).unwrap();
    let mut allowed = BTreeMap::new();
    for (_, resource) in document["Resources"].as_mapping().unwrap() {
        if resource["Type"] != "AWS::Serverless::Function" {
            continue;
        }
        let binary = crate::deployment::route_of(resource).expect("FORGEBENCH_ROUTE");
        let mut actions = BTreeSet::new();
        for policy in resource["Properties"]["Policies"].as_sequence().unwrap() {
            for statement in policy["Statement"].as_sequence().unwrap() {
                if is_key_use_statement(statement) {
                    continue;
                }
                for action in statement["Action"].as_sequence().unwrap() {
                    actions.insert(action.as_str().unwrap().to_owned());
                }
            }
        }
        allowed.insert(binary, actions);
    }
    allowed
}

#[test]
fn functions_that_only_read_cannot_write() {
    let allowed = actions_beyond_key_use();
    for binary in [
        "get-agent",
        "get-me",
        "list-agents",
        "list-bindings",
        "list-audit",
        "list-delivery-attempts",
        "get-endpoint-health",
        "list-tools",
        "list-calls",
        "list-agent-keys",
        "list-members",
    ] {
        let actions = &allowed[binary];
        let writes: Vec<&String> = actions
            .iter()
            .filter(|action| !matches!(action.as_str(), "dynamodb:GetItem" | "dynamodb:Query"))
            .collect();
        assert!(writes.is_empty(), "{binary} may {writes:?}");
    }
}

/// The public JWKS may be the first read of a new deployment: its function then makes each
/// purpose's first key (a transaction and a KMS seal per purpose), within its policy.
#[tokio::test]
async fn the_public_jwks_makes_the_first_keys_within_its_policy() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        push_worker: false,
        ..Options::default()
    })
    .await;
    recorder.take();
    let reply = app
        .finish(app.http.get(format!("{}/.well-known/jwks.json", app.base)))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let made: BTreeSet<String> = recorder.take().into_iter().collect();
    for action in [
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "kms:Encrypt@card-signing",
        "kms:Encrypt@webhook-signing",
    ] {
        assert!(made.contains(action), "no {action} in {made:?}");
    }
    let allowed = &allowed_actions()["get-public-signing-keys"];
    let missing: Vec<&String> = made
        .iter()
        .filter(|action| !allowed.contains(*action))
        .collect();
    assert!(
        missing.is_empty(),
        "calls {missing:?} but its policy allows only {allowed:?}"
    );
}

/// A stream's first event as an answer, so the calls that opened the stream are noted under its
/// function before the stream goes on.
fn opened(first: Value) -> Reply {
    Reply {
        status: 200,
        headers: reqwest::header::HeaderMap::new(),
        text: first.to_string(),
        body: first,
    }
}

#[tokio::test]
async fn every_call_a_function_makes_is_allowed_by_its_policy() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        push_worker: false,
        signing_key_lifetime: Duration::ZERO,
        // Streams end by their time limit, in windows of their own: a stream ending while
        // another function's step runs would have its calls noted under that function.
        stream_max_seconds: 3,
        ..Options::local_push()
    })
    .await;
    let observed: std::cell::RefCell<BTreeMap<String, BTreeSet<String>>> = Default::default();
    let note = |route: &str, reply: Reply, recorder: &Recorder| {
        assert!(reply.status < 500, "{route}: {}", reply.text);
        observed
            .borrow_mut()
            .entry(route.to_owned())
            .or_default()
            .extend(recorder.take());
        reply
    };
    recorder.take();
    let op = app.operator_key.clone();
    let r = &recorder;

    let tenant = note(
        "create-tenant",
        app.post("/v1/tenants", &op, json!({"name": "t"})).await,
        r,
    );
    let admin = tenant.field("admin_key");
    let member = note(
        "create-member",
        app.post(
            "/v1/members",
            &admin,
            json!({"name": "m", "role": "member"}),
        )
        .await,
        r,
    );
    let member_key = member.field("key");
    for (key, name) in [
        (&admin, "caller"),
        (&admin, "callee"),
        (&admin, "pushee"),
        (&member_key, "mine"),
    ] {
        note(
            "create-agent",
            app.post("/v1/agents", key, json!({ "name": name })).await,
            r,
        );
    }
    note("list-agents", app.get("/v1/agents", &admin).await, r);
    note("get-agent", app.get("/v1/agents/callee", &admin).await, r);
    note(
        "update-agent",
        app.send(
            "PATCH",
            "/v1/agents/callee",
            Some(&admin),
            Some(json!({"claim_timeout_seconds": 3})),
        )
        .await,
        r,
    );
    let mut keys = BTreeMap::new();
    for name in ["caller", "callee", "pushee", "mine"] {
        let reply = note(
            "create-agent-key",
            app.post(&format!("/v1/agents/{name}/keys"), &admin, json!({}))
                .await,
            r,
        );
        keys.insert(name, reply.field("key"));
    }
    let spare = note(
        "create-agent-key",
        app.post("/v1/agents/caller/keys", &admin, json!({})).await,
        r,
    );
    note(
        "revoke-agent-key",
        app.send(
            "DELETE",
            &format!("/v1/agents/caller/keys/{}", spare.field("key_id")),
            Some(&admin),
            None,
        )
        .await,
        r,
    );
    note(
        "list-agent-keys",
        app.get("/v1/agents/caller/keys", &admin).await,
        r,
    );
    note("list-members", app.get("/v1/members", &admin).await, r);
    let member_id = member.field("member_id");
    let issued = note(
        "create-member-key",
        app.post(&format!("/v1/members/{member_id}/keys"), &admin, json!({}))
            .await,
        r,
    );
    note(
        "revoke-member-key",
        app.send(
            "DELETE",
            &format!("/v1/members/{member_id}/keys/{}", issued.field("key_id")),
            Some(&admin),
            None,
        )
        .await,
        r,
    );
    note("get-me", app.get("/v1/agents/me", &keys["caller"]).await, r);
    let granted = note(
        "grant-bindings",
        app.grant(&admin, "caller", &["callee", "pushee"]).await,
        r,
    );
    let to_callee = granted.body[0]["id"].as_str().unwrap().to_owned();
    let pending = note(
        "grant-bindings",
        app.grant(&member_key, "mine", &["callee"]).await,
        r,
    );
    let binding = pending.body[0]["id"].as_str().unwrap().to_owned();
    note(
        "approve-binding",
        app.post(
            &format!("/v1/agents/callee/agents/{binding}/approve"),
            &admin,
            json!({}),
        )
        .await,
        r,
    );
    note(
        "revoke-binding",
        app.send(
            "DELETE",
            &format!("/v1/agents/callee/agents/{binding}"),
            Some(&admin),
            None,
        )
        .await,
        r,
    );
    note(
        "list-bindings",
        app.get("/v1/agents/callee/agents", &admin).await,
        r,
    );

    // Pull: open, claim, answer; a second one runs past its deadline and is read; a third canceled.
    let task = note(
        "open-task",
        app.open_task(&keys["caller"], "callee", text_message("a"), 0)
            .await,
        r,
    );
    note("claim-next-task", app.claim(&keys["callee"], 0).await, r);
    note(
        "report-task-progress",
        app.post(
            &format!("/v1/agents/me/tasks/{}/progress", task.field("id")),
            &keys["callee"],
            json!({"message": {"parts": [{"text": "halfway"}]}}),
        )
        .await,
        r,
    );
    note(
        "post-task-result",
        app.post_result(
            &keys["callee"],
            &task.field("id"),
            json!({"state": "completed"}),
        )
        .await,
        r,
    );
    let late = note(
        "open-task",
        app.open_task(&keys["caller"], "callee", text_message("b"), 0)
            .await,
        r,
    );
    note("claim-next-task", app.claim(&keys["callee"], 0).await, r);
    // Waiting on a working task holds a long-poll slot.
    let late_id = late.field("id");
    note(
        "get-task",
        app.get(
            &format!("/v1/agents/callee/tasks/{late_id}?wait=1"),
            &keys["caller"],
        )
        .await,
        r,
    );
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let expired = note(
        "get-task",
        app.get_task(&keys["caller"], "callee", &late.field("id"))
            .await,
        r,
    );
    assert_eq!(expired.state(), "failed");
    let third = note(
        "open-task",
        app.open_task(&keys["caller"], "callee", large_message("user"), 0)
            .await,
        r,
    );
    note(
        "cancel-task",
        app.cancel(&keys["caller"], "callee", &third.field("id"))
            .await,
        r,
    );
    // A question answered in place, claimed again and answered; every body here is large
    // enough to live in the body store, so each route's reads and writes of it are observed.
    let question = note(
        "open-task",
        app.open_task(&keys["caller"], "callee", large_message("user"), 0)
            .await,
        r,
    );
    note("claim-next-task", app.claim(&keys["callee"], 0).await, r);
    note(
        "post-task-result",
        app.post_result(
            &keys["callee"],
            &question.field("id"),
            json!({"state": "input_required", "message": large_message("agent")}),
        )
        .await,
        r,
    );
    note(
        "add-task-message",
        app.post(
            &format!("/v1/agents/callee/tasks/{}/messages", question.field("id")),
            &keys["caller"],
            json!({"message": large_message("user")}),
        )
        .await,
        r,
    );
    note("claim-next-task", app.claim(&keys["callee"], 0).await, r);
    note(
        "report-task-progress",
        app.post(
            &format!("/v1/agents/me/tasks/{}/progress", question.field("id")),
            &keys["callee"],
            json!({ "message": large_message("agent") }),
        )
        .await,
        r,
    );
    note(
        "post-task-result",
        app.post_result(
            &keys["callee"],
            &question.field("id"),
            json!({"state": "completed", "artifacts": [{"parts": large_message("agent")["parts"]}]}),
        )
        .await,
        r,
    );
    note(
        "get-task",
        app.get_task(&keys["caller"], "callee", &question.field("id"))
            .await,
        r,
    );
    // The same over A2A's JSON-RPC binding: open, a question answered in place, read, cancel.
    let a2a_message = |id: &str| json!({"messageId": id, "role": "ROLE_USER", "parts": large_message("user")["parts"]});
    let sent = note(
        "a2a-json-rpc",
        app.a2a_rpc(
            "callee",
            &keys["caller"],
            "SendMessage",
            json!({"message": a2a_message("tour-1"), "configuration": {"returnImmediately": true}}),
        )
        .await,
        r,
    );
    let a2a_task = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    note("claim-next-task", app.claim(&keys["callee"], 5).await, r);
    note(
        "post-task-result",
        app.post_result(
            &keys["callee"],
            &a2a_task,
            json!({"state": "input_required", "message": large_message("agent")}),
        )
        .await,
        r,
    );
    let mut answer = a2a_message("tour-2");
    answer["taskId"] = json!(a2a_task);
    let answered = note(
        "a2a-json-rpc",
        app.a2a_rpc(
            "callee",
            &keys["caller"],
            "SendMessage",
            json!({"message": answer, "configuration": {"returnImmediately": true}}),
        )
        .await,
        r,
    );
    assert!(
        answered.body["result"]["task"].is_object(),
        "{}",
        answered.text
    );
    note(
        "a2a-json-rpc",
        app.a2a_rpc(
            "callee",
            &keys["caller"],
            "GetTask",
            json!({"id": a2a_task}),
        )
        .await,
        r,
    );
    let listed = note(
        "a2a-json-rpc",
        app.a2a_rpc(
            "callee",
            &keys["caller"],
            "ListTasks",
            json!({"pageSize": 2}),
        )
        .await,
        r,
    );
    assert!(listed.body["result"]["tasks"].is_array(), "{}", listed.text);
    let canceled = note(
        "a2a-json-rpc",
        app.a2a_rpc(
            "callee",
            &keys["caller"],
            "CancelTask",
            json!({"id": a2a_task}),
        )
        .await,
        r,
    );
    assert!(canceled.body["result"].is_object(), "{}", canceled.text);
    // And over the HTTP+JSON binding.
    let rest_sent = note(
        "a2a-send-message",
        app.a2a_rest(
            "POST",
            "callee",
            "/message:send",
            &keys["caller"],
            Some(json!({"message": a2a_message("tour-3"), "configuration": {"returnImmediately": true}})),
        )
        .await,
        r,
    );
    let rest_task = rest_sent.body["task"]["id"].as_str().unwrap().to_owned();
    note(
        "a2a-get-task",
        app.a2a_rest(
            "GET",
            "callee",
            &format!("/tasks/{rest_task}"),
            &keys["caller"],
            None,
        )
        .await,
        r,
    );
    note(
        "a2a-list-tasks",
        app.a2a_rest("GET", "callee", "/tasks?pageSize=3", &keys["caller"], None)
            .await,
        r,
    );
    let rest_canceled = note(
        "a2a-task-action",
        app.a2a_rest(
            "POST",
            "callee",
            &format!("/tasks/{rest_task}:cancel"),
            &keys["caller"],
            None,
        )
        .await,
        r,
    );
    assert_eq!(rest_canceled.status, 200, "{}", rest_canceled.text);
    // Push notification configs, over both bindings, with sealed credentials.
    let config = json!({"id": "tour-hook", "url": "http://127.0.0.1:9/hook",
                        "authentication": {"scheme": "Bearer", "credentials": "c"}});
    let configs = format!("/tasks/{rest_task}/pushNotificationConfigs");
    let created = note(
        "a2a-create-push-config",
        app.a2a_rest("POST", "callee", &configs, &keys["caller"], Some(config))
            .await,
        r,
    );
    assert_eq!(created.status, 200, "{}", created.text);
    note(
        "a2a-list-push-configs",
        app.a2a_rest("GET", "callee", &configs, &keys["caller"], None)
            .await,
        r,
    );
    note(
        "a2a-get-push-config",
        app.a2a_rest(
            "GET",
            "callee",
            &format!("{configs}/tour-hook"),
            &keys["caller"],
            None,
        )
        .await,
        r,
    );
    // Its latest event again (the config started at the task's last: a 409, with its reads).
    note(
        "replay-notification",
        app.post(
            &format!("/v1/agents/callee/tasks/{rest_task}/notifications/tour-hook/replay"),
            &keys["caller"],
            json!({}),
        )
        .await,
        r,
    );
    let deleted = note(
        "a2a-delete-push-config",
        app.a2a_rest(
            "DELETE",
            "callee",
            &format!("{configs}/tour-hook"),
            &keys["caller"],
            None,
        )
        .await,
        r,
    );
    assert_eq!(deleted.status, 200, "{}", deleted.text);
    for (method, params) in [
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": rest_task, "id": "rpc-hook", "url": "http://127.0.0.1:9/hook",
                   "authentication": {"scheme": "Bearer", "credentials": "c"}}),
        ),
        (
            "ListTaskPushNotificationConfigs",
            json!({"taskId": rest_task}),
        ),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": rest_task, "id": "rpc-hook"}),
        ),
    ] {
        let reply = note(
            "a2a-json-rpc",
            app.a2a_rpc("callee", &keys["caller"], method, params).await,
            r,
        );
        assert!(reply.body.get("error").is_none(), "{}", reply.text);
    }
    // Streams: a task's events over REST, a streamed send and a subscription over A2A, each
    // followed to its end.
    let finished = note(
        "task-events",
        app.events(&keys["caller"], "callee", &rest_task, None)
            .await
            .into_reply()
            .await,
        r,
    );
    assert_eq!(
        finished.body[0]["id"],
        rest_task.as_str(),
        "{}",
        finished.text
    );
    let mut streamed = app
        .a2a_stream(
            "POST",
            "/v1/agents/callee/a2a/message:stream",
            &keys["caller"],
            Some(json!({"message": a2a_message("tour-4")})),
        )
        .await;
    let first = streamed.next_event().await.expect("the task").json();
    let streamed_task = first["task"]["id"].as_str().unwrap().to_owned();
    note("a2a-stream-message", opened(first), r);
    let mut subscribed = app
        .a2a_stream(
            "GET",
            &format!("/v1/agents/callee/a2a/tasks/{streamed_task}:subscribe"),
            &keys["caller"],
            None,
        )
        .await;
    let first = subscribed.next_event().await.expect("the task").json();
    note("a2a-get-task", opened(first), r);
    let mut over_rpc = app
        .a2a_stream(
            "POST",
            "/v1/agents/callee/a2a/jsonrpc",
            &keys["caller"],
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": streamed_task}})),
        )
        .await;
    let first = over_rpc.next_event().await.expect("the task").json();
    note("a2a-json-rpc", opened(first), r);
    note("claim-next-task", app.claim(&keys["callee"], 5).await, r);
    note("a2a-stream-message", streamed.into_reply().await, r);
    note("a2a-get-task", subscribed.into_reply().await, r);
    note("a2a-json-rpc", over_rpc.into_reply().await, r);
    note(
        "post-task-result",
        app.post_result(&keys["callee"], &streamed_task, json!({"state": "completed", "artifacts": [{"parts": large_message("agent")["parts"]}]}))
            .await,
        r,
    );
    // Task search: by words (postings, then the tasks and their bodies) and by state.
    for query in ["q=d&limit=5", "state=completed&direction=outbound&limit=2"] {
        let found = note(
            "search-tasks",
            app.get(&format!("/v1/tasks?{query}"), &keys["caller"])
                .await,
            r,
        );
        assert_eq!(found.status, 200, "{}", found.text);
    }
    // The sweeper over a task whose deadline passed unread.
    let unread = note(
        "open-task",
        app.open_task(&keys["caller"], "callee", text_message("d"), 0)
            .await,
        r,
    );
    note("claim-next-task", app.claim(&keys["callee"], 0).await, r);
    tokio::time::sleep(Duration::from_millis(3200)).await;
    recorder.take();
    assert_eq!(
        forgebench::sweeper::sweep_overdue(&app.app.store, &app.app.queue, &app.app.bodies)
            .await
            .done,
        1
    );
    forgebench::sweeper::sweep_outbox(&app.app.store, &app.app.queue).await;
    // Every task of the tour is indexed by now; one whose indexing is due again is swept.
    app.flag_words_due(&unread.field("id")).await;
    let indexed =
        forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~").await;
    assert!(indexed.done >= 1, "{indexed:?}");
    observed
        .borrow_mut()
        .entry("sweep-deadlines".into())
        .or_default()
        .extend(recorder.take());

    note("list-audit", app.get("/v1/audit", &admin).await, r);
    note(
        "get-tenant-settings",
        app.get("/v1/tenant/settings", &admin).await,
        r,
    );
    note(
        "update-tenant-settings",
        app.send(
            "PATCH",
            "/v1/tenant/settings",
            Some(&admin),
            Some(json!({"word_search": true})),
        )
        .await,
        r,
    );
    note(
        "list-calls",
        app.get(
            &format!("/v1/calls?root_call_id={}", task.field("call_id")),
            &admin,
        )
        .await,
        r,
    );

    // The console: its page and files, and a session standing in for the admin key.
    for (route, path) in [
        ("console-page", "/console"),
        ("console-asset", "/console/app.js"),
    ] {
        let served = note(
            route,
            app.finish(app.http.get(format!("{}{path}", app.base)))
                .await,
            r,
        );
        assert_eq!(served.status, 200, "{path}");
    }
    let signed_in = note(
        "create-console-session",
        app.finish(
            app.http
                .post(format!("{}/console/session", app.base))
                .header("content-type", "application/json")
                .body(json!({ "key": admin }).to_string()),
        )
        .await,
        r,
    );
    assert_eq!(signed_in.status, 201, "{}", signed_in.text);
    let cookie = signed_in.headers["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let csrf = signed_in.field("csrf_token");
    note(
        "get-console-session",
        app.finish(
            app.http
                .get(format!("{}/console/session", app.base))
                .header("cookie", &cookie),
        )
        .await,
        r,
    );
    note(
        "list-agents",
        app.finish(
            app.http
                .get(format!("{}/v1/agents", app.base))
                .header("cookie", &cookie),
        )
        .await,
        r,
    );
    let signed_out = note(
        "delete-console-session",
        app.finish(
            app.http
                .delete(format!("{}/console/session", app.base))
                .header("cookie", &cookie)
                .header("x-csrf-token", &csrf),
        )
        .await,
        r,
    );
    assert_eq!(signed_out.status, 204, "{}", signed_out.text);

    // Push: endpoint with a sealed secret, an open that enqueues, the worker's delivery of a
    // large message and its large answer.
    let callee = Callee::start(|_| {
        Answer::json(
            200,
            json!({"state": "completed", "artifacts": [{"parts": large_message("agent")["parts"]}]}),
        )
    })
    .await;
    note(
        "set-endpoint",
        app.set_endpoint(
            &admin,
            "pushee",
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": "s"}}),
        )
        .await,
        r,
    );
    let pushed = note(
        "open-task",
        app.open_task(&keys["caller"], "pushee", large_message("user"), 0)
            .await,
        r,
    );
    recorder.take();
    let worker = app.app.worker();
    let jobs = app.app.queue.receive(Duration::from_secs(2)).await.unwrap();
    assert!(!jobs.is_empty());
    let failed = worker
        .handle_batch(&jobs, forgebench::push::worker::INVOCATION_TIME)
        .await;
    for job in jobs.iter().filter(|job| !failed.contains(&job.message_id)) {
        app.app.queue.delete(&job.receipt_handle).await.unwrap();
    }
    observed
        .borrow_mut()
        .entry("push-worker".into())
        .or_default()
        .extend(recorder.take());
    note(
        "list-delivery-attempts",
        app.get(
            &format!("/v1/agents/pushee/tasks/{}/attempts", pushed.field("id")),
            &admin,
        )
        .await,
        r,
    );
    note(
        "get-endpoint-health",
        app.get("/v1/agents/pushee/endpoint/health", &admin).await,
        r,
    );
    note(
        "replay-delivery",
        app.post(
            &format!("/v1/agents/pushee/tasks/{}/replay", pushed.field("id")),
            &admin,
            json!({}),
        )
        .await,
        r,
    );
    note(
        "redrive-deliveries",
        app.post(
            "/v1/agents/pushee/endpoint/redrive",
            &admin,
            json!({"since": "2026-01-01T00:00:00Z"}),
        )
        .await,
        r,
    );
    note(
        "enable-endpoint",
        app.post("/v1/agents/pushee/endpoint/enable", &admin, json!({}))
            .await,
        r,
    );

    // Cards and keys: the first read makes the signing key; a cold process opens it.
    note(
        "put-tool",
        app.send(
            "PUT",
            "/v1/agents/callee/tools/lookup",
            Some(&admin),
            Some(json!({"description": "d"})),
        )
        .await,
        r,
    );
    note(
        "list-tools",
        app.get("/v1/agents/callee/tools", &admin).await,
        r,
    );
    note(
        "get-agent-card",
        app.get("/v1/agents/callee/.well-known/agent-card.json", &admin)
            .await,
        r,
    );
    note(
        "list-agent-cards",
        app.get("/v1/agents/cards", &admin).await,
        r,
    );
    let published = note(
        "get-signing-keys",
        app.get("/v1/billing/export/pubkey", &admin).await,
        r,
    );
    let public = note(
        "get-public-signing-keys",
        app.finish(app.http.get(format!("{}/.well-known/jwks.json", app.base)))
            .await,
        r,
    );
    assert_eq!(public.body, published.body, "{}", public.text);
    note(
        "rotate-signing-key",
        app.post("/v1/signing-keys/rotate", &op, json!({})).await,
        r,
    );
    note(
        "rotate-signing-key",
        app.post(
            "/v1/signing-keys/rotate",
            &op,
            json!({"purpose": "webhook-signing"}),
        )
        .await,
        r,
    );
    // With no key cache (lifetime 0), the replaced card key may be retired after the margin.
    tokio::time::sleep(forgebench::domain::signing::CLOCK_MARGIN).await;
    let replaced = published.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|key| key["purpose"] == "card-signing")
        .and_then(|key| key["kid"].as_str())
        .unwrap()
        .to_owned();
    let retired = note(
        "retire-signing-key",
        app.post(
            &format!("/v1/signing-keys/{replaced}/retire"),
            &op,
            json!({}),
        )
        .await,
        r,
    );
    assert_eq!(retired.status, 200, "{}", retired.text);
    note(
        "delete-tool",
        app.send(
            "DELETE",
            "/v1/agents/callee/tools/lookup",
            Some(&admin),
            None,
        )
        .await,
        r,
    );
    // Trusted issuers, a token's sign-in (its reads are those of the route it signs in on) and
    // the protected resource metadata.
    let provider = forgebench_tests::OidcProvider::start().await;
    recorder.take();
    let subjects = json!([{"subject": "svc-callee", "agent": "callee"}]);
    let trusted = note(
        "trust-issuer",
        app.post(
            "/v1/issuers",
            &admin,
            json!({"issuer": provider.issuer, "audience": "tour", "subjects": subjects}),
        )
        .await,
        r,
    );
    assert_eq!(trusted.status, 201, "{}", trusted.text);
    let issuer = format!("/v1/issuers/{}", trusted.field("id"));
    note("list-issuers", app.get("/v1/issuers", &admin).await, r);
    let patch = json!({ "subjects": subjects });
    note(
        "update-issuer",
        app.send("PATCH", &issuer, Some(&admin), Some(patch)).await,
        r,
    );
    let token = provider.client_credentials("svc-callee", "tour").await;
    recorder.take();
    let me = note("get-me", app.get("/v1/agents/me", &token).await, r);
    assert_eq!(me.status, 200, "{}", me.text);
    let callee_id = me.field("id");
    let metadata = format!(
        "{}/v1/agents/{callee_id}/.well-known/oauth-protected-resource",
        app.base
    );
    note(
        "get-agent-resource-metadata",
        app.finish(app.http.get(metadata)).await,
        r,
    );
    let gateway = format!("{}/.well-known/oauth-protected-resource", app.base);
    note(
        "get-gateway-resource-metadata",
        app.finish(app.http.get(gateway)).await,
        r,
    );
    note(
        "distrust-issuer",
        app.send("DELETE", &issuer, Some(&admin), None).await,
        r,
    );
    // Call-tree limits set on a tenant whose first tree predates them: an open below its root
    // counts the root's tasks and the tree's open tasks again from the ledger (the tree's calls
    // on gsi1, their tasks), then counts itself; a cancel takes a task off its tree's count.
    let limits = json!({"refuse_cycles": true, "max_fan_out": 100, "max_open_in_tree": 100});
    note(
        "update-tenant-settings",
        app.send("PATCH", "/v1/tenant/settings", Some(&admin), Some(limits))
            .await,
        r,
    );
    // A contract and a binding's own count limit: the binding's use counted at each open and
    // given back at each finish, every open of the tenant counted for the binding's limit.
    let terms = json!({"limits": {"max_fan_out": 50},
                       "contract": {"max_concurrent": 50, "rate_per_minute": 100, "daily_quota": 1000}});
    note(
        "update-binding",
        app.send(
            "PATCH",
            &format!("/v1/agents/caller/agents/{to_callee}"),
            Some(&admin),
            Some(terms),
        )
        .await,
        r,
    );
    note(
        "list-bindings",
        app.get("/v1/agents/callee/agents", &admin).await,
        r,
    );
    let below = app
        .http
        .post(format!("{}/v1/agents/callee/tasks", app.base))
        .bearer_auth(&keys["caller"])
        .header("X-Parent-Call", "00000000-0000-4000-8000-000000000000")
        .json(&json!({"message": text_message("below another system's call")}));
    let below = note("open-task", app.finish(below).await, r);
    let child = app
        .http
        .post(format!("{}/v1/agents/callee/tasks", app.base))
        .bearer_auth(&keys["caller"])
        .header("X-Parent-Call", task.field("call_id"))
        .json(&json!({"message": text_message("below the first task")}));
    let child = note("open-task", app.finish(child).await, r);
    for opened in [&below, &child] {
        assert_eq!(opened.status, 200, "{}", opened.text);
        note(
            "cancel-task",
            app.cancel(&keys["caller"], "callee", &opened.field("id"))
                .await,
            r,
        );
    }
    // Tenant policies: saved, read and checked; then an open below another system's call
    // judged, a caller's read refused by an enforced policy (recorded), and a cancel judged on
    // its task's call.
    let policies = json!({"policies": {
        "tour-tried": {"policy": r#"forbid(principal, action == Action::"open", resource)
            when { context has root_caller && context.root_caller.name == "caller" };"#},
        "tour-reads": {"policy": r#"forbid(principal, action == Action::"read", resource)
            when { context.depth > 1 };"#, "mode": "enforce"}}});
    note(
        "update-tenant-policies",
        app.send("PATCH", "/v1/tenant/policies", Some(&admin), Some(policies))
            .await,
        r,
    );
    note(
        "get-tenant-policies",
        app.get("/v1/tenant/policies", &admin).await,
        r,
    );
    note(
        "check-call",
        app.post(
            "/v1/tenant/policies/check",
            &admin,
            json!({"caller": "caller", "callee": "callee", "skill": "lookup"}),
        )
        .await,
        r,
    );
    let judged = app
        .http
        .post(format!("{}/v1/agents/callee/tasks", app.base))
        .bearer_auth(&keys["caller"])
        .header("X-Parent-Call", "00000000-0000-4000-8000-000000000001")
        .json(&json!({"message": text_message("below another call, judged")}));
    let judged = note("open-task", app.finish(judged).await, r);
    assert_eq!(judged.status, 200, "{}", judged.text);
    let judged_id = judged.field("id");
    let read = app.get_task(&keys["caller"], "callee", &judged_id).await;
    assert_eq!(read.status, 403, "{}", read.text);
    note("get-task", read, r);
    note(
        "cancel-task",
        app.cancel(&keys["caller"], "callee", &judged_id).await,
        r,
    );
    let cold = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        push_worker: false,
        table: Some(app.table.clone()),
        ..Options::local_push()
    })
    .await;
    recorder.take();
    note(
        "get-agent-card",
        cold.get("/v1/agents/callee/.well-known/agent-card.json", &admin)
            .await,
        r,
    );

    let observed = observed.into_inner();
    for (function, action) in [
        ("open-task", "s3:PutObject"),
        ("a2a-json-rpc", "s3:PutObject"),
        ("a2a-json-rpc", "s3:GetObject"),
        ("add-task-message", "s3:PutObject"),
        ("report-task-progress", "s3:PutObject"),
        ("post-task-result", "s3:PutObject"),
        ("push-worker", "s3:PutObject"),
        ("claim-next-task", "s3:GetObject"),
        ("get-task", "s3:GetObject"),
        ("cancel-task", "s3:GetObject"),
        ("push-worker", "s3:GetObject"),
    ] {
        assert!(
            observed[function].contains(action),
            "the tour makes {function} use the body store ({action})"
        );
    }
    let allowed = allowed_actions();
    let mut toured: BTreeSet<String> = forgebench::Route::ALL
        .iter()
        .map(|route| route.name())
        .collect();
    toured.extend(["push-worker".to_owned(), "sweep-deadlines".to_owned()]);
    assert_eq!(
        observed.keys().cloned().collect::<BTreeSet<_>>(),
        toured,
        "the tour covers every function"
    );
    for (function, actions) in &observed {
        let permitted = &allowed[function];
        let missing: Vec<&String> = actions
            .iter()
            .filter(|action| !permitted.contains(*action))
            .collect();
        assert!(
            missing.is_empty(),
            "{function} calls {missing:?} but its policy allows only {permitted:?}"
        );
    }
}
