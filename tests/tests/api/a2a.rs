//! A2A 1.0 over JSON-RPC at the gate: the same governance as the REST routes, the A2A wire
//! format and errors.

use aws_sdk_dynamodb::types::AttributeValue;
use forgebench_tests::{
    spawn_app, spawn_app_with, text_message, Answer, Callee, Options, Pair, TestApp,
};
use serde_json::{json, Value};

fn a2a_message(text: &str, message_id: &str) -> Value {
    json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// Sends `text` to the pair's callee without waiting; returns the JSON-RPC `result.task`.
async fn send(app: &TestApp, pair: &Pair, text: &str, message_id: &str) -> Value {
    let reply = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": a2a_message(text, message_id),
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["jsonrpc"], "2.0", "{}", reply.text);
    assert_eq!(reply.body["id"], 1, "{}", reply.text);
    reply.body["result"]["task"].clone()
}

fn error_code(reply: &forgebench_tests::Reply) -> i64 {
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no JSON-RPC error in {}", reply.text))
}

#[tokio::test]
async fn a_task_sent_over_a2a_is_an_ordinary_task_a_pull_callee_answers() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task = send(&app, &pair, "classify INV-1", "m-1").await;
    assert_eq!(task["status"]["state"], "TASK_STATE_SUBMITTED");
    assert_eq!(task["history"][0]["parts"][0]["text"], "classify INV-1");
    assert_eq!(task["history"][0]["messageId"], "m-1");
    let task_id = task["id"].as_str().unwrap().to_owned();

    // The callee sees no difference: it claims the task over REST and answers it.
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.field("id"), task_id);
    let answered = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": [{"name": "label", "parts": [{"text": "utilities"}]}]}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);

    let read = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "GetTask",
            json!({"id": task_id}),
        )
        .await;
    let task = &read.body["result"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        read.text
    );
    assert_eq!(task["contextId"], claimed.field("context_id"));
    assert_eq!(task["artifacts"][0]["name"], "label");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "utilities");
    assert!(task["artifacts"][0]["artifactId"].is_string());
    let rest = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(rest.state(), "completed", "REST reads show the A2A task");

    let short = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "GetTask",
            json!({"id": task_id, "historyLength": 1}),
        )
        .await;
    let history = short.body["result"]["history"].as_array().unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["role"], "ROLE_AGENT");
}

#[tokio::test]
async fn a_blocking_send_waits_for_the_answer() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let callee = async {
        let claimed = app.claim(&pair.callee.key, 10).await;
        app.post_result(
            &pair.callee.key,
            &claimed.field("id"),
            json!({"state": "completed", "message": text_message("done")}),
        )
        .await
    };
    let caller = app.a2a_rpc(
        &pair.callee.id,
        &pair.caller.key,
        "SendMessage",
        json!({"message": a2a_message("work", "m-block")}),
    );
    let (answered, reply) = tokio::join!(callee, caller);
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(
        reply.body["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        reply.text
    );
    assert_eq!(
        reply.body["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "done"
    );
}

#[tokio::test]
async fn a_message_naming_its_task_answers_the_question_in_place() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task = send(&app, &pair, "pay INV-2", "m-2").await;
    let task_id = task["id"].as_str().unwrap().to_owned();
    app.claim(&pair.callee.key, 5).await;
    let asked = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "input_required", "message": {"role": "agent", "parts": [{"text": "which account?"}]}}),
        )
        .await;
    assert_eq!(asked.status, 200, "{}", asked.text);

    let mut answer = a2a_message("ACC-9", "m-3");
    answer["taskId"] = json!(task_id);
    let reply = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": answer, "configuration": {"returnImmediately": true}}),
        )
        .await;
    let task = &reply.body["result"]["task"];
    assert_eq!(task["id"], task_id.as_str(), "{}", reply.text);
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");
    let history = task["history"].as_array().unwrap();
    assert_eq!(history.last().unwrap()["parts"][0]["text"], "ACC-9");
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(
        claimed.field("id"),
        task_id,
        "claimable again after the answer"
    );

    // A finished task takes no more messages; an unknown one is not found.
    app.post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
        .await;
    let mut late = a2a_message("again", "m-4");
    late["taskId"] = json!(task_id);
    let refused = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": late}),
        )
        .await;
    assert_eq!(error_code(&refused), -32004, "UnsupportedOperation");
    let mut unknown = a2a_message("x", "m-5");
    unknown["taskId"] = json!(uuid::Uuid::new_v4().to_string());
    let missing = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": unknown}),
        )
        .await;
    assert_eq!(error_code(&missing), -32001, "TaskNotFound");
}

