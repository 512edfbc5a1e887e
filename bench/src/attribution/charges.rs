//! One request's units, charged to the partitions they land on (the rule is the module's:
//! `attribution`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::keys::{has_entry, partition_of, query_partition};
use super::layout::{IndexLayout, Layout, TABLE};
use super::size::{item_size, read_units, write_units};
use crate::capacity::{billed, is_read};
use crate::proxy::{Exchange, Images};

/// Units one request put on one partition of one place (the table, or an index by name).
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    pub place: String,
    pub partition: String,
    pub read_units: f64,
    pub write_units: f64,
    /// Whether these are the reported units exactly, or a share of them split by size that
    /// did not add up to what was reported.
    pub exact: bool,
}

/// Where a request's units for one place went, before they are split: each partition with the
/// units its items' sizes say.
type Shares = Vec<(String, f64)>;

/// The partition a request's units land on when nothing names one.
const UNNAMED: &str = "(unnamed)";

/// Every charge of one recorded DynamoDB request.
pub fn charges(exchange: &Exchange, layout: &Layout) -> Vec<Charge> {
    if is_read(exchange.operation()) {
        read_charges(exchange, layout)
    } else {
        write_charges(exchange, layout)
    }
}

fn read_charges(exchange: &Exchange, layout: &Layout) -> Vec<Charge> {
    let Some((units, _, _)) = billed(exchange) else {
        return Vec::new();
    };
    let request = &exchange.request;
    let (place, shares) = match exchange.operation() {
        "GetItem" => {
            let partition = partition_of(&request["Key"], &layout.hash);
            (TABLE.to_owned(), named(partition))
        }
        "Query" => {
            let place = request["IndexName"].as_str().unwrap_or(TABLE).to_owned();
            let hash = layout.hash_of(&place).unwrap_or_default();
            let partition = query_partition(request, hash);
            (place, named(partition))
        }
        "Scan" => {
            let place = request["IndexName"].as_str().unwrap_or(TABLE).to_owned();
            (place, vec![("(scan)".to_owned(), 0.0)])
        }
        _ => (TABLE.to_owned(), batch_read_shares(exchange, layout)),
    };
    split(units, shares)
        .into_iter()
        .map(|(partition, units, exact)| Charge {
            place: place.clone(),
            partition,
            read_units: units,
            write_units: 0.0,
            exact,
        })
        .collect()
}

fn named(partition: Option<String>) -> Shares {
    vec![(partition.unwrap_or_else(|| UNNAMED.to_owned()), 0.0)]
}

