//! Noisy neighbour: one tenant runs at its limits while another runs the seed's pull life, on
//! one gateway, one table and one queue. The quiet tenant's open → answer time (the caller
//! opens, its callee, long-polling, claims and answers, the caller's wait returns the answer)
//! is measured alone, then beside the noise, in one run; the report gives p50 and p95 of each
//! and their ratio.
//!
//! The noise, all from one tenant: four agents each keeping 15 long polls going (past their own
//! 10 and, together, past the tenant's 40: renewed as they end, the rest refused with 429), and
//! a caller opening tasks over A2A as fast as it is answered, each with five notification
//! configs pointing at a receiver that accepts connections and never answers (its callee claims
//! them and never answers either).
//!
//! Then the same for push (`noisy_push.rs`): a tenant opening push tasks to an endpoint that
//! never answers, beside a quiet tenant's push deliveries.
//!
//! `cargo run -p forgebench-bench --bin noisy-neighbour -- [tasks per phase, default 40]
//! [pull|push, default both] [the push scenario's FORGEBENCH_TENANT_MAX_PUSHES, default 10]
//! [the push scenario's rounds, default 1]`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap is a failed run, with its message"
)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Pair, TestApp};
use serde_json::json;

#[path = "noisy_push.rs"]
mod noisy_push;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let tasks: usize = std::env::args()
        .nth(1)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(40);
    let scenario = std::env::args().nth(2).unwrap_or_default();
    forgebench::metrics::discard();
    if scenario != "push" {
        pull_beside_waits(tasks).await;
    }
    let bound = std::env::args()
        .nth(3)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(forgebench::config::DEFAULT_TENANT_MAX_PUSHES);
    let rounds = std::env::args()
        .nth(4)
        .and_then(|arg| arg.parse().ok())
        .unwrap_or(1);
    if scenario != "pull" && !noisy_push::run(tasks, bound, rounds).await {
        eprintln!("noisy neighbour: quiet push tasks were never delivered");
        std::process::exit(1);
    }
}

/// The quiet tenant's pull lives, alone and beside a tenant at its limits.
async fn pull_beside_waits(tasks: usize) {
    // The gateway as deployed paces its waits: a wait that finds nothing polls less and less
    // often (100 ms growing to 750 ms), where the tests' own setting polls every 100 ms. Its
    // push worker, too, gives a POST 10 s and retries after 5 s, 30 s, ..., where the tests
    // give 2 s and retry after 0.2 s: the noisy tenant cannot choose how often its hanging
    // receivers are tried again.
    let app = Arc::new(
        spawn_app_with(Options {
            deployed_poll_intervals: true,
            deployed_push: true,
            ..Options::local_push()
        })
        .await,
    );
    let quiet = app.pair().await;
    let callee = tokio::spawn(serve_quietly(Arc::clone(&app), quiet.callee.key.clone()));

    let alone = pull_lives(&app, &quiet, tasks).await;

    let noise = Noise::start(Arc::clone(&app)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let beside = pull_lives(&app, &quiet, tasks).await;
    let counts = noise.stop().await;
    callee.abort();

    let (alone_p50, alone_p95) = (percentile(&alone, 0.5), percentile(&alone, 0.95));
    let (noisy_p50, noisy_p95) = (percentile(&beside, 0.5), percentile(&beside, 0.95));
    println!("noisy neighbour: the quiet tenant's open → answer, {tasks} tasks a phase");
    println!();
    println!("| quiet tenant's open → answer | p50 ms | p95 ms |");
    println!("|---|---|---|");
    println!("| alone | {alone_p50:.1} | {alone_p95:.1} |");
    println!("| beside the noisy tenant | {noisy_p50:.1} | {noisy_p95:.1} |");
    println!(
        "| ratio | {:.2}× | {:.2}× (target ≤ 1.5×: {}) |",
        noisy_p50 / alone_p50,
        noisy_p95 / alone_p95,
        if noisy_p95 / alone_p95 <= 1.5 {
            "met"
        } else {
            "MISSED"
        }
    );
    println!();
    println!(
        "the noisy tenant meanwhile: {} waits and streams held, {} refused with 429, {} tasks opened, {} notification POSTs left hanging",
        counts.held, counts.refused, counts.opened, counts.hanging
    );
}

/// The quiet callee: claims with a long poll and answers at once, forever.
async fn serve_quietly(app: Arc<TestApp>, key: String) {
    loop {
        let claimed = app.claim(&key, 5).await;
        if claimed.status == 200 {
            let task_id = claimed.field("id");
            let result = json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]});
            let answered = app.post_result(&key, &task_id, result).await;
            assert_eq!(answered.status, 200, "{}", answered.text);
        }
    }
}

