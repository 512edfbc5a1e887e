//! The fault suite: the real gateway against the real emulators, with faults injected on the
//! path between them (`forgebench_tests::faults::FaultProxy`), between the push worker and its
//! callees, and in the sweeper, while clients keep working as a well-behaved client does
//! (retrying a `429` or `503` after `Retry-After`, never anything else, and opening with a
//! `message_id`, which makes an open safe to repeat).
//!
//! Each case states what must hold and reports: the faults injected, the requests the clients
//! made, tasks lost, tasks duplicated, answers the docs do not list for the route, and how long
//! after the fault ended the first request succeeded again. With `--gate` the run fails when
//! any case loses or duplicates a task or gives an undocumented answer.
//!
//! `cargo run -p forgebench-bench --bin faults -- [fault seconds, default 10] [--gate]
//! [--only store|push|duplicates|hung|sweeper]`

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark: a failed unwrap is a failed run, with its message"
)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use forgebench_tests::faults::{Fault, FaultProxy};
use forgebench_tests::{
    dynamodb_endpoint, moto_endpoint, spawn_app_with, text_message, Answer, Callee, Options, Pair,
    Reply, TestApp,
};
use serde_json::json;

/// What one case found.
struct Row {
    case: &'static str,
    fault: String,
    must_hold: &'static str,
    faults: u64,
    requests: u64,
    tasks: usize,
    lost: usize,
    duplicated: usize,
    undocumented: usize,
    recovery: Option<Duration>,
    note: String,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let gate = args.iter().any(|arg| arg == "--gate");
    let fault_time = args
        .iter()
        .find_map(|arg| arg.parse::<u64>().ok())
        .map_or(Duration::from_secs(10), Duration::from_secs);
    forgebench::metrics::discard();
    println!(
        "fault suite: each fault held {} s while clients work; a client retries 429/503 after Retry-After",
        fault_time.as_secs()
    );
    // `--only store|push|duplicates|hung|sweeper` runs one kind of case.
    let only = args
        .iter()
        .position(|arg| arg == "--only")
        .and_then(|at| args.get(at + 1))
        .cloned();
    let runs = |case: &str| only.as_deref().is_none_or(|only| only == case);
    let mut rows = Vec::new();
    if runs("store") {
        for fault in [
            Fault::Reset,
            Fault::dynamodb_throttling(),
            Fault::internal_error(),
            Fault::Delay(Duration::from_millis(1500)),
        ] {
            rows.push(store_fault(fault, fault_time).await);
        }
    }
    if runs("push") {
        rows.push(push_services_fault(fault_time).await);
    }
    if runs("duplicates") {
        rows.push(duplicate_queue_deliveries().await);
    }
    if runs("hung") {
        rows.push(hung_callee().await);
    }
    if runs("sweeper") {
        rows.push(sweeper_killed().await);
    }
    print_table(&rows);
    let failed: Vec<_> = rows
        .iter()
        .filter(|row| row.lost + row.duplicated + row.undocumented > 0)
        .map(|row| format!("{} ({})", row.case, row.fault))
        .collect();
    if gate && !failed.is_empty() {
        eprintln!("fault suite: tasks lost or duplicated, or undocumented answers, in: {failed:?}");
        std::process::exit(1);
    }
}

fn print_table(rows: &[Row]) {
    println!();
    println!("| case | fault | must hold | faults injected | requests | tasks | lost | duplicated | undocumented answers | recovery after the fault |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for row in rows {
        let recovery = row.recovery.map_or("—".to_owned(), |time| {
            format!("{:.1} s", time.as_secs_f64())
        });
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.case,
            row.fault,
            row.must_hold,
            row.faults,
            row.requests,
            row.tasks,
            row.lost,
            row.duplicated,
            row.undocumented,
            recovery
        );
    }
    println!();
    for row in rows.iter().filter(|row| !row.note.is_empty()) {
        println!("- {} ({}): {}", row.case, row.fault, row.note);
    }
}

/// What the clients of a case saw.
#[derive(Default)]
struct Ledger {
    requests: u64,
    /// Every status per route, for the notes.
    statuses: BTreeMap<String, u64>,
    undocumented: Vec<String>,
    /// Each marker the callers opened (answered 200), with its task.
    opened: HashMap<String, String>,
    /// Markers whose open was given up (an undocumented answer).
    given_up: HashSet<String>,
    /// Each claim: the marker, the task.
    claims: Vec<(String, String)>,
    /// Tasks whose result was accepted.
    answered: HashSet<String>,
    /// The first success of a request sent after the fault ended.
    first_success_after: Option<Instant>,
}

