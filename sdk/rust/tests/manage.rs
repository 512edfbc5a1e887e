//! The management, lineage, audit, settings, signing-key and event-stream operations of the Rust
//! SDK against the real gateway (in-process, on the local emulators): every operation is sent
//! through the SDK, and each test checks what the gateway did with it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test, with its message"
)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use forgebench_sdk::{
    AuditOutcome, AuditQuery, BindingPatch, CallCheckRequest, CallOptions, Client, ContractPatch,
    DeliveryAttempt, EndpointConfig, EndpointHealth, EndpointState, Error, KeyInfo, LimitsPatch,
    Member, PolicyMode, PolicyPatch, Replayed, ReplayedNotification, SigningKeyPurpose, TaskEvent,
    TaskSearch, TaskState, TenantSettingsPatch, ToolSpec,
};
use forgebench_tests::{
    spawn_app, spawn_app_with, Answer, Callee, Options, Pair, Received, TestApp,
};
use futures::{Stream, StreamExt, TryStreamExt};
use serde_json::json;

fn client(app: &TestApp, key: &str) -> Client {
    Client::new(key, &app.base).expect("client")
}

/// A new tenant made through the SDK with the operator key, and a client of its admin key.
async fn tenant(app: &TestApp) -> (forgebench_sdk::CreatedTenant, Client) {
    let operator = client(app, &app.operator_key);
    let tenant = operator.create_tenant("acme").await.unwrap();
    let admin = client(app, tenant.admin_key.expose());
    (tenant, admin)
}

/// The next item of `events` within 20 s.
async fn next_event<S>(events: &mut S) -> Option<forgebench_sdk::Result<TaskEvent>>
where
    S: Stream<Item = forgebench_sdk::Result<TaskEvent>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("an event, or the stream's end, within 20 s")
}

#[tokio::test]
async fn a_member_key_is_issued_and_once_revoked_is_refused() {
    let app = spawn_app().await;
    let (_, admin) = tenant(&app).await;
    let member = admin.create_member("dana", "member").await.unwrap();
    assert!(
        !format!("{member:?}").contains(member.key.expose()),
        "Debug never shows a key"
    );

    let issued = admin.issue_member_key(&member.member_id).await.unwrap();
    assert!(!format!("{issued:?}").contains(issued.key.expose()));
    let second = client(&app, issued.key.expose());
    assert!(
        second.list_agents().await.unwrap().items.is_empty(),
        "the new key works"
    );

    let revoked = admin
        .revoke_member_key(&member.member_id, &issued.key_id)
        .await
        .unwrap();
    assert_eq!(revoked.key_id, issued.key_id);
    assert!(revoked.revoked);
    let refused = second.list_agents().await.unwrap_err();
    assert!(matches!(refused, Error::Unauthenticated(_)), "{refused:?}");
    let first = client(&app, member.key.expose());
    assert!(
        first.list_agents().await.is_ok(),
        "the other key still works"
    );
    let again = admin
        .revoke_member_key(&member.member_id, &issued.key_id)
        .await
        .unwrap_err();
    assert!(matches!(again, Error::NotFound(_)), "{again:?}");

    let members: Vec<Member> = admin.list_members().await.unwrap().parse().unwrap();
    let dana = members
        .iter()
        .find(|listed| listed.member_id == member.member_id)
        .expect("the member is listed");
    assert_eq!(dana.role, "member");
    let keys: Vec<(&str, bool)> = dana
        .keys
        .iter()
        .map(|key| (key.key_id.as_str(), key.is_revoked()))
        .collect();
    assert!(keys.contains(&(issued.key_id.as_str(), true)), "{keys:?}");
    assert!(
        keys.contains(&(member.key_id.as_deref().unwrap(), false)),
        "{keys:?}"
    );

    let owner = members.iter().find(|m| m.role == "admin").unwrap();
    let last_admin_key = admin
        .revoke_member_key(&owner.member_id, &owner.keys[0].key_id)
        .await
        .unwrap_err();
    assert!(
        matches!(last_admin_key, Error::Conflict(_)),
        "the tenant's last admin key stays: {last_admin_key:?}"
    );
    let by_member = first.issue_member_key(&member.member_id).await.unwrap_err();
    assert!(
        matches!(by_member, Error::PermissionDenied(_)),
        "{by_member:?}"
    );
}

