//! Security fixes from the review: answers after a commit, the operator key, the Authorization
//! scheme, agents that stop being active, key listing and revocation.

use std::time::Duration;

use forgebench::store::schema::TEMPLATE;
use forgebench_tests::{
    dynamodb_endpoint, spawn_app, spawn_app_with, text_message, Options, Proxy,
};

#[tokio::test]
async fn an_open_that_committed_answers_with_its_task_when_reading_it_again_fails() {
    let proxy = Proxy::start(&dynamodb_endpoint()).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: proxy.endpoint.clone(),
        key_cache_seconds: 60,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let opening = {
        let (base, key, callee) = (
            app.base.clone(),
            pair.caller.key.clone(),
            pair.callee.id.clone(),
        );
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("{base}/v1/agents/{callee}/tasks?wait=3"))
                .bearer_auth(key)
                .json(&serde_json::json!({"message": text_message("kept once")}))
                .send()
                .await
                .expect("open")
        })
    };
    wait_for_a_task_item(&app).await;
    proxy.cut();
    let response = opening.await.unwrap();
    proxy.restore();
    assert_eq!(
        response.status(),
        200,
        "the open committed: no error inviting a retry"
    );
    let call_id = response.headers()["x-call-id"].to_str().unwrap().to_owned();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["status"]["state"], "submitted");
    assert_eq!(body["call_id"], call_id.as_str());
    assert_eq!(body["input"]["message"], text_message("kept once"));
    let read = app
        .get_task(
            &pair.caller.key,
            &pair.callee.name,
            body["id"].as_str().unwrap(),
        )
        .await;
    assert_eq!(read.status, 200, "{}", read.text);
}

/// Waits, reading the store past the proxy, until the open has committed its task: the cut must
/// come after the commit, however slow the machine.
async fn wait_for_a_task_item(app: &forgebench_tests::TestApp) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let committed = app.scan_all().await.iter().any(|item| {
            item.get("pk")
                .and_then(|pk| pk.as_s().ok())
                .is_some_and(|pk| pk.starts_with("TASK#"))
                && item.get("sk").and_then(|sk| sk.as_s().ok()) == Some(&"TASK".to_owned())
        });
        if committed {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the open never committed its task"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn the_operator_key_is_deployed_as_its_hash_only() {
    let template: serde_norway::Value = serde_norway::from_str(TEMPLATE).unwrap();
    let parameter = &template["Parameters"]["OperatorKeyHash"];
    assert_eq!(parameter["NoEcho"], true);
    assert_eq!(parameter["AllowedPattern"], "^[0-9a-f]{64}$");
    assert!(template["Parameters"].get("OperatorKey").is_none());
    let mut hashed = 0;
    for (name, resource) in template["Resources"].as_mapping().unwrap() {
        let variables = &resource["Properties"]["Environment"]["Variables"];
        assert!(
            variables.get("FORGEBENCH_OPERATOR_KEY").is_none(),
            "{name:?} carries the operator key in plain text"
        );
        hashed += usize::from(variables.get("FORGEBENCH_OPERATOR_KEY_HASH").is_some());
    }
    assert_eq!(
        hashed, 3,
        "create-tenant, rotate-signing-key, retire-signing-key"
    );
}

