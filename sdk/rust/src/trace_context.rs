//! OpenTelemetry, with the `opentelemetry` feature (on by default): each request carries the
//! application's current context as W3C `traceparent` and `tracestate` (through its global
//! propagator), so that the tasks it opens join the application's trace; a handler runs in the
//! context its task brought (a claimed task's `traceparent`, a push delivery's headers), so that
//! its spans, and the tasks it opens, join the call tree's trace. Without the feature, or with
//! no propagator set, nothing is added and nothing is read.

#[cfg(feature = "opentelemetry")]
use std::collections::HashMap;
use std::future::Future;

/// The W3C headers the gateway reads.
#[cfg(feature = "opentelemetry")]
const W3C_HEADERS: [&str; 2] = ["traceparent", "tracestate"];

/// The current OpenTelemetry context as W3C headers.
#[cfg(feature = "opentelemetry")]
pub(crate) fn outgoing_headers() -> Vec<(&'static str, String)> {
    let mut carrier = HashMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&opentelemetry::Context::current(), &mut carrier);
    });
    W3C_HEADERS
        .iter()
        .filter_map(|name| carrier.remove(*name).map(|value| (*name, value)))
        .collect()
}

#[cfg(not(feature = "opentelemetry"))]
pub(crate) fn outgoing_headers() -> Vec<(&'static str, String)> {
    Vec::new()
}

/// `work`, run in the context `traceparent` and `tracestate` bring; as it is without one.
#[cfg(feature = "opentelemetry")]
pub(crate) async fn within<F: Future>(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
    work: F,
) -> F::Output {
    use opentelemetry::context::FutureExt;
    let Some(traceparent) = traceparent else {
        return work.await;
    };
    let mut carrier = HashMap::from([(W3C_HEADERS[0].to_owned(), traceparent.to_owned())]);
    if let Some(tracestate) = tracestate {
        carrier.insert(W3C_HEADERS[1].to_owned(), tracestate.to_owned());
    }
    let context = opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.extract_with_context(&opentelemetry::Context::current(), &carrier)
    });
    work.with_context(context).await
}

#[cfg(not(feature = "opentelemetry"))]
pub(crate) async fn within<F: Future>(
    _traceparent: Option<&str>,
    _tracestate: Option<&str>,
    work: F,
) -> F::Output {
    work.await
}
