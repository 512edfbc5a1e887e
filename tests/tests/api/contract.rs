//! The OpenAPI document says what the gateway does: clients are generated from it, so each rule
//! the gateway enforces is in the document, and nothing the document allows is refused. Each
//! test drives the rule over HTTP and reads the same rule out of the document the gateway serves.

use forgebench_tests::{spawn_app, text_message};
use serde_json::{json, Value};

/// The document as the local gateway serves it at `/openapi.json`.
async fn served_document(app: &forgebench_tests::TestApp) -> Value {
    let reply = app.send("GET", "/openapi.json", None, None).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body
}

/// Follows a local `$ref` (`#/components/...`), if `value` is one.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference.trim_start_matches('#');
            resolve(
                document,
                document.pointer(pointer).expect("the $ref resolves"),
            )
        }
        None => value,
    }
}

/// A component schema's property, `$ref`s followed.
fn property<'a>(document: &'a Value, schema: &str, path: &[&str]) -> &'a Value {
    let mut at = resolve(document, &document["components"]["schemas"][schema]);
    for name in path {
        at = resolve(document, &at["properties"][*name]);
        assert!(!at.is_null(), "{schema} has no property {name}");
    }
    at
}

/// A parameter of one operation, by name.
fn parameter<'a>(document: &'a Value, path: &str, method: &str, name: &str) -> &'a Value {
    document["paths"][path][method]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(|parameter| resolve(document, parameter))
        .find(|parameter| parameter["name"] == name)
        .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))
}

#[tokio::test]
async fn a_405_names_the_methods_the_path_takes_in_allow() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let reply = app
        .send("PUT", "/v1/agents", Some(&tenant.admin_key), None)
        .await;
    assert_eq!(reply.status, 405, "{}", reply.text);
    assert_eq!(reply.body["detail"]["code"], "method_not_allowed");
    assert_eq!(reply.headers["allow"], "POST, GET");
    let reply = app
        .send("POST", "/v1/agents/a/tools", Some(&tenant.admin_key), None)
        .await;
    assert_eq!(reply.status, 405, "{}", reply.text);
    assert_eq!(reply.headers["allow"], "GET");
    // A literal segment is its own resource: `me` and `cards` take only what they list.
    for path in ["/v1/agents/me", "/v1/agents/cards"] {
        let reply = app.send("PATCH", path, Some(&tenant.admin_key), None).await;
        assert_eq!(reply.status, 405, "{path}: {}", reply.text);
        assert_eq!(reply.headers["allow"], "GET", "{path}");
    }
}

#[tokio::test]
async fn tool_names_are_refused_exactly_where_the_documents_pattern_says() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let agent = app.create_agent(&tenant.admin_key, "tooled").await;
    let document = served_document(&app).await;
    for method in ["put", "delete"] {
        let schema =
            &parameter(&document, "/v1/agents/{agent}/tools/{tool}", method, "tool")["schema"];
        assert_eq!(
            schema["pattern"], "^[a-z0-9][a-z0-9_.-]{0,63}$",
            "{method}: {schema}"
        );
    }
    let body = json!({"description": "adds"});
    let longest = format!("a{}", "b".repeat(63));
    let path = |tool: &str| format!("/v1/agents/{}/tools/{tool}", agent.id);
    for tool in ["Upper", "_lead", "has%20space", &format!("{longest}c")] {
        let put = app
            .send(
                "PUT",
                &path(tool),
                Some(&tenant.admin_key),
                Some(body.clone()),
            )
            .await;
        assert_eq!(put.status, 400, "PUT {tool}: {}", put.text);
        let delete = app
            .send("DELETE", &path(tool), Some(&tenant.admin_key), None)
            .await;
        assert_eq!(delete.status, 400, "DELETE {tool}: {}", delete.text);
    }
    for tool in ["a", "x.y_z-1", longest.as_str()] {
        let put = app
            .send(
                "PUT",
                &path(tool),
                Some(&tenant.admin_key),
                Some(body.clone()),
            )
            .await;
        assert_eq!(put.status, 200, "PUT {tool}: {}", put.text);
    }
}

