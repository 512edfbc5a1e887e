//! The report of one mode's run, as Markdown tables: AWS requests, Lambda durations and
//! DynamoDB units per task, then the bill, line by line, in dollars per million tasks.

use crate::billing::p50_ms;
use crate::prices::{
    API_GATEWAY_REST, DYNAMODB_READ_UNITS, DYNAMODB_WRITE_UNITS, KMS_REQUESTS,
    LAMBDA_ARM_GB_SECOND, LAMBDA_REQUESTS, PRICES_DATE, S3_GETS, S3_PUTS, SQS_REQUESTS,
};
use crate::run::Run;
use crate::template::Template;

/// One line of the bill.
struct Item {
    service: &'static str,
    unit: String,
    per_task: f64,
    /// Dollars per million units.
    price: f64,
}

impl Item {
    fn dollars_per_million_tasks(&self) -> f64 {
        self.per_task * self.price
    }
}

fn items(run: &Run, template: &Template) -> Vec<Item> {
    let gb = template.memory_mb / 1024.0;
    let http: usize = run.routes.values().map(Vec::len).sum();
    // Billed milliseconds: the p50 of each route, rounded up, for each of its requests.
    let mut gb_seconds: f64 = run
        .routes
        .values()
        .map(|samples| p50_ms(samples).ceil() * samples.len() as f64 / 1e3 * gb)
        .sum();
    gb_seconds += p50_ms(&run.batch_times).ceil() * run.batches as f64 / 1e3 * gb;
    let s3_puts = run.requests_of("s3", &["PutObject"]);
    let s3_gets = run.requests_of("s3", &["GetObject"]);
    let kms = run.requests_of("kms", &[]);
    let per_task = |count: usize| run.per_task(count as f64);
    vec![
        Item {
            service: "Lambda",
            unit: format!("invocations ({http} HTTP, {} worker batches)", run.batches),
            per_task: per_task(http + run.batches),
            price: LAMBDA_REQUESTS,
        },
        Item {
            service: "Lambda",
            unit: format!("GB-seconds at {} MB (p50 per route)", template.memory_mb),
            per_task: run.per_task(gb_seconds),
            price: LAMBDA_ARM_GB_SECOND * 1e6,
        },
        Item {
            service: "API Gateway",
            unit: "REST requests".into(),
            per_task: per_task(http),
            price: API_GATEWAY_REST,
        },
        Item {
            service: "DynamoDB",
            unit: "write request units".into(),
            per_task: run.per_task(run.write_units),
            price: DYNAMODB_WRITE_UNITS,
        },
        Item {
            service: "DynamoDB",
            unit: "read request units".into(),
            per_task: run.per_task(run.read_units),
            price: DYNAMODB_READ_UNITS,
        },
        Item {
            service: "SQS",
            unit: "requests (64 KB chunks; idle polls excluded)".into(),
            per_task: per_task(run.sqs_billed - run.idle_receives.min(run.sqs_billed)),
            price: SQS_REQUESTS,
        },
        Item {
            service: "KMS",
            unit: "requests".into(),
            per_task: per_task(kms),
            price: KMS_REQUESTS,
        },
        Item {
            service: "S3",
            unit: "PUT requests".into(),
            per_task: per_task(s3_puts),
            price: S3_PUTS,
        },
        Item {
            service: "S3",
            unit: "GET requests".into(),
            per_task: per_task(s3_gets),
            price: S3_GETS,
        },
    ]
}

/// Prints `run`'s report; its total, dollars per million tasks.
pub fn report(run: &Run, template: &Template) -> f64 {
    println!("\n### {} ({} tasks)\n", run.mode, run.tasks);
    requests(run);
    durations(run);
    units_by_operation(run);
    units_by_step(run);
    writes_by_place(run);
    cost(run, template)
}

/// AWS requests per task, by service and operation.
fn requests(run: &Run) {
    println!("AWS requests per task (recorder):\n");
    println!("| service:operation | per task |");
    println!("|---|---|");
    for (name, count) in &run.requests {
        println!("| {name} | {:.2} |", run.per_task(*count as f64));
    }
}