/// Each key of a `BatchGetItem` or `TransactGetItems`, with the read units of the item found.
fn batch_read_shares(exchange: &Exchange, layout: &Layout) -> Shares {
    let (request, response) = (&exchange.request, &exchange.response);
    let mut found: Vec<Value> = Vec::new();
    let mut keys: Vec<(Value, bool)> = Vec::new();
    for (table, asked) in request["RequestItems"].as_object().into_iter().flatten() {
        let consistent = asked["ConsistentRead"] == Value::Bool(true);
        for key in asked["Keys"].as_array().into_iter().flatten() {
            keys.push((key.clone(), consistent));
        }
        found.extend(
            response["Responses"][table]
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
    }
    for get in request["TransactItems"].as_array().into_iter().flatten() {
        keys.push((get["Get"]["Key"].clone(), true));
    }
    for answer in response["Responses"].as_array().into_iter().flatten() {
        found.push(answer["Item"].clone());
    }
    keys.into_iter()
        .map(|(key, consistent)| {
            let partition = partition_of(&key, &layout.hash).unwrap_or_else(|| UNNAMED.into());
            let item = found.iter().find(|item| {
                layout
                    .key
                    .iter()
                    .all(|name| item.get(name) == key.get(name))
            });
            (
                partition,
                item.map_or(0.0, |item| read_units(item_size(item), consistent)),
            )
        })
        .collect()
}

/// The write units a response reports, by place: the table's and each index's.
fn reported_writes(response: &Value) -> BTreeMap<String, f64> {
    let reports: Vec<&Value> = match &response["ConsumedCapacity"] {
        Value::Array(items) => items.iter().collect(),
        report @ Value::Object(_) => vec![report],
        _ => Vec::new(),
    };
    let units = |report: &Value| {
        report["CapacityUnits"]
            .as_f64()
            .or_else(|| report["WriteCapacityUnits"].as_f64())
            .unwrap_or(0.0)
    };
    let mut places = BTreeMap::new();
    for report in reports {
        let table = match report.get("Table") {
            Some(table) => units(table),
            // Asked for the total only (the store asks so in search): all of it the table's.
            None => units(report),
        };
        *places.entry(TABLE.to_owned()).or_insert(0.0) += table;
        for kind in ["GlobalSecondaryIndexes", "LocalSecondaryIndexes"] {
            for (name, index) in report[kind].as_object().into_iter().flatten() {
                *places.entry(name.clone()).or_insert(0.0) += units(index);
            }
        }
    }
    places
}

fn write_charges(exchange: &Exchange, layout: &Layout) -> Vec<Charge> {
    let mut charges = Vec::new();
    for (place, units) in reported_writes(&exchange.response) {
        let shares: Shares = exchange
            .images
            .iter()
            .flat_map(|images| match layout.index(&place) {
                Some(index) => entry_writes(layout, index, images),
                None => table_writes(layout, images),
            })
            .collect();
        for (partition, units, exact) in split(units, shares) {
            charges.push(Charge {
                place: place.clone(),
                partition,
                read_units: 0.0,
                write_units: units,
                exact,
            });
        }
    }
    charges
}

/// The table's write of one item: on its partition, the larger of its sizes before and after.
fn table_writes(layout: &Layout, images: &Images) -> Shares {
    let partition = partition_of(&images.key, &layout.hash).unwrap_or_else(|| UNNAMED.into());
    let size = item_size(&images.before).max(item_size(&images.after));
    vec![(partition, write_units(size))]
}

/// An index's writes for one item: a delete where its entry was, a put where it is, one write
/// where it stayed and changed, none where it stayed the same or never was.
pub fn entry_writes(layout: &Layout, index: &IndexLayout, images: &Images) -> Shares {
    let entry = |item: &Value| {
        has_entry(item, &index.key).then(|| {
            let projected = layout.projected(index, item);
            let keys: Vec<Option<&Value>> = index.key.iter().map(|name| item.get(name)).collect();
            let partition = partition_of(item, &index.hash).unwrap_or_default();
            (partition, format!("{keys:?}"), projected)
        })
    };
    let units = |projected: &Value| write_units(item_size(projected));
    match (entry(&images.before), entry(&images.after)) {
        (None, None) => Vec::new(),
        (Some((old, _, entry)), None) => vec![(old, units(&entry))],
        (None, Some((new, _, entry))) => vec![(new, units(&entry))],
        (Some((old, old_key, was)), Some((new, new_key, is))) => {
            if old_key != new_key {
                vec![(old, units(&was)), (new, units(&is))]
            } else if was != is {
                vec![(new, units(&was).max(units(&is)))]
            } else {
                Vec::new()
            }
        }
    }
}

/// `units` reported for one place, split over the partitions `shares` names: all of it to the
/// one partition when there is one; by the shares when they add up to it (exact); in
/// proportion to them, or evenly when they say nothing, otherwise (approximate).
pub fn split(units: f64, shares: Shares) -> Vec<(String, f64, bool)> {
    if units <= 0.0 {
        return Vec::new();
    }
    let mut by_partition: BTreeMap<String, f64> = BTreeMap::new();
    for (partition, share) in shares {
        *by_partition.entry(partition).or_insert(0.0) += share;
    }
    if by_partition.is_empty() {
        return vec![(UNNAMED.to_owned(), units, false)];
    }
    if by_partition.len() == 1 {
        return by_partition.into_keys().map(|p| (p, units, true)).collect();
    }
    let expected: f64 = by_partition.values().sum();
    let count = by_partition.len() as f64;
    by_partition
        .into_iter()
        .map(|(partition, share)| {
            if (expected - units).abs() < 1e-9 {
                (partition, share, true)
            } else if expected > 0.0 {
                (partition, units * share / expected, false)
            } else {
                (partition, units / count, false)
            }
        })
        .collect()
}
