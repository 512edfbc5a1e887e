//! The application's OpenTelemetry context through the SDK: a task opened inside a span joins
//! its trace (one opened outside is in its root call's), and `serve` runs the handler in the
//! trace the claimed task names.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

mod otel;

use std::sync::{Arc, Mutex};

use forgebench_sdk::{CallOptions, Client, ServeOptions, Task};
use forgebench_tests::{spawn_app_with, Options};

#[tokio::test]
async fn a_task_opened_inside_a_span_joins_its_trace_and_the_handler_runs_under_it() {
    otel::instrument();
    let app = spawn_app_with(Options::default()).await;
    let pair = app.pair().await;
    let caller = Client::new(&pair.caller.key, &app.base).unwrap();
    let call = |text: &str| caller.call(&pair.callee.name, CallOptions::new().text(text));

    let (inside, planned) = otel::in_span(call("inside")).await;
    let inside = inside.unwrap();
    let (trace_id, span_id) = otel::ids(inside.traceparent.as_deref());
    assert_eq!(trace_id, planned.0);
    assert_ne!(
        span_id, planned.1,
        "the gateway's span, under the application's"
    );
    let outside = call("outside").await.unwrap();
    let call_id = outside.call_id.clone().unwrap_or_default();
    assert_eq!(
        otel::ids(outside.traceparent.as_deref()).0,
        call_id.replace('-', "")
    );

    // The callee's handler, under `serve`, runs under the span the claimed task names.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = {
        let seen = Arc::clone(&seen);
        move |task: Task| {
            seen.lock()
                .unwrap()
                .push((task.id.clone(), otel::current_ids()));
            async move { task.done().text("traced") }
        }
    };
    let callee = Client::new(&pair.callee.key, &app.base).unwrap();
    let options = ServeOptions {
        max_tasks: Some(2),
        wait: 2,
        ..ServeOptions::default()
    };
    assert_eq!(callee.serve(handler, options).await.unwrap(), 2);
    let seen = seen.lock().unwrap().clone();
    for task in [&inside, &outside] {
        let (_, under) = seen.iter().find(|(id, _)| *id == task.id).unwrap();
        assert_eq!(
            *under,
            otel::ids(task.traceparent.as_deref()),
            "{}",
            task.id
        );
    }
}
