//! Large tasks: 1 MiB messages and answers round-trip by pull and push with their bodies in the
//! body store (S3 on moto), the task item stays small, each documented limit holds at its edge,
//! and no single task can jam a callee's queue or the sweeper.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use forgebench::domain::content::MAX_TASK_CONTENT_BYTES;
use forgebench::domain::message::MAX_MESSAGE_BYTES;
use forgebench_tests::{
    moto_endpoint, s3_client, spawn_app, spawn_app_with, text_message, Answer, Callee, Options,
    Pair, Reply, TestApp,
};
use serde_json::{json, Value};

/// Text of `length` ASCII characters that differ along the string, so a body that came back
/// cut, shifted or mixed with another would not compare equal.
fn varied_text(length: usize, seed: usize) -> String {
    (0..length)
        .map(|index| (b'a' + ((index * 7 + seed) % 26) as u8) as char)
        .collect()
}

/// Parts whose list, inside an object with `fixed` other bytes, serializes to exactly `bytes`.
fn parts_of(bytes: usize, fixed: usize, seed: usize) -> Vec<Value> {
    const PART_ENVELOPE: usize = r#"{"text":""}"#.len();
    const LARGEST_TEXT: usize = 256 * 1024 - PART_ENVELOPE;
    let mut remaining = bytes - fixed - "[]".len();
    let mut parts = Vec::new();
    while remaining > 0 {
        let separator = usize::from(!parts.is_empty());
        let text = (remaining - separator - PART_ENVELOPE).min(LARGEST_TEXT);
        parts.push(json!({ "text": varied_text(text, seed + parts.len()) }));
        remaining -= separator + PART_ENVELOPE + text;
    }
    parts
}

/// A caller message of exactly `bytes` bytes serialized.
fn message_of(bytes: usize, seed: usize) -> Value {
    let fixed = json!({"role": "user", "parts": []}).to_string().len() - 2;
    let message = json!({"role": "user", "parts": parts_of(bytes, fixed, seed)});
    assert_eq!(message.to_string().len(), bytes);
    message
}

/// One artifact list of exactly `bytes` bytes serialized.
fn artifacts_of(bytes: usize, seed: usize) -> Value {
    let fixed = json!([{"name": "response", "parts": []}]).to_string().len() - 2;
    let artifacts = json!([{"name": "response", "parts": parts_of(bytes, fixed, seed)}]);
    assert_eq!(artifacts.to_string().len(), bytes);
    artifacts
}

async fn claim_ok(app: &TestApp, pair: &Pair) -> Reply {
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    claimed
}

/// The task item as the table holds it, and its size in bytes as stored (names and values).
async fn stored_item(app: &TestApp, task_id: &str) -> (Value, usize) {
    let output = app
        .app
        .store
        .client()
        .get_item()
        .table_name(&app.table)
        .key("pk", AttributeValue::S(format!("TASK#{task_id}")))
        .key("sk", AttributeValue::S("TASK".into()))
        .send()
        .await
        .unwrap();
    let item = output.item.unwrap();
    let size = item
        .iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    AttributeValue::S(text) => text.len(),
                    AttributeValue::L(items) => items
                        .iter()
                        .map(|item| item.as_s().map_or(1, String::len))
                        .sum(),
                    _ => 8,
                }
        })
        .sum();
    let history: Vec<Value> = item["history"]
        .as_l()
        .unwrap()
        .iter()
        .map(|entry| serde_json::from_str(entry.as_s().unwrap()).unwrap())
        .collect();
    (json!({ "history": history }), size)
}

/// How many bodies the stack's bucket holds.
async fn stored_objects(app: &TestApp) -> i32 {
    let s3 = s3_client(&moto_endpoint(), None).await;
    let listed = s3
        .list_objects_v2()
        .bucket(&app.body_bucket)
        .send()
        .await
        .unwrap();
    listed.key_count().unwrap_or_default()
}

