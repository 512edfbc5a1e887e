//! X-Ray subsegments for the calls a function makes: every AWS SDK request (DynamoDB, SQS, KMS,
//! S3) and every push POST, sent to the X-Ray daemon Lambda runs beside a traced function.
//!
//! Lambda starts each invocation's trace and hands the function its header (`Root=…;Parent=…;
//! Sampled=…`, in `_X_AMZN_TRACE_ID`, which the runtime sets per invocation) and the daemon's
//! address (`AWS_XRAY_DAEMON_ADDRESS`). A subsegment names its parent, so the calls appear
//! under the function's segment in the trace. Outside Lambda (no daemon address) or when the
//! trace is not sampled, nothing is sent. Sending is one UDP datagram, never awaited: a lost
//! subsegment costs the trace a line, never the request anything.

use std::net::UdpSocket;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeSerializationInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use serde_json::{json, Value};

/// The current invocation's trace, as Lambda's header gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceHeader {
    pub root: String,
    pub parent: String,
}

impl TraceHeader {
    /// The sampled trace of `header` (`Root=1-…;Parent=…;Sampled=1`); `None` when it is not
    /// sampled or lacks a root or parent.
    pub fn parse(header: &str) -> Option<TraceHeader> {
        let field = |name: &str| {
            header.split(';').find_map(|part| {
                let (key, value) = part.trim().split_once('=')?;
                (key == name).then(|| value.to_owned())
            })
        };
        if field("Sampled").as_deref() != Some("1") {
            return None;
        }
        Some(TraceHeader {
            root: field("Root")?,
            parent: field("Parent")?,
        })
    }

    fn current() -> Option<TraceHeader> {
        TraceHeader::parse(&std::env::var("_X_AMZN_TRACE_ID").ok()?)
    }
}

/// The ids a request or delivery is about, once known: every subsegment sent inside
/// [`with_annotations`] carries them as X-Ray annotations (searchable in the console).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    pub task_id: Option<String>,
    pub call_id: Option<String>,
    pub caller_agent_id: Option<String>,
    pub callee_agent_id: Option<String>,
}

impl Annotations {
    pub fn of(task: &crate::domain::Task) -> Annotations {
        Annotations {
            task_id: Some(task.id.as_str().to_owned()),
            call_id: Some(task.call_id.to_string()),
            caller_agent_id: Some(task.caller_agent_id.as_str().to_owned()),
            callee_agent_id: Some(task.callee_agent_id.as_str().to_owned()),
        }
    }
}

tokio::task_local! {
    static ANNOTATIONS: std::cell::RefCell<Annotations>;
}

/// Runs `work` with room for annotations that [`annotate`] fills in as the ids become known.
pub async fn with_annotations<F: std::future::Future>(work: F) -> F::Output {
    ANNOTATIONS
        .scope(std::cell::RefCell::new(Annotations::default()), work)
        .await
}

/// Names the task (and so its call and agents) of the current request or delivery; a no-op
/// outside [`with_annotations`].
pub fn annotate(annotations: Annotations) {
    let _outside = ANNOTATIONS.try_with(|current| *current.borrow_mut() = annotations);
}

fn current_annotations() -> Annotations {
    ANNOTATIONS
        .try_with(|current| current.borrow().clone())
        .unwrap_or_default()
}

/// One call, timed: what a subsegment records of it.
#[derive(Debug, Clone)]
pub struct Call {
    /// The service or host called (`DynamoDB`, `SQS`, `KMS`, `S3`, the endpoint's host).
    pub name: String,
    /// `aws` for an AWS service, `remote` for any other HTTP call.
    pub namespace: &'static str,
    pub operation: Option<String>,
    pub status: Option<u16>,
    pub started: SystemTime,
    pub ended: SystemTime,
}

