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
/// the open's answer interleave; the bound leaves that room.
const PUSH_WRITE_UNITS_BOUND: f64 = 37.0;
const PUSH_READ_UNITS_BOUND: f64 = 3.5;

/// The same pull task opened below a call by the call's callee: the parent call's read (its
/// root, its depth) and its call item's parent. Measured 2026-12-06: 35 and 4.5 with the depth
/// on the call item, as without it.
const PULL_BELOW_WRITE_UNITS_BOUND: f64 = 35.0;
const PULL_BELOW_READ_UNITS_BOUND: f64 = 4.5;
/// What every call-tree limit set may add to a task below a call, at most (docs/api.md,
/// "Governance"): the fan-out and open-in-tree counts and the open count's finish.
const LIMITS_WRITE_UNITS: f64 = 4.0;
const LIMITS_READ_UNITS: f64 = 2.0;

/// What the call-tree limits add to a task: the run with every limit set against the same
/// tasks without, measured in one run; the failures, described.
pub fn gate_limits(without: &Run, with: &Run) -> Vec<String> {
    let writes = with.per_task(with.write_units) - without.per_task(without.write_units);
    let reads = with.per_task(with.read_units) - without.per_task(without.read_units);
    println!(
        "gate, call-tree limits: +{writes:.2} write units per task (bound +{LIMITS_WRITE_UNITS}), \
         +{reads:.2} read units (bound +{LIMITS_READ_UNITS})"
    );
    let mut failures = Vec::new();
    if writes > LIMITS_WRITE_UNITS + 1e-9 {
        failures.push(format!(
            "call-tree limits: +{writes:.2} write units per task > +{LIMITS_WRITE_UNITS}"
        ));
    }
    if reads > LIMITS_READ_UNITS + 1e-9 {
        failures.push(format!(
            "call-tree limits: +{reads:.2} read units per task > +{LIMITS_READ_UNITS}"
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
