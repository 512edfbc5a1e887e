//! Fair share in the push worker, against real receivers on loopback: one tenant's pushes in
//! flight are bounded across the worker (a job past the bound waits without dialing and is not
//! counted as an attempt), and its breaker at a receiver domain failing every POST holds its
//! deliveries back, while another tenant's deliveries go on.

use forgebench::domain::delivery_hold::TRIAL_WINDOW_SECONDS;
use std::time::Duration;

use forgebench_tests::{spawn_app_with, text_message, Answer, Callee, Options, Pair, TestApp};
use serde_json::json;

/// Opens `count` push tasks without waiting; their ids.
async fn open_many(app: &TestApp, pair: &Pair, count: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..count {
        let reply = app
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message(&format!("job {n}")),
                0,
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        ids.push(reply.field("id"));
    }
    ids
}

/// The state of `pair`'s task `task_id`, as its caller reads it.
async fn state(app: &TestApp, pair: &Pair, task_id: &str) -> String {
    let reply = app
        .get_task(&pair.caller.key, &pair.callee.name, task_id)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.state()
}

/// Failures in a row that open a tenant's breaker at a receiver domain.
const FIRST_FAILURES: usize = forgebench::push::breaker::FAILURES_TO_OPEN as usize;

fn hanging() -> Answer {
    Answer {
        delay: Duration::from_secs(3600),
        ..Answer::json(200, json!({}))
    }
}

fn completed() -> Answer {
    Answer::json(
        200,
        json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}),
    )
}

#[tokio::test]
async fn a_tenant_past_its_pushes_in_flight_waits_without_dialing_and_others_go_on() {
    let app = spawn_app_with(Options {
        tenant_max_pushes: 2,
        push_timeout: Duration::from_secs(20),
        ..Options::local_push()
    })
    .await;
    let hung = Callee::start(|_| hanging()).await;
    let healthy = Callee::start(|_| completed()).await;
    let noisy = app.push_pair(&hung.url).await;
    let quiet = app.push_pair(&healthy.url).await;

    let held = open_many(&app, &noisy, 6).await;
    assert_eq!(hung.wait_for(2).await.len(), 2);
    // The quiet tenant's tasks are delivered and answered meanwhile, each at once.
    for n in 0..3 {
        let reply = app
            .open_task(
                &quiet.caller.key,
                &quiet.callee.name,
                text_message(&format!("quiet {n}")),
                10,
            )
            .await;
        assert_eq!(reply.state(), "completed", "{}", reply.text);
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(hung.received().len(), 2, "only the bound's POSTs dialed");
    // The two POSTs in flight hold their tasks' leases (each an attempt); the four held back
    // were never leased.
    let mut states = Vec::new();
    for task_id in &held {
        states.push(state(&app, &noisy, task_id).await);
    }
    states.sort();
    assert_eq!(
        states,
        [
            "submitted",
            "submitted",
            "submitted",
            "submitted",
            "working",
            "working"
        ]
    );
}

#[tokio::test]
async fn a_receiver_domain_failing_every_post_is_held_back_for_the_tenant_only() {
    let app = spawn_app_with(Options {
        retry_seconds: "0.2,0.2,0.2,0.2",
        ..Options::local_push()
    })
    .await;
    let failing = Callee::start(|_| Answer::text(503, "down")).await;
    let noisy = app.push_pair(&failing.url).await;
    let other = app.push_pair(&failing.url).await;

    let held = open_many(&app, &noisy, 8).await;
    failing.wait_for(FIRST_FAILURES).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let sent = failing.received().len();
    // Without the breaker, 8 tasks × 5 attempts 0.2 s apart would all be sent by now. With it,
    // the first failures and the POSTs already under way when it opened, and none after.
    assert!(
        (FIRST_FAILURES..8 * 5).contains(&sent),
        "{sent} POSTs: the breaker opened after the first failures"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        failing.received().len(),
        sent,
        "no POST once the breaker is open"
    );
    let mut counted = 0;
    for task_id in &held {
        counted += app.delivery_attempts(&noisy, task_id).await.len();
        assert_ne!(state(&app, &noisy, task_id).await, "failed");
    }
    assert_eq!(counted, sent, "only the POSTs sent are attempts");
    // Another tenant at the same receiver is not held back by the first one's breaker.
    failing.forget();
    let others = open_many(&app, &other, 1).await;
    let received = failing.wait_for(1).await;
    assert!(!received.is_empty(), "the other tenant's task was sent");
    // Only the other tenant's task (its first POST, perhaps its retries), none of the first's.
    for post in &received {
        assert_eq!(post.body["task_id"], others[0].as_str(), "{}", post.body);
    }
}

/// The messages waiting on the push queue (up to ten), taken off it: each one's body and group.
async fn take_messages(app: &TestApp) -> Vec<(String, Option<String>)> {
    use aws_sdk_sqs::types::MessageSystemAttributeName::MessageGroupId;
    let (sqs, _) = forgebench_tests::sqs_and_kms(&forgebench_tests::moto_endpoint()).await;
    let received = sqs
        .receive_message()
        .queue_url(&app.push_queue_url)
        .message_system_attribute_names(MessageGroupId)
        .max_number_of_messages(10)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap();
    let mut taken = Vec::new();
    for message in received.messages() {
        sqs.delete_message()
            .queue_url(&app.push_queue_url)
            .receipt_handle(message.receipt_handle().unwrap())
            .send()
            .await
            .unwrap();
        let group = message
            .attributes()
            .and_then(|attributes| attributes.get(&MessageGroupId))
            .cloned();
        taken.push((message.body().unwrap_or_default().to_owned(), group));
    }
    taken
}

/// The push queue is a fair queue: every message the gateway sends names its tenant as its
/// group id, so SQS gives other tenants' messages first turn when one tenant's backlog grows.
#[tokio::test]
async fn each_push_message_names_its_tenant_as_its_group() {
    let app = spawn_app_with(Options {
        push_worker: false,
        ..Options::local_push()
    })
    .await;
    let hung = Callee::start(|_| hanging()).await;
    let pair = app.push_pair(&hung.url).await;
    open_many(&app, &pair, 1).await;
    let messages = take_messages(&app).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].1, Some(pair.tenant.id.clone()));
}

