//! A client span for every AWS SDK request (DynamoDB, SQS, KMS, S3), under the span that made
//! it: the interceptor [`TraceCalls`], added to each client. The spans carry OpenTelemetry's
//! `rpc.*` attributes for AWS (`rpc.system` `aws-api`, the service and the operation) and the
//! response's status, from which X-Ray draws each service as a node of the service map.

use std::time::{Instant, SystemTime};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use opentelemetry::trace::{Span as _, SpanKind, Status, Tracer, TracerProvider as _};
use opentelemetry::KeyValue;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// When an SDK request began, kept in the request's config bag.
#[derive(Debug, Clone, Copy)]
struct Began(SystemTime, Instant);

impl Storable for Began {
    type Storer = StoreReplace<Self>;
}

/// Records a client span for every request of the client it is added to, when spans are
/// exported.
#[derive(Debug, Default, Clone, Copy)]
pub struct TraceCalls;

impl Intercept for TraceCalls {
    fn name(&self) -> &'static str {
        "TraceCalls"
    }

    fn read_before_execution(
        &self,
        _context: &BeforeSerializationInterceptorContextRef<'_>,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if super::exporting() {
            cfg.interceptor_state()
                .store_put(Began(SystemTime::now(), Instant::now()));
        }
        Ok(())
    }

    fn read_after_execution(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let (Some(began), Some(metadata)) = (cfg.load::<Began>(), cfg.load::<Metadata>()) else {
            return Ok(());
        };
        let status = context
            .response()
            .map(|response| response.status().as_u16());
        record(
            metadata.service(),
            metadata.name(),
            status,
            (began.0, began.0 + began.1.elapsed()),
        );
        Ok(())
    }
}

/// The span of one request to `service`'s `operation`, ended with `status` (none: no response).
fn record(
    service: &str,
    operation: &str,
    status: Option<u16>,
    (started, ended): (SystemTime, SystemTime),
) {
    let Some(provider) = super::PROVIDER.get() else {
        return;
    };
    let mut attributes = vec![
        KeyValue::new("rpc.system", "aws-api"),
        KeyValue::new("rpc.service", service.to_owned()),
        KeyValue::new("rpc.method", operation.to_owned()),
    ];
    if let Some(status) = status {
        attributes.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
    }
    let failed = status.is_none_or(|status| status >= 500);
    let tracer = provider.tracer(super::SCOPE);
    let builder = tracer
        .span_builder(format!("{service}.{operation}"))
        .with_kind(SpanKind::Client)
        .with_start_time(started)
        .with_attributes(attributes);
    let parent = tracing::Span::current().context();
    let mut span = tracer.build_with_context(builder, &parent);
    if failed {
        span.set_status(Status::error("no response, or a server error"));
    }
    span.end_with_timestamp(ended);
}
