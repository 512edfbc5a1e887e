//! A binding's own limits and its contract (docs/api.md, "Limits and contracts on a binding"):
//! set by an admin on `PATCH /v1/agents/{agent}/agents/{binding_id}`, shown to both sides with
//! the binding's use, and held on REST, A2A JSON-RPC and A2A HTTP+JSON alike: a skill outside
//! the contract is the gate's one 403, a rate, a concurrency or a quota passed is a 429 with
//! `Retry-After`, each with its reason on the audit log.

use std::time::Duration;

use forgebench_tests::{spawn_app, Reply, Tenant, TestAgent, TestApp};
use serde_json::{json, Value};

use super::governance::{
    agents_with_bindings, open_call, open_naming, refusals, set_limits, Binding, BINDINGS,
};

fn binding_path(agent_id: &str, binding_id: &str) -> String {
    format!("/v1/agents/{agent_id}/agents/{binding_id}")
}

async fn patch_terms(app: &TestApp, key: &str, path: &str, terms: Value) -> Reply {
    app.send("PATCH", path, Some(key), Some(terms)).await
}

/// The bindings of `agent_id` as its list shows them, by binding id.
async fn listed(app: &TestApp, key: &str, agent_id: &str, side: &str, binding_id: &str) -> Value {
    let list = app.get(&format!("/v1/agents/{agent_id}/agents"), key).await;
    assert_eq!(list.status, 200, "{}", list.text);
    list.body[side]
        .as_array()
        .unwrap()
        .iter()
        .find(|binding| binding["id"] == binding_id)
        .cloned()
        .unwrap_or_else(|| panic!("binding {binding_id} not in {side}: {}", list.text))
}

/// Sleeps past the end of the current UTC minute if fewer than 15 s of it are left, so that a
/// test counting a minute's opens runs within one minute.
async fn early_in_a_minute() {
    let second = time::OffsetDateTime::now_utc().second();
    if second >= 45 {
        tokio::time::sleep(Duration::from_secs(u64::from(61 - second))).await;
    }
}

/// The id of the binding from `caller` to `callee`, as the caller's list shows it.
async fn binding_between(
    app: &TestApp,
    tenant: &Tenant,
    caller: &TestAgent,
    callee: &TestAgent,
) -> String {
    let list = app
        .get(
            &format!("/v1/agents/{}/agents", caller.id),
            &tenant.admin_key,
        )
        .await;
    list.body["outbound"]
        .as_array()
        .unwrap()
        .iter()
        .find(|binding| binding["callee_agent_id"] == callee.id.as_str())
        .and_then(|binding| binding["id"].as_str())
        .unwrap_or_else(|| panic!("no binding to {}: {}", callee.name, list.text))
        .to_owned()
}

fn retry_after(reply: &Reply) -> u64 {
    reply
        .headers
        .get("retry-after")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| panic!("no Retry-After on {}: {:?}", reply.text, reply.headers))
}

/// An open past the contract: the 429 `quota_exceeded` with a `Retry-After`.
fn assert_over_quota(reply: &Reply, binding: Binding) -> u64 {
    assert_eq!(reply.status, 429, "{binding:?}: {}", reply.text);
    assert_eq!(
        reply.body["detail"]["code"], "quota_exceeded",
        "{binding:?}: {}",
        reply.text
    );
    retry_after(reply)
}

pub(crate) fn assert_admitted(reply: &Reply, binding: Binding) {
    assert_eq!(reply.status, 200, "{binding:?}: {}", reply.text);
    assert!(
        !reply.body["error"].is_object(),
        "{binding:?}: {}",
        reply.text
    );
}

async fn reasons(app: &TestApp, tenant: &Tenant) -> Vec<String> {
    refusals(app, tenant)
        .await
        .into_iter()
        .map(|(reason, _, _)| reason)
        .collect()
}

