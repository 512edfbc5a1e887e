//! Unexpected errors: the client gets the opaque 500, the log line gets the whole cause.

use std::io::Write;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::types::AttributeValue;
use forgebench_tests::{spawn_app, text_message};

/// Every line the gateway logs in this test process.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_500_says_nothing_to_the_client_and_its_log_line_names_the_cause() {
    let captured = Captured::default();
    let sink = captured.clone();
    let installed = tracing_subscriber::fmt()
        .json()
        .with_writer(move || sink.clone())
        .try_init();
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    app.app
        .store
        .client()
        .update_item()
        .table_name(&app.table)
        .key("pk", AttributeValue::S(format!("TASK#{task_id}")))
        .key("sk", AttributeValue::S("TASK".into()))
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
    if installed.is_ok() {
        let logs = String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned();
        let line = logs
            .lines()
            .find(|line| line.contains("request failed"))
            .unwrap_or_else(|| panic!("no line for the 500 in {logs}"));
        assert!(line.contains("corrupt item"), "{line}");
        assert!(line.contains("bogus-state"), "{line}");
    }
}
