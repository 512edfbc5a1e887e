//! The capacity model: from the units per task on each scenario's busiest keys, the tasks a
//! second each place sustains at DynamoDB's per-partition limits, and how far the issue's
//! targets are.

use crate::tally::{Count, ShapeLoad, Units};

/// The write units a second one partition serves, for the table and for every index alike.
pub const PARTITION_WRITE_UNITS: f64 = 1_000.0;
/// The read units a second one partition serves.
pub const PARTITION_READ_UNITS: f64 = 3_000.0;

/// One key shape of one place: the units per task its busiest key takes, and the rate at which
/// that key reaches a partition's limit.
pub struct KeyRate {
    pub place: String,
    pub shape: String,
    pub per_task: Units,
    /// The tasks a second at which the key reaches a partition's limit.
    pub sustained: f64,
}

/// The tasks a second a key taking `per_task` units per task sustains.
pub fn sustained(per_task: Units) -> f64 {
    let by_writes = PARTITION_WRITE_UNITS / per_task.write;
    let by_reads = PARTITION_READ_UNITS / per_task.read;
    by_writes.min(by_reads)
}

/// Every key shape whose load grows with the rate (a task's own keys never limit it), each
/// place's in order, the lowest sustained rate first.
pub fn loads(count: &Count) -> Vec<KeyRate> {
    let mut loads: Vec<KeyRate> = count
        .shapes()
        .iter()
        .filter_map(|load| Some(limit_of(load, load.per_key_per_task(count.tasks)?)))
        .collect();
    let order = count.places();
    let position = |place: &str| order.iter().position(|known| known == place);
    loads.sort_by(|a, b| {
        (position(&a.place), a.sustained)
            .partial_cmp(&(position(&b.place), b.sustained))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    loads
}

/// For each place, the most write units and the most read units per task any one key whose
/// load grows with the rate takes (the gate's): the busiest key for writes and for reads.
pub fn hottest(count: &Count) -> Vec<(String, Units)> {
    let mut places: Vec<(String, Units)> = Vec::new();
    for load in loads(count) {
        let index = match places.iter().position(|(place, _)| *place == load.place) {
            Some(index) => index,
            None => {
                places.push((load.place.clone(), Units::default()));
                places.len() - 1
            }
        };
        let units = &mut places[index].1;
        units.write = units.write.max(load.per_task.write);
        units.read = units.read.max(load.per_task.read);
    }
    places
}

/// The first limit among `loads`: the key that reaches a partition's limit at the lowest rate.
fn first<'a>(loads: impl Iterator<Item = &'a KeyRate>) -> Option<&'a KeyRate> {
    loads.min_by(|a, b| a.sustained.total_cmp(&b.sustained))
}

fn limit_of(load: &ShapeLoad, per_task: Units) -> KeyRate {
    KeyRate {
        place: load.place.clone(),
        shape: shape_label(load),
        per_task,
        sustained: sustained(per_task),
    }
}

/// A shape as printed: a sharded one with its shard count.
pub fn shape_label(load: &ShapeLoad) -> String {
    match load.spread {
        forgebench_bench::attribution::Spread::Sharded(shards) => {
            format!("{} (÷{shards})", load.shape)
        }
        _ => load.shape.clone(),
    }
}

/// Prints the model of one scenario: every key shape whose load grows with the rate, what it
/// sustains and its load at the scenario's target; then what the scenario's keys sustain, all
/// of them and those of its subject alone. Returns what it printed below its heading, the part
/// docs/capacity.md quotes.
pub fn print_model(count: &Count) -> String {
    println!(
        "\nCapacity model, {} (a partition serves {PARTITION_WRITE_UNITS} WCU/s and \
         {PARTITION_READ_UNITS} RCU/s, the table's and every index's alike):",
        count.scenario.name()
    );
    let body = model_body(count);
    print!("{body}");
    body
}

/// The model's table and its closing lines, as [`print_model`] prints them.
fn model_body(count: &Count) -> String {
    use std::fmt::Write;
    let scenario = count.scenario;
    let target = scenario.target();
    let at = target.map_or(String::new(), |(rate, _)| {
        format!(" | WCU/s, RCU/s on it at {rate} tasks/s")
    });
    let mut body = format!(
        "| place | key | write units per task | read units per task | tasks/s it sustains{at} |\n\
         |---|---|---|---|---{}|\n",
        if target.is_some() { "|---" } else { "" }
    );
    let loads = loads(count);
    for load in &loads {
        let at_target = target.map_or(String::new(), |(rate, _)| {
            let (write, read) = (load.per_task.write * rate, load.per_task.read * rate);
            format!(" | {write:.0}, {read:.0}")
        });
        let _ = writeln!(
            body,
            "| {} | `{}` | {:.3} | {:.3} | {:.0}{at_target} |",
            load.place, load.shape, load.per_task.write, load.per_task.read, load.sustained
        );
    }
    body.push('\n');
    let subject = scenario.subject();
    let named = loads.iter().filter(|load| load.shape.contains(subject));
    let subject = format!("the keys naming {subject}");
    let all = first(loads.iter());
    for (what, limit) in [("all its keys", all), (&subject, first(named))] {
        if let Some(limit) = limit {
            let _ = writeln!(
                body,
                "{}, {what}: {:.0} tasks/s (first limit: {} `{}`)",
                scenario.name(),
                limit.sustained,
                limit.place,
                limit.shape
            );
        }
    }
    body
}

/// The line that says how far the scenario's target is (never a failure: the targets are
/// the sharding's to meet).
pub fn target_line(count: &Count) -> String {
    let limits = loads(count);
    let Some(first) = first(limits.iter()) else {
        return format!("{}: no shared key counted", count.scenario.name());
    };
    let sustains = format!(
        "{}: sustains {:.0} tasks/s (first limit: {} `{}`)",
        count.scenario.name(),
        first.sustained,
        first.place,
        first.shape
    );
    let Some((rate, what)) = count.scenario.target() else {
        return format!("{sustains}; no target (a conversation holds at most 100 tasks)");
    };
    let over: Vec<String> = limits
        .iter()
        .filter(|limit| limit.sustained < rate)
        .map(|limit| {
            format!(
                "{} `{}` {:.1}x",
                limit.place,
                limit.shape,
                rate / limit.sustained
            )
        })
        .collect();
    match over.is_empty() {
        true => format!("{sustains}; target {rate:.0} {what}: met"),
        false => format!(
            "{sustains}; target {rate:.0} {what}: NOT MET, over the partition limit at: {}",
            over.join(", ")
        ),
    }
}
