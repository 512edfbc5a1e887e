//! The small tasks of the two modes, pull and push, driven one after another through the
//! gateway, each request timed under its route and each step of a task's life charged its
//! DynamoDB units.

use std::time::{Duration, Instant};

use forgebench_tests::{Answer, Callee, Options, Pair, Reply};
use serde_json::json;

use forgebench_bench::small_task;

use crate::gateway::{gateway, set_settings, set_word_search, Gateway};
use crate::run::Run;

/// One HTTP request to the gateway, timed under its route.
async fn timed<T>(
    run: &mut Run,
    route: &'static str,
    request: impl std::future::Future<Output = T>,
) -> T {
    let started = Instant::now();
    let reply = request.await;
    run.routes.entry(route).or_default().push(started.elapsed());
    reply
}

/// The skill the small task names when its binding has a contract: one of the contract's.
const SMALL_SKILL: &str = "classify";

/// Opens the small task on the pair's callee, below `parent` when there is one
/// (`X-Parent-Call`), naming [`SMALL_SKILL`] when `skill`.
async fn open_small(gateway: &Gateway, pair: &Pair, parent: Option<&str>, skill: bool) -> Reply {
    let app = &gateway.app;
    let mut body = json!({ "message": small_task::message() });
    if skill {
        body["skill"] = json!(SMALL_SKILL);
    }
    let mut request = app
        .http
        .post(format!(
            "{}/v1/agents/{}/tasks?wait=0",
            app.base, pair.callee.id
        ))
        .bearer_auth(&pair.caller.key)
        .json(&body);
    if let Some(parent) = parent {
        request = request.header("X-Parent-Call", parent);
    }
    app.finish(request).await
}

/// Where a pull task is opened: below which call, and whether it names a skill.
#[derive(Clone, Copy)]
struct Opening<'a> {
    parent: Option<&'a str>,
    skill: bool,
}

const AT_A_ROOT: Opening<'static> = Opening {
    parent: None,
    skill: false,
};

