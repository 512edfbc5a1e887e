//! Claims beside the store's own speed, against DynamoDB Local, in one run:
//!
//! - **raw**: the physical floor of a claim, one conditional write. `N` items in a table of their
//!   own; `P` clients take the items one by one from a shared counter, each with one
//!   `UpdateItem` that moves it from `submitted` to `working` on condition that it is
//!   `submitted`. Rate: items / time.
//! - **gateway**: `N` tasks opened on one callee (not timed), then `P` pollers of that callee
//!   claim with `GET /v1/agents/me/tasks/next?wait=0` through the real HTTP gateway until the
//!   queue answers `204`. Rate: tasks / time; every claimed id is kept, so duplicates and
//!   losses are counted, and the DynamoDB requests the gateway made per claim (an SDK interceptor),
//!   with the share of the pollers' time spent waiting on their answers (the summed round trips
//!   over pollers × time): what is left is the gateway's own work and the HTTP exchange.
//!
//! - **store**: the same, but `P` clients claim through `Store::claim_next` directly: the queue
//!   page and the claim's conditional write on the gateway's own table with its indexes, without
//!   HTTP, authentication, the audit entry or the response. `store / raw` is what the schema
//!   costs a claim; `gateway / store` what serving it does.
//! - **schema**: `N` tasks opened as for the gateway, then `P` clients take their ids from a
//!   shared counter, each with one conditional `UpdateItem` on the gateway's table that moves
//!   the task item through the indexes a claim moves it through (out of the queue, into the
//!   deadline shard, a new `changed_at` for the search indexes), with
//!   no queue page: the raw write on this schema. `schema / raw` is what the indexes alone cost
//!   a conditional write on this store; `store / schema` what finding the candidate adds.
//!
//! For `P` = 1, 2, 4, 8, the ratio gateway / raw. The target is 0.8 (docs/benchmarks.md), with 0
//! duplicates and 0 losses. Both sides run in this process against the same DynamoDB Local, with
//! the gateway's own clients and key cache warm.
//!
//! Then **opens**: `N` small tasks opened by 16 callers at once through the HTTP gateway
//! (`wait=0`), beside `N` conditional `PutItem`s of a 1 KB item by 16 clients into the raw table:
//! reported, with no target.
//!
//! Usage: `claims [N]` (default 2000); `scripts/bench.sh` runs it in release mode, and
//! `scripts/test.sh` a short run so it cannot rot.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark program: a failed unwrap stops the run with its message"
)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, PutRequest,
    ScalarAttributeType, WriteRequest,
};
use forgebench::store::ClaimOutcome;
use forgebench_tests::{spawn_app_with, text_message, Options, Pair, Recorder, TestApp};
use futures::StreamExt;

const POLLERS: [usize; 4] = [1, 2, 4, 8];

/// A table of its own for the raw writes: `pk` only.
async fn raw_table(client: &aws_sdk_dynamodb::Client) -> String {
    let table = format!("bench-raw-claims-{}", uuid::Uuid::new_v4());
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("pk")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("pk")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    table
}

/// `count` items in state `submitted`, keyed `ITEM#{round}#{n}`.
async fn seed_raw(client: &aws_sdk_dynamodb::Client, table: &str, round: usize, count: usize) {
    let batches: Vec<Vec<WriteRequest>> = (0..count)
        .map(|n| {
            let item = [
                ("pk", AttributeValue::S(format!("ITEM#{round}#{n}"))),
                ("state", AttributeValue::S("submitted".into())),
                ("payload", AttributeValue::S("x".repeat(300))),
            ]
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect();
            let put = PutRequest::builder().set_item(Some(item)).build().unwrap();
            WriteRequest::builder().put_request(put).build()
        })
        .collect::<Vec<_>>()
        .chunks(25)
        .map(<[WriteRequest]>::to_vec)
        .collect();
    futures::stream::iter(batches)
        .for_each_concurrent(4, |batch| async move {
            let mut pending = batch;
            while !pending.is_empty() {
                let output = client
                    .batch_write_item()
                    .request_items(table, pending)
                    .send()
                    .await
                    .unwrap();
                pending = output
                    .unprocessed_items()
                    .and_then(|items| items.get(table))
                    .cloned()
                    .unwrap_or_default();
            }
        })
        .await;
}