impl Call {
    /// The subsegment document of this call under `trace`, with the new id `id`.
    pub fn subsegment(&self, trace: &TraceHeader, id: &str) -> Value {
        let seconds = |at: SystemTime| {
            at.duration_since(UNIX_EPOCH)
                .map(|since| since.as_secs_f64())
                .unwrap_or_default()
        };
        let mut document = json!({
            "name": self.name,
            "id": id,
            "trace_id": trace.root,
            "parent_id": trace.parent,
            "type": "subsegment",
            "namespace": self.namespace,
            "start_time": seconds(self.started),
            "end_time": seconds(self.ended),
        });
        if let Some(operation) = &self.operation {
            document["aws"] = json!({ "operation": operation });
        }
        let annotations = current_annotations();
        let named: serde_json::Map<String, Value> = [
            ("task_id", annotations.task_id),
            ("call_id", annotations.call_id),
            ("caller_agent_id", annotations.caller_agent_id),
            ("callee_agent_id", annotations.callee_agent_id),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name.to_owned(), Value::from(value?))))
        .collect();
        if !named.is_empty() {
            document["annotations"] = Value::Object(named);
        }
        match self.status {
            Some(status) => {
                document["http"] = json!({"response": {"status": status}});
                document["error"] = json!((400..500).contains(&status));
                document["fault"] = json!(status >= 500);
            }
            None => document["fault"] = json!(true),
        }
        document
    }

    /// Sends this call's subsegment to the daemon, when the current invocation is traced.
    pub fn send(&self) {
        let (Some(trace), Some(daemon)) = (
            TraceHeader::current(),
            std::env::var("AWS_XRAY_DAEMON_ADDRESS").ok(),
        ) else {
            return;
        };
        let Some(id) = subsegment_id() else {
            return;
        };
        let datagram = format!(
            "{{\"format\": \"json\", \"version\": 1}}\n{}",
            self.subsegment(&trace, &id)
        );
        if let Some(socket) = socket() {
            // The daemon's address may list a TCP part (`tcp:…:2000 udp:…:2000`); UDP is ours.
            let address = daemon
                .split_whitespace()
                .find_map(|part| part.strip_prefix("udp:"))
                .unwrap_or(&daemon);
            if let Err(error) = socket.send_to(datagram.as_bytes(), address) {
                tracing::debug!(error = %error, "X-Ray subsegment not sent");
            }
        }
    }
}

/// A new subsegment id: 16 hex digits.
fn subsegment_id() -> Option<String> {
    let mut bytes = [0_u8; 8];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

fn socket() -> Option<&'static UdpSocket> {
    static SOCKET: OnceLock<Option<UdpSocket>> = OnceLock::new();
    SOCKET
        .get_or_init(|| UdpSocket::bind("0.0.0.0:0").ok())
        .as_ref()
}

/// When an SDK request began, kept in the request's config bag.
#[derive(Debug, Clone, Copy)]
struct Began(SystemTime, Instant);

impl Storable for Began {
    type Storer = StoreReplace<Self>;
}

/// Sends a subsegment for every request of the client it is added to.
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
        cfg.interceptor_state()
            .store_put(Began(SystemTime::now(), Instant::now()));
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
        Call {
            name: metadata.service().to_owned(),
            namespace: "aws",
            operation: Some(metadata.name().to_owned()),
            status: context
                .response()
                .map(|response| response.status().as_u16()),
            started: began.0,
            ended: began.0 + began.1.elapsed(),
        }
        .send();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_a_sampled_header_with_root_and_parent_is_a_trace() {
        let header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
        assert_eq!(
            TraceHeader::parse(header),
            Some(TraceHeader {
                root: "1-5759e988-bd862e3fe1be46a994272793".into(),
                parent: "53995c3f42cd8ad8".into(),
            })
        );
        assert_eq!(
            TraceHeader::parse("Root=1-5759e988-bd86;Parent=53995c3f;Sampled=0"),
            None
        );
        assert_eq!(TraceHeader::parse("Root=1-5759e988-bd86;Sampled=1"), None);
    }

    #[test]
    fn a_subsegment_names_its_parent_and_says_how_the_call_ended() {
        let trace = TraceHeader {
            root: "1-5759e988-bd862e3fe1be46a994272793".into(),
            parent: "53995c3f42cd8ad8".into(),
        };
        let started = UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let call = Call {
            name: "DynamoDB".into(),
            namespace: "aws",
            operation: Some("GetItem".into()),
            status: Some(503),
            started,
            ended: started + Duration::from_millis(20),
        };
        let document = call.subsegment(&trace, "0123456789abcdef");
        assert_eq!(document["trace_id"], trace.root.as_str());
        assert_eq!(document["parent_id"], "53995c3f42cd8ad8");
        assert_eq!(document["type"], "subsegment");
        assert_eq!(document["aws"]["operation"], "GetItem");
        assert_eq!(document["fault"], true);
        assert_eq!(document["error"], false);
        let took =
            document["end_time"].as_f64().unwrap() - document["start_time"].as_f64().unwrap();
        assert!((took - 0.02).abs() < 1e-6, "{took}");
    }
}
