//! Benchmark of task search (`GET /v1/tasks`) against DynamoDB Local, in one run:
//!
//! 1. Seeds one agent with N tasks (default 100,000) as the gateway leaves them (task items,
//!    word postings and markers, written by the store's own seeding helper): 98 % completed,
//!    1 % working, 1 % waiting for input, ten tasks a conversation, every task saying
//!    "invoice", one in a thousand saying "rotterdam".
//! 2. For each query (a sparse state, one conversation, a rare word, a common word, no
//!    filter): the first page of 50 through the real HTTP gateway, p50 and p95 over the rounds,
//!    its DynamoDB calls (counted by an SDK interceptor) and the read capacity the store
//!    reports for it; beside one full Scan of the table (what any of them costs answered by a
//!    Scan, which reads every item whatever its filter keeps), as ratios. The Scan stops at a
//!    time budget (DynamoDB Local's Scan slows as the table grows); then its cost so far bounds
//!    a full Scan's from below, and the ratios say `≥`.
//! 3. What the indexes cost the writes: the DynamoDB calls of one small pull task's life
//!    (open, claim, result), and how many of them keep the word index.
//!
//! Run with the local stack up: `scripts/bench.sh`, or `cargo run -p forgebench-bench
//! --release --bin search -- [tasks] [rounds] [scan budget in seconds, 600]` with the `AWS_*` settings of
//! `scripts/local-stack.sh env`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, ReturnConsumedCapacity};
use forgebench::domain::search::{Direction, SearchFilters};
use forgebench::domain::words::{QueryWords, TaskWords};
use forgebench::domain::{Agent, Task, TaskState};
use forgebench_tests::samples::percentile;
use forgebench_tests::{seeded_task, spawn_app_with, text_message, Options, Recorder, TestApp};
use serde_json::json;

/// The n-th task of the table: opened `10 n` ms after `start`, then worked on and (mostly)
/// finished.
fn table_task(
    n: usize,
    start: i128,
    caller: &Agent,
    callee: &Agent,
    contexts: &[String],
) -> (Task, TaskWords) {
    let rare = if n % 1_000 == 7 {
        " shipped to rotterdam"
    } else {
        ""
    };
    let message = json!({"role": "user", "parts": [
        {"text": format!("invoice {n}{rare}")},
        {"data": {"invoice_id": format!("INV-{n}")}}
    ]});
    let states: &[TaskState] = match n % 100 {
        0 => &[TaskState::Working],
        1 => &[TaskState::Working, TaskState::InputRequired],
        _ => &[TaskState::Working, TaskState::Completed],
    };
    let context_id = contexts[n / 10].clone();
    seeded_task(
        caller,
        callee,
        context_id,
        &message,
        start + n as i128 * 10,
        states,
    )
}

async fn seed(app: &TestApp, caller: &Agent, callee: &Agent, count: usize) -> Duration {
    let contexts: Vec<String> = (0..count.div_ceil(10))
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect();
    let start = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000)
        - count as i128 * 10
        - 60_000;
    let began = Instant::now();
    app.seed_tasks(0..count, |n| {
        table_task(n, start, caller, callee, &contexts)
    })
    .await;
    began.elapsed()
}

/// One query: its first page through HTTP over `rounds`, its calls and read capacity.
struct Measured {
    name: &'static str,
    found: usize,
    p50: Duration,
    p95: Duration,
    calls: f64,
    read_units: f64,
}