impl Ledger {
    /// Notes an answer of `route`; `true` when the client should try again (429, 503).
    fn note(
        &mut self,
        route: &str,
        reply: &Reply,
        documented: &[u16],
        sent: Instant,
        fault_ended: Option<Instant>,
    ) -> bool {
        self.requests += 1;
        *self
            .statuses
            .entry(format!("{route} {}", reply.status))
            .or_default() += 1;
        let retry = matches!(reply.status, 429 | 503);
        if retry && reply.headers.get("retry-after").is_none() {
            self.undocumented
                .push(format!("{route}: {} without Retry-After", reply.status));
        } else if !documented.contains(&reply.status) {
            self.undocumented
                .push(format!("{route}: {} {}", reply.status, reply.text));
        }
        if (200..300).contains(&reply.status) && fault_ended.is_some_and(|ended| sent >= ended) {
            self.first_success_after.get_or_insert(Instant::now());
        }
        retry
    }
}

/// The routes' documented answers, for a client with the right key and a valid body.
const OPEN_ANSWERS: [u16; 3] = [200, 429, 503];
const CLAIM_ANSWERS: [u16; 4] = [200, 204, 429, 503];
const RESULT_ANSWERS: [u16; 4] = [200, 409, 429, 503];
const READ_ANSWERS: [u16; 3] = [200, 429, 503];

/// The shared state of one load run.
struct Load {
    app: TestApp,
    pair: Pair,
    ledger: Mutex<Ledger>,
    fault_ended: Mutex<Option<Instant>>,
    /// Callers stop opening new tasks.
    stop_opening: AtomicBool,
    /// Callees stop claiming.
    stop: AtomicBool,
    next_marker: AtomicU64,
}

impl Load {
    fn ended(&self) -> Option<Instant> {
        *self.fault_ended.lock().unwrap()
    }

    /// Sends `request` until it has an answer that is not 429/503, noting each answer.
    async fn until_settled<F, Fut>(&self, route: &str, documented: &[u16], request: F) -> Reply
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Reply>,
    {
        loop {
            let sent = Instant::now();
            let reply = request().await;
            let retry =
                self.ledger
                    .lock()
                    .unwrap()
                    .note(route, &reply, documented, sent, self.ended());
            if !retry {
                return reply;
            }
            let after = reply
                .headers
                .get("retry-after")
                .and_then(|value| value.to_str().ok()?.parse::<u64>().ok())
                .unwrap_or(1);
            tokio::time::sleep(Duration::from_secs(after.min(5))).await;
        }
    }

    /// A caller: opens tasks, each marked, until told to stop.
    async fn caller(self: Arc<Self>) {
        while !self.stop_opening.load(Ordering::Relaxed) {
            let marker = format!("job{}", self.next_marker.fetch_add(1, Ordering::Relaxed));
            // A message id makes the open safe to repeat, as the docs tell a retrying client.
            let mut message = text_message(&format!("{marker} classify this invoice"));
            message["message_id"] = json!(marker);
            let reply = self
                .until_settled("open", &OPEN_ANSWERS, || {
                    self.app.open_task(
                        &self.pair.caller.key,
                        &self.pair.callee.name,
                        message.clone(),
                        0,
                    )
                })
                .await;
            let mut ledger = self.ledger.lock().unwrap();
            if reply.status == 200 {
                ledger.opened.insert(marker, reply.field("id"));
            } else {
                ledger.given_up.insert(marker);
            }
        }
    }

