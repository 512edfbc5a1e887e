//! Benchmark of one pull task's life against DynamoDB Local, through the real HTTP gateway:
//!
//! 1. Store calls per step (open, claim, result, the caller's final read), counted by an SDK
//!    interceptor, with the key cache warm (the steady state of a busy agent) and cold (every
//!    request looks its key up). Target: at most 8 for the four steps of a small task (6 for the
//!    task itself, 2 audit entries: the claim's and the result's). The same
//!    for a 1 MiB task (1 MiB message, 1 MiB answer), whose bodies live in the body store (S3).
//! 2. The cost of long polls: DynamoDB calls per second of an idle `wait` (caller and callee),
//!    over the wait its first argument names (30 s by default). Target: at most 2.
//! 3. How fast an answer reaches a waiting caller: time from the callee's result (200) to the
//!    caller's `?wait=` response, the callee answering at once after its claim and 0 to 3 s
//!    after it, in as many rounds each as its second argument names (40 by default). Target:
//!    p50 at most 250 ms, p95 at most 500 ms.
//!
//! Run with the local stack up: `scripts/bench.sh` (or `cargo run -p forgebench-bench --release
//! --bin pull-lifecycle` with the `AWS_*` settings of `scripts/local-stack.sh env`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use forgebench_tests::{spawn_app_with, text_message, Options, Recorder, TestApp};
use serde_json::json;

/// Store requests (DynamoDB and the S3 body store) by operation name, from the recorder's log
/// since the last take.
fn take_calls(recorder: &Recorder) -> BTreeMap<String, usize> {
    let mut calls = BTreeMap::new();
    for (operation, actions) in recorder.take_requests() {
        if actions
            .iter()
            .any(|action| action.starts_with("dynamodb:") || action.starts_with("s3:"))
        {
            *calls.entry(operation).or_default() += 1;
        }
    }
    calls
}

/// Parts of about `bytes` bytes of text in all, each within the 256 KiB part limit.
fn large_parts(bytes: usize) -> serde_json::Value {
    let part = 250 * 1024;
    let parts: Vec<serde_json::Value> = (0..bytes.div_ceil(part))
        .map(|index| json!({ "text": "x".repeat(part.min(bytes - index * part)) }))
        .collect();
    json!(parts)
}

/// What one task's life carries: the opening message and the answer's artifacts.
struct Bodies {
    message: serde_json::Value,
    artifacts: serde_json::Value,
}

fn small_task() -> Bodies {
    Bodies {
        message: text_message("classify"),
        artifacts: json!([]),
    }
}

/// A message and an answer just under the 1 MiB limit each.
fn mebibyte_task() -> Bodies {
    let bytes = 1024 * 1024 - 1024;
    Bodies {
        message: json!({ "parts": large_parts(bytes) }),
        artifacts: json!([{ "name": "response", "parts": large_parts(bytes) }]),
    }
}

