//! Push attempts and delivery ids: an attempt is a POST (KMS or signing-key trouble before it
//! uses none), an answer outlives a failure to record its attempt, attempt numbers run on across
//! deliveries, and each delivery has its own `webhook-id`, shared by its retries.

use std::sync::Arc;
use std::time::Duration;

use forgebench::domain::signing::KeyPurpose;
use forgebench::signing::SigningCache;

use forgebench::push::{Job, JobOutcome, Worker};
use forgebench::store::{Store, TaskTransition};
use forgebench::vault::Vault;
use forgebench_tests::{
    dynamodb_config, dynamodb_endpoint, moto_endpoint, offloaded_text_message, spawn_app_with,
    sqs_and_kms, text_message, Answer, Callee, Options, Pair, Proxy, Received, TestApp,
};
use serde_json::{json, Value};

/// A gateway whose own push worker is off (the test runs deliveries itself) and a callee that
/// pushes to `callee`, with a bearer secret when `with_secret`.
async fn quiet_push_pair(callee: &Callee, with_secret: bool) -> (TestApp, Pair) {
    let app = spawn_app_with(Options {
        push_worker: false,
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let endpoint = match with_secret {
        true => json!({"url": callee.url, "auth": {"type": "bearer", "secret": "s3cret-attempts"}}),
        false => json!({ "url": callee.url }),
    };
    let saved = app
        .set_endpoint(&pair.tenant.admin_key, &pair.callee.name, endpoint)
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    (app, pair)
}

/// The SQS message the gateway sends for a task, as the worker receives it.
fn job_for(task_id: &str) -> Job {
    Job {
        message_id: format!("test-{task_id}"),
        receipt_handle: String::new(),
        body: json!({ "task_id": task_id }).to_string(),
    }
}

/// KMS unreachable for the worker (through a proxy the test cuts) while the delivery is tried
/// more times than a delivery has attempts; then KMS comes back. With a secret, KMS fails
/// opening it; without, it fails opening the signing key (the worker's key cache is cold).
async fn kms_outage_before_the_post_uses_no_attempt(with_secret: bool) {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = quiet_push_pair(&callee, with_secret).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    assert_eq!(opened.state(), "submitted", "{}", opened.text);
    let task_id = opened.field("id");
    let kms_proxy = Proxy::start(&moto_endpoint()).await;
    let (_, kms) = sqs_and_kms(&kms_proxy.endpoint).await;
    let worker = Worker {
        vault: Vault::new(kms, app.app.vault.key_id().map(str::to_owned)),
        // A cold key cache, so opening the signing key needs KMS.
        signing: Arc::new(SigningCache::new(
            KeyPurpose::Webhooks,
            app.app.config.signing_key_lifetime,
        )),
        ..app.app.worker()
    };
    kms_proxy.cut();
    let max_attempts = app.app.config.retry_schedule.max_attempts();
    for round in 0..=max_attempts {
        let outcome = worker.handle(&job_for(&task_id)).await;
        assert!(
            matches!(outcome, JobOutcome::RetryIn(_)),
            "KMS down, round {round}: {outcome:?}"
        );
    }
    assert!(callee.received().is_empty(), "nothing was POSTed");
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "submitted", "{}", read.text);

    kms_proxy.restore();
    assert_eq!(worker.handle(&job_for(&task_id)).await, JobOutcome::Done);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "completed", "{}", read.text);
    assert_eq!(callee.received().len(), 1);
    let log = app.delivery_attempts(&pair, &task_id).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (log[0]["attempt"].clone(), log[0]["status"].clone()),
        (json!(1), json!(200))
    );
}

#[tokio::test]
async fn kms_failing_to_open_the_endpoint_secret_uses_no_attempt() {
    kms_outage_before_the_post_uses_no_attempt(true).await;
}

#[tokio::test]
async fn kms_failing_to_open_the_signing_key_uses_no_attempt() {
    kms_outage_before_the_post_uses_no_attempt(false).await;
}

/// The gateway's push worker with its store reached through `interceptor`.
async fn worker_through(
    app: &TestApp,
    interceptor: impl aws_smithy_runtime_api::client::interceptors::Intercept + 'static,
) -> Worker {
    let config = dynamodb_config(&dynamodb_endpoint())
        .await
        .interceptor(interceptor)
        .build();
    Worker {
        store: Store::new(
            aws_sdk_dynamodb::Client::from_conf(config),
            app.table.clone(),
        ),
        ..app.app.worker()
    }
}

