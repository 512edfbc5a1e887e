//! Concurrency: real concurrent HTTP clients racing on claims and on cancel-versus-result.

use std::collections::HashSet;

use forgebench_tests::{spawn_app, text_message};
use futures::future::join_all;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn eight_pollers_claim_five_hundred_tasks_each_exactly_once() {
    const TASKS: usize = 500;
    const POLLERS: usize = 8;
    let app = spawn_app().await;
    let pair = app.pair().await;

    // Open the tasks from a few concurrent callers so the queue fills while pollers run.
    let opens = (0..TASKS).map(|index| {
        let app = &app;
        let key = pair.caller.key.clone();
        let callee = pair.callee.name.clone();
        async move {
            let reply = app
                .open_task(&key, &callee, text_message(&format!("task {index}")), 0)
                .await;
            assert_eq!(reply.status, 200, "{}", reply.text);
            reply.field("id")
        }
    });
    let pollers = (0..POLLERS).map(|_| {
        let base = app.base.clone();
        let key = pair.callee.key.clone();
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut claimed = Vec::new();
            let mut empty_in_a_row = 0;
            while empty_in_a_row < 2 {
                let response = http
                    .get(format!("{base}/v1/agents/me/tasks/next?wait=1"))
                    .bearer_auth(&key)
                    .send()
                    .await
                    .expect("claim");
                if response.status() == 204 {
                    empty_in_a_row += 1;
                    continue;
                }
                let status = response.status();
                let task: Value = response.json().await.expect("task");
                assert_eq!(status, 200, "{task}");
                empty_in_a_row = 0;

                assert_eq!(task["status"]["state"], "working");
                claimed.push(task["id"].as_str().unwrap().to_owned());
            }
            claimed
        })
    });
    let pollers: Vec<_> = pollers.collect();
    let opened: Vec<String> = futures::stream::iter(opens)
        .buffer_unordered(16)
        .collect()
        .await;
    let mut all_claims = Vec::new();
    for poller in join_all(pollers).await {
        all_claims.extend(poller.expect("poller"));
    }
    let unique: HashSet<&String> = all_claims.iter().collect();
    assert_eq!(all_claims.len(), TASKS, "every task claimed, none twice");
    assert_eq!(unique.len(), TASKS);
    let opened: HashSet<&String> = opened.iter().collect();
    assert_eq!(
        unique, opened,
        "the claimed tasks are exactly the opened ones"
    );
}

use futures::StreamExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancel_and_result_at_the_same_moment_exactly_one_wins_every_time() {
    // 200 races, run as 4 lanes of 50 at once, each lane on its own caller and callee so a
    // lane's claim can only take that lane's task.
    const LANES: usize = 4;
    const ROUNDS_PER_LANE: usize = 50;
    let app = spawn_app().await;
    let lanes = (0..LANES).map(|lane| {
        let app = &app;
        async move {
            let pair = app.pair().await;
            let mut wins = Vec::new();
            for round in 0..ROUNDS_PER_LANE {
                wins.push(race_cancel_and_result(app, &pair, &format!("{lane}.{round}")).await);
            }
            wins
        }
    });
    let wins: Vec<Winner> = join_all(lanes).await.into_iter().flatten().collect();
    let canceled_wins = wins.iter().filter(|w| **w == Winner::Cancel).count();
    let completed_wins = wins.iter().filter(|w| **w == Winner::Result).count();
    assert_eq!(canceled_wins + completed_wins, LANES * ROUNDS_PER_LANE);
    println!("cancel won {canceled_wins} rounds, result won {completed_wins}");
}

#[derive(Debug, PartialEq, Eq)]
enum Winner {
    Cancel,
    Result,
}