#[tokio::test]
async fn cancel_cancels_once_and_then_the_task_is_not_cancelable() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task = send(&app, &pair, "to cancel", "m-6").await;
    let cancel = json!({"id": task["id"]});
    let canceled = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "CancelTask",
            cancel.clone(),
        )
        .await;
    assert_eq!(
        canceled.body["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{}",
        canceled.text
    );
    let again = app
        .a2a_rpc(&pair.callee.id, &pair.caller.key, "CancelTask", cancel)
        .await;
    assert_eq!(error_code(&again), -32002, "TaskNotCancelable");
    let unknown = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "GetTask",
            json!({"id": "not-a-task"}),
        )
        .await;
    assert_eq!(error_code(&unknown), -32001);
}

#[tokio::test]
async fn a_repeated_message_id_opens_one_task_and_lineage_is_kept() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let first = send(&app, &pair, "once", "m-same").await;
    let again = send(&app, &pair, "once", "m-same").await;
    assert_eq!(first["id"], again["id"]);
    assert_eq!(
        app.claim(&pair.callee.key, 5).await.field("id"),
        first["id"].as_str().unwrap()
    );
    assert_eq!(
        app.claim(&pair.callee.key, 1).await.status,
        204,
        "one task, claimed once"
    );
}

#[tokio::test]
async fn without_a_binding_the_gate_refuses_and_an_unknown_agent_looks_the_same() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let refused = app
        .a2a_rpc(
            &pair.callee.id,
            &stranger.key,
            "SendMessage",
            json!({"message": a2a_message("hi", "m-7")}),
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_eq!(refused.body["detail"]["code"], "not_permitted");
    let nobody = app
        .a2a_rpc(
            &uuid::Uuid::new_v4().to_string(),
            &stranger.key,
            "SendMessage",
            json!({"message": a2a_message("hi", "m-8")}),
        )
        .await;
    assert_eq!(
        (nobody.status, nobody.text.clone()),
        (refused.status, refused.text.clone())
    );
    let anonymous = app
        .a2a_rpc_raw(&pair.callee.id, None, Some("1.0"), "{}")
        .await;
    assert_eq!(anonymous.status, 401);
}

#[tokio::test]
async fn protocol_errors_are_json_rpc_error_objects() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (agent, key) = (pair.callee.id.as_str(), pair.caller.key.as_str());
    #[rustfmt::skip]
    let cases: [(Option<&str>, &str, i64); 8] = [
        (Some("1.0"), "{nope", -32700),
        (Some("1.0"), r#"{"jsonrpc": "2.0", "id": 1}"#, -32600),
        (Some("1.0"), r#"{"jsonrpc": "2.0", "id": 1, "method": "message/send"}"#, -32601),
        (Some("1.0"), r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}"#, -32602),
        (Some("1.0"), r#"{"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {}}"#, -32602),
        (Some("1.0"), r#"{"jsonrpc": "2.0", "id": 1, "method": "CreateTaskPushNotificationConfig", "params": {}}"#, -32602),
        (None, r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}"#, -32009),
        (Some("0.3"), r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}"#, -32009),
    ];
    for (version, body, code) in cases {
        let reply = app.a2a_rpc_raw(agent, Some(key), version, body).await;
        assert_eq!(error_code(&reply), code, "{body} -> {}", reply.text);
        assert_eq!(reply.headers["content-type"], "application/json", "{body}");
    }
    let raw = app
        .a2a_rpc(
            agent,
            key,
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "A!"}]}}),
        )
        .await;
    assert_eq!(error_code(&raw), -32602, "InvalidParams: not base64");
    assert!(raw.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("parts[0].raw"));
}

/// Opens `count` tasks one after another, each saying `{prefix} {n}`; their ids, oldest first.
async fn send_tasks(app: &TestApp, pair: &Pair, count: usize, prefix: &str) -> Vec<String> {
    let mut ids = Vec::new();
    for index in 0..count {
        let task = send(
            app,
            pair,
            &format!("{prefix} {index}"),
            &format!("{prefix}-{index}"),
        )
        .await;
        ids.push(task["id"].as_str().unwrap().to_owned());
    }
    ids
}

