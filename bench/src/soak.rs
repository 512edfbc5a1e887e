//! Soak: a fixed rate of mixed work on one gateway for a long time, to show that nothing grows
//! or slows with time. Each second brings the same mix: pull tasks (open with a wait, the
//! callee long-polling, claiming and answering), A2A `SendMessage` calls that block until the
//! answer, searches of the caller's history, and push tasks delivered to a local endpoint.
//!
//! The report gives, for the first and the last fifth of the run, how many requests started
//! and their p50 and p99 times; the process's resident memory (gateway and load together; the
//! emulators run apart) after the warm-up and at the end, and its peak; and every answer that
//! was not the documented success, and every task that did not end completed. With `--gate`
//! the run fails on any such answer or task (counts, never times).
//!
//! `cargo run -p forgebench-bench --bin soak -- [seconds, default 600] [tasks a second, default 4] [--gate]`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap is a failed run, with its message"
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Pair, TestApp};
use serde_json::json;

/// One kind of work in the mix, in the order a second brings them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Work {
    Pull,
    A2a,
    Search,
    Push,
}

/// A second's mix, cycled: half pull tasks, the rest spread over the other kinds.
const MIX: [Work; 8] = [
    Work::Pull,
    Work::A2a,
    Work::Pull,
    Work::Search,
    Work::Pull,
    Work::Push,
    Work::Pull,
    Work::A2a,
];

/// One piece of work done: when it started (from the run's start), how long it took, and
/// whether every answer was the documented success and its task ended completed.
struct Done {
    started: Duration,
    took: Duration,
    ok: bool,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gate = args.iter().any(|arg| arg == "--gate");
    let mut numbers = args.iter().filter_map(|arg| arg.parse::<f64>().ok());
    let seconds = numbers.next().unwrap_or(600.0);
    let rate = numbers.next().unwrap_or(4.0);
    forgebench::metrics::discard();

    let app = Arc::new(spawn_app_with(Options::local_push()).await);
    let pull = app.pair().await;
    let endpoint = Callee::start(|_| {
        Answer::json(
            200,
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}),
        )
    })
    .await;
    let push = app.pair().await;
    let reply = app
        .set_endpoint(
            &push.tenant.admin_key,
            &push.callee.name,
            json!({"url": endpoint.url}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let callees: Vec<_> = (0..2)
        .map(|_| tokio::spawn(answer_forever(Arc::clone(&app), pull.callee.key.clone())))
        .collect();
    let memory = Arc::new(Mutex::new(Vec::new()));
    let sampler = tokio::spawn(sample_memory(Arc::clone(&memory)));

    let run = Duration::from_secs_f64(seconds);
    let done = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    let mut work = Vec::new();
    let mut n = 0;
    while start.elapsed() < run {
        ticks.tick().await;
        let (app, pull, push, done) = (
            Arc::clone(&app),
            pull.clone(),
            push.clone(),
            Arc::clone(&done),
        );
        let kind = MIX[n % MIX.len()];
        work.push(tokio::spawn(async move {
            let started = start.elapsed();
            let at = Instant::now();
            let ok = do_work(&app, kind, &pull, &push, n).await;
            done.lock().unwrap().push(Done {
                started,
                took: at.elapsed(),
                ok,
            });
        }));
        n += 1;
    }
    for handle in work {
        let _ = tokio::time::timeout(Duration::from_secs(60), handle).await;
    }
    sampler.abort();
    callees.iter().for_each(|callee| callee.abort());
    let resident = memory_kib();
    memory.lock().unwrap().push((start.elapsed(), resident));

    let done = std::mem::take(&mut *done.lock().unwrap());
    let failed = done.iter().filter(|work| !work.ok).count() + (n - done.len());
    report(&done, &memory.lock().unwrap(), run, rate, n, failed);
    if gate && failed > 0 {
        eprintln!(
            "soak: {failed} pieces of work got an undocumented answer or a task not completed"
        );
        std::process::exit(1);
    }
}

/// Does one piece of work; `true` when every answer was the documented success and its task,
/// if it opened one, ended completed.
async fn do_work(app: &TestApp, kind: Work, pull: &Pair, push: &Pair, n: usize) -> bool {
    match kind {
        Work::Pull => completes(app, pull, n).await,
        Work::Push => completes(app, push, n).await,
        Work::A2a => {
            let message = json!({"messageId": format!("soak-{n}"), "role": "ROLE_USER",
                                 "parts": [{"text": format!("classify invoice {n}")}]});
            let sent = app
                .a2a_rpc(
                    &pull.callee.id,
                    &pull.caller.key,
                    "SendMessage",
                    json!({"message": message}),
                )
                .await;
            sent.body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        }
        Work::Search => {
            let path = "/v1/tasks?limit=20&q=invoice&state=completed";
            let found = app.get(path, &pull.caller.key).await;
            found.status == 200 && found.body["items"].is_array()
        }
    }
}

/// Opens a task on `pair` with a wait and reads it until it is final: whether it completed.
async fn completes(app: &TestApp, pair: &Pair, n: usize) -> bool {
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message(&format!("invoice {n}")),
            10,
        )
        .await;
    if opened.status != 200 {
        return false;
    }
    let (task_id, mut state) = (opened.field("id"), opened.state());
    for _ in 0..6 {
        if !matches!(state.as_str(), "submitted" | "working") {
            break;
        }
        let path = format!("/v1/agents/{}/tasks/{task_id}?wait=10", pair.callee.name);
        let read = app.get(&path, &pair.caller.key).await;
        if read.status != 200 {
            return false;
        }
        state = read.state();
    }
    state == "completed"
}

