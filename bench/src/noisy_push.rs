//! Push noisy neighbour: one tenant opens push tasks to an endpoint that accepts connections and
//! never answers, while another pushes to a healthy endpoint, on one gateway, one table, one
//! queue and one push worker running at most 50 batches at once (the deployed event source's
//! maximum concurrency), with the deployed push timeout (10 s) and retry schedule. The quiet
//! tenant's open → delivery time (its open, to its endpoint receiving the POST) is measured
//! alone, then beside the noise, in one run; the report gives p50 and p95 of each, their ratio,
//! and the quiet tasks never delivered (a count: the run fails past 0). The sweeper runs every
//! 5 s, so the noisy tenant's parked backlog comes back to the queue as it would deployed (every
//! minute).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::percentile;
use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Pair, TestApp};
use serde_json::json;

/// The quiet tenant's opens a second.
const QUIET_RATE: u64 = 4;
/// The noisy tenant's opens a second.
const NOISY_RATE: u64 = 8;
/// How long a quiet task may take to reach its endpoint before it counts as lost.
const DELIVERY_DEADLINE: Duration = Duration::from_secs(60);

/// Runs the scenario with `tasks` quiet tasks a phase and each tenant's pushes in flight
/// bounded by `bound` (`FORGEBENCH_TENANT_MAX_PUSHES`), the phases interleaved in `rounds`
/// (each round a block of each phase, `tasks / rounds` quiet tasks each), so that the machine's
/// own drift over the run falls on every phase alike; whether none was lost.
pub async fn run(tasks: usize, bound: u32, rounds: usize) -> bool {
    let recorder = forgebench_tests::Recorder::default();
    let app = Arc::new(
        spawn_app_with(Options {
            deployed_push: true,
            tenant_max_pushes: bound,
            recorder: Some(recorder.clone()),
            ..Options::local_push()
        })
        .await,
    );
    let healthy = Callee::start(|_| completed()).await;
    let quiet = app.push_pair(&healthy.url).await;
    // The sweeper, every 5 s as locally (every minute deployed): it brings parked deliveries
    // back to the queue when their wait is over, as it would the noisy tenant's.
    let sweeper = {
        let app = Arc::clone(&app);
        tokio::spawn(async move {
            loop {
                forgebench::sweeper::sweep(&app.app.store, &app.app.queue, &app.app.bodies).await;
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        })
    };
    // The same load from a tenant whose endpoint answers: what the machine's share of the work
    // costs the quiet tenant, apart from what the noisy tenant's failing endpoint costs it. Each
    // loading tenant is one tenant for the whole run: the noisy one's breaker, holds and parked
    // backlog carry over from one of its blocks to the next, as they would.
    let busy = Loader::start(&app, completed()).await;
    let noisy = Loader::start(&app, hanging()).await;
    let rounds = rounds.clamp(1, tasks.max(1));
    let mut phases: [Phase; 3] = Default::default();
    for round in 0..rounds {
        let block = tasks / rounds + usize::from(round < tasks % rounds);
        recorder.take_requests();
        let alone = deliveries(&app, &quiet, &healthy, block).await;
        phases[0].add(alone, &recorder);
        for (phase, loader) in phases[1..].iter_mut().zip([&busy, &noisy]) {
            let noise = loader.open(Arc::clone(&app));
            tokio::time::sleep(Duration::from_secs(2)).await;
            recorder.take_requests();
            phase.add(deliveries(&app, &quiet, &healthy, block).await, &recorder);
            noise.stop().await;
        }
    }
    sweeper.abort();
    let [alone, beside_busy, beside] = &phases;
    println!(
        "AWS requests a second, alone: {}",
        alone.requests_a_second()
    );
    println!(
        "AWS requests a second, beside the noisy tenant: {}",
        beside.requests_a_second()
    );
    println!();
    println!("push noisy neighbour: each tenant's pushes in flight bounded at {bound}");
    let dialed = noisy.endpoint.received().len();
    report(
        tasks,
        rounds,
        [alone, beside_busy, beside],
        noisy.opened(),
        dialed,
    );
    alone.lost + beside_busy.lost + beside.lost == 0
}

/// An endpoint's answer that completes the task.
fn completed() -> Answer {
    Answer::json(
        200,
        json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}),
    )
}

/// An endpoint that accepts the connection and never answers.
fn hanging() -> Answer {
    Answer {
        delay: Duration::from_secs(3600),
        ..Answer::json(200, json!({}))
    }
}

