//! OpenTelemetry: the gateway's spans, exported over OTLP/HTTP (protobuf) when an endpoint is
//! configured (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, as every
//! OpenTelemetry SDK reads them); without one, nothing is built and nothing is sent.
//!
//! Every `tracing` span becomes an OpenTelemetry span (`tracing-opentelemetry`): a request's span
//! continues the `traceparent` it brings, a push delivery's span continues its task's context.
//! Besides those, each call gets a span of its own, [`record_call`], with the very ids the gate
//! hands on for it (the claimed task's and the push POST's `traceparent`): a context stored with
//! the task, or the one derived from its call ids (`domain/trace.rs`), so that a call tree is one
//! trace with the right parents even where no caller brought a context and nothing was stored.
//! The ids are given to the SDK through its id generator, [`GivenIds`].
//!
//! Spans are batched and exported off the request's path; a function flushes them at the end
//! of each invocation ([`flush`]), before Lambda may freeze it.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::SystemTime;

use opentelemetry::trace::{
    SpanContext, SpanKind, TraceContextExt, TraceFlags, TraceState, Tracer, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SdkTracerProvider};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::domain::trace::{SpanId, TraceContext, TraceId};

mod aws_calls;

pub use aws_calls::TraceCalls;

/// The instrumentation scope the gateway's spans name.
const SCOPE: &str = "forgebench-gateway";

/// The environment variables that name where spans go, as OpenTelemetry defines them.
pub const ENDPOINT_VARIABLES: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Why spans cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("the OTLP exporter could not be built")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    #[error("the tracer provider is already installed")]
    AlreadyInstalled,
}

/// Whether the environment names an OTLP endpoint.
pub fn configured_by_environment() -> bool {
    ENDPOINT_VARIABLES
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|value| !value.trim().is_empty()))
}

/// Builds the exporting tracer provider: to `endpoint` (the base URL; `/v1/traces` is added)
/// when given, else where the environment says. Installed once per process.
pub fn install(endpoint: Option<&str>) -> Result<opentelemetry_sdk::trace::Tracer, TelemetryError> {
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary);
    if let Some(endpoint) = endpoint {
        exporter = exporter.with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')));
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter.build()?)
        .with_id_generator(GivenIds)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(
                    std::env::var("OTEL_SERVICE_NAME").unwrap_or_else(|_| SCOPE.to_owned()),
                )
                .build(),
        )
        .build();
    let tracer = provider.tracer(SCOPE);
    PROVIDER
        .set(provider)
        .map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(tracer)
}

/// Exports the spans ended so far; a no-op when nothing exports. Waits off the async threads.
pub async fn flush() {
    let Some(provider) = PROVIDER.get() else {
        return;
    };
    let flushed = tokio::task::spawn_blocking(move || provider.force_flush()).await;
    if let Ok(Err(error)) = flushed {
        tracing::warn!(error = %error, "spans could not be exported");
    }
}

/// Whether spans are exported in this process.
pub fn exporting() -> bool {
    PROVIDER.get().is_some()
}

/// An OpenTelemetry span context of the gate's own trace context.
fn span_context(context: &TraceContext) -> SpanContext {
    let state = context
        .state
        .as_deref()
        .and_then(|state| state.parse::<TraceState>().ok())
        .unwrap_or_default();
    SpanContext::new(
        opentelemetry::trace::TraceId::from_bytes(context.trace_id.0),
        opentelemetry::trace::SpanId::from_bytes(context.span_id.0),
        if context.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        },
        true,
        state,
    )
}

/// Makes the current `tracing` span a child of `parent`, a span of another process (the
/// caller's, or the open's a delivery continues).
pub fn continue_remote(span: &tracing::Span, parent: &TraceContext) {
    if exporting() {
        let _ = span.set_parent(Context::new().with_remote_span_context(span_context(parent)));
    }
}

/// The current span's context as the gate's, when it is in `trace`: the span a POST sent now
/// is under. `None` outside an exported span or in another trace.
pub fn current_in(trace: TraceId) -> Option<TraceContext> {
    if !exporting() {
        return None;
    }
    let context = tracing::Span::current().context();
    let current = context.span().span_context().clone();
    (current.is_valid() && current.trace_id().to_bytes() == trace.0).then(|| TraceContext {
        trace_id: trace,
        span_id: SpanId(current.span_id().to_bytes()),
        sampled: current.is_sampled(),
        state: None,
    })
}

/// Where a call's span hangs in its trace.
pub enum CallParent<'a> {
    /// The request's span (which continues the caller's context): the call's context came
    /// with the request.
    Request,
    /// A span the gate handed on before: the parent call's.
    Remote(&'a TraceContext),
    /// None: the call is its tree's root and its trace's first span.
    Root,
}

