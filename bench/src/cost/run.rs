//! One mode's run: everything its N tasks made, charged step by step as the tasks go and
//! tallied from the proxies' logs at the end.

use std::collections::BTreeMap;
use std::time::Duration;

use forgebench_bench::capacity::{billed, billed_total, is_read, units_by_place};
use forgebench_bench::proxy::{deleted_handles, Exchange, Proxy};

use crate::prices::SQS_CHUNK;

/// Everything one mode's N tasks made.
pub struct Run {
    pub mode: &'static str,
    pub tasks: usize,
    /// AWS requests by `service:operation` (the recorder).
    pub requests: BTreeMap<String, usize>,
    /// DynamoDB units, reported by DynamoDB Local, and the requests that reported none.
    pub read_units: f64,
    pub write_units: f64,
    pub unreported: usize,
    /// Reads DynamoDB Local reported as 0 units, raised to DynamoDB's minimum of one 4 KB unit.
    pub raised: usize,
    /// DynamoDB calls, read units and write units by operation.
    pub by_operation: BTreeMap<String, (usize, f64, f64)>,
    /// DynamoDB writes by where they were spent (the table, each index): the requests that
    /// wrote there and their units.
    pub writes_by_place: BTreeMap<String, (usize, f64)>,
    /// SQS requests billed (64 KB chunks), the worker's batches and its idle long polls.
    pub sqs_billed: usize,
    pub batches: usize,
    pub idle_receives: usize,
    /// HTTP requests to the gateway by route, with their wall times.
    pub routes: BTreeMap<&'static str, Vec<Duration>>,
    /// The worker's batches, receive answered → last delete sent.
    pub batch_times: Vec<Duration>,
    /// DynamoDB read and write units by step of a task's life, in the order first met.
    pub steps: Vec<(&'static str, f64, f64)>,
    /// The DynamoDB exchanges the steps took from the proxy, tallied at the end.
    taken: Vec<Exchange>,
}

impl Run {
    pub fn new(mode: &'static str, tasks: usize) -> Run {
        Run {
            mode,
            tasks,
            requests: BTreeMap::new(),
            read_units: 0.0,
            write_units: 0.0,
            unreported: 0,
            raised: 0,
            by_operation: BTreeMap::new(),
            writes_by_place: BTreeMap::new(),
            sqs_billed: 0,
            batches: 0,
            idle_receives: 0,
            routes: BTreeMap::new(),
            batch_times: Vec::new(),
            steps: Vec::new(),
            taken: Vec::new(),
        }
    }

    /// Charges what DynamoDB was asked since the last step to `step`.
    pub fn step(&mut self, step: &'static str, dynamodb: &Proxy) {
        let exchanges = dynamodb.take();
        let (read, write) = billed_total(&exchanges);
        match self.steps.iter_mut().find(|(name, _, _)| *name == step) {
            Some(entry) => {
                entry.1 += read;
                entry.2 += write;
            }
            None => self.steps.push((step, read, write)),
        }
        self.taken.extend(exchanges);
    }

    pub fn per_task(&self, count: f64) -> f64 {
        count / self.tasks as f64
    }

    pub fn requests_of(&self, service: &str, operations: &[&str]) -> usize {
        self.requests
            .iter()
            .filter(|(name, _)| {
                name.split_once(':').is_some_and(|(s, op)| {
                    s == service && (operations.is_empty() || operations.contains(&op))
                })
            })
            .map(|(_, count)| count)
            .sum()
    }

    /// Tallies what the proxies saw since their last take.
    pub fn tally(&mut self, dynamodb: &Proxy, moto: &Proxy) {
        let mut exchanges = std::mem::take(&mut self.taken);
        exchanges.extend(dynamodb.take());
        for exchange in exchanges {
            let Some((read, write, raised)) = billed(&exchange) else {
                self.unreported += 1;
                continue;
            };
            self.raised += usize::from(raised);
            self.read_units += read;
            self.write_units += write;
            let entry = self
                .by_operation
                .entry(exchange.operation().to_owned())
                .or_default();
            entry.0 += 1;
            entry.1 += read;
            entry.2 += write;
            if !is_read(exchange.operation()) {
                for (place, units) in units_by_place(&exchange) {
                    if units > 0.0 {
                        let entry = self.writes_by_place.entry(place).or_default();
                        entry.0 += 1;
                        entry.1 += units;
                    }
                }
            }
        }
        let exchanges = moto.take();
        for exchange in &exchanges {
            if exchange.target.starts_with("AmazonSQS.") {
                let payload = exchange.request_bytes.max(exchange.response_bytes);
                self.sqs_billed += payload.div_ceil(SQS_CHUNK).max(1);
            }
        }
        // A batch: a receive that returned messages, until the delete of its last message.
        for (index, exchange) in exchanges.iter().enumerate() {
            if exchange.operation() != "ReceiveMessage" {
                continue;
            }
            let handles: Vec<&str> = exchange.response["Messages"]
                .as_array()
                .map(|messages| {
                    messages
                        .iter()
                        .filter_map(|m| m["ReceiptHandle"].as_str())
                        .collect()
                })
                .unwrap_or_default();
            if handles.is_empty() {
                self.idle_receives += 1;
                continue;
            }
            self.batches += 1;
            let mut left = handles.len();
            let last_delete = exchanges[index..]
                .iter()
                .filter_map(|later| {
                    let deleted = deleted_handles(later)
                        .filter(|handle| handles.contains(handle))
                        .count();
                    (deleted > 0 && left > 0).then(|| {
                        left = left.saturating_sub(deleted);
                        later.sent
                    })
                })
                .last();
            if let Some(sent) = last_delete {
                self.batch_times
                    .push(sent.saturating_duration_since(exchange.answered));
            }
        }
    }
}
