//! The small task the cost targets are set on (docs/benchmarks.md, "Cost per task"): its
//! message and its answer.

use serde_json::{json, Value};

/// The small task of the cost targets: a two-part message of a dozen words and a small `data`
/// part; with its answer, 14 distinct words (docs/benchmarks.md, "Cost per task").
pub fn message() -> Value {
    json!({"role": "user", "parts": [
        {"text": "Please classify the attached invoice and flag anything unusual for review"},
        {"data": {"invoice": 4182}},
    ]})
}

/// The small task's answer: a one-part artifact.
pub fn result() -> Value {
    json!({"state": "completed", "artifacts": [
        {"name": "invoice", "parts": [{"text": "routine, approved"}]},
    ]})
}