/// A pull callee: claims with a long poll and answers at once, until aborted.
async fn answer_forever(app: Arc<TestApp>, key: String) {
    loop {
        let claimed = app.claim(&key, 5).await;
        if claimed.status == 200 {
            let result = json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]});
            app.post_result(&key, &claimed.field("id"), result).await;
        }
    }
}

/// Samples the process's resident memory every 5 s, until aborted.
async fn sample_memory(samples: Arc<Mutex<Vec<(Duration, u64)>>>) {
    let start = Instant::now();
    loop {
        samples
            .lock()
            .unwrap()
            .push((start.elapsed(), memory_kib()));
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// This process's resident memory in KiB (`VmRSS`), 0 where the system does not say.
fn memory_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn report(
    done: &[Done],
    memory: &[(Duration, u64)],
    run: Duration,
    rate: f64,
    started: usize,
    failed: usize,
) {
    let fifth = run / 5;
    let window = |from: Duration, to: Duration| -> Vec<Duration> {
        let mut times: Vec<Duration> = done
            .iter()
            .filter(|work| work.started >= from && work.started < to)
            .map(|work| work.took)
            .collect();
        times.sort();
        times
    };
    let (first, last) = (window(Duration::ZERO, fifth), window(run - fifth, run));
    let ms = |times: &[Duration], fraction: f64| {
        forgebench_tests::samples::percentile(times, fraction).as_secs_f64() * 1000.0
    };
    println!(
        "soak: {:.0} s of mixed work at {rate} a second (pull, A2A SendMessage, search, push), {started} started",
        run.as_secs_f64()
    );
    println!();
    println!("| part of the run | work started | p50 ms | p99 ms |");
    println!("|---|---|---|---|");
    println!(
        "| first fifth | {} | {:.1} | {:.1} |",
        first.len(),
        ms(&first, 0.5),
        ms(&first, 0.99)
    );
    println!(
        "| last fifth | {} | {:.1} | {:.1} |",
        last.len(),
        ms(&last, 0.5),
        ms(&last, 0.99)
    );
    println!(
        "| last ÷ first | | {:.2}× | {:.2}× |",
        ms(&last, 0.5) / ms(&first, 0.5),
        ms(&last, 0.99) / ms(&first, 0.99)
    );
    // Memory after the warm-up (the first fifth), at the end, and at its peak.
    let warm = memory
        .iter()
        .find(|(at, _)| *at >= fifth)
        .or(memory.last())
        .map_or(0, |(_, kib)| *kib);
    let end = memory.last().map_or(0, |(_, kib)| *kib);
    let peak = memory.iter().map(|(_, kib)| *kib).max().unwrap_or(0);
    println!();
    println!("| resident memory (gateway and load, one process) | MiB |");
    println!("|---|---|");
    println!("| after the first fifth | {:.1} |", warm as f64 / 1024.0);
    println!("| at the end | {:.1} |", end as f64 / 1024.0);
    println!("| peak | {:.1} |", peak as f64 / 1024.0);
    println!(
        "| end ÷ after the first fifth | {:.2}× |",
        end as f64 / warm.max(1) as f64
    );
    println!();
    println!("work with an undocumented answer or a task not completed: {failed}");
}