/// Every task a caller may list, walking the page tokens.
async fn list_all(app: &TestApp, pair: &Pair, page_size: usize) -> Vec<String> {
    let (mut seen, mut token) = (Vec::new(), String::new());
    for _ in 0..20 {
        let mut params = json!({"pageSize": page_size});
        if !token.is_empty() {
            params["pageToken"] = json!(token);
        }
        let page = app
            .a2a_rpc(&pair.callee.id, &pair.caller.key, "ListTasks", params)
            .await;
        for task in page.body["result"]["tasks"].as_array().unwrap() {
            seen.push(task["id"].as_str().unwrap().to_owned());
        }
        token = page.body["result"]["nextPageToken"]
            .as_str()
            .unwrap()
            .to_owned();
        if token.is_empty() {
            return seen;
        }
    }
    panic!("the page tokens never ended: {seen:?}");
}

#[tokio::test]
async fn list_tasks_passes_over_tasks_past_their_retention_to_the_ones_behind_them() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let ids = send_tasks(&app, &pair, 3, "kept").await;
    // The two newest are past their retention, not yet deleted by the table's time to live:
    // a whole page of the index that lists nothing.
    for id in &ids[1..] {
        app.update_task_item(id)
            .update_expression("SET expires_at = :past")
            .expression_attribute_values(":past", AttributeValue::N("1000".into()))
            .send()
            .await
            .unwrap();
    }
    assert_eq!(list_all(&app, &pair, 2).await, [ids[0].clone()]);
    assert_eq!(list_all(&app, &pair, 1).await, [ids[0].clone()]);
}

#[tokio::test]
async fn list_tasks_pages_newest_first_with_filters_from_the_place_a_token_names() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let ids = send_tasks(&app, &pair, 5, "list").await;
    let list = |params: Value| app.a2a_rpc(&pair.callee.id, &pair.caller.key, "ListTasks", params);
    let first = list(json!({"pageSize": 2})).await;
    let result = &first.body["result"];
    let page: Vec<&str> = result["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap())
        .collect();
    assert_eq!(page, [ids[4].as_str(), ids[3].as_str()], "{}", first.text);
    assert!(
        result["tasks"][0].get("artifacts").is_none(),
        "artifacts only when asked"
    );
    assert!(!result["nextPageToken"].as_str().unwrap().is_empty());
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(
        list_all(&app, &pair, 2).await,
        newest_first,
        "every task once, newest first"
    );

    // Filters: state, and a conversation.
    app.a2a_rpc(
        &pair.callee.id,
        &pair.caller.key,
        "CancelTask",
        json!({"id": ids[1]}),
    )
    .await;
    let canceled = list(json!({"status": "TASK_STATE_CANCELED", "includeArtifacts": true})).await;
    let tasks = canceled.body["result"]["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{}", canceled.text);
    assert_eq!(tasks[0]["id"], ids[1].as_str());
    assert_eq!(tasks[0]["artifacts"], json!([]));
    assert_eq!(canceled.body["result"]["nextPageToken"], "");
    let context = tasks[0]["contextId"].as_str().unwrap();
    let in_context = list(json!({"contextId": context})).await;
    assert_eq!(
        in_context.body["result"]["tasks"].as_array().unwrap().len(),
        1
    );
    let later = list(json!({"statusTimestampAfter": "2999-01-01T00:00:00Z"})).await;
    assert_eq!(later.body["result"]["tasks"], json!([]));

    // A token is a place: with other filters, their tasks from there on (the canceled task lies
    // below the first page); a token of another shape is refused.
    let first_token = first.body["result"]["nextPageToken"].as_str().unwrap();
    let from_there = list(json!({"pageToken": first_token, "status": "TASK_STATE_CANCELED"})).await;
    assert_eq!(
        from_there.body["result"]["tasks"][0]["id"],
        ids[1].as_str(),
        "{}",
        from_there.text
    );
    let above = list(json!({"pageToken": first_token, "status": "TASK_STATE_SUBMITTED"})).await;
    let below: Vec<&str> = above.body["result"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap())
        .collect();
    assert_eq!(below, [ids[2].as_str(), ids[0].as_str()], "{}", above.text);
    let made_up = list(json!({"pageToken": "bm9wZQ"})).await;
    assert_eq!(error_code(&made_up), -32602);
    let too_big = list(json!({"pageSize": 101})).await;
    assert_eq!(error_code(&too_big), -32602);

    // Another caller sees none of these.
    let other = app
        .create_agent(&pair.tenant.admin_key, "other-caller")
        .await;
    let theirs = app
        .a2a_rpc(&pair.callee.id, &other.key, "ListTasks", json!({}))
        .await;
    assert_eq!(theirs.body["result"]["tasks"], json!([]), "{}", theirs.text);
}

