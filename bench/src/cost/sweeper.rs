//! The sweeper's fixed cost: a few sweeps of the idle table of a fresh gateway, measured,
//! priced as a month of sweeps, one every minute.

use std::time::Instant;

use forgebench_tests::Options;

use crate::billing::p50_ms;
use crate::gateway::gateway;
use crate::prices::{
    DYNAMODB_READ_UNITS, DYNAMODB_WRITE_UNITS, LAMBDA_ARM_GB_SECOND, LAMBDA_REQUESTS, SQS_REQUESTS,
    SWEEPS_PER_MONTH,
};
use crate::run::Run;
use crate::template::Template;

/// One sweep of the idle table of a fresh gateway: the scheduled sweeper's fixed cost.
pub async fn sweeper(template: &Template) {
    let gateway = gateway(Options {
        push_worker: false,
        ..Options::default()
    })
    .await;
    gateway.reset();
    let app = &gateway.app.app;
    let mut times = Vec::new();
    let mut run = Run::new("sweeper", 1);
    const SWEEPS: usize = 5;
    for _ in 0..SWEEPS {
        let started = Instant::now();
        forgebench::sweeper::sweep(&app.store, &app.queue, &app.bodies).await;
        times.push(started.elapsed());
    }
    gateway.finish(&mut run);
    let per_sweep = |count: f64| count / SWEEPS as f64;
    let gb_seconds = p50_ms(&times).ceil() / 1e3 * template.memory_mb / 1024.0;
    let requests: usize = run.requests.values().sum();
    let monthly = SWEEPS_PER_MONTH
        * (LAMBDA_REQUESTS / 1e6
            + gb_seconds * LAMBDA_ARM_GB_SECOND
            + per_sweep(run.read_units) * DYNAMODB_READ_UNITS / 1e6
            + per_sweep(run.write_units) * DYNAMODB_WRITE_UNITS / 1e6
            + per_sweep(run.sqs_billed as f64) * SQS_REQUESTS / 1e6);
    println!("\n### sweeper (fixed, every minute; one sweep of an idle table, {SWEEPS} sweeps)\n");
    println!(
        "Per sweep: {:.1} AWS requests ({}), {:.1} read units, {:.1} write units, p50 {:.1} ms.",
        per_sweep(requests as f64),
        run.requests
            .iter()
            .map(|(name, count)| format!("{} {name}", per_sweep(*count as f64)))
            .collect::<Vec<_>>()
            .join(", "),
        per_sweep(run.read_units),
        per_sweep(run.write_units),
        p50_ms(&times)
    );
    println!(
        "A month ({SWEEPS_PER_MONTH} sweeps): ${monthly:.4} (Lambda requests and GB-seconds, \
         DynamoDB units; an idle table, so a lower bound: each due task adds its own writes)."
    );
}
