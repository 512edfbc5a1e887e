//! Cost does not grow with history: one callee's claims, idle long polls and searches with 1x,
//! 10x and 100x as many finished tasks in the table, in one run against DynamoDB Local.
//!
//! One pair of agents; before each measurement the table is topped up with finished tasks of
//! that pair, as the gateway leaves them (task items, word postings and markers, written by the
//! store's own seeding helper), to `N`, `10 N` and `100 N` (default `N` = 200). At each size:
//!
//! - **claims**: `K` tasks opened (not timed), then one poller claims them through the HTTP
//!   gateway until the queue answers `204`: claims/s and DynamoDB requests per claim;
//! - **idle waits**: a caller's `GET …/tasks/{id}?wait=2` on a task nobody claims and the
//!   callee's `GET …/tasks/next?wait=2` on an empty queue: DynamoDB requests per waiting second;
//! - **search**: the first page of 20 of `q=invoice` (a word every finished task has), of
//!   `state=completed` and of no filter, through HTTP: p50 over the rounds (after one page not
//!   counted), and DynamoDB requests per page.
//!
//! Each time is also split in two by the SDK interceptor that counts the requests: the summed
//! round trips of the page's (or claim's) DynamoDB requests, and the rest (the gateway's own
//! work and the HTTP exchange). A time that grows while its requests stay the same is thereby
//! placed on the store's side or on the gateway's. For each search, the store's side is split
//! once more by request (the operation, and the index a `Query` reads), to name the request
//! whose answers grow.
//!
//! The claimed tasks are answered after each timing, so they join the history too. `N` should
//! be at least 20, so that every page is full at every size.
//!
//! Each line's ratio is 100x over 1x; the target is that none grows by more than 10 %
//! (docs/benchmarks.md; for claims/s, which should not fall, the ratio is inverted). Counted
//! requests do not depend on the machine; times on a shared machine are noisy.
//!
//! Usage: `history [N] [K] [rounds]` (defaults 200, 200, 20); `scripts/bench.sh` runs it in
//! release mode, and `scripts/test.sh` a short run so it cannot rot.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use forgebench::domain::words::TaskWords;
use forgebench::domain::{clock, Agent, Task, TaskState};
use forgebench_tests::samples::median;
use forgebench_tests::{
    seeded_task, spawn_app_with, text_message, Options, Pair, Recorder, TestApp,
};
use futures::stream::{self, StreamExt};
use serde_json::json;

const SCALES: [usize; 3] = [1, 10, 100];

/// The `n`-th finished task of the pair, opened and finished an hour or more ago.
fn finished_task(n: usize, caller: &Agent, callee: &Agent) -> (Task, TaskWords) {
    let message = json!({"role": "user", "parts": [
        {"text": format!("invoice {n} for the shipment")},
        {"data": {"invoice_id": format!("INV-{n}")}}
    ]});
    let long_ago = i128::from(clock::unix_now()) * 1_000 - 3_600_000 - 1_000_000_000;
    let context_id = uuid::Uuid::new_v4().to_string();
    let states = [TaskState::Working, TaskState::Completed];
    seeded_task(
        caller,
        callee,
        context_id,
        &message,
        long_ago + n as i128 * 10,
        &states,
    )
}

/// Tops the table up with finished tasks numbered `from..to`.
async fn seed(app: &TestApp, caller: &Agent, callee: &Agent, from: usize, to: usize) {
    app.seed_tasks(from..to, |n| finished_task(n, caller, callee))
        .await;
}

/// Opens `count` tasks on the pair's callee, 16 at a time.
async fn open_tasks(app: &TestApp, pair: &Pair, count: usize) {
    stream::iter(0..count)
        .map(|n| async move {
            let reply = app
                .open_task(
                    &pair.caller.key,
                    &pair.callee.name,
                    text_message(&format!("fresh {n}")),
                    0,
                )
                .await;
            assert_eq!(reply.status, 200, "{}", reply.text);
        })
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
}

/// What one size of the table measured.
struct Measured {
    claims: Claims,
    caller_reads_per_second: f64,
    callee_reads_per_second: f64,
    /// Each search, in [`SEARCHES`] order.
    searches: Vec<SearchPages>,
}

/// One poller's claims at one size.
struct Claims {
    per_second: f64,
    calls_per_claim: f64,
    /// DynamoDB's summed round trips per claim.
    store_time_per_claim: Duration,
}