/// Prints the phases (alone, beside a busy tenant whose endpoint answers, beside the noisy one)
/// and their ratios to the quiet tenant alone.
fn report(
    tasks: usize,
    rounds: usize,
    [alone, busy, noisy]: [&Phase; 3],
    opened: u64,
    dialed: usize,
) {
    let p = |phase: &Phase| {
        (
            percentile(&phase.times, 0.5),
            percentile(&phase.times, 0.95),
        )
    };
    let (alone_p50, alone_p95) = p(alone);
    println!();
    println!(
        "push noisy neighbour: the quiet tenant's open → delivery, {tasks} tasks a phase at {QUIET_RATE} a second, the phases interleaved in {rounds} round(s)"
    );
    println!();
    println!("| quiet tenant's open → delivery | p50 ms | p95 ms | p50 ratio | p95 ratio | lost |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| alone | {alone_p50:.1} | {alone_p95:.1} | 1 | 1 | {} |",
        alone.lost
    );
    for (name, phase) in [
        (
            format!("beside a tenant opening {NOISY_RATE} a second to an endpoint that answers"),
            busy,
        ),
        (
            format!("beside the noisy tenant ({NOISY_RATE} a second, never answered)"),
            noisy,
        ),
    ] {
        let (p50, p95) = p(phase);
        println!(
            "| {name} | {p50:.1} | {p95:.1} | {:.2}× | {:.2}× | {} |",
            p50 / alone_p50,
            p95 / alone_p95,
            phase.lost
        );
    }
    let ratio = p(noisy).1 / alone_p95;
    println!();
    println!(
        "p95 beside the noisy tenant / alone: {ratio:.2}× (target ≤ 1.5×: {}); / beside the busy tenant: {:.2}×",
        if ratio <= 1.5 { "met" } else { "MISSED" },
        p(noisy).1 / p(busy).1
    );
    println!(
        "the noisy tenant meanwhile: {opened} push tasks opened at {NOISY_RATE} a second, {dialed} POSTs dialed to its endpoint that never answers"
    );
}

/// One phase's open → delivery times, the tasks never delivered, how long it took, and the AWS
/// requests made meanwhile (by service and operation), over all its blocks.
#[derive(Default)]
struct Phase {
    times: Vec<Duration>,
    lost: usize,
    took: Duration,
    requests: std::collections::BTreeMap<String, usize>,
}

impl Phase {
    /// Adds a block of this phase, and the requests `recorder` saw during it.
    fn add(&mut self, block: Phase, recorder: &forgebench_tests::Recorder) {
        self.times.extend(block.times);
        self.lost += block.lost;
        self.took += block.took;
        for (operation, actions) in recorder.take_requests() {
            let service = actions
                .first()
                .and_then(|action| action.split(':').next())
                .unwrap_or("?");
            *self
                .requests
                .entry(format!("{service}:{operation}"))
                .or_default() += 1;
        }
    }

    /// The AWS requests a second of the phase, by service and operation.
    fn requests_a_second(&self) -> String {
        let seconds = self.took.as_secs_f64();
        self.requests
            .iter()
            .map(|(name, count)| format!("{name} {:.1}", *count as f64 / seconds))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// `count` push tasks of `pair`, opened [`QUIET_RATE`] a second: each one's time from its open
/// to `endpoint` receiving it.
async fn deliveries(app: &TestApp, pair: &Pair, endpoint: &Callee, count: usize) -> Phase {
    endpoint.forget();
    let started = Instant::now();
    let mut opened_at = HashMap::new();
    let mut pace = tokio::time::interval(Duration::from_millis(1000 / QUIET_RATE));
    for n in 0..count {
        pace.tick().await;
        let started = Instant::now();
        let reply = app
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message(&format!("quiet {n}")),
                0,
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        opened_at.insert(reply.field("id"), started);
    }
    let deadline = Instant::now() + DELIVERY_DEADLINE;
    while endpoint.received().len() < count && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut times = Vec::new();
    for received in endpoint.received() {
        let task_id = received.headers["x-forgebench-task"]
            .to_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(started) = opened_at.remove(&task_id) {
            times.push(received.at.saturating_duration_since(started));
        }
    }
    Phase {
        times,
        lost: opened_at.len(),
        took: started.elapsed(),
        requests: Default::default(),
    }
}

/// A loading tenant: its callee's endpoint and its opens over the run.
struct Loader {
    endpoint: Callee,
    pair: Pair,
    opened: Arc<AtomicU64>,
}

/// A loading tenant's opens, running until stopped.
struct Noise {
    stop: Arc<AtomicBool>,
    load: tokio::task::JoinHandle<()>,
}

impl Loader {
    /// A tenant whose callee's endpoint answers each POST with `answer`.
    async fn start(app: &TestApp, answer: Answer) -> Loader {
        let endpoint = Callee::start(move |_| answer.clone()).await;
        let pair = app.push_pair(&endpoint.url).await;
        Loader {
            endpoint,
            pair,
            opened: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Opens [`NOISY_RATE`] push tasks a second until the [`Noise`] is stopped.
    fn open(&self, app: Arc<TestApp>) -> Noise {
        let stop = Arc::new(AtomicBool::new(false));
        let (stop_opens, opened) = (Arc::clone(&stop), Arc::clone(&self.opened));
        let (key, callee) = (self.pair.caller.key.clone(), self.pair.callee.name.clone());
        let load = tokio::spawn(async move {
            let mut pace = tokio::time::interval(Duration::from_millis(1000 / NOISY_RATE));
            while !stop_opens.load(Ordering::Relaxed) {
                pace.tick().await;
                let reply = app.open_task(&key, &callee, text_message("noise"), 0).await;
                if reply.status == 200 {
                    opened.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Noise { stop, load }
    }

    /// How many tasks it opened over the run.
    fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }
}

impl Noise {
    async fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(15), self.load).await;
    }
}
