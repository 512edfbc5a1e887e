//! A small OTLP/HTTP receiver for the tests: a test callee that takes the span exporter's POSTs
//! (`/v1/traces`, protobuf) and decodes them with the OTLP protobufs (`opentelemetry-proto`), so
//! that a test reads the spans the gateway exported as any OTLP backend would.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use prost::Message;

use crate::{Answer, Callee};

/// One span as exported: its ids in hex (as `traceparent` writes them), its name and its
/// attributes with string and integer values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportedSpan {
    pub trace_id: String,
    pub span_id: String,
    /// `None` for a trace's root span.
    pub parent_span_id: Option<String>,
    pub name: String,
    pub attributes: BTreeMap<String, String>,
}

pub struct OtlpReceiver {
    callee: Callee,
    /// The base URL an exporter is given (`OTEL_EXPORTER_OTLP_ENDPOINT`).
    pub endpoint: String,
}

impl OtlpReceiver {
    pub async fn start() -> OtlpReceiver {
        let callee = Callee::start(|_| Answer::text(200, "")).await;
        let endpoint = format!("http://127.0.0.1:{}", callee.port);
        OtlpReceiver { callee, endpoint }
    }

    /// Every span received so far, in the order received.
    pub fn spans(&self) -> Vec<ExportedSpan> {
        self.callee
            .received()
            .iter()
            .flat_map(|post| {
                let request = ExportTraceServiceRequest::decode(post.raw_body.as_slice())
                    .expect("an OTLP trace export");
                request
                    .resource_spans
                    .into_iter()
                    .flat_map(|resource| resource.scope_spans)
                    .flat_map(|scope| scope.spans)
                    .map(|span| ExportedSpan {
                        trace_id: hex(&span.trace_id),
                        span_id: hex(&span.span_id),
                        parent_span_id: (!span.parent_span_id.is_empty())
                            .then(|| hex(&span.parent_span_id)),
                        name: span.name,
                        attributes: span
                            .attributes
                            .into_iter()
                            .filter_map(|attribute| {
                                let value = match attribute.value?.value? {
                                    Value::StringValue(text) => text,
                                    Value::IntValue(number) => number.to_string(),
                                    Value::BoolValue(flag) => flag.to_string(),
                                    _ => return None,
                                };
                                Some((attribute.key, value))
                            })
                            .collect(),
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