async fn set_status(app: &forgebench_tests::TestApp, admin: &str, agent: &str, status: &str) {
    let reply = app
        .send(
            "PATCH",
            &format!("/v1/agents/{agent}"),
            Some(admin),
            Some(serde_json::json!({ "status": status })),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

#[tokio::test]
async fn a_paused_agents_keys_stop_working_for_everything_until_it_is_active_again() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.clone();
    let queued = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("queued"),
            0,
        )
        .await;
    assert_eq!(queued.status, 200);

    set_status(&app, &admin, &pair.caller.name, "paused").await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 0)
        .await;
    assert_eq!(opened.status, 403, "{}", opened.text);
    assert_eq!(app.get("/v1/agents/me", &pair.caller.key).await.status, 403);
    let read = app
        .get_task(&pair.caller.key, &pair.callee.name, &queued.field("id"))
        .await;
    assert_eq!(read.status, 403);

    set_status(&app, &admin, &pair.callee.name, "paused").await;
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 403);
    // A key issued while the agent is paused is suspended too.
    let fresh = app.issue_key(&admin, &pair.callee.name).await;
    assert_eq!(app.get("/v1/agents/me", &fresh).await.status, 403);

    set_status(&app, &admin, &pair.caller.name, "active").await;
    set_status(&app, &admin, &pair.callee.name, "active").await;
    assert_eq!(app.get("/v1/agents/me", &pair.caller.key).await.status, 200);
    assert_eq!(app.get("/v1/agents/me", &fresh).await.status, 200);
    let claimed = app.claim(&pair.callee.key, 0).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    assert_eq!(claimed.field("id"), queued.field("id"));
}

#[tokio::test]
async fn retiring_an_agent_revokes_every_key_it_holds() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.clone();
    let second = app.issue_key(&admin, &pair.callee.name).await;
    let queued = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("queued"),
            0,
        )
        .await;
    set_status(&app, &admin, &pair.callee.name, "retired").await;
    for key in [&pair.callee.key, &second] {
        assert_eq!(app.get("/v1/agents/me", key).await.status, 401);
        assert_eq!(app.claim(key, 0).await.status, 401);
        let result = app
            .post_result(
                key,
                &queued.field("id"),
                serde_json::json!({"state": "completed"}),
            )
            .await;
        assert_eq!(result.status, 401);
    }
    let listed = app
        .get(&format!("/v1/agents/{}/keys", pair.callee.name), &admin)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let items = listed.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(
        items.iter().all(|item| item["revoked_at"].is_string()),
        "{items:?}"
    );
    let refused = app
        .post(
            &format!("/v1/agents/{}/keys", pair.callee.name),
            &admin,
            serde_json::json!({}),
        )
        .await;
    assert_eq!(refused.status, 409, "{}", refused.text);
}

#[tokio::test]
async fn agent_keys_are_listed_with_created_and_last_used_times_and_never_a_secret() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = pair.tenant.admin_key.clone();
    let unused = app.issue_key(&admin, &pair.caller.name).await;
    assert_eq!(app.get("/v1/agents/me", &pair.caller.key).await.status, 200);
    let listed = app
        .get(&format!("/v1/agents/{}/keys", pair.caller.name), &admin)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let items = listed.body["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2);
    let used: Vec<_> = items
        .iter()
        .filter(|item| item["last_used_at"].is_string())
        .collect();
    assert_eq!(used.len(), 1, "{items:?}");
    assert!(items
        .iter()
        .all(|item| item["created_at"].is_string() && item["revoked_at"].is_null()));
    for secret in [&pair.caller.key, &unused] {
        assert!(!listed.text.contains(secret.as_str()));
    }
    // Only the owner or an admin lists an agent's keys.
    let (_, viewer) = app.create_member(&pair.tenant, "viewer").await;
    let refused = app
        .get(&format!("/v1/agents/{}/keys", pair.caller.name), &viewer)
        .await;
    assert_eq!(refused.status, 403);
}