    /// A callee: claims and answers until told to stop.
    async fn callee(self: Arc<Self>) {
        while !self.stop.load(Ordering::Relaxed) {
            let reply = self
                .until_settled("claim", &CLAIM_ANSWERS, || {
                    self.app.claim(&self.pair.callee.key, 1)
                })
                .await;
            if reply.status != 200 {
                continue;
            }
            let task_id = reply.field("id");
            let text = reply.body["history"][0]["parts"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let marker = text
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned();
            self.ledger
                .lock()
                .unwrap()
                .claims
                .push((marker.clone(), task_id.clone()));
            let result = json!({"state": "completed", "artifacts": [{"parts": [{"text": format!("{marker} done")}]}]});
            let answered = self
                .until_settled("result", &RESULT_ANSWERS, || {
                    self.app
                        .post_result(&self.pair.callee.key, &task_id, result.clone())
                })
                .await;
            if answered.status == 200 {
                self.ledger.lock().unwrap().answered.insert(task_id);
            }
        }
    }

    /// Reads every opened task (as its caller) until each is completed or `within` passed;
    /// returns the markers whose task never completed.
    async fn not_completed(&self, within: Duration) -> Vec<String> {
        let until = Instant::now() + within;
        let opened: Vec<(String, String)> = self
            .ledger
            .lock()
            .unwrap()
            .opened
            .iter()
            .map(|(marker, task)| (marker.clone(), task.clone()))
            .collect();
        let mut missing = Vec::new();
        for (marker, task_id) in opened {
            loop {
                let reply = self
                    .until_settled("read", &READ_ANSWERS, || {
                        self.app
                            .get_task(&self.pair.caller.key, &self.pair.callee.name, &task_id)
                    })
                    .await;
                if reply.state() == "completed" {
                    break;
                }
                if Instant::now() >= until {
                    missing.push(format!("{marker} ({})", reply.state()));
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        missing
    }
}

/// Tasks with a marker opened more than once, or claimed twice.
fn duplicates(ledger: &Ledger) -> usize {
    let mut tasks_per_marker: HashMap<&str, HashSet<&str>> = HashMap::new();
    let mut claims_per_task: HashMap<&str, usize> = HashMap::new();
    for (marker, task) in &ledger.claims {
        tasks_per_marker.entry(marker).or_default().insert(task);
        *claims_per_task.entry(task).or_default() += 1;
    }
    tasks_per_marker
        .values()
        .map(|tasks| tasks.len().saturating_sub(1))
        .sum::<usize>()
        + claims_per_task
            .values()
            .map(|claims| claims.saturating_sub(1))
            .sum::<usize>()
}

/// DynamoDB misbehaves for `fault_time` while two callers open tasks and two callees claim and
/// answer them. Must hold: every task a caller was told is open gets claimed once and
/// completed; no open is duplicated; every answer is one the docs list (503 with
/// `Retry-After` while the store fails).
async fn store_fault(fault: Fault, fault_time: Duration) -> Row {
    let proxy = FaultProxy::start(&dynamodb_endpoint()).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: proxy.endpoint.clone(),
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let load = Arc::new(Load {
        app,
        pair,
        ledger: Mutex::default(),
        fault_ended: Mutex::default(),
        stop_opening: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        next_marker: AtomicU64::new(0),
    });
    let sweeper = spawn_sweeper(&load.app);
    let mut clients = Vec::new();
    for _ in 0..2 {
        clients.push(tokio::spawn(Arc::clone(&load).caller()));
    }
    let callees: Vec<_> = (0..2)
        .map(|_| tokio::spawn(Arc::clone(&load).callee()))
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = proxy.faulted();
    proxy.set(fault.clone());
    tokio::time::sleep(fault_time).await;
    proxy.set(Fault::None);
    *load.fault_ended.lock().unwrap() = Some(Instant::now());
    let faults = proxy.faulted() - before;
    tokio::time::sleep(Duration::from_secs(3)).await;
    load.stop_opening.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    let missing = load.not_completed(Duration::from_secs(60)).await;
    load.stop.store(true, Ordering::Relaxed);
    for callee in callees {
        callee.await.unwrap();
    }
    sweeper.abort();
    let ledger = load.ledger.lock().unwrap();
    let ended = load.ended().unwrap();
    Row {
        case: "store fault during opens, claims and results",
        fault: fault.label(),
        must_hold: "every open answered 200 is claimed once and completed; none opened twice; 503 + Retry-After while the store fails",
        faults,
        requests: ledger.requests,
        tasks: ledger.opened.len(),
        lost: missing.len() + ledger.given_up.len(),
        duplicated: duplicates(&ledger),
        undocumented: ledger.undocumented.len(),
        recovery: ledger.first_success_after.map(|at| at.saturating_duration_since(ended)),
        note: notes(&ledger, &missing),
    }
}

/// The answers seen, and what went wrong, for the notes under the table.
fn notes(ledger: &Ledger, missing: &[String]) -> String {
    let mut note: Vec<String> = ledger
        .statuses
        .iter()
        .map(|(route, count)| format!("{route}: {count}"))
        .collect();
    if !ledger.undocumented.is_empty() {
        note.push(format!("undocumented: {:?}", first(&ledger.undocumented)));
    }
    if !missing.is_empty() {
        note.push(format!("not completed: {:?}", first(missing)));
    }
    note.join(", ")
}

fn first(items: &[String]) -> &[String] {
    &items[..items.len().min(3)]
}

/// The sweeper on a timer, as deployed, with the outbox's grace for a lost enqueue shortened
/// to the timer's period so a short run sees it act.
fn spawn_sweeper(app: &TestApp) -> tokio::task::JoinHandle<()> {
    let app = Arc::clone(&app.app);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            forgebench::sweeper::sweep_overdue(&app.store, &app.queue, &app.bodies).await;
            // Past the outbox's 60 s grace for a lost enqueue.
            let later = forgebench::domain::clock::after(61);
            forgebench::sweeper::sweep_outbox_until(&app.store, &app.queue, &later).await;
            forgebench::sweeper::sweep_words_until(&app.store, &app.bodies, "~").await;
        }
    })
}

/// A push callee answering every delivery at once with a one-artifact result, counting the
/// POSTs per task.
async fn answering_callee() -> Callee {
    Callee::start(|_| Answer::json(200, json!({"artifacts": [{"parts": [{"text": "done"}]}]})))
        .await
}

/// A push pair of a new tenant on `app`, its callee at `callee`.
async fn push_pair(app: &TestApp, callee: &Callee) -> Pair {
    let pair = app.pair().await;
    let reply = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": "fault-suite-secret"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    pair
}

/// POSTs per task the callee received.
fn posts_per_task(callee: &Callee) -> HashMap<String, usize> {
    let mut posts: HashMap<String, usize> = HashMap::new();
    for received in callee.received() {
        let task = received.body["task_id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        *posts.entry(task).or_default() += 1;
    }
    posts
}

/// Opens `count` push tasks on `pair` (every fifth, the first included, with a message large enough for the body
/// store), retrying 429/503; returns the tasks opened and the ledger of answers.
async fn open_push_tasks(
    app: &TestApp,
    pair: &Pair,
    count: usize,
    ledger: &Mutex<Ledger>,
    ended: Option<Instant>,
) -> Vec<String> {
    let mut opened = Vec::new();
    for n in 0..count {
        let mut message = if n % 5 == 0 {
            forgebench_tests::offloaded_text_message()
        } else {
            text_message(&format!("push job {n}"))
        };
        message["message_id"] = json!(format!("push-{}", uuid::Uuid::new_v4()));
        loop {
            let sent = Instant::now();
            let reply = app
                .open_task(&pair.caller.key, &pair.callee.name, message.clone(), 0)
                .await;
            let retry = ledger
                .lock()
                .unwrap()
                .note("open", &reply, &OPEN_ANSWERS, sent, ended);
            if reply.status == 200 {
                opened.push(reply.field("id"));
                break;
            }
            if !retry {
                ledger
                    .lock()
                    .unwrap()
                    .given_up
                    .insert(format!("push job {n}"));
                break;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    opened
}

/// Waits until each task is in a final state (or `within` passes); returns each task's state.
async fn final_states(
    app: &TestApp,
    pair: &Pair,
    tasks: &[String],
    within: Duration,
) -> HashMap<String, String> {
    let until = Instant::now() + within;
    let mut states = HashMap::new();
    for task_id in tasks {
        loop {
            let reply = app
                .get_task(&pair.caller.key, &pair.callee.name, task_id)
                .await;
            let state = reply.state();
            if matches!(state.as_str(), "completed" | "failed" | "canceled")
                || Instant::now() >= until
            {
                states.insert(task_id.clone(), state);
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    states
}

/// The tasks of `states` whose state is none of `expected`, each as `{task} {state}`.
fn not_ended_as(states: &HashMap<String, String>, expected: &[&str]) -> Vec<String> {
    states
        .iter()
        .filter(|(_, state)| !expected.contains(&state.as_str()))
        .map(|(task, state)| format!("{task} {state}"))
        .collect()
}

/// SQS, KMS and S3 (moto) fail with 500s for `fault_time` while push tasks are opened, some
/// with bodies in the body store. Must hold: every open is answered 200 (the enqueue's failure
/// is the outbox's to make good) or 503 with nothing written; every task opened is delivered
/// and completed once.
async fn push_services_fault(fault_time: Duration) -> Row {
    let proxy = FaultProxy::start(&moto_endpoint()).await;
    let app = spawn_app_with(Options {
        moto_endpoint: proxy.endpoint.clone(),
        ..Options::local_push()
    })
    .await;
    let callee = answering_callee().await;
    let pair = push_pair(&app, &callee).await;
    let sweeper = spawn_sweeper(&app);
    let ledger = Mutex::new(Ledger::default());
    let mut tasks = open_push_tasks(&app, &pair, 5, &ledger, None).await;
    let before = proxy.faulted();
    proxy.set(Fault::internal_error());
    let during = (fault_time.as_millis() / 200).max(5) as usize;
    let opening = open_push_tasks(&app, &pair, during.min(50), &ledger, None);
    let (opened, ()) = tokio::join!(opening, async {
        tokio::time::sleep(fault_time).await;
        proxy.set(Fault::None);
    });
    tasks.extend(opened);
    let ended = Instant::now();
    let faults = proxy.faulted() - before;
    tasks.extend(open_push_tasks(&app, &pair, 5, &ledger, Some(ended)).await);
    let states = final_states(&app, &pair, &tasks, Duration::from_secs(120)).await;
    let all_final = ended.elapsed();
    sweeper.abort();
    let missing = not_ended_as(&states, &["completed"]);
    let posts = posts_per_task(&callee);
    let repeated = posts.values().filter(|&&count| count > 1).count();
    let ledger = ledger.into_inner().unwrap();
    let mut note = notes(&ledger, &missing);
    note.push_str(&format!(
        ", callee POSTs {} for {} tasks ({repeated} tasks POSTed more than once: at least once)",
        posts.values().sum::<usize>(),
        tasks.len()
    ));
    Row {
        case: "SQS, KMS and S3 fail during push opens (recovery: until every task is final)",
        fault: "500 errors from moto".into(),
        must_hold: "every task opened is delivered and completed; opens answer 200, or 503 with nothing written",
        faults,
        requests: ledger.requests,
        tasks: tasks.len(),
        lost: missing.len() + ledger.given_up.len(),
        duplicated: 0,
        undocumented: ledger.undocumented.len(),
        recovery: Some(all_final),
        note,
    }
}

/// Every delivery message reaches the worker three times (two extra copies sent to the queue
/// as SQS may redeliver). Must hold: each task is delivered and completed, its answer applied
/// once.
async fn duplicate_queue_deliveries() -> Row {
    let app = spawn_app_with(Options::local_push()).await;
    let callee = answering_callee().await;
    let pair = push_pair(&app, &callee).await;
    let ledger = Mutex::new(Ledger::default());
    let tasks = open_push_tasks(&app, &pair, 20, &ledger, None).await;
    let (sqs, _) = forgebench_tests::sqs_and_kms(&moto_endpoint()).await;
    let mut copies = 0;
    for task in &tasks {
        for _ in 0..2 {
            sqs.send_message()
                .queue_url(&app.push_queue_url)
                .message_body(json!({"task_id": task}).to_string())
                .send()
                .await
                .expect("send a copy");
            copies += 1;
        }
    }
    let states = final_states(&app, &pair, &tasks, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let missing = not_ended_as(&states, &["completed"]);
    let posts = posts_per_task(&callee);
    let answered_twice = answers_applied_twice(&app, &pair, &tasks).await;
    let ledger = ledger.into_inner().unwrap();
    Row {
        case: "duplicate queue deliveries",
        fault: "every delivery message 3 times".into(),
        must_hold: "each task completed, its answer applied once",
        faults: copies,
        requests: ledger.requests,
        tasks: tasks.len(),
        lost: missing.len(),
        duplicated: answered_twice,
        undocumented: ledger.undocumented.len(),
        recovery: None,
        note: format!(
            "callee POSTs {} for {} tasks",
            posts.values().sum::<usize>(),
            tasks.len()
        ),
    }
}

/// Tasks with more than one artifact (the callee's answer applied more than once).
async fn answers_applied_twice(app: &TestApp, pair: &Pair, tasks: &[String]) -> usize {
    let mut twice = 0;
    for task in tasks {
        let reply = app
            .get_task(&pair.caller.key, &pair.callee.name, task)
            .await;
        let artifacts = reply.body["artifacts"].as_array().map_or(0, Vec::len);
        if artifacts > 1 {
            twice += 1;
        }
    }
    twice
}

/// One tenant's push callee accepts connections and never answers; another tenant's answers
/// at once, on the same gateway and queue. Must hold: the second tenant's tasks all complete;
/// the first tenant's end `failed` after their attempts, or wait (`submitted`, or `working`
/// while a POST tries the receiver) held back by the tenant's breaker at the receiver, which
/// spends no attempt; none lost, none completed.
async fn hung_callee() -> Row {
    let app = spawn_app_with(Options {
        push_timeout: Duration::from_secs(1),
        retry_seconds: "0.2,0.2",
        ..Options::local_push()
    })
    .await;
    let hung = Callee::start(|_| Answer {
        delay: Duration::from_secs(3600),
        ..Answer::json(200, json!({}))
    })
    .await;
    let healthy = answering_callee().await;
    let hung_pair = push_pair(&app, &hung).await;
    let healthy_pair = push_pair(&app, &healthy).await;
    let ledger = Mutex::new(Ledger::default());
    let started = Instant::now();
    let (hung_tasks, healthy_tasks) = tokio::join!(
        open_push_tasks(&app, &hung_pair, 10, &ledger, None),
        open_push_tasks(&app, &healthy_pair, 10, &ledger, None)
    );
    let healthy_states =
        final_states(&app, &healthy_pair, &healthy_tasks, Duration::from_secs(60)).await;
    let healthy_done = started.elapsed();
    // Held back by the breaker once it opened, the hung tasks do not all end soon.
    let hung_states = final_states(&app, &hung_pair, &hung_tasks, Duration::from_secs(5)).await;
    let mut lost = not_ended_as(&healthy_states, &["completed"]);
    lost.extend(not_ended_as(
        &hung_states,
        &["failed", "submitted", "working"],
    ));
    let ledger = ledger.into_inner().unwrap();
    Row {
        case: "a callee that never answers",
        fault: "1 tenant's endpoint hangs".into(),
        must_hold: "the other tenant's tasks complete; the hung ones fail after their attempts or wait, held back by the tenant's breaker",
        faults: hung.received().len() as u64,
        requests: ledger.requests,
        tasks: hung_tasks.len() + healthy_tasks.len(),
        lost: lost.len(),
        duplicated: 0,
        undocumented: ledger.undocumented.len(),
        recovery: None,
        note: format!(
            "the healthy tenant's 10 tasks all final {:.1} s after the first open; {}",
            healthy_done.as_secs_f64(),
            if lost.is_empty() {
                String::new()
            } else {
                format!("not as expected: {:?}", first(&lost))
            }
        ),
    }
}

/// Forty tasks pass their claim deadline unanswered; the sweeper is stopped mid-run again and
/// again (its invocation killed), then runs whole. Must hold: every task ends `failed` once.
async fn sweeper_killed() -> Row {
    let app = spawn_app_with(Options::default()).await;
    let pair = app.pair().await;
    app.send(
        "PATCH",
        &format!("/v1/agents/{}", pair.callee.id),
        Some(&pair.tenant.admin_key),
        Some(json!({"claim_timeout_seconds": 1})),
    )
    .await;
    let mut tasks = Vec::new();
    for n in 0..40 {
        let reply = app
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message(&format!("late {n}")),
                0,
            )
            .await;
        tasks.push(reply.field("id"));
        assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let mut kills = 0;
    for cut in [5, 10, 20, 40, 80] {
        let sweep =
            forgebench::sweeper::sweep_overdue(&app.app.store, &app.app.queue, &app.app.bodies);
        if tokio::time::timeout(Duration::from_millis(cut), sweep)
            .await
            .is_err()
        {
            kills += 1;
        }
    }
    forgebench::sweeper::sweep_overdue(&app.app.store, &app.app.queue, &app.app.bodies).await;
    let mut lost = 0;
    let mut twice = 0;
    for task in &tasks {
        let reply = app
            .get_task(&pair.caller.key, &pair.callee.name, task)
            .await;
        if reply.state() != "failed" {
            lost += 1;
        }
        if finals_of(&app, task).await > 1 {
            twice += 1;
        }
    }
    Row {
        case: "the sweeper killed mid-run",
        fault: format!("{kills} sweeps stopped part-way"),
        must_hold: "every overdue task ends failed, once",
        faults: kills,
        requests: 0,
        tasks: tasks.len(),
        lost,
        duplicated: twice,
        undocumented: 0,
        recovery: None,
        note: String::new(),
    }
}

/// How many final events the task's change log holds, read from the store.
async fn finals_of(app: &TestApp, task: &str) -> usize {
    let task_id = forgebench::domain::TaskId::from(task.to_owned());
    let task = app
        .app
        .store
        .get_task(&task_id)
        .await
        .expect("store")
        .expect("task");
    task.events_after(0)
        .iter()
        .filter(|event| event.kind == forgebench::domain::events::EventKind::Final)
        .count()
}