/// A tenant whose receiver answers in time is never held back, however many of its tasks are
/// delivered at once: only a POST to a receiver not known to answer in time needs a slot.
#[tokio::test]
async fn a_busy_tenant_whose_receiver_keeps_up_is_not_held_back() {
    let recorder = forgebench_tests::Recorder::default();
    let app = spawn_app_with(Options {
        tenant_max_pushes: 2,
        recorder: Some(recorder.clone()),
        ..Options::local_push()
    })
    .await;
    let healthy = Callee::start(|_| completed()).await;
    let pair = app.push_pair(&healthy.url).await;
    // The first delivery takes a slot; its answer in time makes the receiver known.
    let first = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("first"),
            10,
        )
        .await;
    assert_eq!(first.state(), "completed", "{}", first.text);
    recorder.take_requests();
    let opens = (0..8).map(|n| {
        let (app, pair) = (&app, &pair);
        async move {
            app.open_task(
                &pair.caller.key,
                &pair.callee.name,
                text_message(&format!("busy {n}")),
                10,
            )
            .await
        }
    });
    for reply in futures::future::join_all(opens).await {
        assert_eq!(reply.state(), "completed", "{}", reply.text);
    }
    let held_back = recorder
        .take_requests()
        .iter()
        .filter(|(operation, _)| operation == "SendMessageBatch")
        .count();
    assert_eq!(held_back, 0, "no delivery was held back");
    assert_eq!(healthy.received().len(), 9);
}