#[tokio::test]
async fn an_admin_lists_and_revokes_member_keys_but_never_the_last_admin_key() {
    let app = spawn_app().await;
    let tenant = app.create_tenant().await;
    let listed = app.get("/v1/members", &tenant.admin_key).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    let first_admin = listed.body["items"][0].clone();
    let first_admin_id = first_admin["member_id"].as_str().unwrap().to_owned();
    let first_key_id = first_admin["keys"][0]["key_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!listed.text.contains(&tenant.admin_key));

    let revoke = |member: String, key: String| {
        let app = &app;
        let admin = tenant.admin_key.clone();
        async move {
            app.send(
                "DELETE",
                &format!("/v1/members/{member}/keys/{key}"),
                Some(&admin),
                None,
            )
            .await
        }
    };
    let last = revoke(first_admin_id.clone(), first_key_id.clone()).await;
    assert_eq!(last.status, 409, "{}", last.text);
    assert_eq!(app.get("/v1/members", &tenant.admin_key).await.status, 200);

    let (member_id, member_key) = app.create_member(&tenant, "member").await;
    let member_keys = app.get("/v1/members", &tenant.admin_key).await;
    let member_entry = member_keys.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["member_id"] == member_id.as_str())
        .unwrap()
        .clone();
    let revoked = revoke(
        member_id.clone(),
        member_entry["keys"][0]["key_id"]
            .as_str()
            .unwrap()
            .to_owned(),
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(app.get("/v1/agents", &member_key).await.status, 401);
    assert_eq!(app.get("/v1/members", &member_key).await.status, 401);

    // With a second admin key, the first can go; then the second is the last.
    let second = app
        .post(
            &format!("/v1/members/{first_admin_id}/keys"),
            &tenant.admin_key,
            serde_json::json!({}),
        )
        .await;
    assert_eq!(second.status, 201, "{}", second.text);
    let second_key = second.field("key");
    assert_eq!(
        revoke(first_admin_id.clone(), first_key_id).await.status,
        200
    );
    assert_eq!(app.get("/v1/members", &tenant.admin_key).await.status, 401);
    let again = app
        .send(
            "DELETE",
            &format!(
                "/v1/members/{first_admin_id}/keys/{}",
                second.field("key_id")
            ),
            Some(&second_key),
            None,
        )
        .await;
    assert_eq!(again.status, 409, "{}", again.text);
    assert_eq!(app.get("/v1/members", &second_key).await.status, 200);
}

#[tokio::test]
async fn a_revoked_key_stops_working_on_every_instance_within_the_key_cache_time() {
    let first = spawn_app_with(Options {
        key_cache_seconds: 1,
        ..Options::default()
    })
    .await;
    let pair = first.pair().await;
    let other = spawn_app_with(Options {
        key_cache_seconds: 1,
        table: Some(first.table.clone()),
        ..Options::default()
    })
    .await;
    let key = first
        .issue_key(&pair.tenant.admin_key, &pair.caller.name)
        .await;
    assert_eq!(
        other.get("/v1/agents/me", &key).await.status,
        200,
        "cached there now"
    );
    let listed = first
        .get(
            &format!("/v1/agents/{}/keys", pair.caller.name),
            &pair.tenant.admin_key,
        )
        .await;
    let key_id = listed.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["last_used_at"].is_string() && item["key_id"] != "")
        .map(|item| item["key_id"].as_str().unwrap().to_owned())
        .unwrap();
    let revoked = first
        .send(
            "DELETE",
            &format!("/v1/agents/{}/keys/{key_id}", pair.caller.name),
            Some(&pair.tenant.admin_key),
            None,
        )
        .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(
        first.get("/v1/agents/me", &key).await.status,
        401,
        "at once where revoked"
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        other.get("/v1/agents/me", &key).await.status,
        401,
        "within the cache time elsewhere"
    );
}

async fn audit_actions(app: &forgebench_tests::TestApp, admin: &str) -> Vec<serde_json::Value> {
    let reply = app.get("/v1/audit?limit=100", admin).await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    reply.body["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn claims_results_progress_and_cancels_are_on_the_audit_log() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("a"), 0)
        .await;
    let task_id = opened.field("id");
    app.claim(&pair.callee.key, 0).await;
    let progress = app
        .post(
            &format!("/v1/agents/me/tasks/{task_id}/progress"),
            &pair.callee.key,
            serde_json::json!({"message": {"parts": [{"text": "half"}]}}),
        )
        .await;
    assert_eq!(progress.status, 200);
    app.post_result(
        &pair.callee.key,
        &task_id,
        serde_json::json!({"state": "completed"}),
    )
    .await;
    let canceled = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("b"), 0)
        .await;
    app.cancel(&pair.caller.key, &pair.callee.name, &canceled.field("id"))
        .await;
    let entries = audit_actions(&app, &pair.tenant.admin_key).await;
    for (action, task, actor) in [
        ("task.claim", &task_id, &pair.callee.id),
        ("task.progress", &task_id, &pair.callee.id),
        ("task.result.completed", &task_id, &pair.callee.id),
        ("task.cancel", &canceled.field("id"), &pair.caller.id),
    ] {
        let entry = entries
            .iter()
            .find(|entry| entry["action"] == action)
            .unwrap_or_else(|| panic!("no {action} in {entries:?}"));
        assert_eq!(entry["task_id"], task.as_str());
        assert_eq!(entry["actor"]["id"], actor.as_str());
        assert_eq!(entry["outcome"], "allowed");
    }
}

