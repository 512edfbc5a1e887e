//! Benchmark of push delivery through the local gateway, SQS (moto) and the worker, against a
//! direct POST between the same processes:
//!
//! 1. latency: from the caller's open request to the callee receiving the POST, median of 30,
//!    against a direct POST from this process to the same callee;
//! 2. the service calls of one delivery's hot path, from the open to the POST (the worker warm),
//!    counted by an SDK interceptor. Target: at most 5;
//! 3. throughput: 200 tasks opened 16 at a time, until every one is answered, against 200 direct
//!    POSTs 16 at a time; then the same (100 tasks) to a callee that answers 4 requests at a
//!    time in 100 ms each, where both paths should be limited by the callee, not the worker.
//!
//! Reported as ratios measured in one run. Run with `scripts/bench.sh`; the arguments are the
//! latency rounds, the tasks and the tasks to the bounded callee (30, 200, 100; the CI run in
//! `scripts/test.sh` passes 10 40 20).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::time::{Duration, Instant};

use forgebench_tests::samples::median;
use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Recorder};
use futures::StreamExt;
use serde_json::json;

/// How much each part measures: the arguments, in this order, or their defaults.
struct Sizes {
    /// Latency rounds (30).
    rounds: usize,
    /// Tasks to a callee answering at once (200).
    tasks: usize,
    /// Tasks to the callee of bounded capacity (100).
    bounded_tasks: usize,
}

impl Sizes {
    fn from_args() -> Sizes {
        let arg = |n: usize, default: usize| {
            std::env::args()
                .nth(n)
                .map_or(default, |text| text.parse().expect("a count"))
        };
        Sizes {
            rounds: arg(1, 30),
            tasks: arg(2, 200),
            bounded_tasks: arg(3, 100),
        }
    }
}

#[tokio::main]
async fn main() {
    let sizes = Sizes::from_args();
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let reply = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": "bench"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let direct = reqwest::Client::new();

    // Warm both paths.
    app.open_task(
        &pair.caller.key,
        &pair.callee.name,
        text_message("warm"),
        10,
    )
    .await;
    direct
        .post(&callee.url)
        .json(&json!({}))
        .send()
        .await
        .expect("direct");

    let mut gated = Vec::new();
    let mut straight = Vec::new();
    for round in 0..sizes.rounds {
        let before = callee.received().len();
        let started = Instant::now();
        let opened = app
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message(&format!("{round}")),
                0,
            )
            .await;
        assert_eq!(opened.status, 200);
        let received = callee.wait_for(before + 1).await;
        gated.push(received[before].at.duration_since(started));

        let before = callee.received().len();
        let started = Instant::now();
        direct
            .post(&callee.url)
            .json(&json!({"round": round}))
            .send()
            .await
            .expect("direct");
        straight.push(callee.received()[before].at.duration_since(started));
    }
    let (gated, straight) = (median(gated), median(straight));
    println!(
        "\nOpen → callee receives the POST (median of {}):",
        sizes.rounds
    );
    println!("| path | median | ratio |");
    println!("|---|---|---|");
    println!(
        "| direct POST | {:.2} ms | 1 |",
        straight.as_secs_f64() * 1e3
    );
    println!(
        "| gateway: open, SQS, worker, POST | {:.2} ms | {:.0}x |",
        gated.as_secs_f64() * 1e3,
        gated.as_secs_f64() / straight.as_secs_f64()
    );

    hot_path_calls(&app, &pair, &callee, &recorder).await;

    let (gated, straight) = throughput(&app, &pair, &callee, sizes.tasks).await;
    println!(
        "\n{} tasks, {CONCURRENCY} at a time, until every one is answered (a callee answering at once):",
        sizes.tasks
    );
    println!("| path | tasks/s | ratio to direct |");
    println!("|---|---|---|");
    println!("| direct POST | {straight:.0} | 1 |");
    println!("| gateway push | {gated:.0} | {:.3} |", gated / straight);

    // A callee with room for 4 requests at once, each taking 100 ms: at most 40 tasks/s.
    let bounded = Callee::start_with_capacity(4, |_| Answer {
        delay: Duration::from_millis(100),
        ..Answer::json(200, json!({"state": "completed"}))
    })
    .await;
    let reply = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": bounded.url, "auth": {"type": "bearer", "secret": "bench"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let (gated, straight) = throughput(&app, &pair, &bounded, sizes.bounded_tasks).await;
    let ratio = gated / straight;
    println!(
        "\n{} tasks, {CONCURRENCY} at a time, to a callee that answers 4 at a time in 100 ms each (40 tasks/s at most):",
        sizes.bounded_tasks
    );
    println!("| path | tasks/s | ratio to direct | target: limited by the callee (>= 0.8) |");
    println!("|---|---|---|---|");
    println!("| direct POST | {straight:.0} | 1 | |");
    println!(
        "| gateway push | {gated:.0} | {ratio:.2} | {} |",
        if ratio >= 0.8 { "met" } else { "MISSED" }
    );
}