/// `pollers` clients take the seeded items from a shared counter, one conditional write each.
async fn raw_rate(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    round: usize,
    count: usize,
    pollers: usize,
) -> f64 {
    seed_raw(client, table, round, count).await;
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let workers = (0..pollers).map(|_| {
        let (client, table, next) = (client.clone(), table.to_owned(), Arc::clone(&next));
        tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    return;
                }
                client
                    .update_item()
                    .table_name(&table)
                    .key("pk", AttributeValue::S(format!("ITEM#{round}#{n}")))
                    .update_expression("SET #state = :working")
                    .condition_expression("#state = :submitted")
                    .expression_attribute_names("#state", "state")
                    .expression_attribute_values(":working", AttributeValue::S("working".into()))
                    .expression_attribute_values(
                        ":submitted",
                        AttributeValue::S("submitted".into()),
                    )
                    .send()
                    .await
                    .unwrap();
            }
        })
    });
    per_second(count, began, workers).await
}

/// How many callers open tasks at once in the opens measurement.
const OPENERS: usize = 16;

/// `OPENERS` clients put `count` new items of about the size of a small task's item (1 KB)
/// into the raw table, each `PutItem` conditioned on the key being new, as an open's is: the
/// store's floor for an open. Items per second.
async fn raw_put_rate(client: &aws_sdk_dynamodb::Client, table: &str, count: usize) -> f64 {
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let workers = (0..OPENERS).map(|_| {
        let (client, table, next) = (client.clone(), table.to_owned(), Arc::clone(&next));
        tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < count {
                client
                    .put_item()
                    .table_name(&table)
                    .item(
                        "pk",
                        AttributeValue::S(format!("OPEN#{}", uuid::Uuid::new_v4())),
                    )
                    .item("payload", AttributeValue::S("x".repeat(1000)))
                    .condition_expression("attribute_not_exists(pk)")
                    .send()
                    .await
                    .unwrap();
            }
        })
    });
    per_second(count, began, workers).await
}

/// `OPENERS` callers of one pair open `count` small tasks through the HTTP gateway
/// (`wait=0`), at once. Tasks per second.
async fn gateway_open_rate(app: &TestApp, pair: &Pair, count: usize) -> f64 {
    let began = Instant::now();
    futures::stream::iter(0..count)
        .for_each_concurrent(OPENERS, |n| async move {
            let message = text_message(&format!("open rate {n}"));
            let opened = app
                .open_task(&pair.caller.key, &pair.callee.id, message, 0)
                .await;
            assert_eq!(opened.status, 200, "{}", opened.text);
        })
        .await;
    count as f64 / began.elapsed().as_secs_f64()
}

/// Waits for `workers` started at `began`; `count` per second of the time they took.
async fn per_second(
    count: usize,
    began: Instant,
    workers: impl IntoIterator<Item = tokio::task::JoinHandle<()>>,
) -> f64 {
    for worker in futures::future::join_all(workers).await {
        worker.unwrap();
    }
    count as f64 / began.elapsed().as_secs_f64()
}

/// Opens `count` tasks on the pair's callee, 16 at a time; their ids.
async fn open_tasks(app: &TestApp, pair: &Pair, count: usize) -> HashSet<String> {
    futures::stream::iter(0..count)
        .map(|n| async move {
            let reply = app
                .open_task(
                    &pair.caller.key,
                    &pair.callee.name,
                    text_message(&format!("task {n}")),
                    0,
                )
                .await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            reply.field("id")
        })
        .buffer_unordered(16)
        .collect()
        .await
}

/// What the pollers of one round did.
struct Claimed {
    rate: f64,
    duplicates: usize,
    lost: usize,
    /// DynamoDB requests the gateway made per claim while the pollers drained the queue.
    calls_per_claim: f64,
    /// The share of the pollers' time that the gateway spent waiting on DynamoDB's answers.
    waiting_on_store: f64,
}