/// What a call's span says about it.
pub struct CallSpan<'a> {
    pub context: &'a TraceContext,
    pub parent: CallParent<'a>,
    pub started: SystemTime,
    pub call_id: &'a str,
    pub root_call_id: &'a str,
    pub parent_call_id: Option<&'a str>,
    pub task_id: &'a str,
    pub tenant_id: &'a str,
    pub caller_agent_id: &'a str,
    pub callee_agent_id: &'a str,
    pub callee_name: &'a str,
}

/// Records the span of an opened call, with the ids of `call.context`: the span the claimed
/// task and its push POSTs name as their parent. GenAI's `invoke_agent` operation, with the
/// call's lineage as attributes.
pub fn record_call(call: CallSpan<'_>) {
    let Some(provider) = PROVIDER.get() else {
        return;
    };
    let parent = match call.parent {
        CallParent::Request => tracing::Span::current().context(),
        CallParent::Remote(parent) => Context::new().with_remote_span_context(span_context(parent)),
        CallParent::Root => Context::new(),
    };
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "invoke_agent"),
        KeyValue::new("gen_ai.agent.id", call.callee_agent_id.to_owned()),
        KeyValue::new("gen_ai.agent.name", call.callee_name.to_owned()),
        KeyValue::new("call_id", call.call_id.to_owned()),
        KeyValue::new("root_call_id", call.root_call_id.to_owned()),
        KeyValue::new("task_id", call.task_id.to_owned()),
        KeyValue::new("tenant_id", call.tenant_id.to_owned()),
        KeyValue::new("caller_agent_id", call.caller_agent_id.to_owned()),
    ];
    if let Some(parent_call_id) = call.parent_call_id {
        attributes.push(KeyValue::new("parent_call_id", parent_call_id.to_owned()));
    }
    let tracer = provider.tracer(SCOPE);
    let builder = tracer
        .span_builder(format!("invoke_agent {}", call.callee_name))
        .with_kind(SpanKind::Server)
        .with_start_time(call.started)
        .with_attributes(attributes);
    let span = GivenIds::building(call.context, || tracer.build_with_context(builder, &parent));
    drop(span);
}

thread_local! {
    static GIVEN_TRACE: Cell<Option<TraceId>> = const { Cell::new(None) };
    static GIVEN_SPAN: Cell<Option<SpanId>> = const { Cell::new(None) };
}

/// The SDK's id generator, except for a span built inside [`GivenIds::building`], which gets
/// the ids given (its trace id only when it has no parent to take one from).
#[derive(Debug)]
struct GivenIds;

impl GivenIds {
    fn building<T>(context: &TraceContext, build: impl FnOnce() -> T) -> T {
        GIVEN_TRACE.with(|given| given.set(Some(context.trace_id)));
        GIVEN_SPAN.with(|given| given.set(Some(context.span_id)));
        let built = build();
        GIVEN_TRACE.with(|given| given.set(None));
        GIVEN_SPAN.with(|given| given.set(None));
        built
    }
}

impl IdGenerator for GivenIds {
    fn new_trace_id(&self) -> opentelemetry::trace::TraceId {
        match GIVEN_TRACE.with(Cell::take) {
            Some(given) => opentelemetry::trace::TraceId::from_bytes(given.0),
            None => RandomIdGenerator::default().new_trace_id(),
        }
    }

    fn new_span_id(&self) -> opentelemetry::trace::SpanId {
        match GIVEN_SPAN.with(Cell::take) {
            Some(given) => opentelemetry::trace::SpanId::from_bytes(given.0),
            None => RandomIdGenerator::default().new_span_id(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_built_with_given_ids_has_them_and_the_next_does_not() {
        let context = TraceContext::of_call(
            "0b7e3f52-6c1d-4a8e-9f00-0123456789ab",
            "5e6f7abf-b824-4839-90f1-f75c79098e21",
        )
        .unwrap();
        let provider = SdkTracerProvider::builder()
            .with_id_generator(GivenIds)
            .build();
        let tracer = provider.tracer("test");
        let given = GivenIds::building(&context, || {
            tracer.build_with_context(tracer.span_builder("call"), &Context::new())
        });
        let ids = |span: &opentelemetry_sdk::trace::Span| {
            use opentelemetry::trace::Span as _;
            let context = span.span_context();
            (context.trace_id().to_bytes(), context.span_id().to_bytes())
        };
        assert_eq!(ids(&given), (context.trace_id.0, context.span_id.0));
        let next = tracer.build_with_context(tracer.span_builder("next"), &Context::new());
        assert_ne!(ids(&next).0, context.trace_id.0);
        assert_ne!(ids(&next).1, context.span_id.0);
    }
}