/// `count` pull lives of the quiet pair, one after another: each open → the caller's wait
/// returning the completed task.
async fn pull_lives(app: &TestApp, pair: &Pair, count: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(count);
    for n in 0..count {
        let started = Instant::now();
        let opened = app
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message(&format!("classify invoice {n}")),
                10,
            )
            .await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        let mut state = opened.state();
        let task_id = opened.field("id");
        // Until the task is final (a stalled callee would otherwise hold the run forever).
        while matches!(state.as_str(), "submitted" | "working") {
            let read = app
                .get(
                    &format!("/v1/agents/{}/tasks/{task_id}?wait=10", pair.callee.name),
                    &pair.caller.key,
                )
                .await;
            assert_eq!(read.status, 200, "{}", read.text);
            state = read.state();
        }
        assert_eq!(state, "completed", "the quiet tenant's task {task_id}");
        times.push(started.elapsed());
    }
    times
}

/// The sample at `fraction` of the way through `times`, in milliseconds.
fn percentile(times: &[Duration], fraction: f64) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort();
    forgebench_tests::samples::percentile(&sorted, fraction).as_secs_f64() * 1000.0
}

/// What the noisy tenant did.
struct NoiseCounts {
    held: u64,
    refused: u64,
    opened: u64,
    hanging: u64,
}

/// The noisy tenant's load, running until stopped.
struct Noise {
    stop: Arc<AtomicBool>,
    held: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
    opened: Arc<AtomicU64>,
    hung: Callee,
    loads: Vec<tokio::task::JoinHandle<()>>,
}

impl Noise {
    async fn start(app: Arc<TestApp>) -> Noise {
        let stop = Arc::new(AtomicBool::new(false));
        let (held, refused, opened) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
        );
        let hung = Callee::start(|_| Answer {
            delay: Duration::from_secs(3600),
            ..Answer::json(200, json!({}))
        })
        .await;
        let pair = app.pair().await;
        let mut agents = vec![pair.caller.key.clone(), pair.callee.key.clone()];
        for name in ["noisy-a", "noisy-b"] {
            agents.push(app.create_agent(&pair.tenant.admin_key, name).await.key);
        }
        let mut loads = Vec::new();
        // Waits: 15 per agent (more than its own 10, more than the tenant's 40 together).
        for key in &agents {
            for _ in 0..15 {
                let (app, key, stop) = (Arc::clone(&app), key.clone(), Arc::clone(&stop));
                let (held, refused) = (Arc::clone(&held), Arc::clone(&refused));
                loads.push(tokio::spawn(async move {
                    while !stop.load(Ordering::Relaxed) {
                        let started = Instant::now();
                        let reply = app.claim(&key, 3).await;
                        match reply.status {
                            429 => {
                                refused.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_secs(1)).await;
                            }
                            _ if started.elapsed() >= Duration::from_secs(2) => {
                                held.fetch_add(1, Ordering::Relaxed);
                            }
                            _ => {}
                        }
                    }
                }));
            }
        }
        // Opens nobody claims (its callee's claims above see them), each task with five
        // notification configs at the receiver that never answers.
        let (app_opens, stop_opens, opened_count) =
            (Arc::clone(&app), Arc::clone(&stop), Arc::clone(&opened));
        let hung_url = hung.url.clone();
        loads.push(tokio::spawn(async move {
            let app = app_opens;
            while !stop_opens.load(Ordering::Relaxed) {
                let configs: Vec<_> = (0..5)
                    .map(|n| json!({"id": format!("hook-{n}"), "url": hung_url}))
                    .collect();
                let sent = app
                    .a2a_rpc(
                        &pair.callee.id,
                        &pair.caller.key,
                        "SendMessage",
                        json!({"message": {"role": "ROLE_USER", "messageId": uuid::Uuid::new_v4().to_string(),
                                           "parts": [{"text": "noise"}]},
                               "configuration": {"returnImmediately": true,
                                                 "taskPushNotificationConfig": configs[0]}}),
                    )
                    .await;
                if let Some(task_id) = sent.body["result"]["task"]["id"].as_str() {
                    opened_count.fetch_add(1, Ordering::Relaxed);
                    for config in &configs[1..] {
                        let mut config = config.clone();
                        config["taskId"] = json!(task_id);
                        app.a2a_rpc(
                            &pair.callee.id,
                            &pair.caller.key,
                            "CreateTaskPushNotificationConfig",
                            config,
                        )
                        .await;
                    }
                }
            }
        }));
        Noise {
            stop,
            held,
            refused,
            opened,
            hung,
            loads,
        }
    }

    async fn stop(self) -> NoiseCounts {
        self.stop.store(true, Ordering::Relaxed);
        for load in self.loads {
            let _ = tokio::time::timeout(Duration::from_secs(15), load).await;
        }
        NoiseCounts {
            held: self.held.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            opened: self.opened.load(Ordering::Relaxed),
            hanging: self.hung.received().len() as u64,
        }
    }
}