/// The messages on the push queue: visible, in flight and delayed.
async fn queue_depth(app: &TestApp) -> u64 {
    use aws_sdk_sqs::types::QueueAttributeName;
    let (sqs, _) = forgebench_tests::sqs_and_kms(&forgebench_tests::moto_endpoint()).await;
    let attributes = sqs
        .get_queue_attributes()
        .queue_url(&app.push_queue_url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .unwrap();
    attributes
        .attributes()
        .map(|all| all.values().map(|n| n.parse::<u64>().unwrap()).sum())
        .unwrap_or(0)
}

/// A backlog that its tenant's open breaker holds back waits on the table's outbox, not on the
/// queue that every tenant's deliveries share, and the sweeper brings it back when the wait is
/// over: nothing is lost, nothing is attempted meanwhile.
#[tokio::test]
async fn a_backlog_held_back_for_long_waits_on_the_outbox_not_on_the_queue() {
    let app = spawn_app_with(Options {
        retry_seconds: "0.2,0.2,0.2,0.2",
        ..Options::local_push()
    })
    .await;
    let failing = Callee::start(|_| Answer::text(503, "down")).await;
    let noisy = app.push_pair(&failing.url).await;
    let held = open_many(&app, &noisy, 8).await;
    failing.wait_for(FIRST_FAILURES).await;
    let mut depth = queue_depth(&app).await;
    for _ in 0..50 {
        if depth == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        depth = queue_depth(&app).await;
    }
    assert_eq!(depth, 0, "the held-back deliveries left the queue");
    // The callee is marked (both its copies) for its next tasks to be parked at their open.
    let now = forgebench::domain::clock::unix_now();
    for held_until in held_at_open(&app, &noisy).await {
        assert!(
            held_until.is_some_and(|until| until > now),
            "{held_until:?}"
        );
    }
    let sent = failing.received().len();
    for task_id in &held {
        assert_ne!(state(&app, &noisy, task_id).await, "failed");
    }
    // Parked for later: a sweep now finds none of them due.
    let now = forgebench::domain::clock::now().to_string();
    let swept = forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &now).await;
    assert_eq!(swept.done, 0, "{swept:?}");
    // Once their wait is over, the sweeper (every minute, deployed) enqueues one of them as a
    // trial, the rest waiting for it: here a sweep as if ten minutes later, past every wait (a
    // task opened after the callee was marked is parked by its open up to half its wait again
    // later). The breaker still open, the trial is held back again, untried.
    let later = forgebench::domain::clock::after(600).to_string();
    let swept =
        forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &later).await;
    assert_eq!(swept.done, 1, "{swept:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    for task_id in &held {
        assert_ne!(state(&app, &noisy, task_id).await, "failed");
    }
    assert_eq!(
        failing.received().len(),
        sent,
        "nothing tried while the breaker is open"
    );
}

/// The messages the sweeper sends (a lost enqueue, a parked backlog coming back) name their
/// tenant as their group too, so a backlog that returns is shared out like any other.
#[tokio::test]
async fn a_message_the_sweeper_sends_names_its_tenant_as_its_group() {
    let app = spawn_app_with(Options {
        push_worker: false,
        ..Options::local_push()
    })
    .await;
    let hung = Callee::start(|_| hanging()).await;
    let pair = app.push_pair(&hung.url).await;
    open_many(&app, &pair, 1).await;
    let group_of_next = || async {
        let mut messages = take_messages(&app).await;
        assert_eq!(messages.len(), 1, "{messages:?}");
        messages.remove(0)
    };
    // The open's message, taken and lost.
    let (_, group) = group_of_next().await;
    assert_eq!(group.as_deref(), Some(pair.tenant.id.as_str()));
    let later = forgebench::domain::clock::after(600).to_string();
    let swept =
        forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &later).await;
    assert_eq!(swept.done, 1, "{swept:?}");
    let (body, group) = group_of_next().await;
    assert!(
        !body.contains("delivery_id"),
        "the sweeper's message: {body}"
    );
    assert_eq!(group.as_deref(), Some(pair.tenant.id.as_str()));
}

/// What both copies of `pair`'s callee (by id, by name) say of holding its new push tasks.
async fn held_at_open(app: &TestApp, pair: &Pair) -> [Option<u64>; 2] {
    use forgebench::domain::{AgentRef, TenantId};
    let tenant_id = TenantId::from(pair.tenant.id.clone());
    let mut held = [None, None];
    for (copy, named) in held.iter_mut().zip([&pair.callee.id, &pair.callee.name]) {
        let agent = app
            .app
            .store
            .find_agent(&tenant_id, &AgentRef::parse(named))
            .await
            .unwrap()
            .unwrap();
        *copy = agent.push_held_until;
    }
    held
}

/// Marks `pair`'s callee held until `until`, as a worker parking its deliveries does.
async fn hold(app: &TestApp, pair: &Pair, until: u64) {
    use forgebench::domain::{AgentId, TenantId};
    let marked = app
        .app
        .store
        .hold_new_deliveries(
            &TenantId::from(pair.tenant.id.clone()),
            &AgentId::from(pair.callee.id.clone()),
            &pair.callee.name,
            until,
        )
        .await
        .unwrap();
    assert!(marked);
}