#[tokio::test]
async fn agents_keys_and_tools_are_managed_and_a_tool_shows_on_the_card() {
    let app = spawn_app().await;
    let (_, admin) = tenant(&app).await;
    let agent = admin
        .create_agent("invoice-classifier", Some("classifies"), None)
        .await
        .unwrap();
    assert_eq!(admin.agent(&agent.id).await.unwrap().name, agent.name);
    let paused = admin
        .update_agent(&agent.name, Some("paused"), Some("classifies invoices"))
        .await
        .unwrap();
    assert_eq!(paused.status, "paused");
    assert_eq!(paused.description.as_deref(), Some("classifies invoices"));
    let active = admin
        .update_agent(&agent.name, Some("active"), None)
        .await
        .unwrap();
    assert_eq!(active.status, "active");
    assert_eq!(active.claim_timeout_seconds, Some(900));
    let listed = admin.list_agents().await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].id, agent.id);

    let key = admin.issue_key(&agent.name).await.unwrap();
    let itself = client(&app, key.key.expose());
    assert_eq!(itself.me().await.unwrap().id, agent.id);
    let revoked = admin.revoke_key(&agent.name, &key.key_id).await.unwrap();
    assert!(revoked.revoked);
    assert!(matches!(
        itself.me().await.unwrap_err(),
        Error::Unauthenticated(_)
    ));
    let keys: Vec<KeyInfo> = admin.list_keys(&agent.name).await.unwrap().parse().unwrap();
    assert_eq!(keys.len(), 1);
    assert!(keys[0].is_revoked());

    let spec = ToolSpec::new("Classifies an invoice").tags(["finance", "invoices"]);
    let classify = admin
        .put_tool(&agent.name, "classify", &spec)
        .await
        .unwrap();
    assert_eq!(classify.name, "classify");
    assert_eq!(classify.tags, ["finance", "invoices"]);
    let lookup = admin
        .put_tool(&agent.id, "lookup", &ToolSpec::new("Looks an invoice up"))
        .await
        .unwrap();
    assert!(lookup.tags.is_empty());
    let tools = admin.tools(&agent.name).await.unwrap();
    let names: Vec<&str> = tools.items.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["classify", "lookup"]);

    let card = admin.card(&agent.name).await.unwrap();
    let skills = card["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 2, "{card}");
    let classify_skill = skills.iter().find(|s| s["id"] == "classify").unwrap();
    assert_eq!(classify_skill["description"], "Classifies an invoice");
    assert_eq!(classify_skill["tags"], json!(["finance", "invoices"]));
    let lookup_skill = skills.iter().find(|s| s["id"] == "lookup").unwrap();
    assert_eq!(lookup_skill["tags"], json!(["tool"]), "a tool without tags");

    let removed = admin.delete_tool(&agent.name, "lookup").await.unwrap();
    assert_eq!((removed.name.as_str(), removed.removed), ("lookup", true));
    let gone = admin.delete_tool(&agent.name, "lookup").await.unwrap_err();
    assert!(matches!(gone, Error::NotFound(_)), "{gone:?}");
    let cards = admin.cards(None).await.unwrap();
    let listed_cards = cards["cards"].as_array().unwrap();
    assert_eq!(listed_cards.len(), 1);
    let skills: Vec<&str> = listed_cards[0]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["id"].as_str().unwrap())
        .collect();
    assert_eq!(skills, ["classify"], "the removed tool left the card");
    let bad = admin
        .put_tool(&agent.name, "Not A Name", &spec)
        .await
        .unwrap_err();
    assert!(matches!(bad, Error::BadRequest(_)), "{bad:?}");
}

