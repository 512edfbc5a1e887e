//! The gate: the units per task the busiest key of each place may take, per scenario, at most
//! (writes and reads apart: the busiest key for each).
//! They are today's counts, so a change that heats a key fails; the sharding of the hot keys
//! lowers them.

use crate::model::hottest;
use crate::scenarios::Scenario;
use crate::tally::Count;

/// (scenario, place, write units per task, read units per task) on the place's busiest keys
/// (a task's own keys aside; a sharded shape's units over its shards), measured with
/// `partitions 8 2` (the short form in CI) on 2026-12-07, the audit log spread since. A key of the scenario's whole
/// subject (the callee's queue, the tenant's audit log, a word, the conversation) takes the
/// same units per task at any size; a caller's or a callee's own keys take their share (one in
/// two here), so a run with more agents stays within these.
const BOUNDS: [(Scenario, &str, f64, f64); 25] = [
    // The tenant's spread logs: its audit log (three entries a task) over 256 partitions,
    // 3/256 a key; each word's postings 1/256 (2026-12-07); the callee's agent item read by its
    // claims.
    (Scenario::OneCallee, "table", 0.012, 1.0),
    // The callee's queue: its entry in at the open, out at the claim; the claim's page.
    (Scenario::OneCallee, "gsi1", 2.0, 0.5),
    // The deadline entry in at the claim, out at the result, over 16 shards.
    (Scenario::OneCallee, "gsi2", 0.125, 0.0),
    // The callee's side entry: written at the open, refreshed at the claim and the result.
    (Scenario::OneCallee, "inbound_tasks", 3.0, 0.0),
    (Scenario::OneCallee, "outbound_tasks", 1.5, 0.0),
    // Pushed: the open's audit entry and each word's posting over 256 partitions, 1/256 a key;
    // the callee's agent read by the worker; the outbox entry over its 16 shards.
    (Scenario::OneCalleePush, "table", 0.004, 1.0),
    (Scenario::OneCalleePush, "gsi1", 0.25, 0.0),
    (Scenario::OneCalleePush, "inbound_tasks", 3.0, 0.0),
    (Scenario::OneCalleePush, "outbound_tasks", 1.5, 0.0),
    (Scenario::OneTenant, "table", 0.012, 0.5),
    (Scenario::OneTenant, "gsi1", 1.0, 0.25),
    (Scenario::OneTenant, "gsi2", 0.125, 0.0),
    (Scenario::OneTenant, "inbound_tasks", 1.5, 0.0),
    (Scenario::OneTenant, "outbound_tasks", 1.5, 0.0),
    (Scenario::CommonWord, "table", 0.012, 0.5),
    (Scenario::CommonWord, "gsi1", 1.0, 0.25),
    (Scenario::CommonWord, "gsi2", 0.125, 0.0),
    (Scenario::CommonWord, "inbound_tasks", 1.5, 0.0),
    (Scenario::CommonWord, "outbound_tasks", 1.5, 0.0),
    // The conversation's item, counting each open.
    (Scenario::OneConversation, "table", 1.0, 1.0),
    (Scenario::OneConversation, "gsi1", 2.0, 0.5),
    (Scenario::OneConversation, "gsi2", 0.125, 0.0),
    (Scenario::OneConversation, "inbound_tasks", 3.0, 0.0),
    (Scenario::OneConversation, "outbound_tasks", 3.0, 0.0),
    // The conversation's entry of each of its tasks.
    (Scenario::OneConversation, "conversation", 1.0, 0.0),
];

/// The scenarios' busiest keys against [`BOUNDS`]; the failures, described. A place without
/// a bound fails too: a key that no bound names is a new hot spot.
pub fn gate(counts: &[Count]) -> Vec<String> {
    let mut failures = Vec::new();
    for count in counts {
        for (place, busiest) in hottest(count) {
            let name = count.scenario.name();
            let (w, r) = (busiest.write, busiest.read);
            let bound = BOUNDS
                .iter()
                .find(|(scenario, bounded, _, _)| *scenario == count.scenario && *bounded == place);
            let Some((_, _, writes, reads)) = bound else {
                failures.push(format!(
                    "{name}, {place}: {w:.3} write and {r:.3} read units per task on its busiest keys, and no bound"
                ));
                continue;
            };
            println!(
                "gate, {name}, {place}: busiest keys {w:.3} write units per task (bound {writes}), \
                 {r:.3} read units (bound {reads})"
            );
            if w > writes + 1e-9 || r > reads + 1e-9 {
                failures.push(format!(
                    "{name}, {place}: {w:.3} write and {r:.3} read units per task > {writes} and {reads}"
                ));
            }
        }
    }
    failures
}

/// What of `printed` (each scenario's model below its heading, each target line) the page at
/// `path` does not quote word for word, described: a page whose numbers are not this run's.
pub fn quoted(path: &str, printed: &[String]) -> Vec<String> {
    let page = std::fs::read_to_string(path).expect("the page that quotes the model");
    printed
        .iter()
        .filter(|text| !page.contains(text.trim()))
        .map(|text| format!("{path} does not quote this run's:\n{}", text.trim()))
        .collect()
}