/// `pollers` pollers claim until the queue is empty.
async fn gateway_rate(
    app: &TestApp,
    recorder: &Recorder,
    pair: &Pair,
    count: usize,
    pollers: usize,
) -> Claimed {
    let opened = open_tasks(app, pair, count).await;
    recorder.take();
    recorder.take_dynamodb_time();
    let began = Instant::now();
    let workers = (0..pollers).map(|_| {
        let (http, base, key) = (app.http.clone(), app.base.clone(), pair.callee.key.clone());
        tokio::spawn(async move {
            let mut claimed = Vec::new();
            let mut empty_in_a_row = 0;
            while empty_in_a_row < 2 {
                let response = http
                    .get(format!("{base}/v1/agents/me/tasks/next?wait=0"))
                    .bearer_auth(&key)
                    .send()
                    .await
                    .unwrap();
                match response.status().as_u16() {
                    204 => empty_in_a_row += 1,
                    200 => {
                        empty_in_a_row = 0;
                        let task: serde_json::Value = response.json().await.unwrap();
                        claimed.push(task["id"].as_str().unwrap().to_owned());
                    }
                    status => panic!(
                        "claim answered {status}: {}",
                        response.text().await.unwrap()
                    ),
                }
            }
            claimed
        })
    });
    let mut all = Vec::new();
    for worker in futures::future::join_all(workers).await {
        all.extend(worker.unwrap());
    }
    let elapsed = began.elapsed();
    let calls = recorder.take_dynamodb().len();
    let store_time = recorder.take_dynamodb_time();
    let unique: HashSet<String> = all.iter().cloned().collect();
    Claimed {
        rate: all.len() as f64 / elapsed.as_secs_f64(),
        duplicates: all.len() - unique.len(),
        lost: opened.difference(&unique).count(),
        calls_per_claim: calls as f64 / all.len().max(1) as f64,
        waiting_on_store: store_time.as_secs_f64() / (pollers as f64 * elapsed.as_secs_f64()),
    }
}

/// `pollers` clients claim through the store itself (`Store::claim_next`: the queue page and the
/// claim's conditional write on the gateway's own table, with its indexes) until the queue is
/// empty: the schema's floor, without HTTP, authentication, the audit entry or the response.
async fn store_rate(app: &TestApp, pair: &Pair, count: usize, pollers: usize) -> f64 {
    open_tasks(app, pair, count).await;
    let callee = forgebench::domain::AgentId::from(pair.callee.id.clone());
    let claimed = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let workers = (0..pollers).map(|_| {
        let (store, callee, claimed) =
            (app.app.store.clone(), callee.clone(), Arc::clone(&claimed));
        tokio::spawn(async move {
            loop {
                match store.claim_next(&callee).await.unwrap() {
                    ClaimOutcome::Claimed(_) => claimed.fetch_add(1, Ordering::Relaxed),
                    ClaimOutcome::Contended => continue,
                    ClaimOutcome::Empty => return,
                };
            }
        })
    });
    let rate = per_second(count, began, workers).await;
    let claimed = claimed.load(Ordering::Relaxed);
    assert_eq!(claimed, count, "the store's claims took every task once");
    rate
}