fn describe(calls: &BTreeMap<String, usize>) -> String {
    calls
        .iter()
        .map(|(name, count)| format!("{count} {name}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn total(calls: &BTreeMap<String, usize>) -> usize {
    calls.values().sum()
}

/// A gateway whose AWS clients record their calls, with the deployed poll intervals.
async fn spawn(recorder: &Recorder, key_cache_seconds: u64) -> TestApp {
    spawn_app_with(Options {
        key_cache_seconds,
        recorder: Some(recorder.clone()),
        deployed_poll_intervals: true,
        push_worker: false,
        ..Options::default()
    })
    .await
}

/// Runs one task's life and returns the calls of each step.
async fn lifecycle(
    app: &TestApp,
    counter: &Recorder,
    pair: &forgebench_tests::Pair,
    bodies: &Bodies,
) -> Vec<(&'static str, BTreeMap<String, usize>)> {
    take_calls(counter);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.id, bodies.message.clone(), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let open = take_calls(counter);
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    let claim = take_calls(counter);
    let done = app
        .post_result(
            &pair.callee.key,
            &opened.field("id"),
            json!({"state": "completed", "artifacts": bodies.artifacts}),
        )
        .await;
    assert_eq!(done.state(), "completed");
    let result = take_calls(counter);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.id, &opened.field("id"))
        .await;
    assert_eq!(read.state(), "completed");
    let final_read = take_calls(counter);
    vec![
        ("open", open),
        ("claim", claim),
        ("result", result),
        ("final read", final_read),
    ]
}

fn report(title: &str, steps: &[(&'static str, BTreeMap<String, usize>)]) -> usize {
    println!("\n{title}");
    println!("| step | store calls | operations |");
    println!("|---|---|---|");
    let mut sum = 0;
    for (step, calls) in steps {
        println!("| {step} | {} | {} |", total(calls), describe(calls));
        sum += total(calls);
    }
    println!("| **whole life** | **{sum}** | |");
    sum
}

#[tokio::main]
async fn main() {
    let counter = Recorder::default();

    // 1. Calls per task, warm key cache (a warm Lambda or the local gateway after first use).
    let app = spawn(&counter, 60).await;
    let pair = app.pair().await;
    lifecycle(&app, &counter, &pair, &small_task()).await; // warms the key cache
    let warm = lifecycle(&app, &counter, &pair, &small_task()).await;
    let warm_total = report("Store calls for one small pull task, key cache warm", &warm);
    let large = lifecycle(&app, &counter, &pair, &mebibyte_task()).await;
    report(
        "Store calls for one 1 MiB pull task (1 MiB message, 1 MiB answer), key cache warm",
        &large,
    );
    drop(app);

    let cold_app = spawn(&counter, 0).await;
    let cold_pair = cold_app.pair().await;
    let cold = lifecycle(&cold_app, &counter, &cold_pair, &small_task()).await;
    let cold_total = report(
        "Store calls for one small pull task, key cache off (one key lookup per request)",
        &cold,
    );
    println!(
        "\ntarget <= 8 for the task's own life (6 for the task, 2 audit entries: claim and result): {} (warm {warm_total}, cold {cold_total} = {warm_total} + 4 key lookups + each new key's first use noted)",
        if warm_total <= 8 { "met" } else { "MISSED" }
    );

    // 2. Reads while idle-waiting.
    let idle_seconds = std::env::args()
        .nth(1)
        .map_or(30, |text| text.parse().expect("idle seconds"));
    idle_waits(&cold_app, &counter, &cold_pair, idle_seconds).await;
    drop(cold_app);

    // 3. Answer-to-waiter latency.
    let rounds: u64 = std::env::args()
        .nth(2)
        .map_or(40, |text| text.parse().expect("rounds"));
    let app = spawn(&counter, 60).await;
    let pair = app.pair().await;
    let pace = app.app.config.task_pace();
    println!(
        "\nAnswer reaching a waiting caller ({rounds} rounds each; the caller looks again after 1/{} of the task's quiet time, from {} ms up to {} ms):",
        pace.divisor(),
        pace.first().as_millis(),
        pace.ceiling().as_millis()
    );
    println!("| the callee answers | p50 | p95 | max | target p50 <= 250 ms, p95 <= 500 ms |");
    println!("|---|---|---|---|---|");
    let at_once: Vec<Duration> = (0..rounds)
        .map(|round| Duration::from_millis(37 * round % 100))
        .collect();
    answer_lags(&app, &pair, "at once after its claim (0-100 ms)", &at_once).await;
    let step = 3_000 / rounds.max(1);
    let spread: Vec<Duration> = (0..rounds)
        .map(|round| Duration::from_millis(step * round))
        .collect();
    let label = format!("0-3 s after its claim ({step} ms steps)");
    answer_lags(&app, &pair, &label, &spread).await;
}

/// DynamoDB calls over an idle `seconds` wait of a caller (on a task nobody claims) and of a
/// callee (on an empty queue), every request looking its key up.
async fn idle_waits(
    app: &TestApp,
    counter: &Recorder,
    pair: &forgebench_tests::Pair,
    seconds: u64,
) {
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.id, text_message("idle"), 0)
        .await;
    take_calls(counter);
    let task_path = format!("/v1/agents/{}/tasks/{}", pair.callee.id, opened.field("id"));
    app.get(&format!("{task_path}?wait={seconds}"), &pair.caller.key)
        .await;
    let caller_wait = total(&take_calls(counter));
    app.claim(&pair.callee.key, 0).await; // take the idle task off the queue
    take_calls(counter);
    app.claim(&pair.callee.key, seconds as u32).await;
    let callee_wait = total(&take_calls(counter));
    let (task, claim) = (app.app.config.task_pace(), app.app.config.claim_pace());
    println!(
        "\nLong-poll cost over an idle {seconds} s wait (caller 1/{} of the quiet time, {}-{} ms; callee 1/{}, {}-{} ms):",
        task.divisor(),
        task.first().as_millis(),
        task.ceiling().as_millis(),
        claim.divisor(),
        claim.first().as_millis(),
        claim.ceiling().as_millis()
    );
    println!("| who waits | DynamoDB calls | per waiting second | target <= 2 |");
    println!("|---|---|---|---|");
    for (who, calls) in [
        ("caller, GET ?wait", caller_wait),
        ("callee, next?wait", callee_wait),
    ] {
        let rate = calls as f64 / seconds as f64;
        println!(
            "| {who} | {calls} | {rate:.2} | {} |",
            if rate <= 2.0 { "met" } else { "MISSED" }
        );
    }
}

/// The time from each callee's result (200) to the waiting caller's response, the callee
/// answering each of `delays` after its claim; one report line.
async fn answer_lags(
    app: &TestApp,
    pair: &forgebench_tests::Pair,
    label: &str,
    delays: &[Duration],
) {
    let mut lags = Vec::new();
    for (round, delay) in delays.iter().enumerate() {
        let caller = {
            let (base, key, callee) = (
                app.base.clone(),
                pair.caller.key.clone(),
                pair.callee.id.clone(),
            );
            tokio::spawn(async move {
                let response = reqwest::Client::new()
                    .post(format!("{base}/v1/agents/{callee}/tasks?wait=30"))
                    .bearer_auth(key)
                    .json(&json!({"message": text_message(&format!("round {round}"))}))
                    .send()
                    .await
                    .expect("open");
                let body: serde_json::Value = response.json().await.expect("body");
                (Instant::now(), body)
            })
        };
        let claimed = app.claim(&pair.callee.key, 10).await;
        tokio::time::sleep(*delay).await;
        app.post_result(
            &pair.callee.key,
            &claimed.field("id"),
            json!({"state": "completed"}),
        )
        .await;
        let answered = Instant::now();
        let (returned, body) = caller.await.expect("caller");
        assert_eq!(body["status"]["state"], "completed");
        lags.push(returned.saturating_duration_since(answered));
    }
    lags.sort();
    let (p50, p95) = (lags[lags.len() / 2], lags[lags.len() * 95 / 100]);
    let met = p50 <= Duration::from_millis(250) && p95 <= Duration::from_millis(500);
    println!(
        "| {label} | {} ms | {} ms | {} ms | {} |",
        p50.as_millis(),
        p95.as_millis(),
        lags[lags.len() - 1].as_millis(),
        if met { "met" } else { "MISSED" }
    );
}