/// Fails every request that writes an attempt record, as a store outage at that moment would;
/// every other request reaches DynamoDB Local untouched.
#[derive(Debug)]
struct AttemptRecordsFail;

impl aws_smithy_runtime_api::client::interceptors::Intercept for AttemptRecordsFail {
    fn name(&self) -> &'static str {
        "AttemptRecordsFail"
    }

    fn read_before_transmit(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let body = context.request().body().bytes().unwrap_or_default();
        match String::from_utf8_lossy(body).contains("\"ATTEMPT#") {
            true => Err("the store is unreachable (test)".into()),
            false => Ok(()),
        }
    }
}

#[tokio::test]
async fn an_answer_is_kept_when_its_attempt_cannot_be_recorded() {
    let callee = Callee::start(|_| {
        Answer::json(
            200,
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "kept"}]}]}),
        )
    })
    .await;
    let (app, pair) = quiet_push_pair(&callee, true).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    let worker = worker_through(&app, AttemptRecordsFail).await;
    assert_eq!(worker.handle(&job_for(&task_id)).await, JobOutcome::Done);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "completed", "{}", read.text);
    assert_eq!(read.body["artifacts"][0]["parts"][0]["text"], "kept");
    assert_eq!(callee.received().len(), 1);
    assert!(
        app.delivery_attempts(&pair, &task_id).await.is_empty(),
        "only the attempt's record was lost"
    );
}

/// Notes, in order, which requests write an attempt record and which write the task's answer
/// (an update that stores the `completed` state), and lets every request through.
#[derive(Debug, Default, Clone)]
struct WriteOrder(Arc<std::sync::Mutex<Vec<&'static str>>>);

impl aws_smithy_runtime_api::client::interceptors::Intercept for WriteOrder {
    fn name(&self) -> &'static str {
        "WriteOrder"
    }

    fn read_before_transmit(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _cfg: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        let request = context.request();
        let body = String::from_utf8_lossy(request.body().bytes().unwrap_or_default());
        let target = request.headers().get("x-amz-target").unwrap_or_default();
        let write = if body.contains("\"ATTEMPT#") {
            Some("attempt")
        } else if target.ends_with("UpdateItem") && body.contains("\"completed\"") {
            Some("answer")
        } else {
            None
        };
        if let Some(write) = write {
            self.0.lock().unwrap().push(write);
        }
        Ok(())
    }
}

#[tokio::test]
async fn the_attempt_is_recorded_before_the_answer_so_a_finished_task_shows_it() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = quiet_push_pair(&callee, false).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    let order = WriteOrder::default();
    let worker = worker_through(&app, order.clone()).await;
    assert_eq!(worker.handle(&job_for(&task_id)).await, JobOutcome::Done);
    assert_eq!(*order.0.lock().unwrap(), ["attempt", "answer"]);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.state(), "completed", "{}", read.text);
}

/// A push task through one question: the first delivery's second attempt gets the question,
/// the delivery that carries the caller's answer succeeds on its third (three attempts per
/// delivery, as Options' schedule has it). Returns the gateway, the pair, the task id and what
/// the endpoint received.
async fn through_one_question() -> (TestApp, Pair, String, Vec<Received>) {
    let callee = Callee::start(|n| match n {
        1 => Answer::json(
            200,
            json!({"state": "input_required",
                   "message": {"role": "agent", "parts": [{"text": "which invoice?"}]}}),
        ),
        4 => Answer::json(200, json!({"state": "completed"})),
        _ => Answer::text(503, "busy"),
    })
    .await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let saved = app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("Classify"),
            10,
        )
        .await;
    assert_eq!(opened.state(), "input_required", "{}", opened.text);
    let task_id = opened.field("id");
    let answered = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("INV-7")}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.text);
    let received = callee.received();
    assert_eq!(received.len(), 5);
    assert_eq!(received[2].body["message"]["parts"][0]["text"], "INV-7");
    (app, pair, task_id, received)
}