/// Lambda's wall time per request, by route, and the push worker's per batch.
fn durations(run: &Run) {
    println!("\nLambda duration, wall time per request (p50 / max, ms):\n");
    println!("| function | requests per task | p50 | max |");
    println!("|---|---|---|---|");
    for (route, samples) in &run.routes {
        let max = samples.iter().max().copied().unwrap_or_default();
        println!(
            "| {route} | {:.2} | {:.1} | {:.1} |",
            run.per_task(samples.len() as f64),
            p50_ms(samples),
            max.as_secs_f64() * 1e3
        );
    }
    if run.batches > 0 {
        let max = run.batch_times.iter().max().copied().unwrap_or_default();
        println!(
            "| push worker (one SQS batch) | {:.2} | {:.1} | {:.1} |",
            run.per_task(run.batches as f64),
            p50_ms(&run.batch_times),
            max.as_secs_f64() * 1e3
        );
    }
}

/// DynamoDB calls and units per task, by operation.
fn units_by_operation(run: &Run) {
    println!("\nDynamoDB units per task by operation (as DynamoDB Local reports them):\n");
    println!("| operation | calls | read units | write units |");
    println!("|---|---|---|---|");
    for (operation, (calls, read, write)) in &run.by_operation {
        println!(
            "| {operation} | {:.2} | {:.2} | {:.2} |",
            run.per_task(*calls as f64),
            run.per_task(*read),
            run.per_task(*write)
        );
    }
}

/// DynamoDB units per task, by step of a task's life.
fn units_by_step(run: &Run) {
    println!("\nDynamoDB units per task by step of its life:\n");
    println!("| step | read units | write units |");
    println!("|---|---|---|");
    for (step, read, write) in &run.steps {
        println!(
            "| {step} | {:.2} | {:.2} |",
            run.per_task(*read),
            run.per_task(*write)
        );
    }
}

/// DynamoDB write units per task, by table and index; then the reads raised to DynamoDB's
/// minimum and the responses that reported no units.
fn writes_by_place(run: &Run) {
    println!("\nDynamoDB write units per task by where they are spent:\n");
    println!("| table or index | requests writing there | write units | share of writes |");
    println!("|---|---|---|---|");
    let mut placed = 0.0;
    for (place, (requests, units)) in &run.writes_by_place {
        placed += units;
        println!(
            "| {place} | {:.2} | {:.2} | {:.1} % |",
            run.per_task(*requests as f64),
            run.per_task(*units),
            100.0 * units / run.write_units
        );
    }
    println!(
        "| (total write units, of which placed above) | | {:.2} ({:.2}) | |",
        run.per_task(run.write_units),
        run.per_task(placed)
    );
    if run.raised > 0 {
        println!(
            "({} reads reported as 0 units counted at DynamoDB's minimum, one 4 KB unit.)",
            run.raised
        );
    }
    if run.unreported > 0 {
        println!(
            "\nWARNING: {} DynamoDB responses reported no consumed capacity (not counted)",
            run.unreported
        );
    }
}

/// The bill: each item per task and in dollars per million tasks, and the largest; the total.
fn cost(run: &Run, template: &Template) -> f64 {
    let items = items(run, template);
    let total: f64 = items.iter().map(Item::dollars_per_million_tasks).sum();
    println!(
        "\nCost, {} mode, us-east-1 on-demand prices of {PRICES_DATE}:\n",
        run.mode
    );
    println!("| service | unit | per task | $ per million tasks | share |");
    println!("|---|---|---|---|---|");
    for item in &items {
        let dollars = item.dollars_per_million_tasks();
        println!(
            "| {} | {} | {:.4} | {dollars:.2} | {:.1} % |",
            item.service,
            item.unit,
            item.per_task,
            100.0 * dollars / total
        );
    }
    println!("| **total** | | | **{total:.2}** | |");
    let largest = items
        .iter()
        .max_by(|a, b| {
            a.dollars_per_million_tasks()
                .total_cmp(&b.dollars_per_million_tasks())
        })
        .expect("items");
    println!(
        "\nLargest item ({}): {} {}, ${:.2} per million tasks ({:.0} % of the total).",
        run.mode,
        largest.service,
        largest.unit,
        largest.dollars_per_million_tasks(),
        100.0 * largest.dollars_per_million_tasks() / total
    );
    if run.idle_receives > 0 {
        println!(
            "(The local worker's idle long polls, {} over the run, are left out: a deployed event \
             source mapping's polling is a fixed cost, not a task's.)",
            run.idle_receives
        );
    }
    total
}
