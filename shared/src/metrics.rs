//! Business metrics as CloudWatch Embedded Metric Format (EMF) lines on standard output, which
//! CloudWatch Logs turns into metrics of the namespace `FORGEBENCH_METRICS_NAMESPACE`
//! (`Forgebench` when unset). Every dimension takes its values from a closed set (a delivery
//! mode, a task state, a refusal reason, a route, an outcome), never an id: a metric's
//! cardinality is bounded by the code, not by the traffic.

use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

use crate::domain::binding::RefusalReason;
use crate::domain::task::Delivery;
use crate::domain::TaskState;

/// One thing worth counting or timing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A task was opened (not a repeated open).
    TaskOpened { delivery: Delivery },
    /// A callee claimed a pull task.
    TaskClaimed,
    /// A callee answered a task (by the result route or a push answer).
    TaskAnswered {
        state: TaskState,
        delivery: Delivery,
    },
    /// The sweeper failed tasks whose claim deadline passed.
    TasksExpired { count: u64 },
    /// A sweep left items for its next run (a store or queue failure).
    SweepSkipped { count: u64 },
    /// A call refused at the gate, by its precise reason.
    Refused { reason: RefusalReason },
    /// One push POST, its outcome and how long the endpoint took.
    PushAttempt {
        outcome: PushOutcome,
        latency: Duration,
    },
    /// A push task failed because its deliveries failed.
    PushFailed,
    /// A page left out one item it could not decode (`store/page.rs`): a bug, alarmed on.
    ItemSkipped,
    /// A long poll ended: how long it waited, on which route.
    LongPollWait {
        route: &'static str,
        waited: Duration,
    },
}

/// How one push POST ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushOutcome {
    /// The endpoint answered the task (or accepted it with `working`).
    Delivered,
    /// A failure that is retried.
    Retried,
    /// A failure that fails the task.
    Refused,
}

impl PushOutcome {
    fn as_str(self) -> &'static str {
        match self {
            PushOutcome::Delivered => "delivered",
            PushOutcome::Retried => "retried",
            PushOutcome::Refused => "refused",
        }
    }
}

/// A metric's name, unit, value and dimensions, as EMF names them.
struct Datum {
    name: &'static str,
    unit: &'static str,
    value: f64,
    dimensions: Vec<(&'static str, &'static str)>,
}

impl Metric {
    fn datum(self) -> Datum {
        let count = |name, value: u64, dimensions| Datum {
            name,
            unit: "Count",
            value: value as f64,
            dimensions,
        };
        match self {
            Metric::TaskOpened { delivery } => {
                count("TasksOpened", 1, vec![("Delivery", delivery.as_str())])
            }
            Metric::TaskClaimed => count("TasksClaimed", 1, vec![]),
            Metric::TaskAnswered { state, delivery } => count(
                "TasksAnswered",
                1,
                vec![("State", state.as_str()), ("Delivery", delivery.as_str())],
            ),
            Metric::TasksExpired { count: n } => count("TasksExpired", n, vec![]),
            Metric::SweepSkipped { count: n } => count("SweepSkipped", n, vec![]),
            Metric::Refused { reason } => count("Refusals", 1, vec![("Reason", reason.as_str())]),
            Metric::PushAttempt { outcome, latency } => Datum {
                name: "PushAttemptLatency",
                unit: "Milliseconds",
                value: latency.as_secs_f64() * 1000.0,
                dimensions: vec![("Outcome", outcome.as_str())],
            },
            Metric::PushFailed => count("PushFailures", 1, vec![]),
            Metric::ItemSkipped => count("ItemsSkipped", 1, vec![]),
            Metric::LongPollWait { route, waited } => Datum {
                name: "LongPollWait",
                unit: "Seconds",
                value: waited.as_secs_f64(),
                dimensions: vec![("Route", route)],
            },
        }
    }

    /// The EMF line of this metric at `timestamp_ms` in `namespace`: one JSON object whose
    /// `_aws` member declares the metric and its dimension set, the values beside it.
    pub fn emf_line(self, namespace: &str, timestamp_ms: u128) -> String {
        let datum = self.datum();
        let mut line = Map::new();
        let names: Vec<&str> = datum.dimensions.iter().map(|(name, _)| *name).collect();
        line.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp_ms as u64,
                "CloudWatchMetrics": [{
                    "Namespace": namespace,
                    "Dimensions": [names],
                    "Metrics": [{"Name": datum.name, "Unit": datum.unit}],
                }],
            }),
        );
        for (name, value) in datum.dimensions {
            line.insert(name.into(), Value::from(value));
        }
        line.insert(datum.name.into(), json!(datum.value));
        Value::Object(line).to_string()
    }
}

/// Where the lines go: standard output (the default), kept for a test, or nowhere.
enum Sink {
    Print,
    Keep(Vec<String>),
    Discard,
}

static SINK: Mutex<Sink> = Mutex::new(Sink::Print);

fn sink() -> std::sync::MutexGuard<'static, Sink> {
    SINK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Emits `metric` as one EMF line on standard output.
pub fn emit(metric: Metric) {
    // The environment is read once per process, not on every request's metrics.
    static NAMESPACE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let namespace = NAMESPACE.get_or_init(|| {
        std::env::var("FORGEBENCH_METRICS_NAMESPACE")
            .ok()
            .filter(|namespace| !namespace.is_empty())
            .unwrap_or_else(|| "Forgebench".to_owned())
    });
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    match &mut *sink() {
        Sink::Print => println!("{}", metric.emf_line(namespace, now)),
        Sink::Keep(lines) => lines.push(metric.emf_line(namespace, now)),
        Sink::Discard => {}
    }
}

/// Keeps every line emitted from now on in the process, for a test to read with
/// [`captured`], instead of printing it.
pub fn capture() {
    let mut sink = sink();
    if !matches!(*sink, Sink::Keep(_)) {
        *sink = Sink::Keep(Vec::new());
    }
}

/// Drops the lines instead of printing them (a test or benchmark process, whose standard
/// output is its report), unless a [`capture`] is on.
pub fn discard() {
    let mut sink = sink();
    if matches!(*sink, Sink::Print) {
        *sink = Sink::Discard;
    }
}

/// The lines kept since [`capture`], taken.
pub fn captured() -> Vec<String> {
    match &mut *sink() {
        Sink::Keep(lines) => std::mem::take(lines),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_declares_its_metric_and_dimensions_beside_their_values() {
        let line = Metric::Refused {
            reason: RefusalReason::BindingRevoked,
        }
        .emf_line("Forgebench/test", 1_700_000_000_123);
        let value: Value = serde_json::from_str(&line).unwrap();
        let declared = &value["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(value["_aws"]["Timestamp"], 1_700_000_000_123_u64);
        assert_eq!(declared["Namespace"], "Forgebench/test");
        assert_eq!(declared["Dimensions"], json!([["Reason"]]));
        assert_eq!(
            declared["Metrics"],
            json!([{"Name": "Refusals", "Unit": "Count"}])
        );
        assert_eq!(value["Reason"], "binding_revoked");
        assert_eq!(value["Refusals"], 1.0);
    }

    #[test]
    fn a_timing_carries_its_unit() {
        let line = Metric::PushAttempt {
            outcome: PushOutcome::Retried,
            latency: Duration::from_millis(250),
        }
        .emf_line("N", 0);
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            value["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Unit"],
            "Milliseconds"
        );
        assert_eq!(value["PushAttemptLatency"], 250.0);
        assert_eq!(value["Outcome"], "retried");
    }
}
