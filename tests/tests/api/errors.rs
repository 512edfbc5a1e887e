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
    assert_eq!(
        read.text,
        r#"{"detail":{"code":"internal","message":"internal error"}}"#
    );
    if let Some(captured) = captured {
        let logs = captured.text();
        let line = logs
            .lines()
            .find(|line| line.contains("request failed"))
            .unwrap_or_else(|| panic!("no line for the 500 in {logs}"));
        assert!(line.contains("corrupt item"), "{line}");
        assert!(line.contains("bogus-state"), "{line}");
    }
}