fn status_reason(reply: &forgebench_tests::Reply) -> (u16, String) {
    let detail = &reply.body["error"]["details"][0];
    assert_eq!(detail["domain"], "a2a-protocol.org", "{}", reply.text);
    assert_eq!(
        detail["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{}",
        reply.text
    );
    (
        reply.status,
        detail["reason"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test]
async fn the_http_json_binding_serves_the_same_methods() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (agent, key) = (pair.callee.id.as_str(), pair.caller.key.as_str());
    let sent = app
        .a2a_rest(
            "POST",
            agent,
            "/message:send",
            key,
            Some(json!({"message": a2a_message("over rest", "r-1"),
                        "configuration": {"returnImmediately": true}})),
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert_eq!(sent.headers["content-type"], "application/a2a+json");
    let task_id = sent.body["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(sent.body["task"]["status"]["state"], "TASK_STATE_SUBMITTED");

    let read = app
        .a2a_rest(
            "GET",
            agent,
            &format!("/tasks/{task_id}?historyLength=1"),
            key,
            None,
        )
        .await;
    assert_eq!(read.body["id"], task_id.as_str(), "{}", read.text);
    assert_eq!(read.body["history"].as_array().unwrap().len(), 1);

    let listed = app
        .a2a_rest(
            "GET",
            agent,
            "/tasks?pageSize=10&includeArtifacts=true",
            key,
            None,
        )
        .await;
    assert_eq!(
        listed.body["tasks"][0]["id"],
        task_id.as_str(),
        "{}",
        listed.text
    );
    assert_eq!(listed.body["nextPageToken"], "");

    let canceled = app
        .a2a_rest(
            "POST",
            agent,
            &format!("/tasks/{task_id}:cancel"),
            key,
            None,
        )
        .await;
    assert_eq!(
        canceled.body["status"]["state"], "TASK_STATE_CANCELED",
        "{}",
        canceled.text
    );

    let again = app
        .a2a_rest(
            "POST",
            agent,
            &format!("/tasks/{task_id}:cancel"),
            key,
            None,
        )
        .await;
    assert_eq!(status_reason(&again), (400, "TASK_NOT_CANCELABLE".into()));
    let unknown = app
        .a2a_rest("GET", agent, "/tasks/no-such-task", key, None)
        .await;
    assert_eq!(status_reason(&unknown), (404, "TASK_NOT_FOUND".into()));
    let subscribe = app
        .a2a_rest(
            "POST",
            agent,
            &format!("/tasks/{task_id}:subscribe"),
            key,
            None,
        )
        .await;
    assert_eq!(
        status_reason(&subscribe),
        (400, "UNSUPPORTED_OPERATION".into())
    );
    let bad = app
        .a2a_rest("GET", agent, "/tasks?pageSize=many", key, None)
        .await;
    assert_eq!(status_reason(&bad), (400, "INVALID_PARAMS".into()));
    let not_json = app
        .send_raw(
            "POST",
            &format!("/v1/agents/{agent}/a2a/message:send"),
            key,
            "{nope",
        )
        .await;
    assert_eq!(not_json.status, 400, "{}", not_json.text);
    assert_eq!(
        not_json.body["error"]["details"][0]["reason"], "VERSION_NOT_SUPPORTED",
        "send_raw sends no A2A-Version: the version is checked first"
    );
    let array = app
        .a2a_rest("POST", agent, "/message:send", key, Some(json!([1])))
        .await;
    assert_eq!(status_reason(&array), (400, "INVALID_PARAMS".into()));
    let no_message = app
        .a2a_rest("POST", agent, "/message:send", key, Some(json!({})))
        .await;
    assert_eq!(status_reason(&no_message), (400, "INVALID_PARAMS".into()));
}

/// A push callee that completes every task with the artifact text `pushed`.
async fn pushing_callee() -> Callee {
    Callee::start(|_| {
        Answer::json(
            200,
            json!({"state": "completed", "artifacts": [{"name": "response", "parts": [{"text": "pushed"}]}]}),
        )
    })
    .await
}

#[tokio::test]
async fn a_push_callee_behind_the_gate_answers_a_task_sent_over_a2a() {
    let callee = pushing_callee().await;
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
    let reply = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": a2a_message("classify", "push-1")}),
        )
        .await;
    let task = &reply.body["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{}",
        reply.text
    );
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "pushed");
    let delivered = callee.received();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].body["message"]["parts"][0]["text"], "classify");
}

