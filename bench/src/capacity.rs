//! DynamoDB's consumed capacity as a recording proxy saw it: each response's read and write
//! units as reported, as billed, and by where they were spent (the table, each index).

use serde_json::{json, Value};

use crate::proxy::Exchange;

/// Whether `operation` reads (its units are read units).
pub fn is_read(operation: &str) -> bool {
    matches!(
        operation,
        "GetItem" | "Query" | "Scan" | "BatchGetItem" | "TransactGetItems"
    )
}

/// Read and write units of one DynamoDB response, as reported; `None` when it reports none.
fn units(exchange: &Exchange) -> Option<(f64, f64)> {
    let reports: Vec<&Value> = match &exchange.response["ConsumedCapacity"] {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![&exchange.response["ConsumedCapacity"]],
        _ => return None,
    };
    let reads_op = is_read(exchange.operation());
    let (mut read, mut write) = (0.0, 0.0);
    for report in reports {
        let (r, w) = (
            report["ReadCapacityUnits"].as_f64(),
            report["WriteCapacityUnits"].as_f64(),
        );
        if r.is_some() || w.is_some() {
            read += r.unwrap_or(0.0);
            write += w.unwrap_or(0.0);
        } else if reads_op {
            read += report["CapacityUnits"].as_f64().unwrap_or(0.0);
        } else {
            write += report["CapacityUnits"].as_f64().unwrap_or(0.0);
        }
    }
    Some((read, write))
}

/// Read and write units of one DynamoDB response as DynamoDB bills them, and whether the read
/// was raised: a read that finds nothing (an empty Query, a missing item) is billed one 4 KB
/// unit all the same (0.5 eventually consistent, 1 strongly), where DynamoDB Local reports 0.
pub fn billed(exchange: &Exchange) -> Option<(f64, f64, bool)> {
    let (read, write) = units(exchange)?;
    if read == 0.0 && is_read(exchange.operation()) {
        let strong = exchange.request["ConsistentRead"] == json!(true);
        return Some((if strong { 1.0 } else { 0.5 }, write, true));
    }
    Some((read, write, false))
}

/// Read and write units of these DynamoDB responses as DynamoDB bills them, summed.
pub fn billed_total(exchanges: &[Exchange]) -> (f64, f64) {
    exchanges
        .iter()
        .filter_map(billed)
        .fold((0.0, 0.0), |(read, write), (r, w, _)| (read + r, write + w))
}

/// Units of one DynamoDB response by where they were spent: `table`, or an index's name.
pub fn units_by_place(exchange: &Exchange) -> Vec<(String, f64)> {
    let reports: Vec<&Value> = match &exchange.response["ConsumedCapacity"] {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![&exchange.response["ConsumedCapacity"]],
        _ => return Vec::new(),
    };
    let mut places = Vec::new();
    for report in reports {
        if let Some(units) = report["Table"]["CapacityUnits"].as_f64() {
            places.push(("table".to_owned(), units));
        }
        for kind in ["GlobalSecondaryIndexes", "LocalSecondaryIndexes"] {
            if let Some(indexes) = report[kind].as_object() {
                for (name, index) in indexes {
                    places.push((
                        format!("index {name}"),
                        index["CapacityUnits"].as_f64().unwrap_or(0.0),
                    ));
                }
            }
        }
    }
    places
}