#[tokio::test]
async fn settings_update_reads_back_and_the_audit_log_pages_through_the_changes() {
    let app = spawn_app().await;
    let (tenant, admin) = tenant(&app).await;
    let settings = admin.tenant_settings().await.unwrap();
    assert_eq!(settings.tenant_id, tenant.tenant_id);
    assert!(settings.word_search, "on by default");

    assert_eq!(
        (
            settings.max_call_depth,
            settings.refuse_cycles,
            settings.max_fan_out,
            settings.max_open_in_tree
        ),
        (16, false, None, None),
        "the call-tree limits' defaults"
    );

    let off = TenantSettingsPatch {
        word_search: Some(false),
        ..TenantSettingsPatch::default()
    };
    let updated = admin.update_tenant_settings(&off).await.unwrap();
    assert!(!updated.word_search);
    assert!(!admin.tenant_settings().await.unwrap().word_search);
    let unchanged = admin
        .update_tenant_settings(&TenantSettingsPatch::default())
        .await
        .unwrap();
    assert!(!unchanged.word_search, "an empty patch changes nothing");
    let on = TenantSettingsPatch {
        word_search: Some(true),
        ..TenantSettingsPatch::default()
    };
    assert!(admin.update_tenant_settings(&on).await.unwrap().word_search);

    let viewer = admin.create_member("priya", "viewer").await.unwrap();
    let viewer = client(&app, viewer.key.expose());
    assert!(viewer.tenant_settings().await.unwrap().word_search);
    let refused = viewer.update_tenant_settings(&off).await.unwrap_err();
    assert!(matches!(refused, Error::PermissionDenied(_)), "{refused:?}");

    let page = viewer
        .audit(&AuditQuery {
            action: Some("tenant.word_search.".into()),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let actions: Vec<&str> = page.items.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        ["tenant.word_search.on", "tenant.word_search.off"],
        "newest first"
    );
    assert!(page
        .items
        .iter()
        .all(|entry| entry.outcome == AuditOutcome::Allowed && entry.target == tenant.tenant_id));

    // One entry a page: the stream follows next_cursor through every page.
    let every: Vec<String> = admin
        .audit_entries(&AuditQuery {
            limit: Some(1),
            ..AuditQuery::default()
        })
        .map_ok(|entry| entry.action)
        .try_collect()
        .await
        .unwrap();
    let whole = admin.audit(&AuditQuery::default()).await.unwrap();
    assert!(whole.next_cursor.is_none(), "one page holds them all");
    let expected: Vec<String> = whole.items.into_iter().map(|e| e.action).collect();
    assert_eq!(every, expected);
    assert!(every.len() >= 4, "{every:?}");
    assert!(
        every.contains(&"member.create.viewer".to_owned()),
        "{every:?}"
    );
    let first = admin
        .audit(&AuditQuery {
            limit: Some(1),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(first.items.len(), 1);
    assert!(first.next_cursor.is_some());
    let bad_cursor = admin
        .audit(&AuditQuery {
            cursor: Some("not-a-cursor".into()),
            ..AuditQuery::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(bad_cursor, Error::BadRequest(_)), "{bad_cursor:?}");
}

#[tokio::test]
async fn the_call_tree_limits_are_set_cleared_audited_and_govern_opens() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = client(&app, &pair.tenant.admin_key);
    let set = admin
        .update_tenant_settings(&TenantSettingsPatch {
            max_call_depth: Some(8),
            refuse_cycles: Some(true),
            max_fan_out: Some(Some(20)),
            max_open_in_tree: Some(Some(100)),
            ..TenantSettingsPatch::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (
            set.word_search,
            set.max_call_depth,
            set.refuse_cycles,
            set.max_fan_out,
            set.max_open_in_tree
        ),
        (true, 8, true, Some(20), Some(100))
    );
    assert_eq!(admin.tenant_settings().await.unwrap(), set);

    // Some(None) clears a count limit; what the patch leaves out keeps its value.
    let cleared = admin
        .update_tenant_settings(&TenantSettingsPatch {
            max_fan_out: Some(None),
            ..TenantSettingsPatch::default()
        })
        .await
        .unwrap();
    assert_eq!(
        cleared,
        forgebench_sdk::TenantSettings {
            max_fan_out: None,
            ..set.clone()
        }
    );
    assert_eq!(admin.tenant_settings().await.unwrap(), cleared);
    // A patch that changes nothing writes no entry; one out of range is refused.
    let same = TenantSettingsPatch {
        max_call_depth: Some(8),
        max_fan_out: Some(None),
        ..TenantSettingsPatch::default()
    };
    assert_eq!(admin.update_tenant_settings(&same).await.unwrap(), cleared);
    for wrong in [
        TenantSettingsPatch {
            max_call_depth: Some(65),
            ..TenantSettingsPatch::default()
        },
        TenantSettingsPatch {
            max_open_in_tree: Some(Some(0)),
            ..TenantSettingsPatch::default()
        },
    ] {
        let refused = admin.update_tenant_settings(&wrong).await.unwrap_err();
        assert!(matches!(refused, Error::BadRequest(_)), "{refused:?}");
    }
    assert_eq!(admin.tenant_settings().await.unwrap(), cleared);
    let audited = admin
        .audit(&AuditQuery {
            action: Some("tenant.call_tree".into()),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let actions: Vec<(&str, AuditOutcome)> = audited
        .items
        .iter()
        .map(|entry| (entry.action.as_str(), entry.outcome))
        .collect();
    assert_eq!(
        actions,
        [
            ("tenant.call_tree", AuditOutcome::Allowed),
            ("tenant.call_tree", AuditOutcome::Allowed)
        ],
        "two changes, two entries"
    );

    // At depth 1 a root call opens and its child is refused, the reason on the audit log.
    admin
        .update_tenant_settings(&TenantSettingsPatch {
            max_call_depth: Some(1),
            ..TenantSettingsPatch::default()
        })
        .await
        .unwrap();
    let caller = client(&app, &pair.caller.key);
    let root = caller
        .call(
            &pair.callee.name,
            CallOptions::new().text("Month-end billing"),
        )
        .await
        .unwrap();
    let root_call = root.call_id().unwrap().to_owned();
    let child = caller
        .call(
            &pair.callee.name,
            CallOptions::new()
                .text("Classify INV-2")
                .parent_call_id(&root_call),
        )
        .await
        .unwrap_err();
    assert!(matches!(child, Error::PermissionDenied(_)), "{child:?}");
    let refusals = admin
        .audit(&AuditQuery {
            action: Some("task.open".into()),
            outcome: Some(AuditOutcome::Refused),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    let reasons: Vec<(Option<&str>, Option<&str>)> = refusals
        .items
        .iter()
        .map(|entry| (entry.reason.as_deref(), entry.root_call_id.as_deref()))
        .collect();
    assert_eq!(
        reasons,
        [(Some("depth_exceeded"), Some(root_call.as_str()))]
    );
}

#[tokio::test]
async fn a_bindings_contract_is_set_read_with_its_use_and_holds_opens() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = client(&app, &pair.tenant.admin_key);
    let caller = client(&app, &pair.caller.key);
    // A quota's Retry-After runs to the next UTC midnight: keep clear of it.
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let left_today = 86_400 - since_epoch % 86_400;
    if left_today < 120 {
        tokio::time::sleep(Duration::from_secs(left_today + 2)).await;
    }
    let patch = BindingPatch {
        limits: LimitsPatch {
            max_call_depth: Some(Some(1)),
            ..LimitsPatch::default()
        },
        contract: ContractPatch {
            skills: Some(Some(vec!["classify".into()])),
            daily_quota: Some(Some(1)),
            ..ContractPatch::default()
        },
    };
    let set = admin
        .update_binding(&pair.caller.name, &pair.binding_id, &patch)
        .await
        .unwrap();
    assert_eq!(set.limits.max_call_depth, Some(1));
    assert_eq!(
        set.contract.skills.as_deref(),
        Some(&["classify".to_owned()][..])
    );
    assert_eq!(set.contract.daily_quota, Some(1));
    assert_eq!(set.usage.map(|usage| usage.day), Some(Some(0)));

    let outside = caller
        .call(
            &pair.callee.name,
            CallOptions::new().text("Refund INV-3").skill("refund"),
        )
        .await
        .unwrap_err();
    assert!(matches!(outside, Error::PermissionDenied(_)), "{outside:?}");
    let opened = caller
        .call(
            &pair.callee.name,
            CallOptions::new().text("Classify INV-3").skill("classify"),
        )
        .await
        .unwrap();
    assert_eq!(opened.skill.as_deref(), Some("classify"));
    let spent = caller
        .call(
            &pair.callee.name,
            CallOptions::new().text("Classify INV-4").skill("classify"),
        )
        .await
        .unwrap_err();
    match &spent {
        Error::RateLimited { body, retry_after } => {
            assert_eq!(body.code(), Some("quota_exceeded"), "{spent:?}");
            assert!(retry_after.is_some_and(|after| after > Duration::from_secs(60)));
        }
        other => panic!("expected the quota's 429, got {other:?}"),
    }
    let listed = admin.bindings(&pair.callee.name).await.unwrap();
    let inbound = listed
        .inbound
        .iter()
        .find(|b| b.id == pair.binding_id)
        .unwrap();
    assert_eq!(inbound.usage.and_then(|usage| usage.day), Some(1));
    assert_eq!(inbound.contract, set.contract);

    // Removed again, the binding bounds nothing.
    let cleared = admin
        .update_binding(
            &pair.callee.name,
            &pair.binding_id,
            &BindingPatch {
                contract: ContractPatch {
                    skills: Some(None),
                    daily_quota: Some(None),
                    ..ContractPatch::default()
                },
                ..BindingPatch::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(cleared.contract, forgebench_sdk::BindingContract::default());
    caller
        .call(&pair.callee.name, CallOptions::new().text("Classify INV-5"))
        .await
        .unwrap();
}

#[tokio::test]
async fn the_event_stream_follows_a_task_through_a_question_to_its_completion() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let caller = client(&app, &pair.caller.key);
    let callee = client(&app, &pair.callee.key);
    let callee_name = pair.callee.name.as_str();
    let opened = caller
        .call(
            callee_name,
            CallOptions::new().text("Classify this invoice"),
        )
        .await
        .unwrap();

    let mut events = Box::pin(caller.events(callee_name, &opened.id));
    let first = next_event(&mut events).await.unwrap().unwrap();
    assert_eq!(first.event, "task");
    assert_eq!(first.id, Some(0), "nothing happened to the task yet");
    assert_eq!(first.state(), Some(TaskState::Submitted));
    assert_eq!(first.task().unwrap().id, opened.id);

    let claimed = callee.next_task(5).await.unwrap().expect("the task");
    callee.progress(&claimed.id, "reading it").await.unwrap();
    let asked = callee
        .reply(&claimed.id, claimed.ask("which invoice?"))
        .await
        .unwrap();
    assert_eq!(asked.state(), TaskState::InputRequired);
    let answered = caller
        .answer(callee_name, &opened.id, "INV-1")
        .await
        .unwrap();
    assert_eq!(answered.state(), TaskState::Working);
    let again = callee
        .next_task(5)
        .await
        .unwrap()
        .expect("the answered task");
    callee
        .reply(&again.id, again.done().text("software"))
        .await
        .unwrap();

    let mut rest = Vec::new();
    while let Some(event) = next_event(&mut events).await {
        rest.push(event.unwrap());
    }
    let kinds: Vec<&str> = rest.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(
        kinds,
        ["status", "progress", "question", "answer", "status", "artifact", "final"]
    );
    let ids: Vec<u64> = rest.iter().map(|event| event.id.unwrap()).collect();
    assert_eq!(ids, (1..=7).collect::<Vec<u64>>(), "one number per change");
    assert_eq!(rest[1].message().unwrap().text(), "reading it");
    assert_eq!(rest[2].state(), Some(TaskState::InputRequired));
    assert_eq!(rest[3].message().unwrap().text(), "INV-1");
    assert_eq!(rest[5].data["artifact"]["parts"][0]["text"], "software");
    let last = rest.last().unwrap();
    assert!(last.is_final());
    assert_eq!(last.state(), Some(TaskState::Completed));

    // Resumed after the question: the later events only, then the end (the task is finished).
    let resumed: Vec<TaskEvent> = caller
        .events_after(callee_name, &opened.id, 3)
        .try_collect()
        .await
        .unwrap();
    let kinds: Vec<&str> = resumed.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(kinds, ["answer", "status", "artifact", "final"]);
    let finished: Vec<TaskEvent> = caller
        .events(callee_name, &opened.id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        finished.len(),
        1,
        "a finished task streams its task and ends"
    );
    assert_eq!(finished[0].state(), Some(TaskState::Completed));

    let unknown: Vec<_> = caller
        .events(callee_name, "00000000-0000-4000-8000-000000000000")
        .collect()
        .await;
    assert_eq!(unknown.len(), 1);
    assert!(
        matches!(unknown[0], Err(Error::NotFound(_))),
        "{:?}",
        unknown[0]
    );
}

#[tokio::test]
async fn a_push_task_lists_its_delivery_attempts_and_a_pull_task_none() {
    let endpoint = Callee::start(|attempt| match attempt {
        0 => Answer::json(503, json!({"detail": "busy"})),
        _ => Answer::json(200, json!({"state": "completed"})),
    })
    .await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let admin = client(&app, &pair.tenant.admin_key);
    let caller = client(&app, &pair.caller.key);
    let config = EndpointConfig {
        url: Some(endpoint.url.clone()),
        ..EndpointConfig::default()
    };
    let pushed = admin
        .set_endpoint(&pair.callee.name, &config)
        .await
        .unwrap();
    assert_eq!(pushed.push_endpoint().unwrap().url, endpoint.url);

    let task = caller
        .call(
            &pair.callee.name,
            CallOptions::new().text("Classify").wait(15),
        )
        .await
        .unwrap();
    assert_eq!(task.state(), TaskState::Completed, "{task:?}");
    let attempts = admin.attempts(&pair.callee.name, &task.id).await.unwrap();
    let seen: Vec<(u32, Option<u16>)> = attempts
        .items
        .iter()
        .map(|attempt| (attempt.attempt, attempt.status))
        .collect();
    assert_eq!(seen, [(1, Some(503)), (2, Some(200))]);
    assert!(attempts.items[0].error.is_some());
    assert!(attempts.items[1].error.is_none());

    let pull = admin
        .set_endpoint(&pair.callee.name, &EndpointConfig::default())
        .await
        .unwrap();
    assert!(pull.push_endpoint().is_none(), "back to pull");
    let pulled = caller
        .call(&pair.callee.name, CallOptions::new().text("Classify"))
        .await
        .unwrap();
    let none = admin.attempts(&pair.callee.name, &pulled.id).await.unwrap();
    assert!(none.items.is_empty());
    let not_the_caller = caller
        .attempts(&pair.callee.name, &task.id)
        .await
        .unwrap_err();
    assert!(
        matches!(not_the_caller, Error::NotFound(_)),
        "only the callee's owner or an admin reads attempts: {not_the_caller:?}"
    );
}

/// How long a test waits for what the gateway does in the background (a delivery, a count).
const DEADLINE: Duration = Duration::from_secs(60);

/// The task's delivery attempts once there are at least `count`.
async fn attempts_after(
    admin: &Client,
    callee: &str,
    task_id: &str,
    count: usize,
) -> Vec<DeliveryAttempt> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let attempts = admin.attempts(callee, task_id).await.unwrap().items;
        if attempts.len() >= count {
            return attempts;
        }
        assert!(
            Instant::now() < deadline,
            "{count} attempts of {task_id}: {attempts:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The status of the refusal `result` must be.
fn refused_with<T: std::fmt::Debug>(result: forgebench_sdk::Result<T>) -> Option<u16> {
    match result {
        Ok(answer) => panic!("expected a refusal, got {answer:?}"),
        Err(error) => error.status(),
    }
}

/// The webhook ids of the deliveries of `task_id` the endpoint received.
fn webhook_ids(endpoint: &Callee, task_id: &str) -> Vec<String> {
    endpoint
        .received()
        .iter()
        .filter(|received| received.body["task_id"] == task_id)
        .map(|received| received.headers["webhook-id"].to_str().unwrap().to_owned())
        .collect()
}

/// A tenant with a local endpoint that answers 503 with a `Retry-After` of ten minutes (so a
/// failed task waits for a replay or a redrive), until `working` is set: then 200 with a result.
/// Its callee pushes there once [`FailingPush::push_to_endpoint`] says so.
struct FailingPush {
    app: TestApp,
    pair: Pair,
    endpoint: Callee,
    working: Arc<AtomicBool>,
    admin: Client,
    caller: Client,
}

impl FailingPush {
    async fn start() -> FailingPush {
        let working = Arc::new(AtomicBool::new(false));
        let switch = Arc::clone(&working);
        let endpoint = Callee::start(move |_| match switch.load(Ordering::SeqCst) {
            true => Answer::json(
                200,
                json!({"state": "completed", "artifacts": [{"parts": [{"text": "ok"}]}]}),
            ),
            false => Answer {
                retry_after: Some(600),
                ..Answer::json(503, json!({"detail": "busy"}))
            },
        })
        .await;
        let app = spawn_app_with(Options::local_push()).await;
        let pair = app.pair().await;
        let (admin, caller) = (
            client(&app, &pair.tenant.admin_key),
            client(&app, &pair.caller.key),
        );
        FailingPush {
            app,
            pair,
            endpoint,
            working,
            admin,
            caller,
        }
    }

    fn callee(&self) -> &str {
        &self.pair.callee.name
    }

    async fn push_to_endpoint(&self) {
        let config = EndpointConfig {
            url: Some(self.endpoint.url.clone()),
            ..EndpointConfig::default()
        };
        self.admin
            .set_endpoint(self.callee(), &config)
            .await
            .unwrap();
    }

    /// The endpoint's health once it says `failing`: the gateway counts an attempt just after
    /// it records it.
    async fn failing_health(&self) -> EndpointHealth {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let health = self.admin.endpoint_health(self.callee()).await.unwrap();
            if health.state == EndpointState::Failing {
                return health;
            }
            assert!(Instant::now() < deadline, "never failing: {health:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The task's delivery replayed. Just after an attempt is recorded the gateway may still
    /// hold its lease (a `409` that replays nothing): tried again until [`DEADLINE`] passes.
    async fn replayed_once_waiting(&self, task_id: &str) -> Replayed {
        let deadline = Instant::now() + DEADLINE;
        loop {
            match self.admin.replay_delivery(self.callee(), task_id).await {
                Ok(replayed) => return replayed,
                Err(Error::Conflict(_)) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(error) => panic!("the replay of {task_id}: {error:?}"),
            }
        }
    }

    /// Opens a task whose first delivery attempt failed; its id.
    async fn failed_task(&self, text: &str) -> String {
        let opened = self
            .caller
            .call(self.callee(), CallOptions::new().text(text));
        let task_id = opened.await.unwrap().id;
        let attempts = attempts_after(&self.admin, self.callee(), &task_id, 1).await;
        assert_eq!(attempts[0].status, Some(503), "{attempts:?}");
        task_id
    }
}

#[tokio::test]
async fn a_failing_endpoint_shows_in_its_health_and_its_waiting_delivery_is_replayed_then_redriven()
{
    let push = FailingPush::start().await;
    push.push_to_endpoint().await;
    let (admin, callee) = (&push.admin, push.callee());
    let fresh = admin.endpoint_health(callee).await.unwrap();
    assert_eq!(
        (fresh.state, fresh.consecutive_failures, fresh.success_rate),
        (EndpointState::Active, 0, None)
    );
    assert_eq!(
        (fresh.agent_id.as_str(), fresh.url.as_str()),
        (push.pair.callee.id.as_str(), push.endpoint.url.as_str())
    );

    let first = push.failed_task("Classify INV-1").await;
    let failing = push.failing_health().await;
    assert!(failing.consecutive_failures >= 1 && failing.failing_since.is_some());
    let last_error = failing.last_error.as_deref().unwrap_or("");
    assert!(last_error.contains("503"), "{failing:?}");

    // the retry was ten minutes away: the replay attempts it now, under the same webhook-id
    let replayed = push.replayed_once_waiting(&first).await;
    assert_eq!(replayed.task_id, first);
    attempts_after(admin, callee, &first, 2).await;
    let ids = webhook_ids(&push.endpoint, &first);
    assert_eq!(ids, [replayed.webhook_id.clone(), replayed.webhook_id]);

    let canceled = push.failed_task("Classify INV-2").await;
    push.caller.cancel(callee, &canceled).await.unwrap();
    let later = admin.redrive_deliveries(callee, "2999-01-01T00:00:00Z");
    let later = later.await.unwrap();
    assert_eq!((later.redriven, later.task_ids.len()), (0, 0));

    // the endpoint works again: a redrive delivers the waiting task, not the canceled one
    push.working.store(true, Ordering::SeqCst);
    let redriven = admin.redrive_deliveries(callee, "2020-01-01T00:00:00Z");
    let redriven = redriven.await.unwrap();
    assert_eq!(redriven.task_ids, std::slice::from_ref(&first));
    assert_eq!((redriven.redriven, redriven.next_since), (1, None));
    let done = push
        .app
        .settled(&push.pair.caller.key, callee, &first)
        .await;
    assert_eq!(done.state(), "completed", "{}", done.text);
    let deadline = Instant::now() + DEADLINE;
    loop {
        let health = admin.endpoint_health(callee).await.unwrap();
        if health.state == EndpointState::Active && health.attempts.ok >= 1 {
            assert_eq!(health.consecutive_failures, 0);
            assert!(health.last_success_at.is_some());
            break;
        }
        assert!(Instant::now() < deadline, "still not active: {health:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn only_an_admin_enables_an_endpoint_and_only_a_waiting_push_delivery_is_replayed() {
    let push = FailingPush::start().await;
    let (app, pair, admin, callee) = (&push.app, &push.pair, &push.admin, push.callee());
    // opened while the callee was pulled: the task keeps that delivery mode
    let pulled = push
        .caller
        .call(callee, CallOptions::new().text("Read the ledger"));
    let pulled = pulled.await.unwrap().id;
    push.push_to_endpoint().await;
    let pull = app
        .create_agent(&pair.tenant.admin_key, "ledger-reader")
        .await;
    let (_, member_key) = app.create_member(&pair.tenant, "member").await;
    let canceled = push.failed_task("Classify INV-3").await;
    push.caller.cancel(callee, &canceled).await.unwrap();

    let enabled = admin.enable_endpoint(callee).await.unwrap();
    assert_ne!(enabled.state, EndpointState::Disabled);
    assert!(enabled.disabled.is_none(), "{enabled:?}");
    let shown = admin.agent(callee).await.unwrap().push_endpoint().unwrap();
    assert!(shown.disabled.is_none(), "{shown:?}");

    let unknown = uuid::Uuid::new_v4().to_string();
    let by_member = client(app, &member_key).enable_endpoint(callee).await;
    assert_eq!(refused_with(by_member), Some(403), "only an admin enables");
    let canceled_replay = admin.replay_delivery(callee, &canceled).await;
    assert_eq!(refused_with(canceled_replay), Some(409), "a finished task");
    let pull_replay = admin.replay_delivery(callee, &pulled).await;
    assert_eq!(refused_with(pull_replay), Some(409), "a pull task");
    let unknown_replay = admin.replay_delivery(callee, &unknown).await;
    assert_eq!(refused_with(unknown_replay), Some(404));
    let bad_since = admin.redrive_deliveries(callee, "yesterday").await;
    assert_eq!(refused_with(bad_since), Some(400));
    let pull_health = admin.endpoint_health(&pull.name).await;
    assert_eq!(refused_with(pull_health), Some(404), "a pull agent");
    let pull_enable = admin.enable_endpoint(&pull.name).await;
    assert_eq!(refused_with(pull_enable), Some(404), "a pull agent");
}

/// The task state the `statusUpdate` a notification carries (`None` for another event).
fn notified_state(received: &Received) -> Option<&str> {
    received.body["statusUpdate"]["status"]["state"].as_str()
}

/// A notification's `webhook-id` header.
fn notification_id(received: &Received) -> String {
    received.headers["webhook-id"].to_str().unwrap().to_owned()
}

/// What `hook` received once `holds` of it, polled until [`DEADLINE`] passes.
async fn received_once(
    hook: &Callee,
    what: &str,
    holds: impl Fn(&[Received]) -> bool,
) -> Vec<Received> {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let received = hook.received();
        if holds(&received) {
            return received;
        }
        assert!(Instant::now() < deadline, "never {what}: {received:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Config `hook`'s latest event replayed by `by`. Just after a notification is sent the gateway
/// may still hold the config's lease (a `409` that replays nothing): tried again until
/// [`DEADLINE`] passes.
async fn notification_replayed(by: &Client, callee: &str, task_id: &str) -> ReplayedNotification {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match by.replay_notification(callee, task_id, "hook").await {
            Ok(replayed) => return replayed,
            Err(Error::Conflict(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("the replay of {task_id}'s hook: {error:?}"),
        }
    }
}

#[tokio::test]
async fn a_notification_config_is_sent_its_latest_event_again_under_the_same_webhook_id() {
    let hook = Callee::start(|_| Answer::json(200, json!({}))).await;
    let app = spawn_app_with(Options::local_push()).await;
    let pair = app.pair().await;
    let (callee, caller) = (pair.callee.name.as_str(), client(&app, &pair.caller.key));
    // the callee pulls the task; the caller asks to be notified of its changes at `hook`
    let opened = caller.call(callee, CallOptions::new().text("Refund INV-7"));
    let task_id = opened.await.unwrap().id;
    let created = app
        .a2a_rest(
            "POST",
            callee,
            &format!("/tasks/{task_id}/pushNotificationConfigs"),
            &pair.caller.key,
            Some(json!({"id": "hook", "url": hook.url})),
        )
        .await;
    assert!(created.status < 300, "{}", created.text);
    assert_eq!(created.body["id"], "hook", "{}", created.text);
    let early = caller.replay_notification(callee, &task_id, "hook").await;
    assert_eq!(refused_with(early), Some(409), "no event yet");
    assert!(hook.received().is_empty());

    // the callee claims the task and completes it: the config is notified of each change
    let claimed = app.claim(&pair.callee.key, 5).await;
    assert_eq!(claimed.field("id"), task_id, "{}", claimed.text);
    let done = json!({"state": "completed", "artifacts": [{"parts": [{"text": "refunded"}]}]});
    let answered = app.post_result(&pair.callee.key, &task_id, done).await;
    assert_eq!(answered.status, 200, "{}", answered.text);
    let sent = received_once(&hook, "notified of the completion", |received| {
        received
            .iter()
            .any(|one| notified_state(one) == Some("TASK_STATE_COMPLETED"))
    })
    .await;
    let last = sent.last().unwrap();
    assert_eq!(
        notified_state(last),
        Some("TASK_STATE_COMPLETED"),
        "the latest event"
    );
    let mut ids: Vec<String> = sent.iter().map(notification_id).collect();
    ids.dedup();
    assert_eq!(ids.len(), sent.len(), "an id per event: {ids:?}");

    let replayed = notification_replayed(&caller, callee, &task_id).await;
    assert_eq!(replayed.webhook_id, notification_id(last));
    assert_eq!(
        (replayed.task_id.as_str(), replayed.config_id.as_str()),
        (task_id.as_str(), "hook")
    );
    assert!(replayed.event >= sent.len() as u64, "{replayed:?}");
    assert_eq!(
        replayed.webhook_id,
        format!("{task_id}:hook:{}", replayed.event)
    );
    let again = received_once(&hook, "sent the event again", |received| {
        received.len() > sent.len()
    })
    .await;
    let again = &again[sent.len()];
    assert_eq!(notification_id(again), replayed.webhook_id);
    assert_eq!(again.raw_body, last.raw_body, "the same event");

    let unknown = caller
        .replay_notification(callee, &task_id, "no-such-hook")
        .await;
    assert_eq!(
        refused_with(unknown),
        Some(404),
        "a config the task does not have"
    );
    let by_callee = client(&app, &pair.callee.key)
        .replay_notification(callee, &task_id, "hook")
        .await;
    assert_eq!(
        refused_with(by_callee),
        Some(403),
        "the callee is not the caller"
    );
    assert_eq!(
        hook.received().len(),
        sent.len() + 1,
        "once, and nothing else"
    );

    let admin = client(&app, &pair.tenant.admin_key);
    let by_admin = notification_replayed(&admin, callee, &task_id).await;
    assert_eq!(by_admin.webhook_id, replayed.webhook_id);
    let thrice = received_once(&hook, "sent the event a third time", |received| {
        received.len() > sent.len() + 1
    })
    .await;
    assert_eq!(
        notification_id(&thrice[sent.len() + 1]),
        replayed.webhook_id
    );
}

#[tokio::test]
async fn the_calls_of_a_lineage_tree_are_listed_from_its_root() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = client(&app, &pair.tenant.admin_key);
    let caller = client(&app, &pair.caller.key);
    let root = caller
        .call(&pair.callee.name, CallOptions::new().text("first"))
        .await
        .unwrap();
    let root_call = root.call_id().unwrap().to_owned();
    let child = caller
        .call(
            &pair.callee.name,
            CallOptions::new().text("second").parent_call_id(&root_call),
        )
        .await
        .unwrap();
    let other = caller
        .call(&pair.callee.name, CallOptions::new().text("unrelated"))
        .await
        .unwrap();

    let calls = admin.calls(&root_call).await.unwrap();
    let tasks: Vec<&str> = calls.items.iter().map(|c| c.task_id.as_str()).collect();
    assert_eq!(tasks, [root.id.as_str(), child.id.as_str()], "oldest first");
    assert!(!tasks.contains(&other.id.as_str()));
    assert_eq!(calls.items[0].parent_call_id, None);
    assert_eq!(
        calls.items[1].parent_call_id.as_deref(),
        Some(root_call.as_str())
    );
    assert!(calls
        .items
        .iter()
        .all(|call| call.root_call_id == root_call && call.caller_agent_id == pair.caller.id));
    let none = admin
        .calls("00000000-0000-4000-8000-000000000000")
        .await
        .unwrap();
    assert!(none.items.is_empty());
    assert!(matches!(
        admin.calls("").await.unwrap_err(),
        Error::InvalidArgument(_)
    ));

    // The search route sees the same tasks (a read of the SDK's search, for its own sake).
    let found = admin
        .search_tasks(&TaskSearch {
            agent: Some(pair.caller.name.clone()),
            ..TaskSearch::default()
        })
        .await
        .unwrap();
    assert_eq!(found.items.len(), 3);
}

#[tokio::test]
async fn a_signing_key_is_rotated_then_retired_once_replaced() {
    let app = spawn_app_with(Options {
        signing_key_lifetime: Duration::ZERO,
        ..Options::default()
    })
    .await;
    let (tenant, admin) = tenant(&app).await;
    let operator = client(&app, &app.operator_key);

    let refused = admin
        .rotate_signing_key(Some(SigningKeyPurpose::WebhookSigning))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::PermissionDenied(_)), "{refused:?}");
    let old = operator
        .rotate_signing_key(Some(SigningKeyPurpose::WebhookSigning))
        .await
        .unwrap();
    assert_eq!(old.purpose, SigningKeyPurpose::WebhookSigning);
    let new = operator
        .rotate_signing_key(Some(SigningKeyPurpose::WebhookSigning))
        .await
        .unwrap();
    assert_ne!(new.kid, old.kid);
    let card_key = operator.rotate_signing_key(None).await.unwrap();
    assert_eq!(card_key.purpose, SigningKeyPurpose::CardSigning);

    let jwks = admin.signing_keys().await.unwrap();
    for kid in [&old.kid, &new.kid, &card_key.kid] {
        let key = jwks.key(kid).unwrap_or_else(|| panic!("{kid} is listed"));
        assert_eq!((key.kty.as_str(), key.crv.as_str()), ("OKP", "Ed25519"));
    }
    assert_eq!(
        jwks.key(&card_key.kid).unwrap().purpose,
        Some(SigningKeyPurpose::CardSigning)
    );

    let active = operator.retire_signing_key(&new.kid).await.unwrap_err();
    assert!(matches!(active, Error::Conflict(_)), "{active:?}");
    // A replaced key is retired once no process may still sign with it (0 s here, plus 2 s for
    // clocks).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let retired = operator.retire_signing_key(&old.kid).await.unwrap();
    assert!(retired.retired);
    assert_eq!(retired.kid, old.kid);
    assert!(operator.retire_signing_key(&old.kid).await.unwrap().retired);
    let unknown = operator
        .retire_signing_key("0000000000000000")
        .await
        .unwrap_err();
    assert!(matches!(unknown, Error::NotFound(_)), "{unknown:?}");

    let agent_key = {
        let agent = admin.create_agent("reader", None, None).await.unwrap();
        admin.issue_key(&agent.name).await.unwrap()
    };
    let jwks = client(&app, agent_key.key.expose())
        .signing_keys()
        .await
        .unwrap();
    assert!(
        jwks.key(&old.kid).is_none(),
        "a retired key leaves the JWKS"
    );
    assert!(jwks.key(&new.kid).is_some());
    assert_eq!(
        jwks.to_value()["keys"].as_array().unwrap().len(),
        jwks.keys.len()
    );
    drop(tenant);
}

#[tokio::test]
async fn a_tenant_policy_is_tried_checked_enforced_and_removed() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let admin = client(&app, &pair.tenant.admin_key);
    let caller = client(&app, &pair.caller.key);
    let text = format!(
        r#"forbid(principal, action == Action::"open", resource)
             when {{ resource.name == "{}" && context has skill && context.skill == "refund" }};"#,
        pair.callee.name
    );
    let patch = |patch: Option<PolicyPatch>| {
        std::collections::BTreeMap::from([("no-refunds".to_owned(), patch)])
    };
    let bad = admin
        .update_tenant_policies(&patch(Some(PolicyPatch {
            policy: Some("permit(principal, action, resource);".into()),
            ..PolicyPatch::default()
        })))
        .await
        .unwrap_err();
    assert!(matches!(bad, Error::BadRequest(_)), "{bad:?}");
    let saved = admin
        .update_tenant_policies(&patch(Some(PolicyPatch {
            policy: Some(text.clone()),
            ..PolicyPatch::default()
        })))
        .await
        .unwrap();
    assert_eq!(saved.version, 1);
    assert_eq!(saved.items[0].mode, PolicyMode::DryRun);
    assert_eq!(admin.tenant_policies().await.unwrap(), saved);

    let refund = || CallOptions::new().text("Refund INV-9").skill("refund");
    let check = CallCheckRequest {
        caller: pair.caller.name.clone(),
        callee: pair.callee.name.clone(),
        skill: Some("refund".into()),
        ..CallCheckRequest::default()
    };
    let tried = admin.check_call(&check).await.unwrap();
    assert!(tried.allowed, "{tried:?}");
    assert_eq!(tried.would_refuse, ["no-refunds"]);
    caller.call(&pair.callee.name, refund()).await.unwrap();
    let logged = admin
        .audit(&AuditQuery {
            outcome: Some(AuditOutcome::WouldRefuse),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(logged.items.len(), 1, "{logged:?}");
    assert_eq!(logged.items[0].policy.as_deref(), Some("no-refunds"));

    admin
        .update_tenant_policies(&patch(Some(PolicyPatch {
            mode: Some(PolicyMode::Enforce),
            ..PolicyPatch::default()
        })))
        .await
        .unwrap();
    let refused = admin.check_call(&check).await.unwrap();
    assert_eq!(
        (refused.allowed, refused.reason.as_deref(), refused.policies),
        (false, Some("policy"), vec!["no-refunds".to_owned()])
    );
    let denied = caller.call(&pair.callee.name, refund()).await.unwrap_err();
    assert!(matches!(denied, Error::PermissionDenied(_)), "{denied:?}");

    let removed = admin.update_tenant_policies(&patch(None)).await.unwrap();
    assert!(removed.items.is_empty());
    caller.call(&pair.callee.name, refund()).await.unwrap();
}