/// Keys of every stored body of a task.
async fn object_keys(app: &TestApp, tenant_id: &str, task_id: &str) -> Vec<String> {
    let s3 = s3_client(&moto_endpoint(), None).await;
    let listed = s3
        .list_objects_v2()
        .bucket(&app.body_bucket)
        .prefix(format!("tasks/{tenant_id}/{task_id}/"))
        .send()
        .await
        .unwrap();
    listed
        .contents()
        .iter()
        .filter_map(|object| object.key().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_one_mebibyte_message_and_answer_round_trip_by_pull_intact() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let big = message_of(MAX_MESSAGE_BYTES, 1);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, big.clone(), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    assert_eq!(opened.body["input"]["message"], big);
    assert_eq!(opened.body["history"][0], big);
    let task_id = opened.field("id");

    let claimed = claim_ok(&app, &pair).await;
    assert_eq!(claimed.field("id"), task_id);
    assert_eq!(claimed.body["input"]["message"], big);

    let answer = artifacts_of(MAX_MESSAGE_BYTES, 2);
    let answered = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": answer}),
        )
        .await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    assert_eq!(answered.body["artifacts"], answer);

    for key in [&pair.caller.key, &pair.callee.key] {
        let read = app.get_task(key, &pair.callee.name, &task_id).await;
        assert_eq!(read.status, 200, "{}", read.text);
        assert_eq!(read.state(), "completed");
        assert_eq!(read.body["input"]["message"], big);
        assert_eq!(read.body["artifacts"], answer);
        assert_eq!(read.body["history"][0], big);
        let parts: Vec<Value> = answer[0]["parts"].as_array().unwrap().clone();
        assert_eq!(read.body["history"][1]["parts"], json!(parts));
    }

    // The item keeps references only; the bodies are private, KMS-encrypted objects.
    let (item, size) = stored_item(&app, &task_id).await;
    assert!(size < 8 * 1024, "the task item holds {size} bytes");
    assert!(item["history"][0]["$stored"]["key"].is_string(), "{item}");
    let keys = object_keys(&app, &pair.tenant.id, &task_id).await;
    assert_eq!(
        keys.len(),
        3,
        "opening message, artifacts, answer entry: {keys:?}"
    );
    let s3 = s3_client(&moto_endpoint(), None).await;
    let head = s3
        .head_object()
        .bucket(&app.body_bucket)
        .key(&keys[0])
        .send()
        .await
        .unwrap();
    assert_eq!(
        head.server_side_encryption(),
        Some(&aws_sdk_s3::types::ServerSideEncryption::AwsKms)
    );
    let key_id = app.app.config.kms_key_id.clone().unwrap();
    assert!(
        head.ssekms_key_id().is_some_and(|id| id.contains(&key_id)),
        "{:?}",
        head.ssekms_key_id()
    );
}

#[tokio::test]
async fn a_message_one_byte_over_a_mebibyte_is_400_and_nothing_is_stored() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let refused = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            message_of(MAX_MESSAGE_BYTES + 1, 3),
            0,
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    assert!(refused.text.contains("1048576 bytes"), "{}", refused.text);
    assert_eq!(stored_objects(&app).await, 0);
}

#[tokio::test]
async fn a_refused_caller_stores_nothing_however_large_its_message() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    let refused = app
        .open_task(
            &stranger.key,
            &pair.callee.name,
            message_of(MAX_MESSAGE_BYTES, 4),
            0,
        )
        .await;
    assert_eq!(refused.status, 403, "{}", refused.text);
    assert_eq!(refused.body["detail"]["code"], "not_permitted");
    assert_eq!(stored_objects(&app).await, 0);
}

/// A caller's answer to its task's question is judged before its body is stored: once the
/// binding is revoked, a large answer gets the one 403 and the body store holds nothing of it.
#[tokio::test]
async fn a_refused_answer_stores_nothing_however_large() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let task_id = app.asked(&pair).await;
    let revoked = app.revoke_binding(&pair).await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    let before = stored_objects(&app).await;
    let answered = app
        .post(
            &format!("/v1/agents/{}/tasks/{task_id}/messages", pair.callee.name),
            &pair.caller.key,
            json!({"message": message_of(MAX_MESSAGE_BYTES, 4)}),
        )
        .await;
    assert_eq!(answered.status, 403, "{}", answered.text);
    assert_eq!(answered.body["detail"]["code"], "not_permitted");
    assert_eq!(stored_objects(&app).await, before);
}