#[tokio::test]
async fn only_an_admin_sets_a_bindings_terms_and_both_sides_read_them() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let tenant = &pair.tenant;
    let from_caller = binding_path(&pair.caller.id, &pair.binding_id);
    let from_callee = binding_path(&pair.callee.id, &pair.binding_id);

    let untouched = listed(
        &app,
        &tenant.admin_key,
        &pair.caller.id,
        "outbound",
        &pair.binding_id,
    )
    .await;
    assert_eq!(
        untouched["contract"],
        json!({"skills": null, "rate_per_minute": null, "max_concurrent": null, "daily_quota": null})
    );
    assert_eq!(
        untouched["limits"],
        json!({"max_call_depth": null, "refuse_cycles": null, "max_fan_out": null, "max_open_in_tree": null})
    );
    assert_eq!(
        untouched["usage"],
        json!({"minute": null, "day": null, "open": null})
    );

    let terms = json!({"limits": {"max_call_depth": 3},
                       "contract": {"skills": ["lookup", "refund"], "rate_per_minute": 10,
                                    "max_concurrent": 2, "daily_quota": 100}});
    let (_, member_key) = app.create_member(tenant, "member").await;
    for key in [&member_key, &pair.caller.key, &pair.callee.key] {
        let refused = patch_terms(&app, key, &from_caller, terms.clone()).await;
        assert_eq!(refused.status, 403, "{}", refused.text);
    }
    let set = patch_terms(&app, &tenant.admin_key, &from_caller, terms).await;
    assert_eq!(set.status, 200, "{}", set.text);
    assert_eq!(set.body["limits"]["max_call_depth"], 3);
    assert_eq!(set.body["contract"]["skills"], json!(["lookup", "refund"]));
    assert_eq!(set.body["usage"], json!({"minute": 0, "day": 0, "open": 0}));

    // A merge patch from the other side: null removes, what is left out stays.
    let patched = patch_terms(
        &app,
        &tenant.admin_key,
        &from_callee,
        json!({"contract": {"max_concurrent": null, "skills": ["lookup"]}}),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(
        patched.body["contract"],
        json!({"skills": ["lookup"], "rate_per_minute": 10, "max_concurrent": null, "daily_quota": 100})
    );
    assert_eq!(patched.body["limits"]["max_call_depth"], 3);
    assert_eq!(patched.body["usage"]["open"], Value::Null);
    // Both agents' owners read the terms in their lists.
    let inbound = listed(
        &app,
        &pair.callee.key,
        &pair.callee.id,
        "inbound",
        &pair.binding_id,
    )
    .await;
    assert_eq!(inbound["contract"], patched.body["contract"]);
    assert_eq!(inbound["limits"], patched.body["limits"]);

    for bad in [
        json!({"contract": {"rate_per_minute": 0}}),
        json!({"contract": {"daily_quota": 1_000_001}}),
        json!({"contract": {"skills": []}}),
        json!({"contract": {"skills": ["a", "a"]}}),
        json!({"contract": {"tools": ["a"]}}),
        json!({"limits": {"max_call_depth": 65}}),
        json!({"limits": {"refuse_cycles": "yes"}}),
        json!({"limits": [1]}),
        json!({"terms": {}}),
    ] {
        let refused = patch_terms(&app, &tenant.admin_key, &from_caller, bad.clone()).await;
        assert_eq!(refused.status, 400, "{bad}: {}", refused.text);
    }
    let other = app.create_agent(&tenant.admin_key, "bystander").await;
    let elsewhere = binding_path(&other.id, &pair.binding_id);
    let missing = patch_terms(&app, &tenant.admin_key, &elsewhere, json!({})).await;
    assert_eq!(missing.status, 404, "{}", missing.text);

    let audit = app
        .get("/v1/audit?action=binding.contract", &tenant.admin_key)
        .await;
    assert_eq!(audit.status, 200, "{}", audit.text);
    assert_eq!(
        audit.body["items"].as_array().unwrap().len(),
        2,
        "{}",
        audit.text
    );
    // A patch that changes nothing writes nothing.
    let same = patch_terms(
        &app,
        &tenant.admin_key,
        &from_caller,
        json!({"contract": {"skills": ["lookup"]}}),
    )
    .await;
    assert_eq!(same.status, 200, "{}", same.text);
    assert_eq!(same.body["updated_at"], patched.body["updated_at"]);
}

#[tokio::test]
async fn a_skill_outside_the_contract_is_refused_on_every_binding() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let tenant = &pair.tenant;
    let path = binding_path(&pair.caller.id, &pair.binding_id);
    let callee = &pair.callee.id;
    // Without skills in the contract, a named skill is not checked.
    let free = open_naming(
        &app,
        Binding::Rest,
        &pair.caller.key,
        callee,
        None,
        Some("any"),
    )
    .await;
    assert_admitted(&free, Binding::Rest);
    assert_eq!(free.body["skill"], "any");

    let set = patch_terms(
        &app,
        &tenant.admin_key,
        &path,
        json!({"contract": {"skills": ["lookup"]}}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.text);
    for binding in BINDINGS {
        let key = &pair.caller.key;
        let allowed = open_naming(&app, binding, key, callee, None, Some("lookup")).await;
        assert_admitted(&allowed, binding);
        for skill in [Some("refund"), None] {
            let refused = open_naming(&app, binding, key, callee, None, skill).await;
            assert_eq!(
                refused.status, 403,
                "{binding:?} {skill:?}: {}",
                refused.text
            );
            assert_eq!(refused.body["detail"]["code"], "not_permitted");
        }
    }
    let rest = open_naming(
        &app,
        Binding::Rest,
        &pair.caller.key,
        callee,
        None,
        Some("lookup"),
    )
    .await;
    assert_eq!(rest.body["skill"], "lookup");
    let read = app
        .get_task(&pair.caller.key, callee, &rest.field("id"))
        .await;
    assert_eq!(read.body["skill"], "lookup", "{}", read.text);
    let reasons = reasons(&app, tenant).await;
    assert_eq!(reasons, vec!["skill_not_allowed"; 6], "{reasons:?}");
}