/// One search's first page over the rounds.
struct SearchPages {
    p50: Duration,
    /// The p50 of each page's summed DynamoDB round trips: the store's share of the page.
    store_p50: Duration,
    /// The p50 of each page's time besides its DynamoDB round trips: the gateway's share.
    rest_p50: Duration,
    /// Per DynamoDB request of the page (by name: `Query words_in`), the p50 of its summed
    /// round trips per page: which of the page's requests the store answers slower.
    by_request: BTreeMap<String, Duration>,
    calls: f64,
}

const SEARCHES: [&str; 3] = ["q=invoice&limit=20", "state=completed&limit=20", "limit=20"];
const WAIT_SECONDS: u32 = 2;

/// One poller claims the `count` tasks just opened until the queue is empty.
async fn claims(app: &TestApp, recorder: &Recorder, pair: &Pair, count: usize) -> Claims {
    open_tasks(app, pair, count).await;
    recorder.take();
    recorder.take_dynamodb_time();
    let began = Instant::now();
    let mut claimed = Vec::new();
    loop {
        let reply = app.claim(&pair.callee.key, 0).await;
        match reply.status {
            200 => claimed.push(reply.field("id")),
            204 => break,
            status => panic!("claim answered {status}: {}", reply.text),
        }
    }
    let elapsed = began.elapsed();
    assert_eq!(claimed.len(), count, "every opened task claimed once");
    let calls = recorder.take_dynamodb().len();
    let store_time = recorder.take_dynamodb_time();
    // Answered (not timed), they join the history like any finished task.
    for task_id in &claimed {
        let done = app
            .post_result(&pair.callee.key, task_id, json!({"state": "completed"}))
            .await;
        assert_eq!(done.status, 200, "{}", done.text);
    }
    Claims {
        per_second: claimed.len() as f64 / elapsed.as_secs_f64(),
        calls_per_claim: calls as f64 / claimed.len() as f64,
        store_time_per_claim: store_time / count as u32,
    }
}

/// DynamoDB requests per waiting second of a caller waiting on an unclaimed task, then of the
/// callee waiting on its empty queue.
async fn idle_waits(app: &TestApp, recorder: &Recorder, pair: &Pair) -> (f64, f64) {
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.id, text_message("idle"), 0)
        .await;
    let task_id = opened.field("id");
    recorder.take();
    let path = format!(
        "/v1/agents/{}/tasks/{task_id}?wait={WAIT_SECONDS}",
        pair.callee.id
    );
    let waited = app.get(&path, &pair.caller.key).await;
    assert_eq!(waited.state(), "submitted", "{}", waited.text);
    let caller = recorder.take_dynamodb().len() as f64 / f64::from(WAIT_SECONDS);
    let canceled = app
        .cancel(&pair.caller.key, &pair.callee.id, &task_id)
        .await;
    assert_eq!(canceled.status, 200, "{}", canceled.text);
    recorder.take();
    let next = app.claim(&pair.callee.key, WAIT_SECONDS).await;
    assert_eq!(next.status, 204, "{}", next.text);
    let callee = recorder.take_dynamodb().len() as f64 / f64::from(WAIT_SECONDS);
    (caller, callee)
}