#[tokio::test]
async fn a_one_mebibyte_message_is_pushed_intact_and_a_one_mebibyte_answer_lands() {
    let answer = artifacts_of(MAX_MESSAGE_BYTES, 5);
    let body = json!({"state": "completed", "artifacts": answer.clone()});
    let callee = Callee::start(move |_| Answer::json(200, body.clone())).await;
    // Two 1 MiB bodies on a loaded 2-core machine can outlast the tests' 2 s push timeout, and a
    // timed-out POST is rightly sent again: this test is about the bodies, so it waits longer.
    let app = spawn_app_with(Options {
        push_timeout: std::time::Duration::from_secs(20),
        ..Options::local_push()
    })
    .await;
    let pair = app.push_pair(&callee.url).await;
    let big = message_of(MAX_MESSAGE_BYTES, 6);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, big.clone(), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &opened.field("id"))
        .await;
    assert_eq!(settled.state(), "completed", "{}", settled.body["error"]);
    let received = callee.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body["message"], big);
    assert_eq!(settled.body["artifacts"], answer);
    assert_eq!(settled.body["input"]["message"], big);
}

#[tokio::test]
async fn a_push_endpoint_answering_five_megabytes_fails_the_task_once_with_a_clear_error() {
    let huge = "x".repeat(5 * 1000 * 1000);
    let callee = Callee::start(move |_| Answer::text(200, &huge)).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.push_pair(&callee.url).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("go"), 0)
        .await;
    let task_id = opened.field("id");
    let settled = app
        .settled(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(settled.state(), "failed");
    let error = settled.field("error");
    assert!(error.starts_with("answer too large"), "{error}");
    // Once: no retry loop.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(callee.received().len(), 1);
    let attempts = app
        .get(
            &format!("/v1/agents/{}/tasks/{task_id}/attempts", pair.callee.name),
            &pair.tenant.admin_key,
        )
        .await;
    assert_eq!(attempts.body["items"].as_array().unwrap().len(), 1);
}

/// Pads a stored task (as an older version could have left it) to the largest size the table
/// takes, so that any write adding a few bytes to it fails.
async fn pad_to_the_item_limit(app: &TestApp, task_id: &str) {
    let update = |length: usize| {
        app.update_task_item(task_id)
            .update_expression("SET legacy_padding = :padding")
            .expression_attribute_values(":padding", AttributeValue::S("p".repeat(length)))
            .send()
    };
    let (mut fits, mut too_large) = (300_000usize, 410_000usize);
    while too_large - fits > 1 {
        let middle = (fits + too_large) / 2;
        if update(middle).await.is_ok() {
            fits = middle;
        } else {
            too_large = middle;
        }
    }
    update(fits).await.expect("the largest padding that fits");
}

#[tokio::test]
async fn a_task_no_claim_can_take_is_failed_and_every_other_task_is_claimed() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let jam = app.opened(&pair, "jam").await;
    pad_to_the_item_limit(&app, &jam).await;
    let big = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            message_of(MAX_MESSAGE_BYTES, 7),
            0,
        )
        .await;
    assert_eq!(big.status, 200, "{}", big.text);
    let mut expected = vec![big.field("id")];
    for index in 0..5 {
        expected.push(app.opened(&pair, &format!("small {index}")).await);
    }
    let mut claimed = Vec::new();
    for _ in 0..expected.len() {
        claimed.push(claim_ok(&app, &pair).await.field("id"));
    }
    claimed.sort();
    expected.sort();
    assert_eq!(
        claimed, expected,
        "every task but the jammed one, each once"
    );
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
    let jammed = app
        .get_task(&pair.caller.key, &pair.callee.name, &jam)
        .await;
    assert_eq!(jammed.state(), "failed");
    assert!(
        jammed.field("error").contains("could not be handed"),
        "{}",
        jammed.text
    );
}