/// The `pattern` of a query parameter, compiled as the document states it.
fn pattern_of(document: &Value, path: &str, name: &str) -> regex_lite::Regex {
    let schema = &parameter(document, path, "get", name)["schema"];
    let pattern = schema["pattern"]
        .as_str()
        .unwrap_or_else(|| panic!("{path}: {name} states no pattern: {schema}"));
    regex_lite::Regex::new(pattern).expect("the pattern compiles")
}

/// A GET as a client of every route sends it (the A2A routes want `A2A-Version`).
async fn get_with_version(
    app: &forgebench_tests::TestApp,
    path: &str,
    key: &str,
) -> forgebench_tests::Reply {
    let request = app
        .http
        .get(format!("{}{path}", app.base))
        .bearer_auth(key)
        .header("a2a-version", "1.0");
    app.finish(request).await
}

/// Every cursor the document's pattern admits is a place to page on from, whoever wrote it,
/// and every cursor the API issues has that shape: a request the document calls valid is never
/// refused for its cursor, and one it does not is a 400.
#[tokio::test]
async fn a_cursor_of_the_documents_shape_is_a_place_and_every_issued_cursor_has_it() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    for n in 0..3 {
        let opened = app
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message(&format!("n{n}")),
                0,
            )
            .await;
        assert_eq!(opened.status, 200, "{}", opened.text);
    }
    app.create_agent(&pair.tenant.admin_key, "third-agent")
        .await;
    let document = served_document(&app).await;
    let moment = "9999-99-99T99:99:99.999999Z";
    let id = "00000000-0000-0000-0000-000000000000";
    let a2a_tasks = format!("/v1/agents/{}/a2a/tasks", pair.callee.id);
    // (route in the document, listing with one a page, key, field of the next cursor, a cursor
    // of the shape no page issued, the shape the gateway reads)
    let listings = [
        (
            "/v1/tasks",
            "/v1/tasks?limit=1".to_owned(),
            &pair.caller.key,
            "next_cursor",
            "cursor",
            format!("{moment}_{moment}_{id}"),
            forgebench::domain::cursor::search_cursor_pattern(),
        ),
        (
            "/v1/audit",
            "/v1/audit?limit=1".to_owned(),
            &pair.tenant.admin_key,
            "next_cursor",
            "cursor",
            format!("{moment}_{id}"),
            forgebench::domain::cursor::entry_cursor_pattern(),
        ),
        (
            "/v1/agents/cards",
            "/v1/agents/cards?limit=1".to_owned(),
            &pair.tenant.admin_key,
            "next_cursor",
            "cursor",
            "zz-never-an-agent".to_owned(),
            // The agent name's own pattern, as AgentName reads it.
            property(&document, "AgentIn", &["name"])["pattern"]
                .as_str()
                .unwrap()
                .to_owned(),
        ),
        (
            "/v1/agents/{agent}/a2a/tasks",
            format!("{a2a_tasks}?pageSize=1"),
            &pair.caller.key,
            "nextPageToken",
            "pageToken",
            format!("{moment}_binding-{id}"),
            forgebench::store::PairCursor::token_pattern(),
        ),
    ];
    for (route, first, key, field, name, made_up, read) in listings {
        let pattern = pattern_of(&document, route, name);
        assert_eq!(
            pattern.as_str(),
            read,
            "{route}: the document states another shape"
        );
        let page = get_with_version(&app, &first, key).await;
        assert_eq!(page.status, 200, "{first}: {}", page.text);
        let issued = page.body[field].as_str().unwrap_or_default().to_owned();
        assert!(!issued.is_empty(), "{route}: no next page in {}", page.text);
        assert!(
            pattern.is_match(&issued),
            "{route}: issued {issued:?} is not of the shape {pattern}"
        );
        let next = get_with_version(&app, &format!("{first}&{name}={issued}"), key).await;
        assert_eq!(next.status, 200, "{route}: {}", next.text);
        assert!(pattern.is_match(&made_up), "{route}: {made_up}");
        let placed = get_with_version(&app, &format!("{first}&{name}={made_up}"), key).await;
        assert_eq!(
            placed.status, 200,
            "{route} with {made_up}: {}",
            placed.text
        );
        for malformed in ["-0", "bm90LW91cnM", "%20"] {
            assert!(!pattern.is_match(malformed), "{route}: {malformed}");
            let refused = get_with_version(&app, &format!("{first}&{name}={malformed}"), key).await;
            assert_eq!(
                refused.status, 400,
                "{route} with {malformed}: {}",
                refused.text
            );
        }
    }
}

