//! The W3C trace context (`domain/trace.rs`) of the request under way: read from its
//! `traceparent` and `tracestate` headers, continued by a span of the gateway's own (a new span
//! id in the same trace), and kept for the request's work in a task-local, so that the open
//! that writes a task finds it without every handler passing it on. Passed on as headers on
//! the POSTs the push worker sends.

use std::future::Future;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::domain::trace::TraceContext;

/// The header that names the parent span.
pub const TRACEPARENT: &str = "traceparent";
/// The header with the vendors' state of the trace.
pub const TRACESTATE: &str = "tracestate";

tokio::task_local! {
    static CURRENT: Option<TraceContext>;
}

/// The context `headers` bring: the caller's span; `None` when they bring none the gateway can
/// read (one `traceparent` only; `tracestate` headers are one list).
pub fn brought<'a>(
    traceparents: impl Iterator<Item = &'a str>,
    tracestates: impl Iterator<Item = &'a str>,
) -> Option<TraceContext> {
    let traceparents: Vec<&str> = traceparents.collect();
    let [traceparent] = traceparents.as_slice() else {
        return None;
    };
    let tracestate = tracestates.collect::<Vec<_>>().join(",");
    let state = (!tracestate.is_empty()).then_some(tracestate.as_str());
    TraceContext::parse(traceparent, state)
}

/// The context `headers` bring, continued by a new span of the gateway's.
pub fn continued_from<'a>(
    traceparents: impl Iterator<Item = &'a str>,
    tracestates: impl Iterator<Item = &'a str>,
) -> Option<TraceContext> {
    brought(traceparents, tracestates).map(|context| context.child())
}

/// Runs `work` with `context` as the current request's trace context.
pub async fn within<F: Future>(context: Option<TraceContext>, work: F) -> F::Output {
    CURRENT.scope(context, work).await
}

/// The current request's trace context (its span in the trace it continues), when it brought
/// one; `None` outside a request or when it brought none.
pub fn current() -> Option<TraceContext> {
    CURRENT.try_with(Clone::clone).ok().flatten()
}

/// Adds `traceparent` (a new span under `context`: this POST's) and `tracestate` to `headers`.
pub fn add_headers(headers: &mut HeaderMap, context: Option<&TraceContext>) {
    let Some(context) = context else {
        return;
    };
    // Under the span sending it when that span is exported in this trace, else a new one.
    let sent = match crate::telemetry::current_in(context.trace_id) {
        Some(current) => TraceContext {
            state: context.state.clone(),
            ..current
        },
        None => context.child(),
    };
    let pairs = [
        (TRACEPARENT, Some(sent.traceparent())),
        (TRACESTATE, sent.state),
    ];
    for (name, value) in pairs {
        let value = value.and_then(|value| HeaderValue::from_str(&value).ok());
        if let Some(value) = value {
            headers.insert(HeaderName::from_static(name), value);
        }
    }
}