/// While a callee is held (its receiver keeps its tenant's breaker open), its new push tasks
/// are parked by their open: no message, an outbox entry due when the hold ends, and then
/// enqueued by the sweeper like any parked delivery. Another tenant's callee at the same
/// receiver is not held, and a write of the agent (its endpoint set again) clears the hold.
#[tokio::test]
async fn a_held_callees_new_push_tasks_are_parked_by_their_open() {
    let app = spawn_app_with(Options {
        push_worker: false,
        ..Options::local_push()
    })
    .await;
    let receiver = Callee::start(|_| hanging()).await;
    let held = app.push_pair(&receiver.url).await;
    let other = app.push_pair(&receiver.url).await;
    let until = forgebench::domain::clock::unix_now() + 120;
    hold(&app, &held, until).await;
    assert_eq!(held_at_open(&app, &held).await, [Some(until); 2]);
    assert_eq!(held_at_open(&app, &other).await, [None; 2]);
    // A mark no later than the one standing is not written.
    let earlier = app
        .app
        .store
        .hold_new_deliveries(
            &forgebench::domain::TenantId::from(held.tenant.id.clone()),
            &forgebench::domain::AgentId::from(held.callee.id.clone()),
            &held.callee.name,
            until - 60,
        )
        .await
        .unwrap();
    assert!(!earlier);
    assert_eq!(held_at_open(&app, &held).await, [Some(until); 2]);

    let parked = open_many(&app, &held, 3).await;
    let sent = open_many(&app, &other, 1).await;
    let messages = take_messages(&app).await;
    assert_eq!(
        messages.len(),
        1,
        "only the other tenant's task: {messages:?}"
    );
    assert!(messages[0].0.contains(&sent[0]), "{messages:?}");
    for task_id in &parked {
        assert_eq!(state(&app, &held, task_id).await, "submitted");
    }
    // Due on the outbox when the hold ends, not before (the open's own grace is a minute), and
    // at the latest half the hold later: spread, so that a hold's tasks do not return at once.
    let store = &app.app.store;
    let before_the_end = forgebench::domain::clock::from_unix(until - 5).to_string();
    let swept =
        forgebench::sweeper::sweep_outbox_until(store, &app.app.queue, &before_the_end).await;
    assert_eq!(
        swept.done, 1,
        "only the other tenant's, past its grace: {swept:?}"
    );
    take_messages(&app).await;
    // The hold over, one parked task goes as a trial, beside the other tenant's task once more
    // (a minute after its last sweep); the other two wait for the trial's end.
    let (sent, waiting) = sweep_after_the_hold(&app, until + 60 + 1, &parked).await;
    let trial_until = until + 60 + 1 + TRIAL_WINDOW_SECONDS;
    assert_eq!(
        marks(&app, &held).await,
        [(Some(trial_until), Some(trial_until)); 2]
    );
    assert_eq!(waiting.len(), 2, "{sent:?}");
    // No new hold was marked by the trial's end: it went through, the hold ends, the rest go.
    let after_the_trial = forgebench::domain::clock::from_unix(trial_until + 1).to_string();
    let swept =
        forgebench::sweeper::sweep_outbox_until(store, &app.app.queue, &after_the_trial).await;
    assert_eq!(swept.done, waiting.len(), "{swept:?}");
    let bodies = take_bodies(&app).await;
    for task_id in &waiting {
        assert!(
            bodies.iter().any(|body| body.contains(task_id)),
            "{bodies:?}"
        );
    }
    assert_eq!(marks(&app, &held).await, [(None, None); 2]);

    // Setting the endpoint writes the agent: the hold is gone, and the next open sends.
    hold(&app, &held, until + 600).await;
    let reply = app
        .set_endpoint(
            &held.tenant.admin_key,
            &held.callee.name,
            json!({ "url": receiver.url }),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(held_at_open(&app, &held).await, [None; 2]);
    let next = open_many(&app, &held, 1).await;
    let messages = take_messages(&app).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(messages[0].0.contains(&next[0]), "{messages:?}");
}

/// `pair`'s callee's hold marks, on its copy by id and by name: `(push_held_until,
/// push_trial_until)`.
async fn marks(app: &TestApp, pair: &Pair) -> [(Option<u64>, Option<u64>); 2] {
    use forgebench::domain::AgentId;
    let (_, hold) = app
        .app
        .store
        .delivery_hold(&AgentId::from(pair.callee.id.clone()))
        .await
        .unwrap()
        .unwrap();
    let by_id = (hold.held_until, hold.trial_until);
    let by_name = held_at_open(app, pair).await[1];
    let trial_by_name = if by_name == by_id.0 { by_id.1 } else { None };
    [by_id, (by_name, trial_by_name)]
}

/// The bodies of the messages on the queue, taken off it.
async fn take_bodies(app: &TestApp) -> Vec<String> {
    take_messages(app)
        .await
        .into_iter()
        .map(|(body, _)| body)
        .collect()
}

/// A sweep at `at` (seconds since the epoch) after `parked`'s callee's hold ended: exactly one
/// of `parked` is sent (the trial); the ones left waiting, and every body sent.
async fn sweep_after_the_hold(
    app: &TestApp,
    at: u64,
    parked: &[String],
) -> (Vec<String>, Vec<String>) {
    let now = forgebench::domain::clock::from_unix(at).to_string();
    forgebench::sweeper::sweep_outbox_until(&app.app.store, &app.app.queue, &now).await;
    let bodies = take_bodies(app).await;
    let (trial, waiting): (Vec<String>, Vec<String>) = parked
        .iter()
        .cloned()
        .partition(|task_id| bodies.iter().any(|body| body.contains(task_id.as_str())));
    assert_eq!(trial.len(), 1, "one trial: {bodies:?}");
    (bodies, waiting)
}

/// A held callee's parked backlog comes back one trial at a time: when its hold ends, one sweep
/// sends one of its tasks and leaves the rest waiting, without a message, for the trial's
/// window; a trial that fails (a worker marks a later hold) keeps them waiting until that hold
/// ends, when one more goes; two sweeps at once start one trial between them.
#[tokio::test]
async fn a_held_callees_backlog_comes_back_one_trial_at_a_time() {
    let app = spawn_app_with(Options {
        push_worker: false,
        ..Options::local_push()
    })
    .await;
    let receiver = Callee::start(|_| hanging()).await;
    let held = app.push_pair(&receiver.url).await;
    let until = forgebench::domain::clock::unix_now() + 120;
    hold(&app, &held, until).await;
    let parked = open_many(&app, &held, 4).await;
    assert!(take_messages(&app).await.is_empty());

    // Two sweeps at once, past the hold and the open's spread: one trial between them.
    let past = forgebench::domain::clock::from_unix(until + 90).to_string();
    let store = &app.app.store;
    let (first, second) = tokio::join!(
        forgebench::sweeper::sweep_outbox_until(store, &app.app.queue, &past),
        forgebench::sweeper::sweep_outbox_until(store, &app.app.queue, &past),
    );
    assert_eq!(first.done + second.done, 1, "{first:?} {second:?}");
    let bodies = take_bodies(&app).await;
    let trial: Vec<&String> = parked
        .iter()
        .filter(|task_id| bodies.iter().any(|body| body.contains(task_id.as_str())))
        .collect();
    assert_eq!(trial.len(), 1, "{bodies:?}");
    let trial_until = until + 90 + TRIAL_WINDOW_SECONDS;
    assert_eq!(
        marks(&app, &held).await[0],
        (Some(trial_until), Some(trial_until))
    );

    // The trial fails: its worker marks a later hold. The rest wait through it, and the trial's
    // end does not end the hold.
    let later = trial_until + 60;
    hold(&app, &held, later).await;
    let during = forgebench::domain::clock::from_unix(trial_until + 1).to_string();
    let swept = forgebench::sweeper::sweep_outbox_until(store, &app.app.queue, &during).await;
    assert_eq!(swept.done, 0, "{swept:?}");
    assert!(take_messages(&app).await.is_empty());
    assert_eq!(
        marks(&app, &held).await[0],
        (Some(later), Some(trial_until))
    );

    // That hold over, one more goes (the earliest due: the first trial's task, which its worker
    // would have parked again), the other three wait.
    let (_, waiting) = sweep_after_the_hold(&app, later + 1, &parked).await;
    assert_eq!(waiting.len(), 3);
    let second_trial = later + 1 + TRIAL_WINDOW_SECONDS;
    assert_eq!(
        marks(&app, &held).await,
        [(Some(second_trial), Some(second_trial)); 2]
    );
    for task_id in &parked {
        assert_eq!(state(&app, &held, task_id).await, "submitted");
    }
}