/// How many callers' requests are in flight at once.
const CONCURRENCY: usize = 16;

/// Tasks per second through the gateway (opened `CONCURRENCY` at a time, until every one is
/// answered) and by direct POSTs to `callee` (`CONCURRENCY` at a time), `tasks` each.
async fn throughput(
    app: &forgebench_tests::TestApp,
    pair: &forgebench_tests::Pair,
    callee: &Callee,
    tasks: usize,
) -> (f64, f64) {
    let started = Instant::now();
    let ids: Vec<String> = futures::stream::iter(0..tasks)
        .map(|index| {
            let (key, name) = (pair.caller.key.clone(), pair.callee.name.clone());
            async move {
                app.open_task(&key, &name, text_message(&format!("t{index}")), 0)
                    .await
                    .field("id")
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    for id in &ids {
        let settled = app.settled(&pair.caller.key, &pair.callee.name, id).await;
        assert_eq!(settled.state(), "completed", "{}", settled.text);
    }
    let gated = started.elapsed();

    let direct = reqwest::Client::new();
    let started = Instant::now();
    futures::stream::iter(0..tasks)
        .map(|index| {
            let (direct, url) = (&direct, callee.url.clone());
            async move {
                direct
                    .post(url)
                    .json(&json!({"index": index}))
                    .send()
                    .await
                    .expect("direct")
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<_>>()
        .await;
    let straight = started.elapsed();
    let rate = |elapsed: Duration| tasks as f64 / elapsed.as_secs_f64();
    (rate(gated), rate(straight))
}

/// The AWS calls from one push open until its attempt is recorded, with the worker warm: the
/// open's own, the send, the lease; one receive stands for the event source mapping's (the local
/// poller's empty receives are not counted), and the POST itself is one more.
async fn hot_path_calls(
    app: &forgebench_tests::TestApp,
    pair: &forgebench_tests::Pair,
    callee: &Callee,
    recorder: &Recorder,
) {
    tokio::time::sleep(Duration::from_millis(300)).await; // earlier deliveries' last writes
    recorder.take();
    let before = callee.received().len();
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("counted"),
            0,
        )
        .await;
    callee.wait_for(before + 1).await;
    // Taken as soon as the POST is seen: what follows it starts with the attempt record.
    let calls = recorder.take_operations_but_receives();
    let recorded = calls
        .iter()
        .position(|call| call == "PutItem")
        .unwrap_or(calls.len());
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    // The open's word index is written beside its enqueue, off the delivery's path.
    let hot: Vec<&str> = calls[..recorded]
        .iter()
        .map(String::as_str)
        .filter(|call| !matches!(*call, "BatchWriteItem" | "BatchGetItem"))
        .collect();
    let open_index_marker = hot
        .iter()
        .filter(|call| **call == "TransactWriteItems")
        .count()
        .saturating_sub(1);
    let count = hot.len() - open_index_marker + 2; // + the receive and the POST
                                                   // The open's read of its callee (key cache warm) comes before the open's write; the count of
                                                   // nine this target was set against began at the open's write.
    let from_the_write = count - hot.iter().take_while(|call| **call == "GetItem").count();
    println!("\nOne delivery's hot path, open → POST (worker warm):");
    println!("| calls | from the open's write | operations | target <= 5 |");
    println!("|---|---|---|---|");
    println!(
        "| {count} | {from_the_write} | {} (the open's word-index marker left out), ReceiveMessage, the POST | {} |",
        hot.join(", "),
        if from_the_write <= 5 { "met" } else { "MISSED" }
    );
}