async fn pull_task(gateway: &Gateway, pair: &Pair, opening: Opening<'_>, run: &mut Run) {
    let app = &gateway.app;
    let opened = timed(
        run,
        "POST /v1/agents/{agent}/tasks (open)",
        open_small(gateway, pair, opening.parent, opening.skill),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    run.step("open", &gateway.dynamodb);
    let claimed = timed(
        run,
        "GET /v1/agents/me/tasks/next (claim)",
        app.claim(&pair.callee.key, 0),
    )
    .await;
    assert_eq!(claimed.status, 200, "{}", claimed.text);
    run.step("claim", &gateway.dynamodb);
    let done = timed(
        run,
        "POST /v1/agents/me/tasks/{id}/result",
        app.post_result(&pair.callee.key, &opened.field("id"), small_task::result()),
    )
    .await;
    assert_eq!(done.state(), "completed", "{}", done.text);
    run.step("result", &gateway.dynamodb);
    let read = timed(
        run,
        "GET /v1/agents/{agent}/tasks/{id} (read)",
        app.get_task(&pair.caller.key, &pair.callee.id, &opened.field("id")),
    )
    .await;
    assert_eq!(read.state(), "completed", "{}", read.text);
    run.step("read", &gateway.dynamodb);
}

/// The W3C trace context a traced caller's open brings: an OpenTelemetry SDK's `traceparent`
/// and a vendor's `tracestate` of one member, as common tracers send.
const CALLER_TRACE: [(&str, &str); 2] = [
    (
        "traceparent",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ),
    ("tracestate", "rojo=00f067aa0ba902b7"),
];

/// Opens the small task on the pair's callee at once, with the caller's trace context when
/// `traced`.
async fn open_now(gateway: &Gateway, pair: &Pair, traced: bool) -> Reply {
    let app = &gateway.app;
    let mut request = app
        .http
        .post(format!(
            "{}/v1/agents/{}/tasks?wait=0",
            app.base, pair.callee.id
        ))
        .bearer_auth(&pair.caller.key)
        .json(&json!({ "message": small_task::message() }));
    if traced {
        for (name, value) in CALLER_TRACE {
            request = request.header(name, value);
        }
    }
    app.finish(request).await
}

async fn push_task(gateway: &Gateway, pair: &Pair, callee: &Callee, run: &mut Run) {
    let (app, moto) = (&gateway.app, &gateway.moto);
    let (received, deleted) = (callee.received().len(), moto.deletes());
    let traced = run.mode == PUSH_TRACED;
    let opened = timed(
        run,
        "POST /v1/agents/{agent}/tasks (open)",
        open_now(gateway, pair, traced),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    // Delivered, answered, and the worker done with its batch (its message deleted).
    assert!(callee.wait_for(received + 1).await.len() > received);
    for _ in 0..1500 {
        if moto.deletes() > deleted {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The worker runs beside the open's answer: its writes and the open's are one step.
    run.step("open and delivery", &gateway.dynamodb);
    let read = timed(
        run,
        "GET /v1/agents/{agent}/tasks/{id} (read)",
        app.get_task(&pair.caller.key, &pair.callee.id, &opened.field("id")),
    )
    .await;
    assert_eq!(read.state(), "completed", "{}", read.text);
    run.step("read", &gateway.dynamodb);
}

/// Small pull tasks one after another, in a tenant with word search on or off
/// (`PATCH /v1/tenant/settings`).
pub async fn pull(tasks: usize, word_search: bool) -> Run {
    let gateway = gateway(Options {
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = gateway.app.pair().await;
    let mode = match word_search {
        true => "pull",
        false => "pull, word search off",
    };
    if !word_search {
        set_word_search(&gateway, &pair, false).await;
    }
    pull_task(&gateway, &pair, AT_A_ROOT, &mut Run::new("warm-up", 1)).await;
    gateway.reset();
    let mut run = Run::new(mode, tasks);
    for _ in 0..tasks {
        pull_task(&gateway, &pair, AT_A_ROOT, &mut run).await;
    }
    gateway.finish(&mut run);
    run
}

/// What governs the tasks of [`pull_below_a_call`].
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Terms {
    /// No call-tree limit but the default depth, no contract.
    None,
    /// Every call-tree limit set in the tenant: cycles refused, a fan-out and an open-in-tree
    /// limit no task reaches.
    Limits,
    /// No call-tree limit, and a contract on the task's binding as below.
    Contract,
    /// Those limits, and a contract on the task's binding that lists the skill each open names
    /// and bounds the rate, the concurrency and the day's quota (bounds no task reaches).
    LimitsAndContract,
    /// No limit, no contract, and an enforced tenant policy over the callee and the skill that
    /// refuses no task here.
    Policy,
    /// The same with a policy that also reads the call's depth and root caller.
    PlacePolicy,
}

impl Terms {
    fn mode(self) -> &'static str {
        match self {
            Terms::None => "pull below a call",
            Terms::Limits => "pull below a call, every limit set",
            Terms::Contract => "pull below a call, a contract",
            Terms::LimitsAndContract => "pull below a call, every limit and a contract",
            Terms::Policy => "pull below a call, a tenant policy",
            Terms::PlacePolicy => "pull below a call, a policy on depth and root caller",
        }
    }
}

/// Puts a contract no small task reaches on the pair's binding, naming [`SMALL_SKILL`].
async fn set_contract(gateway: &Gateway, pair: &Pair) {
    let contract = json!({"contract": {"skills": [SMALL_SKILL, "summarize"],
        "rate_per_minute": 10_000, "max_concurrent": 10_000, "daily_quota": 1_000_000}});
    let path = format!("/v1/agents/{}/agents/{}", pair.caller.id, pair.binding_id);
    let reply = gateway
        .app
        .send("PATCH", &path, Some(&pair.tenant.admin_key), Some(contract))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

/// Puts an enforced policy no small task meets in the pair's tenant, over the callee and the
/// skill and, when `place`, the call's depth and root caller too, as a tenant's policy would.
async fn set_policy(gateway: &Gateway, pair: &Pair, place: bool) {
    let mut policy = r#"forbid(principal, action, resource)
      when { resource.name == "wire-desk" || (context has skill && context.skill == "wire-transfer")"#
        .to_owned();
    if place {
        policy.push_str(
            r#" || context.depth > 32
             || (context has root_caller && context.root_caller.name == "retired-bot")"#,
        );
    }
    policy.push_str(" };");
    let body = json!({"policies": {"bounded": {"policy": policy, "mode": "enforce"}}});
    let reply = gateway
        .app
        .send(
            "PATCH",
            "/v1/tenant/policies",
            Some(&pair.tenant.admin_key),
            Some(body),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
}

/// Small pull tasks each opened below one call (`X-Parent-Call`) by that call's callee, under
/// `terms`: what the limits and a contract cost a task, against the same tasks without.
pub async fn pull_below_a_call(tasks: usize, terms: Terms) -> Run {
    let gateway = gateway(Options {
        push_worker: false,
        ..Options::default()
    })
    .await;
    let pair = gateway.app.pair().await;
    if matches!(terms, Terms::Limits | Terms::LimitsAndContract) {
        let limits = json!({"max_call_depth": 16, "refuse_cycles": true,
                            "max_fan_out": 10_000, "max_open_in_tree": 10_000});
        set_settings(&gateway, &pair, limits).await;
    }
    // The root call, from the pair's caller to its callee; the tasks measured are the callee's
    // calls below it to a third agent, as a workflow's second hop.
    let root = open_small(&gateway, &pair, None, false).await;
    assert_eq!(root.status, 200, "{}", root.text);
    let root = root.field("call_id");
    let pair = second_hop(&gateway, pair).await;
    let opening = Opening {
        parent: Some(&root),
        skill: matches!(terms, Terms::Contract | Terms::LimitsAndContract),
    };
    if opening.skill {
        set_contract(&gateway, &pair).await;
    }
    if matches!(terms, Terms::Policy | Terms::PlacePolicy) {
        set_policy(&gateway, &pair, terms == Terms::PlacePolicy).await;
    }
    pull_task(&gateway, &pair, opening, &mut Run::new("warm-up", 1)).await;
    gateway.reset();
    let mut run = Run::new(terms.mode(), tasks);
    for _ in 0..tasks {
        pull_task(&gateway, &pair, opening, &mut run).await;
    }
    gateway.finish(&mut run);
    run
}

/// The pair's callee as the caller of a third agent, bound to it.
async fn second_hop(gateway: &Gateway, pair: Pair) -> Pair {
    let app = &gateway.app;
    let third = app
        .create_agent(&pair.tenant.admin_key, "invoice-archiver")
        .await;
    let granted = app
        .grant(&pair.tenant.admin_key, &pair.callee.id, &[&third.name])
        .await;
    assert_eq!(granted.status, 200, "{}", granted.text);
    Pair {
        binding_id: granted.body[0]["id"].as_str().unwrap().to_owned(),
        tenant: pair.tenant.clone(),
        caller: pair.callee.clone(),
        callee: third,
    }
}

/// The push mode whose opens bring a caller's trace context.
pub const PUSH_TRACED: &str = "push, a caller's trace context";

/// Small push tasks one after another; each open bringing a caller's trace context when
/// `traced`.
pub async fn push(tasks: usize, traced: bool) -> Run {
    let callee = Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await;
    let gateway = gateway(Options {
        ..Options::local_push()
    })
    .await;
    let pair = gateway.app.pair().await;
    let reply = gateway
        .app
        .set_endpoint(
            &pair.tenant.admin_key,
            &pair.callee.name,
            json!({"url": callee.url, "auth": {"type": "bearer", "secret": "bench"}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    push_task(&gateway, &pair, &callee, &mut Run::new("warm-up", 1)).await;
    gateway.reset();
    let mut run = Run::new(if traced { PUSH_TRACED } else { "push" }, tasks);
    for _ in 0..tasks {
        push_task(&gateway, &pair, &callee, &mut run).await;
    }
    gateway.finish(&mut run);
    run
}