#[tokio::test]
async fn a_sweep_over_a_task_whose_write_fails_expires_the_others_and_runs_the_outbox() {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let app = spawn_app_with(Options {
        push_worker: false,
        ..Options::local_push()
    })
    .await;
    let pair = app.pair().await;
    let patched = app
        .send(
            "PATCH",
            &format!("/v1/agents/{}", pair.callee.name),
            Some(&pair.tenant.admin_key),
            Some(json!({"claim_timeout_seconds": 1})),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    let mut tasks = Vec::new();
    for index in 0..3 {
        tasks.push(app.opened(&pair, &format!("t{index}")).await);
        claim_ok(&app, &pair).await;
    }
    let broken = tasks[1].clone();
    pad_to_the_item_limit(&app, &broken).await;

    // A push task whose enqueue was lost: on the outbox, fallen due.
    let pushee = app.create_agent(&pair.tenant.admin_key, "pushee").await;
    app.grant(&pair.tenant.admin_key, &pair.caller.name, &["pushee"])
        .await;
    let reply = app
        .set_endpoint(
            &pair.tenant.admin_key,
            "pushee",
            json!({ "url": callee.url }),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    let pushed = app
        .open_task(&pair.caller.key, &pushee.name, text_message("push"), 0)
        .await;
    let pushed = pushed.field("id");
    app.update_task_item(&pushed)
        .update_expression("SET gsi1sk = :due")
        .expression_attribute_values(
            ":due",
            AttributeValue::S(format!("2020-01-01T00:00:00.000000Z#{pushed}")),
        )
        .send()
        .await
        .unwrap();

    tokio::time::sleep(Duration::from_millis(1300)).await;
    let report = forgebench::sweeper::sweep(&app.app.store, &app.app.queue, &app.app.bodies).await;
    assert_eq!(report.expired.done, 2, "{report:?}");
    assert_eq!(report.expired.skipped, 1, "{report:?}");
    assert_eq!(report.enqueued.done, 1, "{report:?}");
    for task_id in [&tasks[0], &tasks[2]] {
        let read = app
            .get_task(&pair.caller.key, &pair.callee.name, task_id)
            .await;
        assert_eq!(read.state(), "failed");
    }
    // The failing entry was set aside: the next sweep does not stumble on it again.
    let again = forgebench::sweeper::sweep(&app.app.store, &app.app.queue, &app.app.bodies).await;
    assert_eq!(again.expired.skipped, 0, "{again:?}");
}

#[tokio::test]
async fn each_limit_holds_at_its_edge_and_the_error_names_it() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let open = |message: Value| {
        let (app, pair) = (&app, &pair);
        async move {
            app.open_task(&pair.caller.key, &pair.callee.name, message, 0)
                .await
        }
    };
    let parts = |count: usize| json!({"parts": vec![json!({"text": "x"}); count]});
    assert_eq!(open(parts(64)).await.status, 200);
    let refused = open(parts(65)).await;
    assert_eq!(refused.status, 400);
    assert!(refused.text.contains("64 parts"), "{}", refused.text);

    let text = |length: usize| json!({"parts": [{"text": "é".repeat(length)}]});
    let refused = open(text(262_145)).await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.text.contains("262144 characters"),
        "{}",
        refused.text
    );

    let envelope = r#"{"text":""}"#.len();
    let ascii = |length: usize| json!({"parts": [{"text": "a".repeat(length)}]});
    assert_eq!(open(ascii(256 * 1024 - envelope)).await.status, 200);
    let refused = open(ascii(256 * 1024 - envelope + 1)).await;
    assert_eq!(refused.status, 400);
    assert!(refused.text.contains("262144 bytes"), "{}", refused.text);

    let mut nested = json!(1);
    for _ in 0..32 {
        nested = json!([nested]);
    }
    assert_eq!(
        open(json!({"parts": [{"data": nested.clone()}]}))
            .await
            .status,
        200
    );
    let refused = open(json!({"parts": [{"data": [nested]}]})).await;
    assert_eq!(refused.status, 400);
    assert!(refused.text.contains("32 levels"), "{}", refused.text);

    assert_eq!(open(message_of(MAX_MESSAGE_BYTES, 8)).await.status, 200);

    // Results: 64 artifacts, and 1 MiB of them in all.
    let task_id = app.opened(&pair, "artifacts").await;
    let artifacts = |count: usize| vec![json!({"name": "a", "parts": [{"text": "x"}]}); count];
    let held = loop {
        let claimed = claim_ok(&app, &pair).await;
        if claimed.field("id") == task_id {
            break claimed;
        }
    };
    let refused = app
        .post_result(
            &pair.callee.key,
            &held.field("id"),
            json!({"state": "completed", "artifacts": artifacts(65)}),
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(refused.text.contains("64 artifacts"), "{}", refused.text);
    let refused = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": artifacts_of(MAX_MESSAGE_BYTES + 1, 9)}),
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(refused.text.contains("1048576 bytes"), "{}", refused.text);
    let done = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": artifacts(64)}),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
}

#[tokio::test]
async fn a_conversation_holds_100_tasks_and_the_101st_is_409_limit_reached() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let first = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("0"), 0)
        .await;
    let context_id = first.field("context_id");
    let open_in_context = |index: usize| {
        let (app, pair, context_id) = (&app, &pair, context_id.clone());
        async move {
            app.post(
                &format!("/v1/agents/{}/tasks", pair.callee.name),
                &pair.caller.key,
                json!({"message": text_message(&index.to_string()), "context_id": context_id}),
            )
            .await
        }
    };
    for index in 1..100 {
        let opened = open_in_context(index).await;
        assert_eq!(opened.status, 200, "{index}: {}", opened.text);
    }
    let full = open_in_context(100).await;
    assert_eq!(full.status, 409, "{}", full.text);
    assert_eq!(full.body["detail"]["code"], "limit_reached");
    assert!(full.text.contains("100 tasks"), "{}", full.text);
}

