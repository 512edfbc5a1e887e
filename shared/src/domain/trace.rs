//! W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate`
//! a request brings, continued by the gateway and passed on with the task: to its push delivery
//! and notifications (headers), to its claim (the task's `traceparent`), and to the tasks its call
//! opens, so that a call tree is one trace.
//!
//! A context the gateway cannot read is ignored, as the recommendation asks: the request then
//! starts a trace of its own (a child task, its parent call's).

use std::fmt;

/// The most `tracestate` kept (the recommendation's own bound).
pub const MAX_TRACESTATE_BYTES: usize = 512;
/// The most list members a kept `tracestate` has.
const MAX_TRACESTATE_MEMBERS: usize = 32;
/// The bytes a stored context takes: the trace id, the span id and the flags.
pub const STORED_BYTES: usize = 25;

/// A trace's id: 16 bytes, not all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span's id: 8 bytes, not all zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex::encode(self.0))
    }
}

impl SpanId {
    /// A new random span id.
    pub fn generate() -> SpanId {
        loop {
            let bytes = uuid::Uuid::new_v4().into_bytes();
            let mut id = [0; 8];
            id.copy_from_slice(&bytes[8..]);
            if id != [0; 8] {
                return SpanId(id);
            }
        }
    }
}

/// One span's place in a trace, as `traceparent` and `tracestate` carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: TraceId,
    /// The span this context names as the parent of the next one.
    pub span_id: SpanId,
    /// The `sampled` flag: the caller records this trace.
    pub sampled: bool,
    /// The vendors' `tracestate`, passed on as it came.
    pub state: Option<String>,
}

impl TraceContext {
    /// The context of `traceparent` (and `tracestate`); `None` when `traceparent` is not one.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<TraceContext> {
        let fields = parse_traceparent(traceparent.trim_matches([' ', '\t']))?;
        Some(TraceContext {
            state: tracestate.and_then(kept_tracestate),
            ..fields
        })
    }

    /// The context of a call whose open brought none and whose parent call kept none: the
    /// trace is its root call's id (a UUID's 16 bytes, random but for its version and variant
    /// bits), the span the last 8 bytes of its own call id, sampled. Every call of a tree that
    /// brought no context of its own is thus in one trace, and a task stores nothing for it.
    /// `None` when either id is not a UUID.
    pub fn of_call(root_call_id: &str, call_id: &str) -> Option<TraceContext> {
        let root = uuid::Uuid::parse_str(root_call_id).ok()?.into_bytes();
        let call = uuid::Uuid::parse_str(call_id).ok()?.into_bytes();
        let mut span = [0; 8];
        span.copy_from_slice(&call[8..]);
        (root != [0; 16] && span != [0; 8]).then_some(TraceContext {
            trace_id: TraceId(root),
            span_id: SpanId(span),
            sampled: true,
            state: None,
        })
    }

    /// A new span of the same trace, under this one.
    pub fn child(&self) -> TraceContext {
        TraceContext {
            span_id: SpanId::generate(),
            ..self.clone()
        }
    }

    /// The `traceparent` header naming this span as the parent.
    pub fn traceparent(&self) -> String {
        let flags = if self.sampled { "01" } else { "00" };
        format!("00-{}-{}-{flags}", self.trace_id, self.span_id)
    }

    /// The ids and flags as stored: [`STORED_BYTES`] bytes.
    pub fn to_stored(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(STORED_BYTES);
        bytes.extend_from_slice(&self.trace_id.0);
        bytes.extend_from_slice(&self.span_id.0);
        bytes.push(u8::from(self.sampled));
        bytes
    }

    /// A context stored by [`TraceContext::to_stored`], with its `tracestate`.
    pub fn from_stored(bytes: &[u8], state: Option<String>) -> Option<TraceContext> {
        if bytes.len() != STORED_BYTES {
            return None;
        }
        let mut trace_id = [0; 16];
        trace_id.copy_from_slice(&bytes[..16]);
        let mut span_id = [0; 8];
        span_id.copy_from_slice(&bytes[16..24]);
        Some(TraceContext {
            trace_id: TraceId(trace_id),
            span_id: SpanId(span_id),
            sampled: bytes[24] & 1 == 1,
            state,
        })
    }
}