#[tokio::test]
async fn a_caller_repeating_a_refused_open_grows_one_audit_entry_not_one_a_request() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let stranger = app.create_agent(&pair.tenant.admin_key, "stranger").await;
    for _ in 0..30 {
        let refused = app
            .open_task(
                &stranger.key,
                &pair.callee.name,
                text_message("let me in"),
                0,
            )
            .await;
        assert_eq!(refused.status, 403);
    }
    let refusals: Vec<serde_json::Value> = audit_actions(&app, &pair.tenant.admin_key)
        .await
        .into_iter()
        .filter(|entry| entry["outcome"] == "refused")
        .collect();
    assert!(
        (1..=2).contains(&refusals.len()),
        "one entry a minute: {refusals:?}"
    );
    let counted: u64 = refusals
        .iter()
        .map(|entry| entry["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 30);
    assert!(refusals.iter().all(|entry| entry["reason"] == "no_binding"));
}

#[tokio::test]
async fn an_agent_holds_at_most_ten_long_polls_at_once_and_gets_its_slots_back() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let max = forgebench::store::MAX_POLLS_PER_AGENT as usize;
    // Until all ten hold their slots (the slot items in the table), however loaded the machine.
    let polls = holding_polls(
        &app,
        &pair.callee.key,
        &pair.callee.id,
        &pair.tenant.id,
        max,
    )
    .await;
    let refused = app.claim(&pair.callee.key, 2).await;
    assert_eq!(refused.status, 429, "{}", refused.text);
    assert_eq!(refused.body["detail"]["code"], "too_many_requests");
    assert_eq!(refused.headers["retry-after"], "1");
    // Waiting for nothing needs no slot; another agent has its own.
    assert_eq!(app.claim(&pair.callee.key, 0).await.status, 204);
    let opened = app
        .open_task(&pair.caller.key, &pair.callee.name, text_message("x"), 1)
        .await;
    assert_eq!(opened.status, 200);
    for poll in polls {
        let status = poll.await.unwrap();
        assert!(status == 200 || status == 204, "{status}");
    }
    assert_eq!(
        app.claim(&pair.callee.key, 1).await.status,
        204,
        "slots given back"
    );
}

/// Waits until `agent_id` holds `count` long-poll slots: its `POLLS#` items in the table.
/// One tenant's agents together hold at most the tenant's share of waits: a tenant with many
/// agents cannot take every execution a long-poll function has, and another tenant still waits.
#[tokio::test]
async fn a_tenants_agents_together_hold_at_most_its_waits_and_another_tenant_still_waits() {
    let app = spawn_app_with(Options {
        tenant_max_waits: 12,
        ..Options::default()
    })
    .await;
    let noisy = app.pair().await;
    let own_max = forgebench::store::MAX_POLLS_PER_AGENT as usize;
    let mut polls = holding_polls(
        &app,
        &noisy.callee.key,
        &noisy.callee.id,
        &noisy.tenant.id,
        own_max,
    )
    .await;
    polls.extend((0..2).map(|_| spawn_poll(&app, &noisy.caller.key)));
    wait_for_tenant_slots(&app, &noisy.tenant.id, own_max + 2).await;
    // The tenant's twelve are held: its caller, with eight of its own free, is refused.
    let refused = app.claim(&noisy.caller.key, 2).await;
    assert_eq!(refused.status, 429, "{}", refused.text);
    assert_eq!(refused.body["detail"]["code"], "too_many_requests");
    assert!(refused.text.contains("per tenant"), "{}", refused.text);
    assert_eq!(refused.headers["retry-after"], "1");
    // Another tenant's agents wait as before.
    let quiet = app.pair().await;
    assert_eq!(app.claim(&quiet.callee.key, 1).await.status, 204);
    for poll in polls {
        assert_eq!(poll.await.unwrap(), 204);
    }
    // Every slot came back: the tenant waits again.
    assert_eq!(app.claim(&noisy.caller.key, 1).await.status, 204);
}