/// Runs `tests/a2a_client.py`: the official `a2a-sdk` against the gate, strictly as a third party.
async fn run_sdk_client(
    app: &TestApp,
    pair: &Pair,
    stranger_key: &str,
    push_callee_id: &str,
) -> (bool, String) {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var("FORGEBENCH_TEST_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| root.join("../.local/venv/bin/python"));
    let args = [
        app.base.clone(),
        pair.callee.id.clone(),
        pair.caller.key.clone(),
        pair.callee.key.clone(),
        stranger_key.to_owned(),
        push_callee_id.to_owned(),
    ];
    // The gateway under test serves on this runtime: the client runs on a blocking thread.
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&python)
            .arg(root.join("a2a_client.py"))
            .args(args)
            .output()
    })
    .await
    .unwrap()
    .expect("run the A2A SDK client; scripts/install.sh installs it");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[tokio::test]
async fn the_official_a2a_sdk_reaches_a_governed_agent_over_both_bindings() {
    let pushed = pushing_callee().await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let push_callee = app
        .create_agent(&pair.tenant.admin_key, "push-callee")
        .await;
    let endpoint = app
        .set_endpoint(
            &pair.tenant.admin_key,
            "push-callee",
            json!({"url": pushed.url}),
        )
        .await;
    assert_eq!(endpoint.status, 200, "{}", endpoint.text);
    let granted = app
        .grant(&pair.tenant.admin_key, &pair.caller.id, &["push-callee"])
        .await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    let (passed, text) = run_sdk_client(&app, &pair, &stranger.key, &push_callee.id).await;
    assert!(!text.contains("ModuleNotFoundError"), "{text}");
    assert!(passed, "{text}");
    assert!(text.contains("all passed"), "{text}");
}

#[tokio::test]
async fn x_parent_call_sets_the_lineage_of_a_task_sent_over_a2a() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let parent = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("first"),
            0,
        )
        .await;
    let parent_call = parent.field("call_id");
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "SendMessage", "params": {
        "message": a2a_message("second", "lineage-1"), "configuration": {"returnImmediately": true}}});
    let reply = reqwest::Client::new()
        .post(format!(
            "{}/v1/agents/{}/a2a/jsonrpc",
            app.base, pair.callee.id
        ))
        .bearer_auth(&pair.caller.key)
        .header("a2a-version", "1.0")
        .header("x-parent-call", &parent_call)
        .json(&body)
        .send()
        .await
        .unwrap();
    let reply: Value = reply.json().await.unwrap();
    let child_id = reply["result"]["task"]["id"].as_str().unwrap().to_owned();
    let child = app
        .get_task(&pair.caller.key, &pair.callee.name, &child_id)
        .await;
    assert_eq!(child.field("parent_call_id"), parent_call, "{}", child.text);
    assert_eq!(child.field("root_call_id"), parent.field("root_call_id"));
}

/// ProtoJSON parsers accept a field under its proto name (`task_id`) as under its JSON name
/// (`taskId`): the gate does so in every request, on both bindings, at every depth, and leaves
/// a data part's own JSON as sent. A field given under both names is `InvalidParams`.
#[tokio::test]
async fn proto_field_names_are_read_like_json_names_on_both_bindings() {
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let (agent, key) = (pair.callee.id.as_str(), pair.caller.key.as_str());
    let sent = app
        .a2a_rpc(
            agent,
            key,
            "SendMessage",
            json!({"message": {"message_id": "p-1", "role": "ROLE_USER",
                               "parts": [{"text": "by proto names"},
                                         {"data": {"invoice_id": "INV-7"}}]},
                   "configuration": {"return_immediately": true}}),
        )
        .await;
    let task_id = sent.body["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", sent.text))
        .to_owned();
    assert_eq!(
        sent.body["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    let hook = app
        .a2a_rpc(
            agent,
            key,
            "CreateTaskPushNotificationConfig",
            json!({"task_id": task_id, "id": "hook", "url": "http://127.0.0.1:9/hook"}),
        )
        .await;
    assert_eq!(
        hook.body["result"]["taskId"],
        task_id.as_str(),
        "{}",
        hook.text
    );

    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.field("id"), task_id);
    let data = &claimed.body["input"]["message"]["parts"][1]["data"];
    assert_eq!(
        data,
        &json!({"invoice_id": "INV-7"}),
        "the client's own JSON as sent"
    );
    let answer = json!({"state": "completed", "artifacts": [{"parts": [{"text": "done"}]}]});
    app.post_result(&pair.callee.key, &task_id, answer).await;

    let read = app
        .a2a_rpc(
            agent,
            key,
            "GetTask",
            json!({"id": task_id, "history_length": 1}),
        )
        .await;
    assert_eq!(
        read.body["result"]["history"].as_array().map(Vec::len),
        Some(1),
        "{}",
        read.text
    );
    let path = format!("/tasks/{task_id}?history_length=1");
    let read = app.a2a_rest("GET", agent, &path, key, None).await;
    assert_eq!(
        read.body["history"].as_array().map(Vec::len),
        Some(1),
        "{}",
        read.text
    );
    let rest = app
        .a2a_rest(
            "POST",
            agent,
            "/message:send",
            key,
            Some(json!({"message": {"message_id": "p-2", "role": "ROLE_USER",
                                    "parts": [{"text": "rest"}]},
                        "configuration": {"return_immediately": true}})),
        )
        .await;
    assert_eq!(rest.status, 200, "{}", rest.text);

    let twice = app
        .a2a_rpc(
            agent,
            key,
            "GetTask",
            json!({"id": task_id, "historyLength": 1, "history_length": 2}),
        )
        .await;
    assert_eq!(error_code(&twice), -32602, "{}", twice.text);
}

