//! An application instrumented with OpenTelemetry (its SDK and W3C propagator, set globally as
//! an application sets them), for the tests that check the SDK passes its context on.

use std::future::Future;

use opentelemetry::context::FutureExt;
use opentelemetry::trace::{TraceContextExt, Tracer, TracerProvider};
use opentelemetry::Context;

/// Sets the W3C propagator, as an instrumented application does at its start.
pub fn instrument() {
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
}

/// `work`, run inside a new span of the application's; its output and the span's ids.
pub async fn in_span<F: Future>(work: F) -> (F::Output, (String, String)) {
    let tracer = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .build()
        .tracer("an instrumented application");
    let context = Context::current_with_span(tracer.start("plan"));
    let planned = ids_of(&context);
    (work.with_context(context).await, planned)
}

/// The current context's trace id and span id, as `traceparent` writes them.
pub fn current_ids() -> (String, String) {
    ids_of(&Context::current())
}

fn ids_of(context: &Context) -> (String, String) {
    let span = context.span();
    let ids = span.span_context();
    (ids.trace_id().to_string(), ids.span_id().to_string())
}

/// A `traceparent`'s trace id and span id.
pub fn ids(traceparent: Option<&str>) -> (String, String) {
    let traceparent = traceparent.expect("a traceparent");
    let fields: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(fields.len(), 4, "{traceparent}");
    (fields[1].to_owned(), fields[2].to_owned())
}