/// A claim that finds a task ready takes it at once, whatever its waits: only a claim that has
/// to wait takes long-poll slots. So a busy callee at its limits still works its queue, and its
/// claims cost the store no slot writes.
#[tokio::test]
async fn a_claim_that_finds_its_task_ready_needs_no_slot_even_when_its_tenants_waits_are_held() {
    let app = spawn_app_with(Options {
        tenant_max_waits: 1,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    // The caller holds the tenant's one wait on its own empty queue.
    let held = spawn_poll(&app, &pair.caller.key);
    wait_for_tenant_slots(&app, &pair.tenant.id, 1).await;
    let refused = app.claim(&pair.callee.key, 2).await;
    assert_eq!(refused.status, 429, "nothing is queued: {}", refused.text);
    let opened = app
        .open_task(
            &pair.caller.key,
            &pair.callee.name,
            text_message("ready"),
            0,
        )
        .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let claimed = app.claim(&pair.callee.key, 2).await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    assert_eq!(claimed.field("id"), opened.field("id"));
    assert_eq!(held.await.unwrap(), 204);
}

/// A refused wait costs the store little, however often its client asks: refused by its key
/// holder's pool, it writes nothing in its tenant's; asked again within a second, it costs no
/// slot request at all (the process remembers the pool full until one of its slots comes
/// back), only the claim's one look at its queue for a task ready.
#[tokio::test]
async fn a_refused_wait_touches_no_other_pool_and_asking_again_at_once_costs_the_store_nothing() {
    let recorder = forgebench_tests::Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let max = forgebench::store::MAX_POLLS_PER_AGENT as usize;
    let polls = holding_polls(
        &app,
        &pair.callee.key,
        &pair.callee.id,
        &pair.tenant.id,
        max,
    )
    .await;
    let slot_requests = || slot_requests(&recorder);
    slot_requests();
    assert_eq!(app.claim(&pair.callee.key, 2).await.status, 429);
    let first = slot_requests();
    assert_eq!(
        count(&first, "DeleteItem"),
        0,
        "a slot of the tenant was taken and given back: {first:?}"
    );
    // Asked again five times at once, well within the second the pool is remembered full for,
    // even on a loaded machine (one after another, five could outlast it).
    let refused = futures::future::join_all((0..5).map(|_| app.claim(&pair.callee.key, 2))).await;
    assert!(refused.iter().all(|reply| reply.status == 429));
    let again = slot_requests();
    assert!(
        again.is_empty(),
        "refused again at once, yet the store was asked: {again:?}"
    );
    for poll in polls {
        let status = poll.await.unwrap();
        assert!(status == 200 || status == 204, "{status}");
    }
    assert_eq!(
        app.claim(&pair.callee.key, 1).await.status,
        204,
        "slots given back"
    );
}

/// A process never spends a write on a slot it holds itself: the blind pick of a take leaves
/// out the slots the process holds, and a pool it holds whole is full without a request. (The
/// blind pick used to be any slot: with nine of ten held here, nine times in ten a refused
/// write and a read of the pool before the one free slot.)
#[tokio::test]
async fn a_process_takes_the_last_free_slot_with_one_write_and_refuses_past_it_without_a_request() {
    let recorder = forgebench_tests::Recorder::default();
    let app = spawn_app_with(Options {
        recorder: Some(recorder.clone()),
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let max = forgebench::store::MAX_POLLS_PER_AGENT as usize;
    let mut polls = holding_polls(
        &app,
        &pair.callee.key,
        &pair.callee.id,
        &pair.tenant.id,
        max - 1,
    )
    .await;
    let slot_requests = || slot_requests(&recorder);
    slot_requests();
    // The tenth: its holder's last free slot and one of the tenant's, a write each.
    assert_eq!(app.claim(&pair.callee.key, 1).await.status, 204);
    let tenth = slot_requests();
    assert_eq!(count(&tenth, "PutItem"), 2, "{tenth:?}");
    assert_eq!(count(&tenth, "Query"), 0, "{tenth:?}");
    // Ten held by this process: the eleventh is refused without a request.
    polls.push(spawn_poll(&app, &pair.callee.key));
    wait_for_held_slots(&app, &pair.callee.id, max).await;
    wait_for_tenant_slots(&app, &pair.tenant.id, max).await;
    slot_requests();
    assert_eq!(app.claim(&pair.callee.key, 2).await.status, 429);
    let eleventh = slot_requests();
    assert!(eleventh.is_empty(), "{eleventh:?}");
    for poll in polls {
        assert_eq!(poll.await.unwrap(), 204);
    }
}

/// The store requests `recorder` saw since the last look but the queue reads (of the waits
/// held, and of each claim's look for a task ready): the slots' requests.
fn slot_requests(recorder: &forgebench_tests::Recorder) -> Vec<String> {
    recorder
        .take_dynamodb_round_trips()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name != "Query gsi1")
        .collect()
}

/// Requests of `operation` among `calls`.
fn count(calls: &[String], operation: &str) -> usize {
    calls.iter().filter(|call| *call == operation).count()
}

/// `count` long polls of `key`, whose holder `agent_id` and its tenant held none, once they all
/// hold both their slots (the slot items in the table), however loaded the machine: a wait
/// takes its tenant's slot after its holder's, and a test counting the store's requests from
/// here must not see one still coming.
async fn holding_polls(
    app: &forgebench_tests::TestApp,
    key: &str,
    agent_id: &str,
    tenant_id: &str,
    count: usize,
) -> Vec<tokio::task::JoinHandle<reqwest::StatusCode>> {
    let polls = (0..count).map(|_| spawn_poll(app, key)).collect();
    wait_for_held_slots(app, agent_id, count).await;
    wait_for_tenant_slots(app, tenant_id, count).await;
    polls
}

/// A 10 s long poll for the next task with `key`, on a client of its own, running in the
/// background: its status when it answers.
fn spawn_poll(
    app: &forgebench_tests::TestApp,
    key: &str,
) -> tokio::task::JoinHandle<reqwest::StatusCode> {
    let (base, key) = (app.base.clone(), key.to_owned());
    tokio::spawn(async move {
        reqwest::Client::new()
            .get(format!("{base}/v1/agents/me/tasks/next?wait=10"))
            .bearer_auth(key)
            .send()
            .await
            .expect("poll")
            .status()
    })
}

async fn wait_for_held_slots(app: &forgebench_tests::TestApp, agent_id: &str, count: usize) {
    wait_for_slot_items(app, &format!("POLLS#{agent_id}"), count).await;
}

/// Waits until a tenant's agents hold `count` of its long-poll slots: its `TPOLLS#` items. A
/// wait takes its holder's slot first and its tenant's after, so the holder's alone do not say
/// the tenant's are taken.
async fn wait_for_tenant_slots(app: &forgebench_tests::TestApp, tenant_id: &str, count: usize) {
    wait_for_slot_items(app, &format!("TPOLLS#{tenant_id}"), count).await;
}

async fn wait_for_slot_items(app: &forgebench_tests::TestApp, pk: &str, count: usize) {
    let started = std::time::Instant::now();
    loop {
        let held = app
            .app
            .store
            .client()
            .query()
            .table_name(&app.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(
                ":pk",
                aws_sdk_dynamodb::types::AttributeValue::S(pk.to_owned()),
            )
            .consistent_read(true)
            .send()
            .await
            .expect("query the slots")
            .count as usize;
        if held >= count {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{held} of {count} slots held after 30 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn the_deployment_throttles_the_api_and_bounds_the_long_poll_functions() {
    let template: serde_norway::Value = serde_norway::from_str(TEMPLATE).unwrap();
    let settings = &template["Resources"]["Api"]["Properties"]["MethodSettings"][0];
    for (setting, parameter) in [
        ("ThrottlingRateLimit", "ThrottleRateLimit"),
        ("ThrottlingBurstLimit", "ThrottleBurstLimit"),
    ] {
        match &settings[setting] {
            serde_norway::Value::Tagged(tagged) => assert_eq!(tagged.value, parameter),
            other => panic!("{setting}: {other:?}"),
        }
    }
    // Every API function that holds a request open (a wait or a stream: a timeout above the
    // buffered routes' 29 s) is bounded by reserved concurrency; the worker and the sweeper,
    // driven by events, are not API functions.
    let resources = template["Resources"].as_mapping().unwrap();
    let mut holding = Vec::new();
    for (name, resource) in resources {
        let name = name.as_str().unwrap();
        let properties = &resource["Properties"];
        let holds_open = properties["Timeout"]
            .as_u64()
            .is_some_and(|timeout| timeout > 29);
        if resource["Type"] != "AWS::Serverless::Function"
            || !holds_open
            || ["PushWorkerFunction", "SweepDeadlinesFunction"].contains(&name)
        {
            continue;
        }
        holding.push(name);
        let reserved = &properties["ReservedConcurrentExecutions"];
        assert!(
            matches!(reserved, serde_norway::Value::Tagged(tagged) if tagged.value == "LongPollConcurrency"),
            "{name}: {reserved:?}"
        );
    }
    for function in [
        "OpenTaskFunction",
        "GetTaskFunction",
        "ClaimNextTaskFunction",
        "A2aJsonRpcFunction",
        "A2aSendMessageFunction",
        "TaskEventsFunction",
        "A2aStreamMessageFunction",
        "A2aGetTaskFunction",
        "A2aTaskActionFunction",
    ] {
        assert!(
            holding.contains(&function),
            "{function} holds no request open"
        );
    }
}

/// A tenant holds at most `FORGEBENCH_TENANT_MAX_AGENTS` agents that are not retired: the next
/// is `409 limit_reached` and writes nothing, a retired agent leaves room for another, and
/// another tenant is not held back by the first one's agents.
#[tokio::test]
async fn a_tenant_holds_at_most_its_agents_and_a_retired_one_leaves_room() {
    let app = spawn_app_with(Options {
        tenant_max_agents: 3,
        ..Options::default()
    })
    .await;
    let pair = app.pair().await;
    let admin = &pair.tenant.admin_key;
    let third = app.create_agent(admin, "third").await;
    let full = app
        .post("/v1/agents", admin, serde_json::json!({"name": "fourth"}))
        .await;
    assert_eq!(full.status, 409, "{}", full.text);
    assert_eq!(
        full.body["detail"]["code"], "limit_reached",
        "{}",
        full.text
    );
    let fourth = app.get("/v1/agents/fourth", admin).await;
    assert_eq!(
        fourth.status, 404,
        "a refused agent was stored: {}",
        fourth.text
    );

    set_status(&app, admin, &third.id, "retired").await;
    let room = app
        .post("/v1/agents", admin, serde_json::json!({"name": "fourth"}))
        .await;
    assert_eq!(room.status, 201, "{}", room.text);

    let other = app.pair().await;
    app.create_agent(&other.tenant.admin_key, "third").await;
}
