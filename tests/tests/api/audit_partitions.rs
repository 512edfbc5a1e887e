//! A tenant's audit log spread over partitions (docs/capacity.md): a throttled write of it
//! spreads it further, and the log and the tenant's task search page as one log whatever the
//! count each entry was written under.

use forgebench::domain::shards::ShardCount;
use forgebench::domain::{TaskId, TenantId};
use forgebench_tests::faults::{Fault, FaultProxy};
use forgebench_tests::{dynamodb_endpoint, spawn_app_with, text_message, Options, Pair, TestApp};
use serde_json::Value;

/// Every item of a listing, page after page, each page's `next_cursor` sent back.
async fn every_page(app: &TestApp, path: &str, key: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..200 {
        let page_path = match &cursor {
            Some(cursor) => format!("{path}&cursor={cursor}"),
            None => path.to_owned(),
        };
        let page = app.get(&page_path, key).await;
        assert_eq!(page.status, 200, "{page_path}: {}", page.text);
        items.extend(page.body["items"].as_array().cloned().unwrap_or_default());
        match page.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return items,
        }
    }
    panic!("{path}: a listing that never ends");
}

/// The `field` of each item, in order.
fn values_of<'a>(items: &'a [Value], field: &str) -> Vec<&'a str> {
    items
        .iter()
        .map(|item| item[field].as_str().unwrap())
        .collect()
}

async fn settings_count(app: &TestApp, tenant: &TenantId) -> ShardCount {
    let settings = app.app.store.tenant_settings(tenant).await.unwrap();
    settings.expect("the tenant").log_shards
}

/// Opens tasks until one lands on the log's partition `shard`: their ids, oldest first.
async fn open_until_on(app: &TestApp, pair: &Pair, shard: u16) -> Vec<String> {
    let mut opened = Vec::new();
    for n in 0..60 {
        let id = app.opened(pair, &format!("task {n}")).await;
        opened.push(id.clone());
        let task = app.app.store.get_task(&TaskId::from(id)).await.unwrap();
        if task.expect("the task").log_shard == shard {
            return opened;
        }
    }
    panic!("no task on partition {shard} in 60 opens");
}

/// The log's `task.open` entries and the tenant's tasks, page after page, are the tasks
/// `opened`, newest first, each once.
async fn every_open_listed_once(app: &TestApp, pair: &Pair, opened: &[String], limit: u32) {
    let newest_first: Vec<&str> = opened.iter().rev().map(String::as_str).collect();
    let listings = [
        (
            "/v1/audit?action=task.open&outcome=allowed&",
            "task_id",
            "the log's opens",
        ),
        ("/v1/tasks?", "id", "the tenant's task search"),
    ];
    for (path, field, what) in listings {
        let path = format!("{path}limit={limit}");
        let items = every_page(app, &path, &pair.tenant.admin_key).await;
        assert_eq!(values_of(&items, field), newest_first, "{what}");
    }
}

#[tokio::test]
async fn a_throttled_audit_write_spreads_the_log_and_every_entry_stays_listed_once() {
    let store = FaultProxy::start(&dynamodb_endpoint()).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: store.endpoint.clone(),
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let tenant = TenantId::from(pair.tenant.id.clone());
    let mut opened = vec![app.opened(&pair, "before").await];
    assert_eq!(settings_count(&app, &tenant).await, ShardCount::ONE);

    // DynamoDB throttles the writes of the tenant's log partition, and only those.
    store.set_where("\"AUDIT#", Fault::dynamodb_throttling());
    opened.push(app.opened(&pair, "throttled").await);
    store.set(Fault::None);
    assert!(
        store.faulted() > 0,
        "the open's audit entry met the throttle"
    );
    assert_eq!(
        settings_count(&app, &tenant).await,
        ShardCount::ONE.doubled().unwrap(),
        "the log spread over two partitions"
    );

    // The throttled open's ledger is written again by the sweeper, on its task's partition.
    let swept = forgebench::sweeper::sweep_words_until(&app.app.store, &app.app.bodies, "~").await;
    assert_eq!(swept.done, 1, "{swept:?}");
    // A claim whose entry's put is throttled (the claim stands; its entry is lost, and logged)
    // spreads the log again.
    store.set_where("\"AUDIT#", Fault::dynamodb_throttling());
    let claimed = app.claim(&pair.callee.key, 0).await;
    store.set(Fault::None);
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    assert_eq!(settings_count(&app, &tenant).await.get(), 4, "spread again");
    opened.extend(open_until_on(&app, &pair, 1).await);
    opened.extend(open_until_on(&app, &pair, 0).await);
    every_open_listed_once(&app, &pair, &opened, 3).await;
}

#[tokio::test]
async fn logs_over_more_partitions_than_entries_page_one_entry_at_a_time() {
    let app = spawn_app_with(Options::default()).await;
    let pair = app.pair().await;
    let tenant = TenantId::from(pair.tenant.id.clone());
    let mut opened = vec![app.opened(&pair, "alpha first").await];
    let mut count = ShardCount::ONE;
    let mut nexts = Vec::new();
    for _ in 0..3 {
        count = app.app.store.spread_logs(&tenant, count).await.unwrap();
        nexts.push(app.opened(&pair, "alpha next").await);
        opened.push(nexts.last().unwrap().clone());
    }
    assert_eq!(count.get(), 8);
    // A refusal in between: the log's own entries, filtered out of the opens.
    let other = app.create_tenant().await;
    let refused = app
        .open_task(&pair.caller.key, &other.admin_key, text_message("no"), 0)
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    opened.push(app.opened(&pair, "alpha last").await);
    every_open_listed_once(&app, &pair, &opened, 1).await;
    every_open_listed_once(&app, &pair, &opened, 2).await;
    // A search by words walks every partition of the word's postings; its other words are
    // read on the partition of each task found.
    for (query, expected) in [("alpha", &opened), ("alpha%20next", &nexts)] {
        let path = format!("/v1/tasks?q={query}&limit=2");
        let found = every_page(&app, &path, &pair.caller.key).await;
        let newest_first: Vec<&str> = expected.iter().rev().map(String::as_str).collect();
        assert_eq!(values_of(&found, "id"), newest_first, "q={query}");
    }
    let path = "/v1/audit?limit=2";
    let all = every_page(&app, path, &pair.tenant.admin_key).await;
    let moments = values_of(&all, "at");
    let mut sorted = moments.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(moments, sorted, "the whole log, newest first");
    let mut entries = values_of(&all, "id");
    entries.sort_unstable();
    entries.dedup();
    assert_eq!(entries.len(), all.len(), "each entry once");
    assert!(all.iter().any(|e| e["outcome"] == "refused"), "{all:?}");
}
