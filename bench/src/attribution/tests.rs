//! The attribution rule on requests as the store sends them: which partition each write's
//! units land on, for the table and each index, from the images before and after.

use std::time::Instant;

use serde_json::{json, Value};

use super::charges::{entry_writes, split};
use super::{charges, Charge, IndexLayout, Layout, Projection};
use crate::proxy::{Exchange, Images};

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|name| (*name).to_owned()).collect()
}

/// The table's own layout in small: a queue index (ALL) and a side index (INCLUDE state).
fn layout() -> Layout {
    Layout {
        hash: names(&["pk"]),
        key: names(&["pk", "sk"]),
        indexes: vec![
            IndexLayout {
                name: "gsi1".into(),
                hash: names(&["gsi1pk"]),
                key: names(&["gsi1pk", "gsi1sk"]),
                projection: Projection::All,
            },
            IndexLayout {
                name: "inbound_tasks".into(),
                hash: names(&["callee_agent_id"]),
                key: names(&["callee_agent_id", "created_at"]),
                projection: Projection::Include(names(&["state"])),
            },
        ],
    }
}

fn task(state: &str, queue: Option<&str>) -> Value {
    let mut item = json!({
        "pk": {"S": "TASK#t1"}, "sk": {"S": "TASK"}, "state": {"S": state},
        "callee_agent_id": {"S": "callee"}, "created_at": {"S": "2026-12-07T00:00:00Z"},
        "note": {"S": "x"},
    });
    if let Some(queue) = queue {
        item["gsi1pk"] = json!({"S": queue});
        item["gsi1sk"] = json!({"S": "2026#t1"});
    }
    item
}

fn images(before: Value, after: Value) -> Images {
    Images {
        table: "t".into(),
        key: json!({"pk": before.get("pk").or(after.get("pk")), "sk": {"S": "TASK"}}),
        before,
        after,
    }
}

fn write(operation: &str, images: Vec<Images>, capacity: Value) -> Exchange {
    Exchange {
        target: format!("DynamoDB_20120810.{operation}"),
        request: json!({}),
        request_bytes: 0,
        response: json!({ "ConsumedCapacity": capacity }),
        response_bytes: 0,
        sent: Instant::now(),
        answered: Instant::now(),
        images,
    }
}

fn on<'a>(charges: &'a [Charge], place: &str) -> Vec<(&'a str, f64, bool)> {
    charges
        .iter()
        .filter(|charge| charge.place == place)
        .map(|charge| (charge.partition.as_str(), charge.write_units, charge.exact))
        .collect()
}

#[test]
fn a_claim_takes_its_queue_entry_out_of_the_old_partition() {
    let layout = layout();
    let gsi1 = layout.index("gsi1").unwrap();
    let claim = images(
        task("submitted", Some("QUEUE#callee")),
        task("working", None),
    );
    assert_eq!(
        entry_writes(&layout, gsi1, &claim),
        vec![("QUEUE#callee".into(), 1.0)]
    );
    let exchange = write(
        "UpdateItem",
        vec![claim],
        json!({"CapacityUnits": 3.0, "Table": {"CapacityUnits": 1.0}, "GlobalSecondaryIndexes":
            {"gsi1": {"CapacityUnits": 1.0}, "inbound_tasks": {"CapacityUnits": 1.0}}}),
    );
    let charged = charges(&exchange, &layout);
    assert_eq!(on(&charged, "table"), vec![("TASK#t1", 1.0, true)]);
    assert_eq!(on(&charged, "gsi1"), vec![("QUEUE#callee", 1.0, true)]);
    assert_eq!(on(&charged, "inbound_tasks"), vec![("callee", 1.0, true)]);
}

#[test]
fn an_entry_that_moves_writes_a_delete_at_the_old_key_and_a_put_at_the_new() {
    let layout = layout();
    let moved = images(
        task("submitted", Some("QUEUE#a")),
        task("submitted", Some("QUEUE#b")),
    );
    let exchange = write(
        "UpdateItem",
        vec![moved.clone()],
        json!({"Table": {"CapacityUnits": 1.0},
               "GlobalSecondaryIndexes": {"gsi1": {"CapacityUnits": 2.0}}}),
    );
    assert_eq!(
        on(&charges(&exchange, &layout), "gsi1"),
        vec![("QUEUE#a", 1.0, true), ("QUEUE#b", 1.0, true)]
    );
    // The side entry stayed where it was and its projection did not change: no write there.
    let inbound = layout.index("inbound_tasks").unwrap();
    assert_eq!(entry_writes(&layout, inbound, &moved), vec![]);
}

