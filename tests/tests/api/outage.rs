//! A backing store that stops answering: a 503 with the documented body, and nothing
//! half-written.

use forgebench_tests::faults::{Fault, FaultProxy};
use forgebench_tests::{
    dynamodb_endpoint, moto_endpoint, offloaded_text_message, spawn_app_with, text_message,
    Options, Proxy,
};
use serde_json::json;

#[tokio::test]
async fn dynamodb_stopped_mid_test_is_503_and_nothing_is_half_written() {
    let proxy = Proxy::start(&dynamodb_endpoint()).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: proxy.endpoint.clone(),
        key_cache_seconds: 60,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let first = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("kept"), 0)
        .await;
    assert_eq!(first.status, 200);
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.status, 200);
    let items_before = app.scan_all().await.len();

    proxy.cut();
    let open = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("lost"), 0)
        .await;
    assert_eq!(open.status, 503, "{}", open.text);
    assert_eq!(open.body["detail"]["code"], "unavailable");
    // The id a user reports with a 5xx is the one its logs carry.
    let request_id = open.headers["x-request-id"].to_str().unwrap();
    assert_eq!(open.body["detail"]["request_id"], request_id);
    assert!(
        !open.text.to_lowercase().contains("dynamodb"),
        "no internals: {}",
        open.text
    );
    let result = app
        .post_result(
            &pair.callee.key,
            &first.field("id"),
            json!({"state": "completed"}),
        )
        .await;
    assert_eq!(result.status, 503);
    let grant = app
        .grant(
            &pair.tenant.admin_key,
            &pair.callee.id,
            &[&pair.caller.name],
        )
        .await;
    assert_eq!(grant.status, 503);

    proxy.restore();
    // Nothing of the failed calls landed: no new item at all, the first task still working.
    assert_eq!(app.scan_all().await.len(), items_before);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &first.field("id"))
        .await;
    assert_eq!(read.state(), "working");
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
    // And the gateway works again once the store answers.
    let after = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("after"),
            0,
        )
        .await;
    assert_eq!(after.status, 200);
}

/// A claim that cannot hand its task over (the body store is unreachable) puts the task back and
/// takes its entry out of the task's change log: however often that happens, the log (and every
/// event stream) shows one claim.
#[tokio::test]
async fn a_claim_undone_for_an_unreachable_body_store_takes_its_event_back() {
    let proxy = Proxy::start(&forgebench_tests::moto_endpoint()).await;
    let app = spawn_app_with(Options {
        moto_endpoint: proxy.endpoint.clone(),
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
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

    proxy.cut();
    for _ in 0..3 {
        let claimed = app.claim(&pair.callee.key, 0).await;
        assert_eq!(claimed.status, 503, "{}", claimed.text);
    }
    let stored = app
        .app
        .store
        .get_task(&task_id.clone().into())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.state.as_str(), "submitted");
    assert_eq!(stored.event_count(), 0, "{:?}", stored.changes);

    proxy.restore();
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    assert_eq!(claimed.field("id"), task_id);
    let mut stream = app
        .events(&pair.caller.key, &pair.callee.name, &task_id, Some("0"))
        .await;
    let claim = stream.next_event().await.expect("the claim");
    assert_eq!(
        (claim.id.as_deref(), claim.event.as_deref()),
        (Some("1"), Some("status"))
    );
    let done = app
        .post_result(&pair.callee.key, &task_id, json!({"state": "completed"}))
        .await;
    assert_eq!(done.status, 200, "{}", done.text);
    let rest: Vec<Option<String>> = stream.rest().await.into_iter().map(|e| e.id).collect();
    assert_eq!(rest, [Some("2".to_owned())]);
}

/// A failing service need not say why: a bare `500` with no error code (a load balancer's, a
/// service's own) from DynamoDB or S3 is the service being unavailable, `503` with
/// `Retry-After`, never a `500` that reads as the gateway's own bug.
#[tokio::test]
async fn bare_500s_from_the_store_or_the_body_store_are_503_and_pass_when_they_stop() {
    let store = FaultProxy::start(&dynamodb_endpoint()).await;
    let services = FaultProxy::start(&moto_endpoint()).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: store.endpoint.clone(),
        moto_endpoint: services.endpoint.clone(),
        key_cache_seconds: 60,
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
    let open = |message| app.open_task(&pair.caller.key, &pair.callee.name, message, 0);
    assert_eq!(open(text_message("warm")).await.status, 200);

    store.set(Fault::internal_error());
    for reply in [
        open(text_message("refused")).await,
        app.claim(&pair.callee.key, 0).await,
    ] {
        assert_eq!(reply.status, 503, "{}", reply.text);
        assert_eq!(reply.body["detail"]["code"], "unavailable");
        assert_eq!(reply.headers["retry-after"], "1");
    }
    store.set(Fault::None);

    services.set(Fault::internal_error());
    let offloaded = open(offloaded_text_message()).await;
    assert_eq!(offloaded.status, 503, "{}", offloaded.text);
    assert_eq!(offloaded.body["detail"]["code"], "unavailable");
    services.set(Fault::None);

    assert_eq!(open(offloaded_text_message()).await.status, 200);
    assert!(store.faulted() > 0 && services.faulted() > 0);
}