/// `pollers` clients make the claim's index moves on freshly opened tasks, one conditional
/// `UpdateItem` each, taking the ids from a shared counter; through `client`, a plain one like
/// the raw writes' (without the gateway's interceptors).
async fn schema_rate(
    app: &TestApp,
    client: &aws_sdk_dynamodb::Client,
    pair: &Pair,
    count: usize,
    pollers: usize,
) -> f64 {
    let ids: Arc<Vec<String>> = Arc::new(open_tasks(app, pair, count).await.into_iter().collect());
    let table = app.app.store.table().to_owned();
    let next = Arc::new(AtomicUsize::new(0));
    let began = Instant::now();
    let workers = (0..pollers).map(|_| {
        let (client, table, ids, next) = (
            client.clone(),
            table.clone(),
            Arc::clone(&ids),
            Arc::clone(&next),
        );
        tokio::spawn(async move {
            while let Some(id) = ids.get(next.fetch_add(1, Ordering::Relaxed)) {
                let now = forgebench::domain::clock::now();
                let shard = format!("DEADLINE#{}", &id[..1]);
                let value = |text: &str| AttributeValue::S(text.to_owned());
                client
                    .update_item()
                    .table_name(&table)
                    .key("pk", value(&format!("TASK#{id}")))
                    .key("sk", value("TASK"))
                    .update_expression(
                        "SET #state = :working, updated_at = :now, changed_at = :now, \
                         deadline_at = :now, gsi2pk = :shard, gsi2sk = :deadline_key \
                         REMOVE gsi1pk, gsi1sk",
                    )
                    .condition_expression("#state = :submitted AND attribute_exists(gsi1pk)")
                    .expression_attribute_names("#state", "state")
                    .expression_attribute_values(":working", value("working"))
                    .expression_attribute_values(":submitted", value("submitted"))
                    .expression_attribute_values(":now", value(&now))
                    .expression_attribute_values(":shard", value(&shard))
                    .expression_attribute_values(":deadline_key", value(&format!("{now}#{id}")))
                    .send()
                    .await
                    .unwrap();
            }
        })
    });
    per_second(count, began, workers).await
}

#[tokio::main]
async fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("N: a number of tasks"))
        .unwrap_or(2000);
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        push_worker: false,
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let client = forgebench_tests::dynamodb_client(&forgebench_tests::dynamodb_endpoint()).await;
    let table = raw_table(&client).await;
    // Warm both paths (connections, key cache) before measuring.
    let pair = app.pair().await;
    gateway_rate(&app, &recorder, &pair, 10, 1).await;
    raw_rate(&client, &table, 0, 10, 1).await;

    store_rate(&app, &app.pair().await, 10, 1).await;
    schema_rate(&app, &client, &app.pair().await, 10, 1).await;

    println!("\nClaims of {count} queued tasks beside as many raw conditional writes (one DynamoDB Local):");
    println!(
        "| pollers | raw conditional writes/s | the same write on the task schema/s | store claims/s | gateway claims/s | ratio | schema / raw | store / schema | gateway / store | DynamoDB calls per claim | gateway's time waiting on DynamoDB | duplicates | lost |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut worst: f64 = f64::MAX;
    for (round, pollers) in POLLERS.into_iter().enumerate() {
        // A fresh pair per round: each round's queue holds only its own tasks.
        let pair = app.pair().await;
        let claimed = gateway_rate(&app, &recorder, &pair, count, pollers).await;
        let raw = raw_rate(&client, &table, round + 1, count, pollers).await;
        let store = store_rate(&app, &app.pair().await, count, pollers).await;
        let schema = schema_rate(&app, &client, &app.pair().await, count, pollers).await;
        let ratio = claimed.rate / raw;
        worst = worst.min(ratio);
        println!(
            "| {pollers} | {raw:.0} | {schema:.0} | {store:.0} | {:.0} | {ratio:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.0} % | {} | {} |",
            claimed.rate,
            schema / raw,
            store / schema,
            claimed.rate / store,
            claimed.calls_per_claim,
            claimed.waiting_on_store * 100.0,
            claimed.duplicates,
            claimed.lost
        );
        assert_eq!(claimed.duplicates, 0, "a task was claimed twice");
        assert_eq!(claimed.lost, 0, "a task was never claimed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "lowest ratio {worst:.2} (target 0.80: {})",
        if worst >= 0.8 { "met" } else { "missed" }
    );

    // Opens, reported beside the store's own conditional puts (no target).
    let pair = app.pair().await;
    gateway_open_rate(&app, &pair, OPENERS).await;
    let opened = gateway_open_rate(&app, &pair, count).await;
    let raw = raw_put_rate(&client, &table, count).await;
    println!("\nOpens of {count} small tasks by {OPENERS} callers at once, beside as many raw conditional puts:");
    println!("| raw conditional puts/s | gateway opens/s | ratio |");
    println!("|---|---|---|");
    println!("| {raw:.0} | {opened:.0} | {:.2} |", opened / raw);
}