/// The document's push URL shape is the one the gateway parses: a URL of that shape is never
/// bad input, only a destination the guard takes or refuses (403), and a name that resolves to
/// nothing yet is saved (every dial checks it again).
#[tokio::test]
async fn a_push_url_of_the_documents_shape_is_a_destination_never_bad_input() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let document = served_document(&app).await;
    let stated = document["components"]["schemas"]["PushUrl"]["pattern"]
        .as_str()
        .unwrap();
    assert_eq!(stated, forgebench::push::endpoint::URL_PATTERN);
    let pattern = regex_lite::Regex::new(stated).unwrap();
    for url in [
        "http://A",
        "https://0.0.0.0",
        "http://a-b.c--d:65535/#x",
        "http://250.250.250.250/\\?%zz",
        "https://xn--bcher-kva.example/",
        "https://10.0.0.5:1/hook",
    ] {
        assert!(pattern.is_match(url), "{url}");
        let reply = app
            .set_endpoint(
                &pair.tenant.admin_key,
                &pair.callee.name,
                json!({ "url": url }),
            )
            .await;
        assert!(matches!(reply.status, 200 | 403), "{url}: {}", reply.text);
    }
    let unresolved = "https://not-yet-in-dns.invalid/hook";
    assert!(pattern.is_match(unresolved));
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({ "url": unresolved }),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["endpoint"]["url"], unresolved);
    for malformed in ["00", "", "https://", "a.example/path", "ftp://a.example/"] {
        assert!(!pattern.is_match(malformed), "{malformed}");
    }
}

#[tokio::test]
async fn a_null_owner_means_the_creator_owns_the_agent_as_the_document_says() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let (member_id, member_key) = app.create_member(&tenant, "member").await;
    let reply = app
        .post(
            "/v1/agents",
            &member_key,
            json!({"name": "owned", "owner_member_id": null, "claim_timeout_seconds": null}),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    assert_eq!(reply.body["owner_member_id"], member_id.as_str());
    assert_eq!(reply.body["claim_timeout_seconds"], 900);
    let document = served_document(&app).await;
    for name in ["owner_member_id", "claim_timeout_seconds", "description"] {
        let schema = property(&document, "AgentIn", &[name]);
        assert_eq!(schema["nullable"], true, "AgentIn.{name}: {schema}");
    }
}

#[tokio::test]
async fn an_owner_who_is_no_member_is_not_found_as_the_document_says() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let reply = app
        .post(
            "/v1/agents",
            &tenant.admin_key,
            json!({"name": "owned", "owner_member_id": "no-such-member"}),
        )
        .await;
    assert_eq!(reply.status, 404, "{}", reply.text);
    assert_eq!(reply.body["detail"]["code"], "not_found");
    let document = served_document(&app).await;
    assert!(
        document["paths"]["/v1/agents"]["post"]["responses"]["404"].is_object(),
        "the document lists the 404"
    );
}

#[tokio::test]
async fn only_a_users_message_opens_or_answers_a_task_and_only_an_agents_reports_progress() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let agent_message = json!({"role": "agent", "parts": [{"text": "hi"}]});
    let reply = app
        .open_task(&pair.caller.key, &pair.callee.name, agent_message, 0)
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    let document = served_document(&app).await;
    for schema in ["TaskIn", "MessageIn"] {
        let role = property(&document, schema, &["message", "role"]);
        assert_eq!(role["enum"], json!(["user"]), "{schema}: {role}");
    }
    let role = property(&document, "ProgressIn", &["message", "role"]);
    assert_eq!(role["enum"], json!(["agent"]), "ProgressIn: {role}");
}