/// The media types A2A 1.0 names: JSON-RPC answers `application/json` (§9.1: "for requests and
/// responses"); HTTP+JSON answers `application/a2a+json` (§11.1, SHOULD), or `application/json`
/// to a client whose `Accept` names only that, errors included.
#[tokio::test]
async fn each_binding_answers_in_the_media_type_the_spec_names_and_the_client_accepts() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (agent, key) = (pair.callee.id.as_str(), pair.caller.key.as_str());
    let sent = send(&app, &pair, "typed", "t-1").await;
    let task_id = sent["id"].as_str().unwrap().to_owned();
    let rpc = app
        .a2a_rpc(agent, key, "GetTask", json!({"id": task_id}))
        .await;
    assert_eq!(
        rpc.headers["content-type"], "application/json",
        "{}",
        rpc.text
    );

    let get = |path: String, accept: Option<&'static str>| {
        let mut request = app
            .http
            .get(format!("{}/v1/agents/{agent}/a2a{path}", app.base))
            .bearer_auth(key)
            .header("a2a-version", "1.0");
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        app.finish(request)
    };
    let task = format!("/tasks/{task_id}");
    let missing = format!("/tasks/{}", uuid::Uuid::new_v4());
    for (path, accept, media_type) in [
        (&task, None, "application/a2a+json"),
        (&task, Some("application/a2a+json"), "application/a2a+json"),
        (&task, Some("application/json"), "application/json"),
        (
            &task,
            Some("application/json;q=1, */*;q=0.1"),
            "application/a2a+json",
        ),
        (&missing, Some("application/json"), "application/json"),
        (&missing, None, "application/a2a+json"),
    ] {
        let reply = get(path.clone(), accept).await;
        assert_eq!(
            reply.headers["content-type"], media_type,
            "{path} {accept:?}: {}",
            reply.text
        );
    }
}

/// A body sent as anything but JSON is `ContentTypeNotSupported` (-32005 on JSON-RPC, its
/// `ErrorInfo` on HTTP+JSON), not a parse error: the type is what is wrong, not the JSON.
#[tokio::test]
async fn a_body_of_another_media_type_is_content_type_not_supported_on_both_bindings() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let (agent, key) = (pair.callee.id.as_str(), pair.caller.key.as_str());
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "x"}});
    let post = |url: String, content_type: &'static str, body: String| {
        app.finish(
            app.http
                .post(url)
                .bearer_auth(key)
                .header("a2a-version", "1.0")
                .header("content-type", content_type)
                .body(body),
        )
    };
    let rpc_url = format!("{}/v1/agents/{agent}/a2a/jsonrpc", app.base);
    let refused = post(rpc_url.clone(), "text/plain", body.to_string()).await;
    assert_eq!(error_code(&refused), -32005, "{}", refused.text);
    assert_eq!(refused.body["id"], 7, "{}", refused.text);
    assert_eq!(
        refused.body["error"]["data"][0]["reason"],
        "CONTENT_TYPE_NOT_SUPPORTED"
    );
    let read = post(rpc_url, "application/json; charset=utf-8", body.to_string()).await;
    assert_eq!(error_code(&read), -32001, "read as JSON: {}", read.text);

    let send = json!({"message": a2a_message("typed", "ct-1")}).to_string();
    let rest_url = format!("{}/v1/agents/{agent}/a2a/message:send", app.base);
    let refused = post(rest_url, "text/plain", send).await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert_eq!(
        refused.body["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED",
        "{}",
        refused.text
    );
}

