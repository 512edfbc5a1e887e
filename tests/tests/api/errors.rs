//! Unexpected errors: the client gets the opaque 500, the log line gets the whole cause.

use aws_sdk_dynamodb::types::AttributeValue;
use forgebench_tests::{spawn_app, text_message, LogCapture};

#[tokio::test]
async fn a_500_says_nothing_to_the_client_and_its_log_line_names_the_cause() {
    let captured = LogCapture::install();
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    app.update_task_item(&task_id)
        .update_expression("SET #state = :bogus")
        .expression_attribute_names("#state", "state")
        .expression_attribute_values(":bogus", AttributeValue::S("bogus-state".into()))
        .send()
        .await
        .unwrap();
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.status, 500);
    // Nothing but the opaque message and the request's id, which its log lines carry.
    let request_id = read.headers["x-request-id"].to_str().unwrap();
    assert_eq!(
        read.text,
        format!(
            r#"{{"detail":{{"code":"internal","message":"internal error","request_id":"{request_id}"}}}}"#
        )
    );
    if let Some(captured) = captured {
        let logs = captured.text();
        let line = logs
            .lines()
            .find(|line| line.contains("request failed"))
            .unwrap_or_else(|| panic!("no line for the 500 in {logs}"));
        assert!(line.contains("corrupt item"), "{line}");
        assert!(line.contains("bogus-state"), "{line}");
        assert!(line.contains(request_id), "{line}");
    }
}

#[tokio::test]
async fn every_log_line_of_a_task_request_names_its_tenant_task_call_and_agents() {
    let Some(captured) = LogCapture::install() else {
        panic!("a log subscriber was installed before this test's");
    };
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.status, 200, "{}", read.text);
    let logs = captured.text();
    let served: Vec<serde_json::Value> = logs
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .filter(|line: &serde_json::Value| {
            line["fields"]["message"] == "request served"
                && line["span"]["route"] == "get-task"
                && line["span"]["task_id"] == task_id.as_str()
        })
        .collect();
    let [line] = served.as_slice() else {
        panic!("one served get-task line for {task_id} expected in {logs}");
    };
    let span = &line["span"];
    assert_eq!(span["tenant_id"], pair.tenant.id.as_str(), "{line}");
    assert_eq!(span["principal"], "agent", "{line}");
    assert_eq!(span["principal_id"], pair.caller.id.as_str(), "{line}");
    assert_eq!(span["call_id"], opened.field("call_id").as_str(), "{line}");
    assert_eq!(span["caller_agent_id"], pair.caller.id.as_str(), "{line}");
    assert_eq!(span["callee_agent_id"], pair.callee.id.as_str(), "{line}");
}