#[tokio::test]
async fn a_pull_result_saying_working_is_422_and_outside_the_documents_states() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("go"), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    let reply = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "working"}),
        )
        .await;
    assert_eq!(reply.status, 422, "{}", reply.text);
    let document = served_document(&app).await;
    let answers = &document["components"]["schemas"]["TaskResultIn"];
    let states: Vec<Value> = answers["oneOf"]
        .as_array()
        .expect("TaskResultIn is one shape per state")
        .iter()
        .flat_map(|shape| {
            resolve(&document, shape)["properties"]["state"]["enum"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        states,
        vec![json!("completed"), json!("failed"), json!("input_required")],
        "{answers}"
    );
    // Every task has its opening message, and the document requires it.
    assert!(opened.body["input"]["message"]["parts"].is_array());
    for schema in ["Task", "TaskSummary"] {
        let input = property(&document, schema, &["input"]);
        assert_eq!(input["required"], json!(["message"]), "{schema}: {input}");
    }
}

#[tokio::test]
async fn a_results_fields_hold_to_their_types_whatever_the_state() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("go"), 0)
        .await;
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    let task_id = opened.field("id");
    let reply = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "error": {}}),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    // An artifact name is 1 to 256 characters, not bytes.
    let name = "é".repeat(256);
    let reply = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": [{"name": name, "parts": [{"text": "ok"}]}]}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn clearing_an_endpoint_still_holds_the_body_to_its_schema() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let agent = app.create_agent(&tenant.admin_key, "pushee").await;
    let path = format!("/v1/agents/{}/endpoint", agent.id);
    for body in [
        json!({"url": null, "clear_auth": "yes"}),
        json!({"url": null, "allow_private_network": 1}),
        json!({"url": null, "auth": {"type": "bearer"}}),
    ] {
        let reply = app
            .send("PUT", &path, Some(&tenant.admin_key), Some(body.clone()))
            .await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.text);
    }
    let reply = app
        .send(
            "PUT",
            &path,
            Some(&tenant.admin_key),
            Some(json!({"url": null, "clear_auth": null})),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn an_endpoint_secret_is_bounded_in_utf8_bytes_as_documented() {
    // KMS seals at most 4096 bytes of plaintext, so the bound is in bytes, and says so.
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let agent = app.create_agent(&tenant.admin_key, "pushee").await;
    let path = format!("/v1/agents/{}/endpoint", agent.id);
    let document = served_document(&app).await;
    let secret = &document["components"]["schemas"]["EndpointSecret"];
    assert_eq!(secret["maxLength"], 4096, "{secret}");
    assert!(
        secret["description"]
            .as_str()
            .is_some_and(|text| text.contains("4096 bytes")),
        "{secret}"
    );
    let body = |secret: String| json!({"url": "https://93.184.215.14/hook", "auth": {"type": "bearer", "secret": secret}});
    for (secret, status) in [("a".repeat(4096), 200), ("é".repeat(2049), 400)] {
        let reply = app
            .send("PUT", &path, Some(&tenant.admin_key), Some(body(secret)))
            .await;
        assert_eq!(reply.status, status, "{}", reply.text);
    }
}

#[tokio::test]
async fn the_audit_outcome_filter_takes_only_the_documented_outcomes() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let document = served_document(&app).await;
    let outcome = &parameter(&document, "/v1/audit", "get", "outcome")["schema"];
    assert_eq!(
        outcome["enum"],
        json!(["allowed", "refused", "would_refuse"]),
        "{outcome}"
    );
    let reply = app.get("/v1/audit?outcome=maybe", &tenant.admin_key).await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    let reply = app
        .get("/v1/audit?outcome=allowed", &tenant.admin_key)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn an_a2a_message_names_its_task_and_conversation_with_strings_only() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    for field in ["taskId", "contextId"] {
        for wrong in [json!([]), json!({}), json!(7)] {
            let mut message =
                json!({"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]});
            message[field] = wrong.clone();
            let reply = app
                .a2a_rest(
                    "POST",
                    &pair.callee.id,
                    "/message:send",
                    &pair.caller.key,
                    Some(json!({ "message": message })),
                )
                .await;
            assert_eq!(reply.status, 400, "{field}: {wrong}: {}", reply.text);
        }
    }
    for part in [
        json!({"text": "hi", "mediaType": []}),
        json!({"url": "https://example.com/a", "filename": {}}),
        json!({"url": "https://example.com/a", "mediaType": 7}),
        json!({"data": null, "unknown": 42}),
    ] {
        let message = json!({"role": "ROLE_USER", "messageId": "m-2", "parts": [part]});
        let reply = app
            .a2a_rest(
                "POST",
                &pair.callee.id,
                "/message:send",
                &pair.caller.key,
                Some(json!({ "message": message })),
            )
            .await;
        assert_eq!(reply.status, 400, "{part}: {}", reply.text);
    }
}

#[tokio::test]
async fn tool_tags_are_counted_in_characters_and_descriptions_hold_the_documents_limits() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let document = served_document(&app).await;
    let tag = property(&document, "ToolIn", &["tags"]);
    assert_eq!(tag["items"]["maxLength"], 64);
    let description = property(&document, "ToolIn", &["description"]);
    assert_eq!(description["maxLength"], 2000);
    assert_eq!(description["pattern"], NOT_ONLY_WHITE_SPACE);
    let tool = format!("/v1/agents/{}/tools/classify", pair.callee.id);
    // 64 two-byte characters are 128 bytes, and within the limit of 64 characters.
    let long_tag = "é".repeat(64);
    let put = |body: Value| app.send("PUT", &tool, Some(admin), Some(body));
    let reply = put(json!({"description": "classifies", "tags": [long_tag]})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["tags"], json!([long_tag]));
    for refused in [
        json!({"description": "classifies", "tags": ["é".repeat(65)]}),
        json!({"description": "x".repeat(2001)}),
        json!({"description": " \t\u{3000}\n"}),
    ] {
        let reply = put(refused.clone()).await;
        assert_eq!(reply.status, 400, "{refused}: {}", reply.text);
    }
    let reply = put(json!({"description": "é".repeat(2000)})).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    for schema in ["TenantIn", "MemberIn"] {
        assert_eq!(
            property(&document, schema, &["name"])["pattern"],
            NOT_ONLY_WHITE_SPACE,
            "{schema}"
        );
    }
    let reply = app
        .send(
            "POST",
            "/v1/members",
            Some(admin),
            Some(json!({"name": "\u{2003} ", "role": "viewer"})),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        property(&document, "AgentPatch", &["description"])["maxLength"],
        2000
    );
}

/// The document's pattern for "not only white space": one character that Rust's
/// `char::is_whitespace` (the gateway's `trim`) does not count as space.
const NOT_ONLY_WHITE_SPACE: &str =
    "[^\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

#[tokio::test]
async fn the_a2a_version_header_is_required_and_served_as_its_pattern_says() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let document = served_document(&app).await;
    for (path, method) in [
        ("/v1/agents/{agent}/a2a/jsonrpc", "post"),
        ("/v1/agents/{agent}/a2a/message:send", "post"),
        ("/v1/agents/{agent}/a2a/tasks/{task}", "get"),
    ] {
        let header = parameter(&document, path, method, "A2A-Version");
        assert_eq!(header["required"], true, "{method} {path}");
        assert_eq!(header["schema"]["pattern"], "^1(\\.0+(\\.[0-9]+)*)?$");
    }
    let list = r#"{"jsonrpc": "2.0", "id": 1, "method": "ListTasks"}"#;
    for served in ["1", "1.0", "1.00", "1.0.3"] {
        let reply = app
            .a2a_rpc_raw(&pair.callee.id, Some(&pair.caller.key), Some(served), list)
            .await;
        assert!(reply.body["result"].is_object(), "{served}: {}", reply.text);
    }
    for refused in [
        None,
        Some("0.3"),
        Some("1."),
        Some("1.+0"),
        Some("1.0.+1"),
        Some("1.1"),
    ] {
        let reply = app
            .a2a_rpc_raw(&pair.callee.id, Some(&pair.caller.key), refused, list)
            .await;
        assert_eq!(
            reply.body["error"]["code"], -32009,
            "{refused:?}: {}",
            reply.text
        );
    }
}