/// A client may name a conversation (A2A 1.0 §3.4.1): a `contextId` the gate never issued opens
/// the task in the two agents' conversation by that name, echoed as given, on both bindings;
/// the next message naming it joins it. The name is the tenant's: another tenant's pair with the
/// same name has a conversation of its own, and another pair of the tenant cannot join it.
#[tokio::test]
async fn a_conversation_a_client_names_is_the_two_agents_and_no_one_elses() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let named = |text: &str, id: &str, context: &str| {
        let mut message = a2a_message(text, id);
        message["contextId"] = json!(context);
        json!({"message": message, "configuration": {"returnImmediately": true}})
    };
    let first = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            named("one", "n-1", "order-42"),
        )
        .await;
    let first = &first.body["result"]["task"];
    assert_eq!(first["contextId"], "order-42", "{first}");
    let second = app
        .a2a_rest(
            "POST",
            &pair.callee.id,
            "/message:send",
            &pair.caller.key,
            Some(named("two", "n-2", "order-42")),
        )
        .await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(
        second.body["task"]["contextId"], "order-42",
        "{}",
        second.text
    );

    // One conversation: found by its name, on the A2A list and in the REST search.
    let listed = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "ListTasks",
            json!({"contextId": "order-42"}),
        )
        .await;
    assert_eq!(
        listed.body["result"]["tasks"].as_array().unwrap().len(),
        2,
        "{}",
        listed.text
    );
    let searched = app
        .get("/v1/tasks?context_id=order-42", &pair.callee.key)
        .await;
    assert_eq!(
        searched.body["items"].as_array().unwrap().len(),
        2,
        "{}",
        searched.text
    );
    let read = app
        .get_task(
            &pair.caller.key,
            &pair.callee.name,
            first["id"].as_str().unwrap(),
        )
        .await;
    assert_eq!(read.body["context_id"], "order-42", "{}", read.text);

    // Another tenant's pair: a conversation of its own by the same name.
    let stranger = app.pair().await;
    let theirs = app
        .a2a_rpc(
            &stranger.callee.id,
            &stranger.caller.key,
            "SendMessage",
            named("x", "s-1", "order-42"),
        )
        .await;
    assert_eq!(
        theirs.body["result"]["task"]["contextId"], "order-42",
        "{}",
        theirs.text
    );
    let their_search = app
        .get("/v1/tasks?context_id=order-42", &stranger.callee.key)
        .await;
    assert_eq!(their_search.body["items"].as_array().unwrap().len(), 1);
    let ours = app
        .get("/v1/tasks?context_id=order-42", &pair.callee.key)
        .await;
    assert_eq!(ours.body["items"].as_array().unwrap().len(), 2);

    // Another pair of the tenant cannot join it; a name past 128 characters is no name.
    let other = app
        .create_agent(&pair.tenant.admin_key, "other-caller")
        .await;
    let granted = app
        .grant(&pair.tenant.admin_key, &other.id, &[&pair.callee.name])
        .await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    let joining = app
        .a2a_rpc(
            &pair.callee.id,
            &other.key,
            "SendMessage",
            named("y", "o-1", "order-42"),
        )
        .await;
    assert_eq!(error_code(&joining), -32602, "{}", joining.text);
    let long = "c".repeat(129);
    let too_long = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            named("z", "n-3", &long),
        )
        .await;
    assert_eq!(error_code(&too_long), -32602, "{}", too_long.text);
}

/// A conversation the gate issued goes on under A2A as under REST: the id of a task opened
/// over REST, named in a message, joins that conversation rather than naming a new one.
#[tokio::test]
async fn an_issued_conversation_is_continued_not_named_again() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("first"),
            0,
        )
        .await;
    let context = opened.field("context_id");
    let mut message = a2a_message("second", "i-2");
    message["contextId"] = json!(context);
    let sent = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": message, "configuration": {"returnImmediately": true}}),
        )
        .await;
    assert_eq!(
        sent.body["result"]["task"]["contextId"],
        context.as_str(),
        "{}",
        sent.text
    );
    let searched = app
        .get(&format!("/v1/tasks?context_id={context}"), &pair.caller.key)
        .await;
    assert_eq!(
        searched.body["items"].as_array().unwrap().len(),
        2,
        "{}",
        searched.text
    );
    // Stored as issued: the REST open may continue it too.
    let rest = app
        .post(
            &format!("/v1/agents/{}/tasks", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("third"), "context_id": context}),
        )
        .await;
    assert_eq!(rest.status, 200, "{}", rest.text);
}