#[tokio::test]
async fn past_the_rate_an_open_is_a_429_with_retry_after_on_every_binding() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let tenant = &pair.tenant;
    let path = binding_path(&pair.caller.id, &pair.binding_id);
    let (key, callee) = (&pair.caller.key, &pair.callee.id);
    let set = patch_terms(
        &app,
        &tenant.admin_key,
        &path,
        json!({"contract": {"rate_per_minute": 2}}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.text);
    early_in_a_minute().await;
    for binding in [Binding::Rest, Binding::JsonRpc] {
        assert_admitted(
            &open_naming(&app, binding, key, callee, None, None).await,
            binding,
        );
    }
    for binding in BINDINGS {
        let over = open_naming(&app, binding, key, callee, None, None).await;
        let wait = assert_over_quota(&over, binding);
        assert!((1..=60).contains(&wait), "{binding:?}: Retry-After {wait}");
    }
    let shown = listed(&app, &pair.callee.key, callee, "inbound", &pair.binding_id).await;
    assert_eq!(shown["usage"]["minute"], 2, "{shown}");
    assert_eq!(shown["usage"]["day"], 2, "{shown}");
    let reasons = reasons(&app, tenant).await;
    assert_eq!(reasons, vec!["quota_exceeded"; 3], "{reasons:?}");
}

#[tokio::test]
async fn past_the_daily_quota_an_open_waits_for_the_next_utc_day() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let path = binding_path(&pair.callee.id, &pair.binding_id);
    let (key, callee) = (&pair.caller.key, &pair.callee.id);
    let terms = json!({"contract": {"daily_quota": 2, "rate_per_minute": 100}});
    let set = patch_terms(&app, &pair.tenant.admin_key, &path, terms).await;
    assert_eq!(set.status, 200, "{}", set.text);
    for binding in [Binding::HttpJson, Binding::Rest] {
        assert_admitted(
            &open_naming(&app, binding, key, callee, None, None).await,
            binding,
        );
    }
    for binding in BINDINGS {
        let over = open_naming(&app, binding, key, callee, None, None).await;
        let wait = assert_over_quota(&over, binding);
        let now = time::OffsetDateTime::now_utc();
        let left_today = 86_400
            - u64::from(now.hour()) * 3_600
            - u64::from(now.minute()) * 60
            - u64::from(now.second());
        assert!(
            wait.abs_diff(left_today) <= 5,
            "{binding:?}: Retry-After {wait}, {left_today} s left in the day"
        );
        assert!(over.body["detail"]["message"]
            .as_str()
            .unwrap()
            .contains("daily quota"));
    }
}

#[tokio::test]
async fn past_the_concurrency_an_open_waits_until_a_task_finishes() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let path = binding_path(&pair.caller.id, &pair.binding_id);
    let (key, callee) = (&pair.caller.key, &pair.callee.id);
    let set = patch_terms(
        &app,
        &pair.tenant.admin_key,
        &path,
        json!({"contract": {"max_concurrent": 1}}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.text);
    let first = open_naming(&app, Binding::Rest, key, callee, None, None).await;
    assert_admitted(&first, Binding::Rest);
    for binding in BINDINGS {
        let over = open_naming(&app, binding, key, callee, None, None).await;
        assert_eq!(assert_over_quota(&over, binding), 1);
    }
    let shown = listed(&app, key, &pair.caller.id, "outbound", &pair.binding_id).await;
    assert_eq!(shown["usage"]["open"], 1, "{shown}");
    let canceled = app.cancel(key, callee, &first.field("id")).await;
    assert_eq!(canceled.status, 200, "{}", canceled.text);
    for binding in BINDINGS {
        let next = open_naming(&app, binding, key, callee, None, None).await;
        assert_admitted(&next, binding);
        let id = match binding {
            Binding::Rest => next.field("id"),
            Binding::JsonRpc => next.body["result"]["task"]["id"]
                .as_str()
                .unwrap()
                .to_owned(),
            Binding::HttpJson => next.body["task"]["id"].as_str().unwrap().to_owned(),
        };
        let canceled = app.cancel(key, callee, &id).await;
        assert_eq!(canceled.status, 200, "{binding:?}: {}", canceled.text);
    }
    let shown = listed(&app, key, &pair.caller.id, "outbound", &pair.binding_id).await;
    assert_eq!(shown["usage"]["open"], 0, "{shown}");
}