#[tokio::test]
async fn a_task_holds_at_most_four_mebibytes_of_bodies_and_more_is_413_too_large() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    const BODY: usize = 1_040_000;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, message_of(BODY, 10), 0)
        .await;
    let task_id = opened.field("id");
    claim_ok(&app, &pair).await;
    let progress = |seed: usize| {
        let mut message = message_of(BODY, seed);
        message["role"] = json!("agent");
        let (app, pair, task_id) = (&app, &pair, task_id.clone());
        async move {
            app.post(
                &format!("/v1/agents/me/tasks/{task_id}/progress"),
                &pair.callee.key,
                json!({ "message": message }),
            )
            .await
        }
    };
    let mut accepted = 1;
    loop {
        let reply = progress(20 + accepted).await;
        if reply.status != 200 {
            assert_eq!(reply.status, 413, "{}", reply.text);
            assert_eq!(reply.body["detail"]["code"], "too_large");
            assert!(
                reply.text.contains(&MAX_TASK_CONTENT_BYTES.to_string()),
                "{}",
                reply.text
            );
            break;
        }
        accepted += 1;
    }
    assert_eq!(accepted as u64, MAX_TASK_CONTENT_BYTES / BODY as u64);
    // The task still takes a small answer, and reads back whole.
    let done = app
        .post_result(
            &pair.callee.key,
            &task_id,
            json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(read.body["history"].as_array().unwrap().len(), accepted + 1);
}

#[tokio::test]
async fn bodies_expire_with_their_task_and_an_expired_task_is_gone() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            message_of(64 * 1024, 11),
            0,
        )
        .await;
    let task_id = opened.field("id");
    let retention_days = app.app.config.task_retention_days;
    let template: serde_norway::Value =
        serde_norway::from_str(forgebench::store::schema::TEMPLATE).unwrap();
    assert_eq!(
        template["Parameters"]["TaskRetentionDays"]["Default"].as_u64(),
        Some(retention_days)
    );

    // The bucket's rule expires every body under tasks/ after the task's retention ...
    let s3 = s3_client(&moto_endpoint(), None).await;
    let lifecycle = s3
        .get_bucket_lifecycle_configuration()
        .bucket(&app.body_bucket)
        .send()
        .await
        .unwrap();
    let rule = &lifecycle.rules()[0];
    assert_eq!(
        rule.expiration().and_then(|e| e.days()),
        Some(retention_days as i32)
    );
    let prefix = rule.filter().and_then(|filter| filter.prefix()).unwrap();
    let keys = object_keys(&app, &pair.tenant.id, &task_id).await;
    assert_eq!(keys.len(), 1);
    assert!(keys[0].starts_with(prefix), "{} under {prefix}", keys[0]);
    let access = s3
        .get_public_access_block()
        .bucket(&app.body_bucket)
        .send()
        .await
        .unwrap();
    let access = access.public_access_block_configuration().unwrap();
    assert_eq!(access.block_public_acls(), Some(true));
    assert_eq!(access.restrict_public_buckets(), Some(true));

    // ... and the task item expires at the same time (the table's time to live).
    let stored = app
        .app
        .store
        .get_task(&task_id.as_str().into())
        .await
        .unwrap()
        .unwrap();
    let expected = forgebench::domain::clock::unix_now() + retention_days * 86_400;
    let expires_at = stored.expires_at.unwrap();
    assert!(
        expires_at <= expected && expires_at + 60 > expected,
        "{expires_at}"
    );
    let ttl = app
        .app
        .store
        .client()
        .describe_time_to_live()
        .table_name(&app.table)
        .send()
        .await
        .unwrap();
    assert_eq!(
        ttl.time_to_live_description()
            .and_then(|description| description.attribute_name()),
        Some("expires_at")
    );

    // Past its retention, the task is gone to every reader even before the store deletes it.
    app.update_task_item(&task_id)
        .update_expression("SET expires_at = :past")
        .expression_attribute_values(":past", AttributeValue::N("1000".into()))
        .send()
        .await
        .unwrap();
    let gone = app
        .get_task(&pair.caller.key, &pair.callee.name, &task_id)
        .await;
    assert_eq!(gone.status, 404, "{}", gone.text);
}

