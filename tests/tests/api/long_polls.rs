//! What an idle long poll costs the store: its reads slow down as its subject stays quiet, and
//! the slot it holds is taken without a read.

use forgebench_tests::{spawn_app_with, text_message, Options, Recorder};

/// Store requests of `operation` among `calls`.
fn count(calls: &[String], operation: &str) -> usize {
    calls.iter().filter(|call| *call == operation).count()
}

#[tokio::test]
async fn an_idle_wait_reads_less_the_longer_nothing_changes_and_takes_its_slot_without_a_read() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        deployed_poll_intervals: true,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("quiet"),
            0,
        )
        .await;
    let task_path = format!("/v1/agents/{}/tasks/{}", pair.callee.id, opened.field("id"));
    app.get(&task_path, &pair.caller.key).await; // the caller's key is in the cache now
    recorder.take();

    let waited = app
        .get(&format!("{task_path}?wait=6"), &pair.caller.key)
        .await;
    assert_eq!(waited.state(), "submitted", "{}", waited.text);
    let calls = recorder.take_dynamodb();
    // Every 100 ms (the first interval) six seconds would take 60 reads; paced by a sixth of how
    // long the task has been quiet (every 100 ms for 0.6 s, then 120, 140, ... up to 750 ms)
    // about 21.
    assert!(count(&calls, "GetItem") <= 26, "{calls:?}");
    // The slots, the key holder's and the tenant's: one blind conditional write each and their
    // release; no read of the held slots.
    assert_eq!(count(&calls, "Query"), 0, "{calls:?}");
    assert_eq!(count(&calls, "PutItem"), 2, "{calls:?}");
    assert_eq!(count(&calls, "DeleteItem"), 2, "{calls:?}");

    // The callee's queue, empty for six seconds: paced from the start of its request.
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 200);
    recorder.take();
    assert_eq!(app.claim(&pair.callee.key, 6).await.status, 204);
    let calls = recorder.take_dynamodb();
    let queue_reads = count(&calls, "Query");
    assert!((3..=20).contains(&queue_reads), "{calls:?}");
}

/// Eight waits of one callee in one process read its idle queue about as often as one wait at
/// its fastest (every 100 ms), not eight times as often: a read of the queue one began serves
/// the others looking again within the shortest poll interval. A task opened meanwhile is still
/// claimed.
#[tokio::test]
async fn waits_of_one_callee_in_one_process_share_their_reads_of_its_idle_queue() {
    let recorder = Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
    recorder.take();
    let waits: Vec<_> = (0..8)
        .map(|_| spawn_claim(&app, &pair.callee.key, 2))
        .collect();
    let mut statuses = Vec::new();
    for wait in waits {
        statuses.push(wait.await.unwrap());
    }
    assert!(statuses.iter().all(|status| *status == 204), "{statuses:?}");
    let calls = recorder.take_dynamodb();
    // Eight waits polling every 100 ms for 2 s would read the queue about 160 times; shared,
    // about 20 (one per interval) and the first look of each.
    let queue_reads = count(&calls, "Query");
    assert!(queue_reads <= 45, "{queue_reads} queue reads: {calls:?}");
    // The shared reads still see a task as soon as one is queued.
    let claim = spawn_claim(&app, &pair.callee.key, 5);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("now"), 0)
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    assert_eq!(claim.await.unwrap(), 200);
}

/// A claim with `wait` by `key`, on a client of its own, running in the background: its status.
fn spawn_claim(
    app: &forgebench_tests::TestApp,
    key: &str,
    wait: u32,
) -> tokio::task::JoinHandle<u16> {
    let (base, key) = (app.base.clone(), key.to_owned());
    tokio::spawn(async move {
        reqwest::Client::new()
            .get(format!("{base}/v1/agents/me/tasks/next?wait={wait}"))
            .bearer_auth(key)
            .send()
            .await
            .expect("claim")
            .status()
            .as_u16()
    })
}