#[tokio::test]
async fn raw_bytes_reach_a_callee_that_accepts_their_type_and_nothing_else_does() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.clone();
    let agent_path = format!("/v1/agents/{}", pair.callee.id);
    let declared = app
        .send(
            "PATCH",
            &agent_path,
            Some(&admin),
            Some(json!({"input_modes": ["text/plain", "Image/*"]})),
        )
        .await;
    assert_eq!(declared.status, 200, "{}", declared.text);
    assert_eq!(
        declared.body["input_modes"],
        json!(["text/plain", "image/*"])
    );
    let card_path = format!("{agent_path}/.well-known/agent-card.json");
    let card = app.get(&card_path, &pair.caller.key).await;
    assert_eq!(
        card.body["defaultInputModes"],
        json!(["text/plain", "image/*"])
    );

    let send = |parts: Value, message_id: &str| {
        let message = json!({"messageId": message_id, "role": "ROLE_USER", "parts": parts});
        app.a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": message, "configuration": {"returnImmediately": true}}),
        )
    };
    let png = json!([{"text": "what is this?"},
                     {"raw": "iVBORw0K", "mediaType": "image/png", "filename": "a.png"}]);
    let sent = send(png, "m-png").await;
    let task = &sent.body["result"]["task"];
    assert_eq!(
        task["history"][0]["parts"][1],
        json!({"raw": "iVBORw0K", "mediaType": "image/png", "filename": "a.png"}),
        "{}",
        sent.text
    );
    // A REST callee reads the bytes from a data: URI.
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(
        claimed.body["input"]["message"]["parts"][1]["file"],
        json!({"uri": "data:image/png;base64,iVBORw0K", "name": "a.png", "mime": "image/png"})
    );

    let odd = json!([{"raw": "dGNr", "mediaType": "application/x-unsupported-tck-type"}]);
    let refused = send(odd, "m-odd").await;
    assert_eq!(error_code(&refused), -32005, "{}", refused.text);
    assert!(refused.body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("message.parts[0]"));
    let data = json!([{"data": {"n": 1}}]);
    assert_eq!(error_code(&send(data.clone(), "m-data").await), -32005);
    // The REST edge holds parts to the same modes.
    let rest = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            json!({"role": "user", "parts": [{"file": {"uri": "https://files.example.com/a.pdf", "mime": "application/pdf"}}]}),
            0,
        )
        .await;
    assert_eq!(rest.status, 415, "{}", rest.text);
    assert_eq!(rest.body["detail"]["code"], "unsupported_media_type");
    // And so is the caller's answer to a question.
    let task_id = claimed.field("id");
    let question = json!({"state": "input_required", "message": {"role": "agent", "parts": [{"text": "which?"}]}});
    let asked = app.post_result(&pair.callee.key, &task_id, question).await;
    assert_eq!(asked.status, 200, "{}", asked.text);
    let answer_path = format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name);
    let answer = |part: Value| {
        app.post(
            &answer_path,
            &pair.caller.key,
            json!({"message": {"role": "user", "parts": [part]}}),
        )
    };
    let refused = answer(json!({"data": {"pick": "first"}})).await;
    assert_eq!(refused.status, 415, "{}", refused.text);
    let taken = answer(json!({"text": "the first"})).await;
    assert_eq!(taken.status, 200, "{}", taken.text);

    // Declared modes given back: the gateway's defaults, everything it carries.
    let reset = app
        .send(
            "PATCH",
            &agent_path,
            Some(&admin),
            Some(json!({"input_modes": null})),
        )
        .await;
    assert_eq!(
        reset.body["input_modes"],
        json!(["text/plain", "application/json", "*/*"])
    );
    let sent = send(data, "m-data-again").await;
    assert_eq!(
        sent.body["result"]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{}",
        sent.text
    );
}

/// The official A2A JavaScript SDK (`@a2a-js/sdk`, `tests/a2a-js/client.mjs`) against the gate,
/// strictly as a third party: both bindings, a send the callee answers, a read, a listing, and
/// the one refusal for a caller without a binding.
#[tokio::test]
async fn the_official_a2a_js_sdk_reaches_a_governed_agent_over_both_bindings() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let folder = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("a2a-js");
    let args = [
        app.base.clone(),
        pair.callee.id.clone(),
        pair.caller.key.clone(),
        pair.callee.key.clone(),
        stranger.key.clone(),
    ];
    // The gateway under test serves on this runtime: the client runs on a blocking thread.
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
    assert!(!text.contains("ERR_MODULE_NOT_FOUND"), "{text}");
    assert!(output.status.success(), "{text}");
    assert!(text.contains("all passed"), "{text}");
}