/// One round: a claimed task, its cancel and its result sent at the same moment; exactly one
/// wins, and the stored state is the winner's.
async fn race_cancel_and_result(
    app: &forgebench_tests::TestApp,
    pair: &forgebench_tests::Pair,
    round: &str,
) -> Winner {
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message(round), 0)
        .await;
    let task_id = opened.field("id");
    assert_eq!(app.claim(&pair.callee.key, 1).await.field("id"), task_id);
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
    let cancel = {
        let (base, key, callee, id, barrier) = (
            app.base.clone(),
            pair.caller.key.clone(),
            pair.callee.name.clone(),
            task_id.clone(),
            barrier.clone(),
        );
        tokio::spawn(async move {
            let request = reqwest::Client::new()
                .post(format!("{base}/v1/agents/{callee}/tasks/{id}/cancel"))
                .bearer_auth(key);
            barrier.wait().await;
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        })
    };
    let result = {
        let (base, key, id, barrier) = (
            app.base.clone(),
            pair.callee.key.clone(),
            task_id.clone(),
            barrier.clone(),
        );
        tokio::spawn(async move {
            let request = reqwest::Client::new()
                .post(format!("{base}/v1/agents/me/tasks/{id}/result"))
                .bearer_auth(key)
                .json(&json!({"state": "completed", "artifacts": []}));
            barrier.wait().await;
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        })
    };
    let (cancel_status, cancel_body) = cancel.await.unwrap();
    let (result_status, result_body) = result.await.unwrap();
    assert_eq!(cancel_status, 200, "cancel always answers 200 ({round})");
    let final_state = app
        .app
        .store
        .get_task(&task_id.as_str().into())
        .await
        .unwrap()
        .unwrap()
        .state;
    match (result_status, cancel_body["status"]["state"].as_str()) {
        (200, Some("completed")) => {
            // The result won; the cancel was a no-op on a finished task.
            assert_eq!(result_body["status"]["state"], "completed");
            assert_eq!(final_state, forgebench::domain::TaskState::Completed);
            Winner::Result
        }
        (409, Some("canceled")) => {
            assert_eq!(
                result_body,
                json!({"detail": {"code": "task_not_working", "state": "canceled"}})
            );
            assert_eq!(final_state, forgebench::domain::TaskState::Canceled);
            Winner::Cancel
        }
        other => panic!("round {round}: both or neither won: {other:?} {result_body}"),
    }
}

/// An agent retired while one of its keys is being issued ends with no key that authenticates:
/// either the key is issued first and the retirement revokes it, or the retirement comes first
/// and the issue is refused (or asked to retry). Raced by real concurrent clients, many times.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_issued_while_its_agent_is_retired_never_outlives_the_retirement() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let admin = &tenant.admin_key;
    let mut issued = 0;
    for round in 0..24 {
        let name = format!("racer-{round}");
        let created = app.post("/v1/agents", admin, json!({ "name": name })).await;
        assert_eq!(created.status, 201, "{}", created.text);
        let id = created.field("id");
        let (agent_path, keys_path) = (format!("/v1/agents/{id}"), format!("/v1/agents/{id}/keys"));
        let retire = app.send(
            "PATCH",
            &agent_path,
            Some(admin),
            Some(json!({"status": "retired"})),
        );
        let issue = app.post(&keys_path, admin, json!({}));
        let (retired, key) = tokio::join!(retire, issue);
        if retired.status == 409 {
            // The key came first and moved the agent on: retire again, now that it is seen.
            let again = app
                .send(
                    "PATCH",
                    &format!("/v1/agents/{id}"),
                    Some(admin),
                    Some(json!({"status": "retired"})),
                )
                .await;
            assert_eq!(again.status, 200, "{}", again.text);
        } else {
            assert_eq!(retired.status, 200, "{}", retired.text);
        }
        let keys = app.get(&format!("/v1/agents/{id}/keys"), admin).await;
        let live: Vec<&Value> = keys.body["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|key| key["revoked_at"].is_null())
            .collect();
        assert!(
            live.is_empty(),
            "round {round}: a retired agent holds {live:?}"
        );
        if key.status == 201 {
            issued += 1;
            let used = app.get("/v1/agents/me", &key.field("key")).await;
            assert_eq!(used.status, 401, "round {round}: {}", used.text);
        } else {
            assert_eq!(key.status, 409, "round {round}: {}", key.text);
        }
    }
    eprintln!("{issued} of 24 keys were issued before their agent was retired");
}