/// `traceparent`'s fields: version `00` exactly as specified; a later version read by its
/// first four fields, as the recommendation asks of a reader that knows only `00`.
fn parse_traceparent(value: &str) -> Option<TraceContext> {
    let head = value.get(..55)?;
    let rest = &value[55..];
    let mut fields = head.split('-');
    let (version, trace, span, flags) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let well_formed = [(version, 2), (trace, 32), (span, 16), (flags, 2)]
        .iter()
        .all(|(field, len)| field.len() == *len && is_lower_hex(field));
    if !well_formed || version == "ff" || (version == "00" && !rest.is_empty()) {
        return None;
    }
    if version != "00" && !rest.is_empty() && !rest.starts_with('-') {
        return None;
    }
    let trace_id = TraceId(hex::decode(trace).ok()?.try_into().ok()?);
    let span_id = SpanId(hex::decode(span).ok()?.try_into().ok()?);
    if trace_id.0 == [0; 16] || span_id.0 == [0; 8] {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(TraceContext {
        trace_id,
        span_id,
        sampled: flags & 1 == 1,
        state: None,
    })
}

fn is_lower_hex(field: &str) -> bool {
    field
        .bytes()
        .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// `tracestate` as it came, when it is within the bounds kept: at most [`MAX_TRACESTATE_BYTES`]
/// of printable ASCII in at most 32 members, each a `key=value`. Otherwise none is kept (the
/// recommendation lets a vendor that cannot pass a state on drop it).
fn kept_tracestate(value: &str) -> Option<String> {
    let value = value.trim_matches([' ', '\t']);
    let printable = value.bytes().all(|byte| (0x20..=0x7e).contains(&byte));
    if value.is_empty() || value.len() > MAX_TRACESTATE_BYTES || !printable {
        return None;
    }
    let members: Vec<&str> = value
        .split(',')
        .map(|member| member.trim_matches([' ', '\t']))
        .filter(|member| !member.is_empty())
        .collect();
    let each_a_pair = members.iter().all(|member| {
        member
            .split_once('=')
            .is_some_and(|(key, state)| !key.is_empty() && !state.is_empty())
    });
    (members.len() <= MAX_TRACESTATE_MEMBERS && each_a_pair).then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn reads_the_recommendations_example_and_writes_it_back() {
        let context =
            TraceContext::parse(PARENT, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        assert_eq!(
            context.trace_id.to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(context.span_id.to_string(), "00f067aa0ba902b7");
        assert!(context.sampled);
        assert_eq!(context.traceparent(), PARENT);
        assert_eq!(
            context.state.as_deref(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
        let stored = context.to_stored();
        assert_eq!(stored.len(), STORED_BYTES);
        assert_eq!(
            TraceContext::from_stored(&stored, context.state.clone()),
            Some(context)
        );
    }

    #[test]
    fn refuses_what_is_no_traceparent() {
        for value in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] {
            assert_eq!(TraceContext::parse(value, None), None, "{value:?}");
        }
    }

    #[test]
    fn a_later_version_is_read_by_its_first_fields() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-whatever";
        let context = TraceContext::parse(later, None).unwrap();
        assert!(!context.sampled);
        assert_eq!(
            context.traceparent(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
        );
    }

    #[test]
    fn a_tracestate_out_of_bounds_is_dropped_and_the_parent_kept() {
        let long = format!("a={}", "x".repeat(MAX_TRACESTATE_BYTES));
        let many = (0..33)
            .map(|n| format!("k{n}=v"))
            .collect::<Vec<_>>()
            .join(",");
        for state in [
            long.as_str(),
            many.as_str(),
            "novalue",
            "a=b,\u{e9}=c",
            "  ",
        ] {
            let context = TraceContext::parse(PARENT, Some(state)).unwrap();
            assert_eq!(context.state, None, "{state:?}");
        }
    }

    #[test]
    fn a_child_keeps_the_trace_and_takes_a_new_span() {
        let parent = TraceContext::parse(PARENT, Some("rojo=1")).unwrap();
        let child = parent.child();
        assert_eq!(child.trace_id, parent.trace_id);
        assert_ne!(child.span_id, parent.span_id);
        assert_eq!(child.state, parent.state);
    }

    #[test]
    fn a_call_without_a_context_is_in_its_root_calls_trace() {
        let root = "7d4c5a8e-1f2b-4c3d-9e4f-5a6b7c8d9e0f";
        let child = "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9";
        let of_root = TraceContext::of_call(root, root).unwrap();
        let of_child = TraceContext::of_call(root, child).unwrap();
        assert_eq!(
            of_root.trace_id.to_string(),
            "7d4c5a8e1f2b4c3d9e4f5a6b7c8d9e0f"
        );
        assert_eq!(of_child.trace_id, of_root.trace_id);
        assert_eq!(of_child.span_id.to_string(), "8293a4b5c6d7e8f9");
        assert_ne!(of_child.span_id, of_root.span_id);
        assert!(of_child.sampled);
        assert_eq!(TraceContext::of_call("not-a-uuid", child), None);
    }
}