#[tokio::test]
async fn concurrent_opens_never_pass_the_contract() {
    let app = spawn_app().await;
    let pair = app.pair().await;
    let path = binding_path(&pair.caller.id, &pair.binding_id);
    let (key, callee) = (&pair.caller.key, &pair.callee.id);
    let terms = json!({"contract": {"max_concurrent": 3, "rate_per_minute": 50}});
    let set = patch_terms(&app, &pair.tenant.admin_key, &path, terms).await;
    assert_eq!(set.status, 200, "{}", set.text);
    early_in_a_minute().await;
    let opens = (0..12).map(|_| open_naming(&app, Binding::Rest, key, callee, None, None));
    let replies = futures::future::join_all(opens).await;
    let admitted = replies.iter().filter(|reply| reply.status == 200).count();
    let over = replies.iter().filter(|reply| reply.status == 429).count();
    assert_eq!(
        (admitted, over),
        (3, 9),
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    let shown = listed(&app, key, &pair.caller.id, "outbound", &pair.binding_id).await;
    assert_eq!(
        shown["usage"],
        json!({"minute": 3, "day": 3, "open": 3}),
        "{shown}"
    );
}

#[tokio::test]
async fn a_bindings_own_limits_replace_the_tenants_for_calls_through_it() {
    let app = spawn_app().await;
    let edges = [("c", "a"), ("a", "b"), ("a", "d"), ("b", "a")];
    let (tenant, agents) = agents_with_bindings(&app, &edges).await;
    let (a, b, c, d) = (&agents["a"], &agents["b"], &agents["c"], &agents["d"]);
    let a_to_b = binding_between(&app, &tenant, a, b).await;
    let b_to_a = binding_between(&app, &tenant, b, a).await;
    let set = patch_terms(
        &app,
        &tenant.admin_key,
        &binding_path(&a.id, &a_to_b),
        json!({"limits": {"max_call_depth": 1, "max_fan_out": 1}}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.text);
    let set = patch_terms(
        &app,
        &tenant.admin_key,
        &binding_path(&b.id, &b_to_a),
        json!({"limits": {"refuse_cycles": true}}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.text);

    // Depth: a → b may only start a tree; a → d keeps the tenant's 16.
    let root = open_call(&app, &c.key, &a.id, None).await;
    for binding in BINDINGS {
        let deep = open_naming(&app, binding, &a.key, &b.id, Some(&root), None).await;
        assert_eq!(deep.status, 403, "{binding:?}: {}", deep.text);
    }
    let beside = open_call(&app, &a.key, &d.id, Some(&root)).await;
    // Cycles: b → a refuses to come back to a, though the tenant does not refuse cycles.
    let top = open_call(&app, &a.key, &b.id, None).await;
    for binding in BINDINGS {
        let back = open_naming(&app, binding, &b.key, &a.id, Some(&top), None).await;
        assert_eq!(back.status, 403, "{binding:?}: {}", back.text);
    }
    // Fan-out: a → b's bound counts what its parent opened through any binding.
    let other_root = open_call(&app, &c.key, &a.id, None).await;
    set_limits(&app, &tenant, json!({"max_call_depth": 16})).await;
    let set = patch_terms(
        &app,
        &tenant.admin_key,
        &binding_path(&a.id, &a_to_b),
        json!({"limits": {"max_call_depth": null}}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.text);
    open_call(&app, &a.key, &d.id, Some(&other_root)).await;
    for binding in BINDINGS {
        let fanned = open_naming(&app, binding, &a.key, &b.id, Some(&other_root), None).await;
        assert_eq!(fanned.status, 403, "{binding:?}: {}", fanned.text);
    }
    let mut reasons = reasons(&app, &tenant).await;
    reasons.sort();
    let mut expected = [
        vec!["cycle"; 3],
        vec!["depth_exceeded"; 3],
        vec!["fan_out_exceeded"; 3],
    ]
    .concat();
    expected.sort();
    assert_eq!(reasons, expected);
    assert!(!beside.is_empty());
}