/// Three completed tasks, each a 1 MiB message answered with 1 MiB of artifacts (their bodies in
/// the body store): a listing reads only the bodies its view shows, and every page stops short
/// of 4 MiB (`PAGE_BYTES`), with the cursor to go on, so no page outgrows a Lambda response or
/// its function's memory however large its tasks.
#[tokio::test]
async fn a_listing_reads_only_the_bodies_it_shows_and_no_page_outgrows_four_mebibytes() {
    use forgebench::domain::task::PAGE_BYTES;
    let recorder = forgebench_tests::Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let mut ids = Vec::new();
    for seed in 0..3 {
        let opened = app
            .open_task(
                &pair.caller.key,
                &pair.callee.name,
                message_of(MAX_MESSAGE_BYTES, 20 + seed),
                0,
            )
            .await;
        assert_eq!(opened.status, 200, "{}", opened.text);
        claim_ok(&app, &pair).await;
        let answer =
            json!({"state": "completed", "artifacts": artifacts_of(MAX_MESSAGE_BYTES, 30 + seed)});
        let done = app
            .post_result(&pair.callee.key, &opened.field("id"), answer)
            .await;
        assert_eq!(done.status, 200, "{}", done.text);
        ids.push(opened.field("id"));
    }
    ids.sort();
    let reads = |recorder: &forgebench_tests::Recorder| {
        recorder
            .take_requests()
            .into_iter()
            .filter(|(operation, _)| operation == "GetObject")
            .count()
    };
    let fits = |reply: &Reply| {
        assert!(
            reply.text.len() as u64 <= PAGE_BYTES + 64 * 1024,
            "a page of {} bytes",
            reply.text.len()
        );
    };

    // Statuses only: no body is read.
    reads(&recorder);
    let list = |params: Value| app.a2a_rpc(&pair.callee.id, &pair.caller.key, "ListTasks", params);
    let statuses = list(json!({"historyLength": 0})).await;
    assert_eq!(
        statuses.body["result"]["tasks"].as_array().map(Vec::len),
        Some(3),
        "{}",
        &statuses.text[..200.min(statuses.text.len())]
    );
    assert_eq!(
        reads(&recorder),
        0,
        "a listing without history or artifacts read bodies"
    );

    // Everything, page by page: each page under the limit, every task once, in full.
    let mut listed = Vec::new();
    let mut token = String::new();
    loop {
        let page = list(json!({"includeArtifacts": true, "pageToken": token})).await;
        fits(&page);
        for task in page.body["result"]["tasks"].as_array().expect("tasks") {
            assert_eq!(
                task["artifacts"][0]["parts"].as_array().map(Vec::len),
                artifacts_of(MAX_MESSAGE_BYTES, 30)[0]["parts"]
                    .as_array()
                    .map(Vec::len),
                "artifacts shown in full"
            );
            listed.push(task["id"].as_str().unwrap().to_owned());
        }
        token = page.body["result"]["nextPageToken"]
            .as_str()
            .unwrap()
            .to_owned();
        if token.is_empty() {
            break;
        }
    }
    listed.sort();
    assert_eq!(listed, ids);

    // The search: the same limit.
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => format!("/v1/tasks?agent={}", pair.caller.name),
            Some(cursor) => format!("/v1/tasks?agent={}&cursor={cursor}", pair.caller.name),
        };
        let page = app.get(&path, &pair.tenant.admin_key).await;
        assert_eq!(
            page.status,
            200,
            "{}",
            &page.text[..200.min(page.text.len())]
        );
        fits(&page);
        for item in page.body["items"].as_array().expect("items") {
            assert_eq!(
                item["input"]["message"]["parts"].as_array().map(Vec::len),
                message_of(MAX_MESSAGE_BYTES, 20)["parts"]
                    .as_array()
                    .map(Vec::len),
                "input shown in full"
            );
            found.push(item["id"].as_str().unwrap().to_owned());
        }
        match page.body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    found.sort();
    assert_eq!(found, ids);
}