/// Each search's first page over `rounds`: its time, split into DynamoDB's and the rest, and
/// DynamoDB requests per page.
async fn searches(
    app: &TestApp,
    recorder: &Recorder,
    pair: &Pair,
    rounds: usize,
) -> Vec<SearchPages> {
    let mut measured = Vec::new();
    for query in SEARCHES {
        let (mut pages, mut store, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        let mut by_request: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
        // One page first, not counted: connections and caches as a busy gateway has them.
        app.get(&format!("/v1/tasks?{query}"), &pair.caller.key)
            .await;
        recorder.take();
        for _ in 0..rounds {
            recorder.take_dynamodb_round_trips();
            let began = Instant::now();
            let reply = app
                .get(&format!("/v1/tasks?{query}"), &pair.caller.key)
                .await;
            let page = began.elapsed();
            let round_trips = recorder.take_dynamodb_round_trips();
            assert_eq!(reply.status, 200, "{query}: {}", reply.text);
            let store_time = round_trips.iter().map(|(_, time)| *time).sum();
            let mut this_page: BTreeMap<String, Duration> = BTreeMap::new();
            for (name, time) in round_trips {
                *this_page.entry(name).or_default() += time;
            }
            for (name, time) in this_page {
                by_request.entry(name).or_default().push(time);
            }
            pages.push(page);
            store.push(store_time);
            rest.push(page.saturating_sub(store_time));
        }
        measured.push(SearchPages {
            p50: median(pages),
            store_p50: median(store),
            rest_p50: median(rest),
            by_request: by_request
                .into_iter()
                .map(|(name, times)| (name, median(times)))
                .collect(),
            calls: recorder.take_dynamodb().len() as f64 / rounds as f64,
        });
    }
    measured
}

fn ratio_line(name: &str, values: &[f64], digits: usize) {
    let cells: Vec<String> = values.iter().map(|v| format!("{v:.digits$}")).collect();
    let ratio = values[values.len() - 1] / values[0];
    // The target is about growth: a bigger table may not cost more than 10 % more.
    let verdict = if ratio <= 1.10 { "met" } else { "MISSED" };
    println!(
        "| {name} | {} | {ratio:.2} | {verdict} |",
        cells.join(" | ")
    );
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: usize| {
        args.next()
            .map_or(default, |n| n.parse().expect("a number"))
    };
    let (base, fresh, rounds) = (arg(200), arg(200), arg(20));
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        push_worker: false,
        recorder: Some(recorder.clone()),
        key_cache_seconds: 3_600,
        deployed_poll_intervals: true,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let (caller, callee) = app.agents_of(&pair).await;
    // Warm the paths (connections, key cache) before measuring.
    claims(&app, &recorder, &pair, 5).await;

    let mut results = Vec::new();
    let mut seeded = 0;
    for scale in SCALES {
        let target = base * scale;
        let began = Instant::now();
        seed(&app, &caller, &callee, seeded, target).await;
        eprintln!(
            "history: {target} finished tasks seeded ({:?})",
            began.elapsed()
        );
        seeded = target;
        let claims = claims(&app, &recorder, &pair, fresh).await;
        let (caller_reads, callee_reads) = idle_waits(&app, &recorder, &pair).await;
        results.push(Measured {
            claims,
            caller_reads_per_second: caller_reads,
            callee_reads_per_second: callee_reads,
            searches: searches(&app, &recorder, &pair, rounds).await,
        });
    }

    println!(
        "\nOne pair with {}, {} and {} finished tasks ({fresh} claims, {rounds} rounds per search, deployed poll intervals):",
        base,
        base * 10,
        base * 100
    );
    println!("| measure | 1x | 10x | 100x | 100x / 1x | grows at most 10 % |");
    println!("|---|---|---|---|---|---|");
    let column = |f: &dyn Fn(&Measured) -> f64| results.iter().map(f).collect::<Vec<f64>>();
    let ms = |time: Duration| time.as_secs_f64() * 1_000.0;
    ratio_line(
        "seconds per 1,000 claims (1 poller)",
        &column(&|m| 1_000.0 / m.claims.per_second),
        2,
    );
    ratio_line(
        "claims: DynamoDB's round trips, ms per claim",
        &column(&|m| ms(m.claims.store_time_per_claim)),
        2,
    );
    ratio_line(
        "DynamoDB requests per claim",
        &column(&|m| m.claims.calls_per_claim),
        2,
    );
    ratio_line(
        "caller wait: DynamoDB requests per idle second",
        &column(&|m| m.caller_reads_per_second),
        1,
    );
    ratio_line(
        "callee next: DynamoDB requests per idle second",
        &column(&|m| m.callee_reads_per_second),
        1,
    );
    for (i, query) in SEARCHES.iter().enumerate() {
        ratio_line(
            &format!("search `{query}`: p50 ms"),
            &column(&|m| ms(m.searches[i].p50)),
            1,
        );
        ratio_line(
            &format!("search `{query}`: DynamoDB's round trips, p50 ms"),
            &column(&|m| ms(m.searches[i].store_p50)),
            1,
        );
        ratio_line(
            &format!("search `{query}`: the rest of the page, p50 ms"),
            &column(&|m| ms(m.searches[i].rest_p50)),
            1,
        );
        let names: BTreeSet<&String> = results
            .iter()
            .flat_map(|m| m.searches[i].by_request.keys())
            .collect();
        for name in names {
            ratio_line(
                &format!("search `{query}`: of its round trips, `{name}`, p50 ms"),
                &column(&|m| {
                    ms(m.searches[i]
                        .by_request
                        .get(name)
                        .copied()
                        .unwrap_or_default())
                }),
                1,
            );
        }
        ratio_line(
            &format!("search `{query}`: DynamoDB requests"),
            &column(&|m| m.searches[i].calls),
            1,
        );
    }
}