#[tokio::test]
async fn each_delivery_has_its_own_webhook_id_shared_by_its_retries() {
    let (_app, _pair, _task_id, received) = through_one_question().await;
    let ids: Vec<&str> = received
        .iter()
        .map(|r| r.headers["webhook-id"].to_str().unwrap())
        .collect();
    assert_eq!(ids[0], ids[1], "retries of one delivery share its id");
    assert_eq!(ids[2], ids[3]);
    assert_eq!(ids[3], ids[4]);
    assert_ne!(ids[0], ids[2], "the delivery of the answer has a new id");
}

#[tokio::test]
async fn attempt_numbers_run_on_across_deliveries_and_the_log_keeps_them_all() {
    let (app, pair, task_id, _received) = through_one_question().await;
    let log = app.delivery_attempts(&pair, &task_id).await;
    let numbers: Vec<Value> = log.iter().map(|a| a["attempt"].clone()).collect();
    let statuses: Vec<Value> = log.iter().map(|a| a["status"].clone()).collect();
    assert_eq!(numbers, [json!(1), json!(2), json!(3), json!(4), json!(5)]);
    assert_eq!(
        statuses,
        [json!(503), json!(200), json!(503), json!(503), json!(200)]
    );
}

#[tokio::test]
async fn a_task_stored_without_a_delivery_id_is_delivered_under_its_task_id() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = quiet_push_pair(&callee, false).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    let task_id = opened.field("id");
    // As the previous version stored it: no delivery id.
    forgebench_tests::dynamodb_client(&dynamodb_endpoint())
        .await
        .update_item()
        .table_name(&app.table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("TASK#{task_id}")),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("TASK".into()),
        )
        .update_expression("REMOVE delivery_id")
        .condition_expression("attribute_exists(delivery_id)")
        .send()
        .await
        .expect("the task had a delivery id");
    assert_eq!(
        app.app.worker().handle(&job_for(&task_id)).await,
        JobOutcome::Done
    );
    let received = callee.wait_for(1).await;
    assert_eq!(received[0].headers["webhook-id"], task_id.as_str());
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "completed");
}

#[tokio::test]
async fn a_message_prepared_for_a_replaced_delivery_takes_no_lease() {
    let callee = Callee::start(|_| {
        Answer::json(
            200,
            json!({"state": "input_required",
                   "message": {"role": "agent", "parts": [{"text": "which invoice?"}]}}),
        )
    })
    .await;
    let (app, pair) = quiet_push_pair(&callee, false).await;
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("Classify"),
            0,
        )
        .await;
    let task_id = opened.field("id");
    let store = &app.app.store;
    // A slow copy of the first delivery's message read the task, then stalled ...
    let stale = store
        .get_task(&task_id.as_str().into())
        .await
        .unwrap()
        .unwrap();
    // ... while the first delivery got a question and the caller answered it.
    assert_eq!(
        app.app.worker().handle(&job_for(&task_id)).await,
        JobOutcome::Done
    );
    let answered = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            json!({"message": text_message("INV-7")}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);

    let refused = store
        .lease_delivery(&stale.id, stale.delivery_id.as_deref(), "stale", 60, 3)
        .await
        .unwrap();
    assert!(
        matches!(refused, TaskTransition::Refused(_)),
        "a lease for the replaced delivery, which would POST the old message: {refused:?}"
    );
    let current = store
        .get_task(&task_id.as_str().into())
        .await
        .unwrap()
        .unwrap();
    assert_ne!(current.delivery_id, stale.delivery_id);
    let taken = store
        .lease_delivery(&current.id, current.delivery_id.as_deref(), "fresh", 60, 3)
        .await
        .unwrap();
    assert!(matches!(taken, TaskTransition::Applied(_)), "{taken:?}");
}

/// The message the gateway sends for a task's current delivery: it names the delivery, the
/// tenant and the callee, so the worker takes the lease without reading the task.
fn named_job_for(task: &forgebench::domain::Task) -> Job {
    Job {
        message_id: format!("test-{}", task.id),
        receipt_handle: String::new(),
        body: json!({
            "task_id": task.id,
            "delivery_id": task.delivery_id,
            "tenant_id": task.tenant_id,
            "callee_id": task.callee_agent_id,
        })
        .to_string(),
    }
}

