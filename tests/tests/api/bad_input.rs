//! Bad input gets a clear 400 with the documented body, and nothing is written.

use forgebench_tests::{spawn_app, text_message};
use serde_json::json;

#[tokio::test]
async fn malformed_or_mistyped_task_bodies_are_400_invalid_request() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let path = format!("/v1/agents/{}/tasks", pair.callee.name);
    let cases: Vec<(&str, String)> = vec![
        (
            "malformed JSON",
            r#"{"message": {"parts": [{"text": "x"}"#.into(),
        ),
        ("not an object", r#"["message"]"#.into()),
        ("empty body", String::new()),
        ("message missing", r#"{}"#.into()),
        (
            "message of the wrong type",
            r#"{"message": "hello"}"#.into(),
        ),
        (
            "parts of the wrong type",
            r#"{"message": {"parts": {"text": "x"}}}"#.into(),
        ),
        (
            "text of the wrong type",
            r#"{"message": {"parts": [{"text": 42}]}}"#.into(),
        ),
        (
            "a part with two kinds",
            r#"{"message": {"parts": [{"text": "x", "data": {}}]}}"#.into(),
        ),
        (
            "a part with no kind",
            r#"{"message": {"parts": [{}]}}"#.into(),
        ),
        (
            "an empty parts list",
            r#"{"message": {"parts": []}}"#.into(),
        ),
        (
            "a file part without uri",
            r#"{"message": {"parts": [{"file": {"name": "a"}}]}}"#.into(),
        ),
        (
            "an unknown field",
            r#"{"message": {"parts": [{"text": "x"}]}, "extra": 1}"#.into(),
        ),
        (
            "a context_id that is not an id",
            r#"{"message": {"parts": [{"text": "x"}]}, "context_id": "abc"}"#.into(),
        ),
    ];
    for (what, raw) in cases {
        let reply = app.send_raw("POST", &path, &pair.caller.key, &raw).await;
        assert_eq!(reply.status, 400, "{what}: {}", reply.text);
        assert_eq!(reply.body["detail"]["code"], "invalid_request", "{what}");
        assert!(
            reply.body["detail"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{what}"
        );
    }
    // Nothing was opened.
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
}

#[tokio::test]
async fn wait_outside_zero_to_thirty_or_not_an_integer_is_400() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let body = json!({"message": text_message("x")});
    for wait in ["31", "-1", "1.5", "soon", "", "999999999999999999999"] {
        let open = app
            .post(
                &format!("/v1/agents/{}/tasks?wait={wait}", pair.callee.name),
                &pair.caller.key,
                body.clone(),
            )
            .await;
        assert_eq!(open.status, 400, "open wait={wait:?}");
        assert_eq!(open.body["detail"]["code"], "invalid_request");
        let read = app
            .get(
                &format!(
                    "/v1/agents/{}/tasks/{}?wait={wait}",
                    pair.callee.name,
                    opened.field("id")
                ),
                &pair.caller.key,
            )
            .await;
        assert_eq!(read.status, 400, "get wait={wait:?}");
        let claim = app
            .get(
                &format!("/v1/agents/me/tasks/next?wait={wait}"),
                &pair.callee.key,
            )
            .await;
        assert_eq!(claim.status, 400, "claim wait={wait:?}");
    }
    for wait in ["0", "30"] {
        let claim = app
            .get(
                &format!("/v1/agents/me/tasks/next?wait={wait}"),
                &pair.callee.key,
            )
            .await;
        assert!(claim.status == 200 || claim.status == 204, "wait={wait}");
        if wait == "0" {
            break;
        }
    }
}

#[tokio::test]
async fn malformed_results_are_400_and_leave_the_task_working() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    app.claim(&pair.callee.key, 0).await;
    let path = format!("/v1/agents/me/tasks/{task_id}/result");
    for raw in [
        "{not json",
        r#"{"state": "done"}"#,
        r#"{"state": 3}"#,
        r#"{"state": "input_required"}"#,
        r#"{"state": "completed", "artifacts": [{"parts": [{"text": "a", "file": {"uri": "x"}}]}]}"#,
    ] {
        let reply = app.send_raw("POST", &path, &pair.callee.key, raw).await;
        assert_eq!(reply.status, 400, "{raw}: {}", reply.text);
        assert_eq!(reply.body["detail"]["code"], "invalid_request");
    }
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "working");
}

#[tokio::test]
async fn management_bodies_are_validated_too() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let agent = app.create_agent(&tenant.admin_key, "worker").await;
    let cases = [
        ("POST", "/v1/agents".to_owned(), r#"{"name": 7}"#),
        (
            "POST",
            "/v1/agents".to_owned(),
            r#"{"name": "ok", "claim_timeout_seconds": 0}"#,
        ),
        ("PATCH", "/v1/agents/worker".to_owned(), r#"{}"#),
        ("PATCH", "/v1/agents/worker".to_owned(), r#"{"status": 1}"#),
        (
            "POST",
            format!("/v1/agents/{}/agents", agent.id),
            r#"{"callees": "x"}"#,
        ),
        (
            "POST",
            format!("/v1/agents/{}/agents", agent.id),
            r#"{"callees": []}"#,
        ),
        (
            "POST",
            "/v1/members".to_owned(),
            r#"{"name": "", "role": "member"}"#,
        ),
    ];
    for (method, path, raw) in cases {
        let reply = app.send_raw(method, &path, &tenant.admin_key, raw).await;
        assert_eq!(reply.status, 400, "{method} {path} {raw}: {}", reply.text);
        assert_eq!(reply.body["detail"]["code"], "invalid_request");
    }
}
