//! Benchmark of event streams against DynamoDB Local, through the real HTTP gateway, beside the
//! long poll they replace, in one run with the deployed poll interval:
//!
//! 1. Store reads per idle second: a subscriber on a task nothing happens to, and a caller
//!    holding `GET …?wait=` on the same kind of task.
//! 2. Latency: time from a callee's write (its progress report answered 200) to the event
//!    reaching a subscriber, p50 and p95 over the rounds; beside the time from a callee's
//!    result to a waiting caller's answer.
//!
//! Run with the local stack up: `scripts/bench.sh`, or `cargo run -p forgebench-bench --release
//! --bin event-streams` with the `AWS_*` settings of `scripts/local-stack.sh env`. The first
//! argument is the number of latency rounds (default 40), the second the idle time in seconds
//! (default 30, the samples' waits).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::time::{Duration, Instant};

use forgebench_tests::samples::percentile;
use forgebench_tests::{spawn_app_with, text_message, Options, Pair, Recorder, TestApp};
use serde_json::json;

async fn open(app: &TestApp, pair: &Pair, text: &str) -> String {
    app.open_task(&pair.caller.key, &pair.callee.id, text_message(text), 0)
        .await
        .field("id")
}

/// Reads per second of an idle subscriber and of an idle long poll, each over `seconds`.
async fn idle_reads(app: &TestApp, pair: &Pair, recorder: &Recorder, seconds: u64) -> (f64, f64) {
    let task_id = open(app, pair, "idle").await;
    let mut stream = app
        .events(&pair.caller.key, &pair.callee.id, &task_id, None)
        .await;
    stream.next_event().await.expect("the task");
    recorder.take_dynamodb().len();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let streamed = recorder.take_dynamodb().len();
    drop(stream);
    tokio::time::sleep(Duration::from_millis(300)).await;
    recorder.take_dynamodb().len();
    app.get(
        &format!(
            "/v1/agents/{}/tasks/{task_id}?wait={seconds}",
            pair.callee.id
        ),
        &pair.caller.key,
    )
    .await;
    let waited = recorder.take_dynamodb().len();
    app.cancel(&pair.caller.key, &pair.callee.id, &task_id)
        .await;
    (
        streamed as f64 / seconds as f64,
        waited as f64 / seconds as f64,
    )
}

/// Time from each progress report's 200 to its event at a subscriber.
async fn event_lags(app: &TestApp, pair: &Pair, rounds: usize) -> Vec<Duration> {
    let task_id = open(app, pair, "follow me").await;
    let mut stream = app
        .events(&pair.caller.key, &pair.callee.id, &task_id, None)
        .await;
    stream.next_event().await.expect("the task");
    app.claim(&pair.callee.key, 5).await;
    stream.next_event().await.expect("the claim");
    let poll = app.app.config.task_poll_interval.as_millis() as u64;
    let mut lags = Vec::new();
    for round in 0..rounds {
        // Write at a different point of the subscriber's poll cycle each round.
        tokio::time::sleep(Duration::from_millis(37 * round as u64 % poll)).await;
        let reported = app
            .post(
                &format!("/v1/agents/me/tasks/{task_id}/progress"),
                &pair.callee.key,
                json!({"message": {"role": "agent", "parts": [{"text": format!("step {round}")}]}}),
            )
            .await;
        assert_eq!(reported.status, 200, "{}", reported.text);
        let written = Instant::now();
        let event = stream.next_event().await.expect("the progress event");
        lags.push(written.elapsed());
        assert_eq!(
            event.json()["message"]["parts"][0]["text"],
            format!("step {round}")
        );
    }
    lags
}

/// Time from each result's 200 to the waiting caller's answer.
async fn wait_lags(app: &TestApp, pair: &Pair, rounds: usize) -> Vec<Duration> {
    let poll = app.app.config.task_poll_interval.as_millis() as u64;
    let mut lags = Vec::new();
    for round in 0..rounds {
        let task_id = open(app, pair, "wait for me").await;
        app.claim(&pair.callee.key, 5).await;
        let waiter = {
            let (base, key, callee, id) = (
                app.base.clone(),
                pair.caller.key.clone(),
                pair.callee.id.clone(),
                task_id.clone(),
            );
            tokio::spawn(async move {
                reqwest::Client::new()
                    .get(format!("{base}/v1/agents/{callee}/tasks/{id}?wait=30"))
                    .bearer_auth(key)
                    .send()
                    .await
                    .expect("wait")
                    .text()
                    .await
                    .expect("body");
                Instant::now()
            })
        };
        tokio::time::sleep(Duration::from_millis(300 + 37 * round as u64 % poll)).await;
        app.post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
            .await;
        let answered = Instant::now();
        let returned = waiter.await.expect("waiter");
        lags.push(returned.saturating_duration_since(answered));
    }
    lags
}

fn row(name: &str, mut lags: Vec<Duration>, poll: Duration) {
    lags.sort();
    let p50 = percentile(&lags, 0.5);
    let p95 = percentile(&lags, 0.95);
    println!(
        "| {name} | {} | {} ms | {} ms | {:.2} |",
        lags.len(),
        p50.as_millis(),
        p95.as_millis(),
        p50.as_secs_f64() / poll.as_secs_f64()
    );
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|text| text.parse().ok())
        .unwrap_or(40);
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        deployed_poll_intervals: true,
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let poll = app.app.config.task_poll_interval;

    let idle_seconds: u64 = std::env::args()
        .nth(2)
        .and_then(|text| text.parse().ok())
        .unwrap_or(30);
    let (streamed, waited) = idle_reads(&app, &pair, &recorder, idle_seconds).await;
    let pace = app.app.config.task_pace();
    println!(
        "\nStore reads while idle, over {idle_seconds} s (pace 1/{} of the quiet time, {}-{} ms):",
        pace.divisor(),
        pace.first().as_millis(),
        pace.ceiling().as_millis()
    );
    println!("| who | DynamoDB calls per idle second | ratio to the long poll | target <= 2 |");
    println!("|---|---|---|---|");
    let verdict = |rate: f64| if rate <= 2.0 { "met" } else { "MISSED" };
    println!(
        "| subscriber (GET …/events) | {streamed:.2} | {:.2} | {} |",
        streamed / waited,
        verdict(streamed)
    );
    println!(
        "| caller holding GET ?wait | {waited:.2} | 1.00 | {} |",
        verdict(waited)
    );

    let events = event_lags(&app, &pair, rounds).await;
    let waits = wait_lags(&app, &pair, rounds.div_ceil(4)).await;
    println!(
        "\nA callee's write reaching the reader (poll interval {} ms):",
        poll.as_millis()
    );
    println!("| path | rounds | p50 | p95 | p50 / poll interval |");
    println!("|---|---|---|---|---|");
    row("progress → subscriber's event", events, poll);
    row("result → waiting caller's answer", waits, poll);
}