async fn measure_query(
    app: &TestApp,
    recorder: &Recorder,
    key: &str,
    (name, query, filters): (&'static str, String, SearchFilters),
    rounds: usize,
) -> Measured {
    let mut times = Vec::new();
    let mut calls = 0;
    let mut found = 0;
    recorder.take_dynamodb();
    for _ in 0..rounds {
        let began = Instant::now();
        let reply = app.get(&format!("/v1/tasks?limit=50&{query}"), key).await;
        times.push(began.elapsed());
        assert_eq!(reply.status, 200, "{}", reply.text);
        found = reply.body["items"].as_array().unwrap().len();
        calls += recorder.take_dynamodb().len();
    }
    times.sort();
    let page = forgebench::search::search(&app.app.store, &filters, None, 50)
        .await
        .unwrap();
    recorder.take_dynamodb();
    Measured {
        name,
        found,
        p50: percentile(&times, 0.5),
        p95: percentile(&times, 0.95),
        calls: calls as f64 / rounds as f64,
        read_units: page.read_units,
    }
}

/// What a Scan of the table read: time, calls, items, read capacity, and whether it reached
/// the end of the table before its time budget ran out.
struct Scanned {
    took: Duration,
    calls: usize,
    items: usize,
    read_units: f64,
    finished: bool,
}

impl Scanned {
    /// `≥` when the Scan stopped early: its cost then bounds a full Scan's from below.
    fn at_least(&self) -> &'static str {
        if self.finished {
            ""
        } else {
            "≥ "
        }
    }
}

/// The table scanned with `filter`, page after page, until its end or until `budget` has
/// passed. Its own client, without the gateway's operation timeouts: a Scan page of a large
/// table takes longer.
async fn scan(
    app: &TestApp,
    (filter, values): (&str, Vec<(&str, AttributeValue)>),
    budget: Duration,
) -> Scanned {
    let config = forgebench_tests::dynamodb_config(&forgebench_tests::dynamodb_endpoint())
        .await
        .timeout_config(aws_sdk_dynamodb::config::timeout::TimeoutConfig::disabled())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(config);
    let began = Instant::now();
    let (mut calls, mut items, mut read_units, mut start) = (0, 0, 0.0, None);
    let finished = loop {
        let mut request = client
            .scan()
            .table_name(&app.table)
            .filter_expression(filter)
            .return_consumed_capacity(ReturnConsumedCapacity::Total)
            .set_exclusive_start_key(start);
        for (name, value) in &values {
            request = request.expression_attribute_values(*name, value.clone());
        }
        if filter.contains("#state") {
            request = request.expression_attribute_names("#state", "state");
        }
        let output = request.send().await.unwrap();
        calls += 1;
        items += output.scanned_count() as usize;
        read_units += output
            .consumed_capacity()
            .and_then(|c| c.capacity_units())
            .unwrap_or(0.0);
        match output.last_evaluated_key {
            None => break true,
            Some(_) if began.elapsed() >= budget => break false,
            Some(key) => start = Some(key),
        }
    };
    Scanned {
        took: began.elapsed(),
        calls,
        items,
        read_units,
        finished,
    }
}

