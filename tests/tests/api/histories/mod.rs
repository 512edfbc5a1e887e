//! Histories: random sequences of the API's operations in two long-lived tenants (refusals,
//! revoked and re-granted bindings, paused and retired agents, rotated keys, questions and
//! answers, cancels, word search off and on, call-tree limits, bindings' own limits and
//! contracts, opens over REST and both A2A bindings), every
//! read held to a reference model ([`model`]) kept by the test, never by the product. A failure
//! is shrunk to a short history and printed with the seed that replays it.
//!
//! Two runs: one from a fixed seed, one from a fresh seed printed in the log, of
//! `FORGEBENCH_HISTORIES` histories each (by default 100 from the fixed seed, which reach every
//! refusal, and 50 from a fresh one, which adds new ground on every run) of 30 to 35 steps;
//! `FORGEBENCH_HISTORY_SEED` replays a printed seed. `scripts/histories.sh` runs a long budget.

mod model;
mod system;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use proptest::test_runner::{Config, RngSeed, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

use model::Reference;
use system::{run, Histories};

/// The fixed seed of the first run.
const FIXED_SEED: u64 = 0x5eed_0f11_73d1_f3a7;

/// Histories from a fresh seed by default: half the fixed seed's, since they run beside it and
/// a run ends with the later of the two.
const FRESH_HISTORIES: u32 = 50;

/// Steps per history.
const STEPS: std::ops::RangeInclusive<usize> = 30..=35;

fn histories_wanted(default: u32) -> u32 {
    std::env::var("FORGEBENCH_HISTORIES")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

/// Runs `cases` histories from `seed`; panics with the shrunk history on a disagreement.
fn run_histories(label: &str, seed: u64, cases: u32) -> BTreeMap<&'static str, usize> {
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: 400,
        // Milliseconds: a failure's shrinking is bounded, whatever it finds.
        max_shrink_time: 240_000,
        ..Config::default()
    };
    eprintln!(
        "histories ({label}): {cases} histories of {}-{} steps from seed {seed} \
         (replay: FORGEBENCH_HISTORY_SEED={seed})",
        STEPS.start(),
        STEPS.end()
    );
    let mut runner = TestRunner::new(config.clone());
    let strategy = Reference::sequential_strategy(STEPS);
    let outcome = runner.run(&strategy, |(initial, steps, seen)| {
        Histories::test_sequential(config.clone(), initial, steps, seen);
        Ok(())
    });
    let run = run();
    eprintln!(
        "histories ({label}): seed {seed}: {} histories, {} steps, {} requests, {} 5xx, {}",
        run.histories.load(Ordering::Relaxed),
        run.steps.load(Ordering::Relaxed),
        run.requests.load(Ordering::Relaxed),
        run.server_errors.load(Ordering::Relaxed),
        match &outcome {
            Ok(()) => "0 disagreements with the model".to_owned(),
            Err(_) => "a disagreement (shrunk below)".to_owned(),
        }
    );
    let by_step = run.by_step.lock().unwrap_or_else(|e| e.into_inner());
    let kinds: Vec<String> = by_step
        .iter()
        .map(|(kind, (count, took))| format!("{kind} {count} ({} ms)", took.as_millis()))
        .collect();
    eprintln!("histories ({label}): steps by kind: {}", kinds.join(", "));
    drop(by_step);
    let refusals = run
        .refusals
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    eprintln!("histories ({label}): opens refused, by reason: {refusals:?}");
    if let Err(failure) = outcome {
        panic!("histories ({label}), seed {seed}: {failure}");
    }
    refusals
}

fn seed_from_env() -> Option<u64> {
    std::env::var("FORGEBENCH_HISTORY_SEED")
        .ok()
        .and_then(|text| text.parse().ok())
}

/// The fixed seed's histories reach every refusal of the call-tree limits and of a binding's
/// contract, so their agreement with the model says something about each.
#[test]
fn histories_from_a_fixed_seed_agree_with_the_model() {
    let refusals = run_histories(
        "fixed seed",
        seed_from_env().unwrap_or(FIXED_SEED),
        histories_wanted(100),
    );
    if seed_from_env().is_none() && histories_wanted(100) >= 100 {
        for reason in [
            "depth_exceeded",
            "cycle",
            "fan_out_exceeded",
            "tree_open_limit",
            "skill_not_allowed",
            "quota_exceeded",
        ] {
            assert!(
                refusals.contains_key(reason),
                "no history was refused {reason}: {refusals:?}"
            );
        }
    }
}

#[test]
fn histories_from_a_fresh_seed_agree_with_the_model() {
    let seed = seed_from_env().unwrap_or_else(|| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&uuid::Uuid::new_v4().as_bytes()[..8]);
        u64::from_le_bytes(bytes)
    });
    run_histories("fresh seed", seed, histories_wanted(FRESH_HISTORIES));
}
