//! Partition keys: the write and read units each partition key of the table and of every index
//! takes per task, for the keys a busy deployment heats, and the capacity model built on them.
//!
//! Scenarios, each on a fresh table, small tasks one after another (open at once; claim and
//! result, or the push worker's delivery; the caller's read) after one warm-up task per pair of
//! agents:
//!
//! - one callee: N tasks to one callee from A callers, in turn; and the same pushed (the push
//!   worker delivers each task to an endpoint on loopback that answers it at once);
//! - one tenant: N tasks among A callers and A callees of one tenant, every pair in turn;
//! - a common word: the same tenant's shape, every message carrying one word and two of its own;
//! - one conversation: N tasks (at most 99) in the conversation the warm-up task opened.
//!
//! What is counted, and how: the gateway's DynamoDB client goes through the recording proxy,
//! which asks every request for its consumed capacity per table and index
//! (`ReturnConsumedCapacity: INDEXES`) and, for every write, reads the items it names just
//! before and just after it (writes go one at a time through the proxy meanwhile). The
//! library's `attribution` module charges each unit to the partition key it lands on, by the
//! rule written there; keys are printed by shape, ids replaced by their role.
//!
//! The capacity model divides DynamoDB's per-partition limits (1,000 WCU/s, 3,000 RCU/s, for
//! the table and every index) by the units per task on each place's busiest key, and sets the
//! issue's targets beside them. `--gate` fails the run when a busiest key takes more units per
//! task than today's bounds (`gate.rs`); how far each target is from met is printed, never
//! failed.
//!
//! With `--doc=docs/capacity.md`, the run also fails unless that page quotes each model and
//! target line it printed, word for word: the page's numbers are this program's.
//!
//! Usage: `partitions [tasks per scenario] [agents] [--gate] [--doc=PATH]` (defaults 200 and
//! 8), with the `AWS_*` settings of `scripts/local-stack.sh env`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

mod gate;
mod model;
mod report;
mod scenarios;
mod tally;

use scenarios::{run, Scenario, Sizes};

/// What each scenario's header says it ran.
fn described(scenario: Scenario, sizes: Sizes) -> String {
    let agents = sizes.agents;
    match scenario {
        Scenario::OneCallee => format!("pull tasks to one callee from {agents} callers in turn"),
        Scenario::OneCalleePush => format!(
            "push tasks to one callee from {agents} callers in turn, its endpoint answering at once"
        ),
        Scenario::OneTenant => {
            format!("pull tasks among {agents} callers and {agents} callees of one tenant")
        }
        Scenario::CommonWord => format!(
            "pull tasks among {agents} callers and {agents} callees, every message carrying \
             one word and two of its own"
        ),
        Scenario::OneConversation => "pull tasks of one pair in one conversation".to_owned(),
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gated = args.iter().any(|arg| arg == "--gate");
    let quoting = args
        .iter()
        .find_map(|arg| arg.strip_prefix("--doc="))
        .map(str::to_owned);
    let numbers: Vec<usize> = args
        .iter()
        .filter(|arg| !arg.starts_with("--"))
        .map(|n| n.parse().expect("a number"))
        .collect();
    let sizes = Sizes {
        tasks: numbers.first().copied().unwrap_or(200),
        agents: numbers.get(1).copied().unwrap_or(8),
    };
    println!(
        "Partition keys: units per task on each partition key of the table and every index \
         (the small task: a dozen-word message and a data part, claimed, answered, read once)."
    );
    let mut counts = Vec::new();
    let mut printed = Vec::new();
    for scenario in Scenario::ALL {
        let count = run(scenario, sizes).await;
        report::print_count(&count, &described(scenario, sizes));
        printed.push(model::print_model(&count));
        counts.push(count);
    }
    println!("\nTargets (not gated: the sharding's to meet):");
    for count in &counts {
        let line = format!("  {}", model::target_line(count));
        println!("{line}");
        printed.push(line);
    }
    let mut failures = gate::gate(&counts);
    if !gated {
        failures.clear();
    }
    if let Some(path) = quoting {
        failures.extend(gate::quoted(&path, &printed));
    }
    if !failures.is_empty() {
        eprintln!("partitions gate failed:\n  {}", failures.join("\n  "));
        std::process::exit(1);
    }
}