/// A named message takes the lease before it reads the caller's message; when the body store
/// fails then, the lease is given back and the attempt uncounted, however often it happens.
#[tokio::test]
async fn a_lease_taken_before_the_body_store_failed_is_given_back_uncounted() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = quiet_push_pair(&callee, true).await;
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            offloaded_text_message(),
            0,
        )
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let task_id = opened.field("id");
    let task = app
        .app
        .store
        .get_task(&task_id.clone().into())
        .await
        .unwrap()
        .unwrap();
    let s3_proxy = Proxy::start(&moto_endpoint()).await;
    let worker = Worker {
        bodies: forgebench::bodies::Bodies::new(
            forgebench_tests::s3_client(&s3_proxy.endpoint, None).await,
            app.app.config.body_bucket.clone(),
            app.app.config.kms_key_id.clone(),
        ),
        ..app.app.worker()
    };
    s3_proxy.cut();
    let max_attempts = app.app.config.retry_schedule.max_attempts();
    for round in 0..=max_attempts {
        let outcome = worker.handle(&named_job_for(&task)).await;
        assert!(
            matches!(outcome, JobOutcome::RetryIn(_)),
            "body store down, round {round}: {outcome:?}"
        );
        let stored = app.app.store.get_task(&task.id).await.unwrap().unwrap();
        assert_eq!(
            (stored.delivery_attempts, stored.attempt_number),
            (0, 0),
            "round {round}: the attempt is uncounted"
        );
    }
    assert!(callee.received().is_empty(), "nothing was POSTed");

    s3_proxy.restore();
    assert_eq!(worker.handle(&named_job_for(&task)).await, JobOutcome::Done);
    assert_eq!(callee.received().len(), 1);
    let log = app.delivery_attempts(&pair, &task_id).await;
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(
        (log[0]["attempt"].clone(), log[0]["status"].clone()),
        (json!(1), json!(200))
    );
}

/// The one message the gateway sent, as the worker receives it.
async fn the_sent_job(app: &TestApp) -> Job {
    let jobs = app.app.queue.receive(Duration::from_secs(5)).await.unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    jobs.into_iter().next().unwrap()
}

/// The message an open sends names its delivery, so a warm worker takes the lease without
/// reading the task, and the callee (agent, endpoint secret, signing key) comes from its
/// caches: before the POST the lease is its one call.
/// The worker's own store client is recorded, so nothing the open does meanwhile is counted.
#[tokio::test]
async fn a_warm_worker_leases_a_delivery_without_reading_the_task_or_the_callee() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let (app, pair) = quiet_push_pair(&callee, true).await;
    let recorder = forgebench_tests::Recorder::default();
    let worker = worker_through(&app, recorder.clone()).await;
    for round in ["warms the caches", "counted"] {
        let opened = app
            .open_task(&pair.caller.key, &pair.callee.name, text_message(round), 0)
            .await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        recorder.take();
        assert_eq!(
            worker.handle(&the_sent_job(&app).await).await,
            JobOutcome::Done
        );
    }
    let calls = recorder.take_dynamodb();
    // The lease, the POST, the attempt's record, the answer: no read, and no slot of the
    // tenant's pushes in flight, since the receiver answered the first round in time.
    assert_eq!(calls, ["UpdateItem", "PutItem", "UpdateItem"], "{calls:?}");
    assert_eq!(callee.received().len(), 2);
}

/// A failed attempt's release writes only the delivery's bookkeeping: the task's `updated_at`
/// moves and its status time stays the last change's (the item stores it apart only then).
#[tokio::test]
async fn a_released_attempt_moves_updated_at_and_keeps_the_status_time() {
    let callee = Callee::start(|_| Answer::text(503, "busy")).await;
    let app = spawn_app_with(Options {
        retry_seconds: "30",
        ..Options::local_push()
    })
    .await;
    let pair = app.push_pair(&callee.url).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("hi"), 0)
        .await;
    let task_id = opened.field("id");
    callee.wait_for(1).await;
    let mut read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    for _ in 0..50 {
        if app.delivery_attempts(&pair, &task_id).await.len() == 1
            && read.body["updated_at"] != read.body["status"]["timestamp"]
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        read = app
            .get_task(&pair.caller.key, &pair.callee.name, &task_id)
            .await;
    }
    assert_eq!(read.state(), "working", "being delivered: {}", read.text);
    let status_time = read.body["status"]["timestamp"].as_str().unwrap();
    let updated_at = read.body["updated_at"].as_str().unwrap();
    assert!(status_time < updated_at, "{}", read.text);
    assert!(
        status_time >= opened.body["status"]["timestamp"].as_str().unwrap(),
        "{}",
        read.text
    );
}
