//! Cost model: dollars per million tasks, pull and push, from the AWS requests one task's life
//! makes through the real in-process gateway against the local emulators.
//!
//! Each mode drives N small tasks one after another (after one warm-up task, so the key cache
//! is warm, as for a busy agent):
//!
//! - pull: open (`wait=0`), claim (`wait=0`), result, then the caller reads the task once;
//! - push: open (`wait=0`) to a callee whose endpoint is a local HTTP server answering
//!   `completed`; the push worker (SQS) delivers it; then the caller reads the task once;
//! - pull below a call: the pull task opened below one call of its caller's tree
//!   (`X-Parent-Call`), in a tenant without call-tree limits, in one with every limit set, and
//!   there with a contract on the task's binding (skills, rate, concurrency, daily quota), so
//!   that what the limits and the contract cost a task is their difference, measured in one run.
//!
//! What is counted, and how:
//!
//! - every AWS request of the gateway and the worker, by service and operation, with the
//!   `Recorder` SDK interceptor of `forgebench-tests`;
//! - DynamoDB read and write units as DynamoDB Local reports them: the gateway's DynamoDB client
//!   is pointed at a recording proxy (the `proxy` module) that adds
//!   `ReturnConsumedCapacity: INDEXES` to every request that lacks it and sums the
//!   `ConsumedCapacity` of every response, the table's and each index's share apart (the store
//!   itself asks for it only in search);
//! - SQS: a second proxy in front of moto sees each `ReceiveMessage`'s messages, so the worker's
//!   batches (one Lambda invocation each) and its idle long polls are told apart, and each
//!   request's payload is billed in 64 KB chunks;
//! - Lambda duration: each HTTP request's wall time as the client sees it (the handler plus a
//!   loopback hop), per route, and each worker batch's time from its `ReceiveMessage` answer to
//!   its last `DeleteMessage`; the p50 per route, rounded up to the millisecond as Lambda bills,
//!   times the memory configured in `infra/template.yaml`;
//! - the sweeper (every minute) as a fixed monthly cost: one sweep of the idle table, measured.
//!
//! Usage: `cost [tasks per mode]` (default 200), with the `AWS_*` settings of
//! `scripts/local-stack.sh env`. `scripts/bench.sh` runs it in release mode (for the timings).
//!
//! The parts: the shared `proxy` records what the emulators are asked, the shared `capacity`
//! and [`billing`] count it in units and requests; [`gateway`], [`tasks`], [`sweeper`] and [`large_open`] drive the measured work,
//! gathered in a [`run`]; [`prices`] and [`template`] price it, [`report`] prints each run's bill
//! and [`gate`] holds the units per task to their bounds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

mod billing;
mod gate;
mod gateway;
mod large_open;
mod prices;
mod report;
mod run;
mod sweeper;
mod tasks;
mod template;

use gate::{gate, gate_limits, gate_trace_context};
use large_open::large_open;
use report::report;
use sweeper::sweeper;
use tasks::{pull, pull_below_a_call, push, Terms};
use template::template;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gated = args.iter().any(|arg| arg == "--gate");
    let tasks: usize = args
        .iter()
        .find(|arg| !arg.starts_with("--"))
        .map_or(200, |n| n.parse().expect("tasks per mode"));
    let template = template();
    println!(
        "Cost model: {tasks} small tasks per mode (a two-part message of a dozen words and a \
         small data part, a one-part artifact), key cache warm, every function at {} MB \
         (infra/template.yaml), push worker batch size {} (a batch per task here: tasks one after \
         another).",
        template.memory_mb, template.batch_size
    );
    let pull_run = pull(tasks, true).await;
    let pull_total = report(&pull_run, &template);
    let without_words = pull(tasks, false).await;
    let without_words_total = report(&without_words, &template);
    let push_run = push(tasks, false).await;
    let push_total = report(&push_run, &template);
    let push_traced = push(tasks, true).await;
    report(&push_traced, &template);
    let below = pull_below_a_call(tasks, Terms::None).await;
    report(&below, &template);
    let below_limited = pull_below_a_call(tasks, Terms::Limits).await;
    report(&below_limited, &template);
    let below_contract = pull_below_a_call(tasks, Terms::Contract).await;
    report(&below_contract, &template);
    let below_all_terms = pull_below_a_call(tasks, Terms::LimitsAndContract).await;
    report(&below_all_terms, &template);
    let below_policy = pull_below_a_call(tasks, Terms::Policy).await;
    report(&below_policy, &template);
    let below_place_policy = pull_below_a_call(tasks, Terms::PlacePolicy).await;
    report(&below_place_policy, &template);
    sweeper(&template).await;
    println!(
        "\nPer million small tasks: pull ${pull_total:.2} (word search off: \
         ${without_words_total:.2}), push ${push_total:.2} (push / pull = {:.2}).",
        push_total / pull_total
    );
    let large_postings = large_open().await;
    let mut failures = gate(&[&pull_run, &without_words, &push_run, &below]);
    failures.extend(gate_limits(
        &below,
        [
            &below_limited,
            &below_contract,
            &below_all_terms,
            &below_policy,
            &below_place_policy,
        ],
    ));
    failures.extend(gate_trace_context(&push_run, &push_traced));
    let index_units = forgebench::config::DEFAULT_INDEX_UNITS as f64;
    if large_postings > index_units + 1e-9 {
        failures.push(format!(
            "one open's postings spent {large_postings:.0} write units > {index_units}"
        ));
    }
    if gated && !failures.is_empty() {
        eprintln!("cost gate failed:\n  {}", failures.join("\n  "));
        std::process::exit(1);
    }
}
