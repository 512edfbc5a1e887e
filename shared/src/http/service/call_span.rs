//! The span of an opened call (`telemetry.rs`), placed in its trace: under the request's span,
//! its parent call's, or as the trace's root.

use std::time::SystemTime;

use crate::domain::trace::TraceContext;
use crate::domain::Task;
use crate::telemetry::{CallParent, CallSpan};

/// Records the span of `task`'s call, opened since `started`, with the ids its context hands on
/// (`telemetry.rs`): under the request's span when the request brought the context, else under
/// its parent call's span (`parent_trace`, stored or derived), else as its trace's root.
pub(super) fn record(task: &Task, started: SystemTime, parent_trace: Option<&TraceContext>) {
    if !crate::telemetry::exporting() {
        return;
    }
    let Some(context) = task.trace_context() else {
        return;
    };
    let derived_parent = task
        .parent_call_id
        .as_ref()
        .and_then(|parent| TraceContext::of_call(task.root_call_id.as_str(), parent.as_str()));
    let parent = match parent_trace.or(derived_parent.as_ref()) {
        _ if crate::trace::current().is_some() => CallParent::Request,
        Some(parent) => CallParent::Remote(parent),
        None => CallParent::Root,
    };
    crate::telemetry::record_call(CallSpan {
        context: &context,
        parent,
        started,
        call_id: task.call_id.as_str(),
        root_call_id: task.root_call_id.as_str(),
        parent_call_id: task.parent_call_id.as_ref().map(|parent| parent.as_str()),
        task_id: task.id.as_str(),
        tenant_id: task.tenant_id.as_str(),
        caller_agent_id: task.caller_agent_id.as_str(),
        callee_agent_id: task.callee_agent_id.as_str(),
        callee_name: &task.callee_name,
    });
}