#[tokio::test]
async fn a_push_configs_task_id_is_a_string_and_subscribe_holds_the_query_to_its_types() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .a2a_rpc(
            &pair.callee.id,
            &pair.caller.key,
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]},
                   "configuration": {"returnImmediately": true}}),
        )
        .await;
    let task = opened.body["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let configs = format!("/tasks/{task}/pushNotificationConfigs");
    let create = |task_id: Value| {
        app.a2a_rest(
            "POST",
            &pair.callee.id,
            &configs,
            &pair.caller.key,
            Some(json!({"taskId": task_id, "url": "https://93.184.215.14/hook"})),
        )
    };
    for wrong in [json!({}), json!(7), json!(["x"])] {
        let reply = create(wrong.clone()).await;
        assert_eq!(reply.status, 400, "{wrong}: {}", reply.text);
        assert_eq!(
            reply.body["error"]["details"][0]["reason"],
            "INVALID_PARAMS"
        );
    }
    for unset in [Value::Null, json!(""), json!(task)] {
        let reply = create(unset.clone()).await;
        assert_eq!(reply.status, 200, "{unset}: {}", reply.text);
        assert_eq!(reply.body["taskId"], task.as_str());
    }
    // SubscribeToTask reads no query, but a historyLength that is no number is still refused.
    let reply = app
        .a2a_rest(
            "GET",
            &pair.callee.id,
            &format!("/tasks/{task}:subscribe?historyLength=null"),
            &pair.caller.key,
            None,
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.text);
    assert_eq!(
        reply.body["error"]["details"][0]["reason"],
        "INVALID_PARAMS"
    );
}

