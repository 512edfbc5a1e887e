//! Prints a scenario's count: for the table and each index, the busiest key shapes with their
//! write and read units per task.

use forgebench_bench::attribution::Spread;

use crate::model::shape_label;
use crate::tally::Count;

/// How many shapes of each place are printed, busiest first.
const SHAPES_PER_PLACE: usize = 4;

/// What a spread means, as printed.
fn spread_label(spread: Spread) -> &'static str {
    match spread {
        Spread::Shared => "shared",
        Spread::Sharded(_) => "sharded",
        Spread::OneTask => "one task's",
    }
}

pub fn print_count(count: &Count, what: &str) {
    let total = count.total();
    println!(
        "\n== {}: {} ({} tasks; {} DynamoDB requests; {:.2} write and {:.2} read units per task)",
        count.scenario.name(),
        what,
        count.tasks,
        count.requests,
        total.write / count.tasks as f64,
        total.read / count.tasks as f64,
    );
    println!("| place | key shape | keys | busiest key: write units per task | busiest key: read units per task | all keys of the shape: write, read per task | grows with |");
    println!("|---|---|---|---|---|---|---|");
    let tasks = count.tasks as f64;
    let mut printed: Vec<(String, usize)> = Vec::new();
    for load in count.shapes() {
        let shown = match printed.iter_mut().find(|(place, _)| *place == load.place) {
            Some(entry) => {
                entry.1 += 1;
                entry.1
            }
            None => {
                printed.push((load.place.clone(), 1));
                1
            }
        };
        if shown > SHAPES_PER_PLACE {
            continue;
        }
        println!(
            "| {} | `{}` | {} | {:.3} | {:.3} | {:.2}, {:.2} | {} |",
            load.place,
            shape_label(&load),
            load.keys,
            load.hottest.write / tasks,
            load.hottest.read / tasks,
            load.total.write / tasks,
            load.total.read / tasks,
            spread_label(load.spread),
        );
    }
    if count.approximate > 0.0 {
        println!(
            "({:.1} units were split over several keys by size without adding up: approximate)",
            count.approximate
        );
    }
    if count.refused > 0 {
        println!(
            "({} writes were refused on a condition: DynamoDB bills them, DynamoDB Local reports no units, not counted)",
            count.refused
        );
    }
}