/// DynamoDB calls of one small pull task's life, and how many of them keep the word index.
async fn write_costs(
    app: &TestApp,
    recorder: &Recorder,
    caller_key: &str,
    callee_key: &str,
    callee: &str,
) -> (usize, usize) {
    app.open_task(caller_key, callee, text_message("warm the key cache"), 0)
        .await;
    let claimed = app.claim(callee_key, 5).await;
    app.post_result(
        callee_key,
        &claimed.field("id"),
        json!({"state": "completed"}),
    )
    .await;
    recorder.take_dynamodb();
    let opened = app
        .open_task(caller_key, callee, text_message("classify invoice 77"), 0)
        .await;
    let claimed = app.claim(callee_key, 5).await;
    assert_eq!(claimed.field("id"), opened.field("id"));
    app.post_result(
        callee_key,
        &opened.field("id"),
        json!({"state": "completed",
        "artifacts": [{"name": "response", "parts": [{"text": "category software"}]}]}),
    )
    .await;
    let calls = recorder.take_dynamodb();
    let index = calls
        .iter()
        .filter(|operation| matches!(operation.as_str(), "BatchGetItem" | "BatchWriteItem"))
        .count();
    // Each indexing pass of a small task writes one batch and ends with one transaction (the
    // marker and the due flag); the open's pass reads nothing, the others one batch.
    let passes = calls
        .iter()
        .filter(|operation| *operation == "BatchWriteItem")
        .count();
    (calls.len(), index + passes)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args
        .next()
        .and_then(|text| text.parse().ok())
        .unwrap_or(100_000);
    let rounds: usize = args.next().and_then(|text| text.parse().ok()).unwrap_or(20);
    let scan_budget = Duration::from_secs(
        args.next()
            .and_then(|text| text.parse().ok())
            .unwrap_or(600),
    );
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let (caller, callee) = app.agents_of(&pair).await;
    let seeded = seed(&app, &caller, &callee, count).await;
    println!(
        "\nSeeded {count} tasks of one agent in {:.1} s.",
        seeded.as_secs_f64()
    );

    let context = {
        let reply = app
            .get("/v1/tasks?limit=1&state=working", &pair.callee.key)
            .await;
        reply.body["items"][0]["context_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let filters =
        |state: Option<TaskState>, context_id: Option<String>, q: Option<&str>| SearchFilters {
            tenant: pair.tenant.id.clone().into(),
            agent: Some(callee.id.clone()),
            direction: Direction::Inbound,
            state,
            context_id: context_id.map(Into::into),
            words: q.map(|q| QueryWords::parse(q).unwrap()),
            since: None,
        };
    let cases = [
        (
            "state=working (1 %)",
            "direction=inbound&state=working".to_owned(),
            filters(Some(TaskState::Working), None, None),
        ),
        (
            "one conversation (10 tasks)",
            format!("direction=inbound&context_id={context}"),
            filters(None, Some(context.clone()), None),
        ),
        (
            "q=rotterdam (0.1 %)",
            "direction=inbound&q=rotterdam".to_owned(),
            filters(None, None, Some("rotterdam")),
        ),
        (
            "q=invoice (every task)",
            "direction=inbound&q=invoice".to_owned(),
            filters(None, None, Some("invoice")),
        ),
        (
            "no filter",
            "direction=inbound".to_owned(),
            filters(None, None, None),
        ),
    ];
    // The pages first (a full Scan of a large table in DynamoDB Local can take very long).
    let mut rows = Vec::new();
    for query in cases {
        rows.push(measure_query(&app, &recorder, &pair.callee.key, query, rounds).await);
    }
    println!("\nFirst page of 50, {rounds} rounds each:");
    println!("| query | found | p50 | p95 | DynamoDB calls | read units |");
    println!("|---|---|---|---|---|---|");
    for measured in &rows {
        println!(
            "| {} | {} | {} ms | {} ms | {:.1} | {:.1} |",
            measured.name,
            measured.found,
            measured.p50.as_millis(),
            measured.p95.as_millis(),
            measured.calls,
            measured.read_units,
        );
    }
    // A Scan reads every item of the table whatever its filter keeps, so one full Scan (here
    // for the working tasks) is what any of these queries would cost answered by a Scan.
    let scanned = scan(
        &app,
        (
            "callee_agent_id = :agent AND #state = :state",
            vec![
                (":agent", AttributeValue::S(callee.id.to_string())),
                (":state", AttributeValue::S("working".into())),
            ],
        ),
        scan_budget,
    )
    .await;
    println!(
        "\n{} of the table (a Scan reads every item, whatever its filter keeps): {:.1} s, {} \
         calls, {} items, {:.0} read units.",
        if scanned.finished {
            "One full Scan".to_owned()
        } else {
            format!(
                "A Scan stopped at its {} s budget, before the end",
                scan_budget.as_secs()
            )
        },
        scanned.took.as_secs_f64(),
        scanned.calls,
        scanned.items,
        scanned.read_units
    );
    println!(
        "\nThe first pages beside that Scan (≥: the Scan stopped early, so a full one costs more):"
    );
    println!("| query | time ratio (Scan / search p50) | read-unit ratio (Scan / search) |");
    println!("|---|---|---|");
    for measured in rows {
        println!(
            "| {} | {}{:.0} | {}{:.0} |",
            measured.name,
            scanned.at_least(),
            scanned.took.as_secs_f64() / measured.p50.as_secs_f64().max(1e-6),
            scanned.at_least(),
            scanned.read_units / measured.read_units.max(0.5),
        );
    }
    let (calls, index) = write_costs(
        &app,
        &recorder,
        &pair.caller.key,
        &pair.callee.key,
        &pair.callee.id,
    )
    .await;
    println!("\nOne small pull task's life (open, claim, result), warm key cache:");
    println!("| DynamoDB calls | of them keeping the word index | without it |");
    println!("|---|---|---|");
    println!("| {calls} | {index} | {} |", calls - index);
}