/// The document's shapes for an agent's declared media ranges and for a `raw` part's bytes are
/// the ones the gateway reads: every string of the shape is taken, every other one refused.
#[tokio::test]
async fn input_modes_and_raw_bytes_of_the_documents_shape_are_taken_and_no_others() {
    let app = spawn_app().await;
    let document = served_document(&app).await;
    let schemas = &document["components"]["schemas"];
    let modes = schemas["AgentIn"]["properties"]["input_modes"]["items"]["pattern"]
        .as_str()
        .unwrap();
    assert_eq!(modes, forgebench::domain::media::INPUT_MODE_PATTERN);
    assert_eq!(
        schemas["AgentPatch"]["properties"]["input_modes"]["items"]["pattern"],
        modes
    );
    let modes = regex_lite::Regex::new(modes).unwrap();
    let longest = format!("{}/{}", "a".repeat(127), "b".repeat(127));
    let too_long = format!("{}/b", "a".repeat(128));
    for range in [
        "*/*",
        "text/*",
        "text/plain",
        "Image/PNG",
        "a/b",
        &longest,
        &too_long,
        "*/plain",
        "*",
        "text",
        "text/",
        "/plain",
        "-a/b",
        "a/-b",
        "a/b c",
        "a/b;q=1",
        "a/b/c",
        "a*/b",
        "é/b",
        "vnd.a+json/x!#$&^_.+-",
    ] {
        let taken = forgebench::domain::media::parse_input_modes(&json!([range]), "m").is_ok();
        assert_eq!(modes.is_match(range), taken, "{range:?}");
    }

    let variants = schemas["A2aPart"]["oneOf"].as_array().unwrap();
    let raw = variants
        .iter()
        .find_map(|variant| variant["properties"]["raw"]["pattern"].as_str())
        .unwrap();
    assert_eq!(raw, forgebench::a2a::incoming::RAW_PATTERN);
    let raw = regex_lite::Regex::new(raw).unwrap();
    for bytes in [
        "dGNr", "dGM", "dGM=", "dA", "dA==", "dA=", "d", "dGNr=", "dGNrdA==", "+/+/", "-_-_", "+_",
        "AB", "AB==", "A===", "dG Nr", "dGNr\n", "//8", "__8=",
    ] {
        let taken = forgebench::a2a::incoming::decode_proto_bytes(bytes).is_some();
        assert_eq!(raw.is_match(bytes), taken, "{bytes:?}");
    }
}