#[test]
fn an_entry_written_only_in_what_it_does_not_project_is_not_written() {
    let layout = layout();
    let inbound = layout.index("inbound_tasks").unwrap();
    let mut noted = task("working", None);
    noted["note"] = json!({"S": "changed"});
    let unprojected = images(task("working", None), noted);
    assert_eq!(entry_writes(&layout, inbound, &unprojected), vec![]);
    let refreshed = images(task("working", None), task("completed", None));
    assert_eq!(
        entry_writes(&layout, inbound, &refreshed),
        vec![("callee".into(), 1.0)]
    );
    let opened = images(Value::Null, task("submitted", Some("QUEUE#callee")));
    assert_eq!(
        entry_writes(&layout, inbound, &opened),
        vec![("callee".into(), 1.0)]
    );
}

#[test]
fn a_batch_is_split_by_its_items_sizes_and_exact_when_they_add_up() {
    let layout = layout();
    let posting = |word: &str| {
        let item = json!({"pk": {"S": format!("WORDS#t#{word}")}, "sk": {"S": "1#t1"}});
        images(Value::Null, item)
    };
    let large = json!({"pk": {"S": "AUDIT#t"}, "sk": {"S": "1"}, "body": {"S": "x".repeat(1500)}});
    let batch = vec![
        posting("invoice"),
        posting("review"),
        images(Value::Null, large),
    ];
    let exact = write(
        "BatchWriteItem",
        batch.clone(),
        json!([{"Table": {"CapacityUnits": 4.0}}]),
    );
    assert_eq!(
        on(&charges(&exact, &layout), "table"),
        vec![
            ("AUDIT#t", 2.0, true),
            ("WORDS#t#invoice", 1.0, true),
            ("WORDS#t#review", 1.0, true)
        ]
    );
    // Reported units the sizes do not explain are shared in proportion, marked approximate.
    let off = write(
        "BatchWriteItem",
        batch,
        json!([{"Table": {"CapacityUnits": 8.0}}]),
    );
    assert_eq!(
        on(&charges(&off, &layout), "table"),
        vec![
            ("AUDIT#t", 4.0, false),
            ("WORDS#t#invoice", 2.0, false),
            ("WORDS#t#review", 2.0, false)
        ]
    );
}

#[test]
fn a_read_lands_on_the_partition_it_names_at_its_billed_units() {
    let layout = layout();
    let mut query = write(
        "Query",
        vec![],
        json!({"CapacityUnits": 0.0, "GlobalSecondaryIndexes": {"gsi1": {"CapacityUnits": 0.0}}}),
    );
    query.request = json!({
        "IndexName": "gsi1", "KeyConditionExpression": "gsi1pk = :q",
        "ExpressionAttributeValues": {":q": {"S": "QUEUE#callee"}},
    });
    // An empty page is billed DynamoDB's minimum (0.5, eventually consistent).
    assert_eq!(
        charges(&query, &layout),
        vec![Charge {
            place: "gsi1".into(),
            partition: "QUEUE#callee".into(),
            read_units: 0.5,
            write_units: 0.0,
            exact: true,
        }]
    );
}

#[test]
fn nothing_reported_is_nothing_charged_and_nothing_named_is_unnamed() {
    assert_eq!(split(0.0, vec![("a".into(), 1.0)]), vec![]);
    assert_eq!(split(2.0, vec![]), vec![("(unnamed)".into(), 2.0, false)]);
    assert_eq!(
        split(
            3.0,
            vec![("a".into(), 0.0), ("b".into(), 0.0), ("c".into(), 0.0)]
        ),
        vec![
            ("a".into(), 1.0, false),
            ("b".into(), 1.0, false),
            ("c".into(), 1.0, false)
        ]
    );
}
