//! The gate: the DynamoDB units a small task may cost at most, per mode, and the runs held to
//! them.

use crate::run::Run;

/// What one small task may cost at most, in DynamoDB units, before `--gate` fails the run:
/// the counts measured when each store change landed, so that none creeps back up. The targets
/// of the store's design (docs/design.md, "What a task costs") are lower; each change that
/// reaches further lowers these.
const GATE: [(&str, f64, f64); 3] = [
    // (mode, write units per task, read units per task)
    ("pull", PULL_WRITE_UNITS_BOUND, PULL_READ_UNITS_BOUND),
    (
        "pull, word search off",
        PULL_WITHOUT_WORDS_WRITE_UNITS_BOUND,
        PULL_READ_UNITS_BOUND,
    ),
    ("push", PUSH_WRITE_UNITS_BOUND, PUSH_READ_UNITS_BOUND),
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