/// Whether a grant names the caller itself depends on the tenant's agents (a callee is named by
/// name or id), not on the request's shape, which the document allows: so it is a `409
/// conflict` with the documented error body, as the document lists for the operation, never a
/// `400`; and the grant is all or nothing, so the other callee named beside it is not bound.
#[tokio::test]
async fn binding_an_agent_to_itself_is_a_conflict_not_bad_input() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let caller = app.create_agent(&tenant.admin_key, "looper").await;
    let other = app.create_agent(&tenant.admin_key, "bystander").await;
    let document = served_document(&app).await;
    let grant = &document["paths"]["/v1/agents/{agent}/agents"]["post"];
    assert!(
        !grant["responses"]["409"].is_null(),
        "GrantBindings documents its 409"
    );
    for callees in [
        vec![caller.name.as_str()],
        vec![caller.id.as_str()],
        vec![other.name.as_str(), caller.name.as_str()],
    ] {
        let reply = app.grant(&tenant.admin_key, &caller.id, &callees).await;
        assert_eq!(reply.status, 409, "{callees:?}: {}", reply.text);
        assert_eq!(reply.body["detail"]["code"], "conflict", "{}", reply.text);
        let message = reply.body["detail"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("itself"), "{message}");
    }
    let bindings = app
        .get(
            &format!("/v1/agents/{}/agents", caller.id),
            &tenant.admin_key,
        )
        .await;
    assert_eq!(bindings.status, 200, "{}", bindings.text);
    assert_eq!(bindings.body["outbound"], json!([]), "nothing was written");
}

/// `q` is any string the document's pattern admits (a letter or a digit somewhere), however many
/// words it holds: a search reads its first 8 distinct words (each one a read per candidate task,
/// so a search's cost stays bounded) and not the words after them, so a query of more words is
/// served, never refused; one without a word is the `400` the pattern says.
#[tokio::test]
async fn a_query_of_any_number_of_words_is_served_by_its_first_eight_distinct_words() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let document = served_document(&app).await;
    let schema = &parameter(&document, "/v1/tasks", "get", "q")["schema"];
    assert_eq!(
        schema.as_object().map(|schema| schema.len()),
        Some(2),
        "only a type and a pattern: {schema}"
    );
    let pattern = pattern_of(&document, "/v1/tasks", "q");
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("alpha bravo charlie delta echo foxtrot golf hotel"),
            0,
        )
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let task = opened.field("id");
    let search = |q: &str| {
        assert!(pattern.is_match(q), "{q:?} is valid by the document");
        let app = &app;
        let key = pair.caller.key.clone();
        let path = format!("/v1/tasks?q={}", q.replace(' ', "%20"));
        async move { app.get(&path, &key).await }
    };
    let found = |reply: &forgebench_tests::Reply| -> Vec<String> {
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|item| item["id"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let eight = "alpha bravo charlie delta echo foxtrot golf hotel";
    assert_eq!(found(&search(eight).await), [task.as_str()]);
    // The ninth distinct word and those after it are not read: the task lacks them.
    let more = format!("{eight} india juliett kilo lima mike november oscar papa");
    assert_eq!(found(&search(&more).await), [task.as_str()]);
    // One of the first eight missing from the task: not found.
    let missing_early = "india alpha bravo charlie delta echo foxtrot golf hotel";
    assert_eq!(found(&search(missing_early).await), Vec::<String>::new());
    // Repeats, in any case, are one word each.
    let repeated = format!("{eight} ALPHA Bravo alpha {eight} india");
    assert_eq!(found(&search(&repeated).await), [task.as_str()]);
    let none = app.get("/v1/tasks?q=--%20...", &pair.caller.key).await;
    assert!(!pattern.is_match("-- ..."));
    assert_eq!(none.status, 400, "{}", none.text);
    assert_eq!(
        none.body["detail"]["code"], "invalid_request",
        "{}",
        none.text
    );
}
