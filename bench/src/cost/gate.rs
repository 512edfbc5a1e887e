//! The gate: the DynamoDB units a small task may cost at most, per mode, and the runs held to
//! them.

use crate::run::Run;

/// What one small task may cost at most, in DynamoDB units, before `--gate` fails the run:
/// the counts measured when each store change landed, so that none creeps back up. The targets
/// of the store's design (docs/design.md, "What a task costs") are lower; each change that
/// reaches further lowers these.
const GATE: [(&str, f64, f64); 4] = [
    // (mode, write units per task, read units per task)
    ("pull", PULL_WRITE_UNITS_BOUND, PULL_READ_UNITS_BOUND),
    (
        "pull, word search off",
        PULL_WITHOUT_WORDS_WRITE_UNITS_BOUND,
        PULL_READ_UNITS_BOUND,
    ),
    ("push", PUSH_WRITE_UNITS_BOUND, PUSH_READ_UNITS_BOUND),
    (
        "pull below a call",
        PULL_BELOW_WRITE_UNITS_BOUND,
        PULL_BELOW_READ_UNITS_BOUND,
    ),
];
/// A pull task's units are the same in every run: its writes follow one another.
const PULL_WRITE_UNITS_BOUND: f64 = 34.0;
const PULL_READ_UNITS_BOUND: f64 = 3.5;
/// The same task in a tenant that turned word search off: no postings.
const PULL_WITHOUT_WORDS_WRITE_UNITS_BOUND: f64 = 20.0;
/// A push task's may vary by a unit or two between runs, with how the worker's delivery and
/// the open's answer interleave; the bound leaves that room. 35 until the task item left out
/// what a reader assumes (2026-12-06), 31 since; a POST to a receiver not yet known to answer
/// in time takes one of its tenant's slots for pushes in flight and gives it back (two more,
/// once per receiver here).
const PUSH_WRITE_UNITS_BOUND: f64 = 33.0;
const PUSH_READ_UNITS_BOUND: f64 = 3.5;

/// The same pull task opened below a call by the call's callee: the parent call's read (its
/// root, its depth) and its call item's parent. Measured 2026-12-06: 35 and 4.5 with the depth
/// on the call item, as without it; 34 once the task item left out what a reader assumes
/// (its root, a pull delivery, null answers) and its result stayed within 1 KB.
const PULL_BELOW_WRITE_UNITS_BOUND: f64 = 34.0;
const PULL_BELOW_READ_UNITS_BOUND: f64 = 4.5;
/// What governing a task below a call may add to it, at most, by what is set: (what, write
/// units, read units). The limits: the fan-out and open-in-tree counts at the open, in one
/// write (a root's children are counted on its tree's item; the benchmark's task is a root's
/// child), the open count given back at the finish. A contract: its use counted at the open,
/// its open tasks given back at the finish. Both: +4, the target (+5 until
/// 2026-12-07, when the two counts at the open were two writes). A tenant policy
/// writes nothing and reads nothing more: the set is read once per version per process and
/// judged in memory, its agents named from the agent cache. One that reads the call's depth or
/// root caller has the caller's read of its task read the task's call and the root call (one
/// strongly consistent read each); the open finds both in what it reads anyway.
const TERMS_BOUNDS: [(&str, f64, f64); 5] = [
    ("call-tree limits", 2.0, 0.0),
    ("a contract", 2.0, 0.0),
    ("call-tree limits and a contract", 4.0, 0.0),
    ("a tenant policy", 0.0, 0.0),
    ("a policy on depth and root caller", 0.0, 2.0),
];

/// What each of `governed` (the limits, a contract, both, a policy; as [`TERMS_BOUNDS`]) adds
/// to the same tasks `without` any, measured in one run; the failures, described.
pub fn gate_limits(without: &Run, governed: [&Run; 5]) -> Vec<String> {
    TERMS_BOUNDS
        .iter()
        .zip(governed)
        .flat_map(|((what, writes, reads), with)| {
            added_units(what, without, with, (*writes, *reads))
        })
        .collect()
}

/// What a caller's trace context (`traceparent` and a one-member `tracestate`) may add to a
/// push task, the mode whose item is fullest. The target is one write unit; measured
/// 2026-12-07: +0, the bound, so that a context that costs a unit again fails here. The
/// context is 25 bytes of ids and flags (`trace`) and the state as it came (`tracestate`), 61
/// bytes with their names; the push task's item while a delivery holds its lease is 922 bytes
/// without them (its id is its key's, its status time its last change's unless a later write
/// touched only its bookkeeping), 983 with them: every write from the lease to the answer stays
/// within 1 KB (docs/benchmarks.md, "Trace context"). A task whose open brings no context
/// stores none (it is in its root call's trace); reads are unchanged.
const TRACE_CONTEXT_BOUND: (f64, f64) = (0.0, 0.0);

/// What `traced` (push tasks whose opens bring a trace context) adds to `push`.
pub fn gate_trace_context(push: &Run, traced: &Run) -> Vec<String> {
    added_units(
        "a caller's trace context",
        push,
        traced,
        TRACE_CONTEXT_BOUND,
    )
}

/// The units per task `with` adds to `without`, against `(writes, reads)` at most.
fn added_units(what: &str, without: &Run, with: &Run, bound: (f64, f64)) -> Vec<String> {
    let writes = with.per_task(with.write_units) - without.per_task(without.write_units);
    let reads = with.per_task(with.read_units) - without.per_task(without.read_units);
    let (write_bound, read_bound) = bound;
    println!(
        "gate, {what}: +{writes:.2} write units per task (bound +{write_bound}), \
         +{reads:.2} read units (bound +{read_bound})"
    );
    let mut failures = Vec::new();
    if writes > write_bound + 1e-9 {
        failures.push(format!(
            "{what}: +{writes:.2} write units per task > +{write_bound}"
        ));
    }
    if reads > read_bound + 1e-9 {
        failures.push(format!(
            "{what}: +{reads:.2} read units per task > +{read_bound}"
        ));
    }
    failures
}

/// The runs' units per task against [`GATE`]; the failures, described.
pub fn gate(runs: &[&Run]) -> Vec<String> {
    let mut failures = Vec::new();
    for run in runs {
        let Some((_, writes, reads)) = GATE.iter().find(|(mode, _, _)| *mode == run.mode) else {
            continue;
        };
        let (w, r) = (run.per_task(run.write_units), run.per_task(run.read_units));
        println!(
            "gate, {}: {w:.2} write units per task (bound {writes}), {r:.2} read units (bound {reads})",
            run.mode
        );
        if w > *writes + 1e-9 {
            failures.push(format!(
                "{}: {w:.2} write units per task > {writes}",
                run.mode
            ));
        }
        if r > *reads + 1e-9 {
            failures.push(format!(
                "{}: {r:.2} read units per task > {reads}",
                run.mode
            ));
        }
    }
    failures
}
