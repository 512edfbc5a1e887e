//! The span of each POST the push worker sends (a task's delivery, a notification's event): a
//! client span in the task's trace, under its call's span (`telemetry`), whose id the POST's
//! `traceparent` names, with the answer's status once it came.

use tracing::field::Empty;

use crate::domain::Task;

/// The span of one delivery POST of `task` to `url`.
pub(super) fn attempt(task: &Task, url: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "push attempt",
        otel.kind = "client",
        otel.status_code = Empty,
        http.request.method = "POST",
        server.address = host_of(url),
        http.response.status_code = Empty,
        call_id = task.call_id.as_str(),
        root_call_id = task.root_call_id.as_str(),
    );
    in_trace_of(span, task)
}

/// The span of one notification POST of `task`'s event to config `config_id`'s `url`.
pub(super) fn notification(task: &Task, url: &str, config_id: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "push notification",
        otel.kind = "client",
        otel.status_code = Empty,
        http.request.method = "POST",
        server.address = host_of(url),
        http.response.status_code = Empty,
        call_id = task.call_id.as_str(),
        root_call_id = task.root_call_id.as_str(),
        config_id,
    );
    in_trace_of(span, task)
}

/// `span`, continuing `task`'s trace context (its call's span), when spans are exported.
fn in_trace_of(span: tracing::Span, task: &Task) -> tracing::Span {
    if let Some(context) = task.trace_context() {
        crate::telemetry::continue_remote(&span, &context);
    }
    span
}

fn host_of(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|url| url.host_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The POST's answer on the current POST span: its status, and an error when none came or it
/// was a server error.
pub(super) fn record_answer(status: Option<u16>) {
    let span = tracing::Span::current();
    if let Some(status) = status {
        span.record("http.response.status_code", status);
    }
    if status.is_none_or(|status| status >= 500) {
        span.record("otel.status_code", "ERROR");
    }
}
