//! The scenarios, each on a table of its own: small tasks driven one after another through
//! the in-process gateway, whose DynamoDB client goes through a proxy that records each request
//! with its consumed capacity and the images of the items each write names.

use forgebench::domain::shards::ShardCount;
use forgebench_bench::attribution::{Layout, Roles, Spread};
use forgebench_bench::proxy::{Capture, Proxy};
use forgebench_bench::small_task;
use forgebench_tests::{spawn_app_with, Answer, Callee, Options, Tenant, TestAgent, TestApp};
use serde_json::{json, Value};

use crate::tally::Count;

/// What a scenario measures, and the rate the issue sets for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Tasks to one callee from many callers.
    OneCallee,
    /// The same, the callee pushed to: its endpoint answers each task at once.
    OneCalleePush,
    /// Tasks among one tenant's many callers and callees.
    OneTenant,
    /// Every message in one tenant carries one word (and words of its own).
    CommonWord,
    /// Every task in one conversation.
    OneConversation,
}

impl Scenario {
    pub const ALL: [Scenario; 5] = [
        Scenario::OneCallee,
        Scenario::OneCalleePush,
        Scenario::OneTenant,
        Scenario::CommonWord,
        Scenario::OneConversation,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::OneCallee => "one callee",
            Scenario::OneCalleePush => "one callee, push",
            Scenario::OneTenant => "one tenant",
            Scenario::CommonWord => "a common word",
            Scenario::OneConversation => "one conversation",
        }
    }

    /// The role whose keys are the scenario's own: the callee's, the tenant's, the word's, the
    /// conversation's.
    pub fn subject(self) -> &'static str {
        match self {
            Scenario::OneCallee | Scenario::OneCalleePush => "{callee}",
            Scenario::OneTenant => "{tenant}",
            Scenario::CommonWord => "{word}",
            Scenario::OneConversation => "{conversation}",
        }
    }

    /// The tasks a second the issue asks of this scenario, and of what: none for a
    /// conversation, which holds at most 100 tasks.
    pub fn target(self) -> Option<(f64, &'static str)> {
        match self {
            Scenario::OneCallee | Scenario::OneCalleePush => {
                Some((10_000.0, "tasks/s to one callee"))
            }
            Scenario::OneTenant | Scenario::CommonWord => Some((50_000.0, "tasks/s in one tenant")),
            Scenario::OneConversation => None,
        }
    }
}

/// How large the scenarios are: tasks each, and agents on each side.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub tasks: usize,
    /// The callers of the one callee; the callers and the callees of the tenant, each.
    pub agents: usize,
}

/// The gateway under count and its recording proxies; for push, the callee's endpoint.
struct Bench {
    app: TestApp,
    dynamodb: Proxy,
    /// SQS's requests, to see the worker done with each task (its message deleted).
    moto: Proxy,
    endpoint: Option<Callee>,
    layout: Layout,
    roles: Roles,
}

/// The gateway, with the push worker and an endpoint that answers every task at once when
/// `push`.
async fn bench(push: bool) -> Bench {
    let layout = Layout::deployed();
    let capture = Capture {
        consumed_capacity: true,
        images: Some(layout.key.clone()),
    };
    let dynamodb = Proxy::start_capturing(forgebench_tests::dynamodb_endpoint(), capture).await;
    let moto = Proxy::start(forgebench_tests::moto_endpoint(), false).await;
    let app = spawn_app_with(Options {
        dynamodb_endpoint: dynamodb.endpoint.clone(),
        moto_endpoint: moto.endpoint.clone(),
        key_cache_seconds: 600,
        deployed_poll_intervals: true,
        push_worker: push,
        ..Options::local_push()
    })
    .await;
    let endpoint = match push {
        true => Some(Callee::start(|_| Answer::json(200, json!({"state": "completed"}))).await),
        false => None,
    };
    Bench {
        app,
        dynamodb,
        moto,
        endpoint,
        layout,
        roles: Roles::default(),
    }
}

/// Spreads the tenant's audit log over its most partitions, as DynamoDB's throttling of it
/// would at the rates the model is for (`domain/shards.rs`: the count doubles at each
/// throttle, up to its most).
async fn spread_logs(bench: &mut Bench, tenant: &Tenant) {
    let store = &bench.app.app.store;
    let tenant_id = forgebench::domain::TenantId::from(tenant.id.clone());
    let mut count = ShardCount::ONE;
    while count < ShardCount::MAX {
        count = store.spread_logs(&tenant_id, count).await.unwrap();
    }
    bench.roles.logs_spread(count.get());
}

/// One tenant's callers, each bound to each of its callees.
struct Party {
    callers: Vec<TestAgent>,
    callees: Vec<TestAgent>,
}

/// `count` new agents of `tenant`, named `{role}-{n}`.
async fn agents(app: &TestApp, tenant: &Tenant, role: &str, count: usize) -> Vec<TestAgent> {
    let mut made = Vec::new();
    for n in 0..count {
        made.push(
            app.create_agent(&tenant.admin_key, &format!("{role}-{n}"))
                .await,
        );
    }
    made
}

/// A new tenant's party, every id named by its role.
async fn party(bench: &mut Bench, callers: usize, callees: usize) -> Party {
    let tenant = bench.app.create_tenant().await;
    bench.roles.name(&tenant.id, "tenant", Spread::Shared);
    spread_logs(bench, &tenant).await;
    let callers = agents(&bench.app, &tenant, "caller", callers).await;
    let callees = agents(&bench.app, &tenant, "callee", callees).await;
    for (agents, role) in [(&callers, "caller"), (&callees, "callee")] {
        for agent in agents {
            bench.roles.name(&agent.id, role, Spread::Shared);
        }
    }
    if let Some(endpoint) = &bench.endpoint {
        let url = json!({"url": endpoint.url, "auth": {"type": "bearer", "secret": "bench"}});
        for callee in &callees {
            let set = bench
                .app
                .set_endpoint(&tenant.admin_key, &callee.name, url.clone());
            let set = set.await;
            assert_eq!(set.status, 200, "{}", set.text);
        }
    }
    let names: Vec<&str> = callees.iter().map(|callee| callee.name.as_str()).collect();
    for caller in &callers {
        let granted = bench.app.grant(&tenant.admin_key, &caller.id, &names).await;
        assert_eq!(granted.status, 200, "{}", granted.text);
        for binding in granted.body.as_array().into_iter().flatten() {
            let id = binding["id"].as_str().unwrap_or_default();
            bench.roles.name(id, "binding", Spread::Shared);
        }
    }
    Party { callers, callees }
}

/// The callee claims the task and answers it.
async fn answered(app: &TestApp, callee: &TestAgent, task: &str) {
    let claimed = app.claim(&callee.key, 0).await;
    assert_eq!(claimed.field("id"), task, "{}", claimed.text);
    let done = app
        .post_result(&callee.key, task, small_task::result())
        .await;
    assert_eq!(done.state(), "completed", "{}", done.text);
}

/// The SQS deletes the worker made: each ends a batch it is done with.
fn deleted(moto: &Proxy) -> usize {
    moto.count("DeleteMessageBatch") + moto.count("DeleteMessage")
}

/// The push worker delivered the task beyond the `received` before it, and is done with it
/// (its message deleted).
async fn delivered(moto: &Proxy, endpoint: &Callee, received: (usize, usize)) {
    let (posts, deletes) = received;
    assert!(endpoint.wait_for(posts + 1).await.len() > posts);
    for _ in 0..1500 {
        if deleted(moto) > deletes {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    panic!("the push worker did not finish its delivery");
}

/// One task's life (open at once; pull: claim, result; push: the worker's delivery; then the
/// caller's read), its ids named by their roles: its task, its call and, unless `context`
/// continues one, its own conversation. Returns the task's conversation.
async fn one_task(
    bench: &mut Bench,
    caller: &TestAgent,
    callee: &TestAgent,
    message: Value,
    context: Option<&str>,
) -> String {
    let received = match &bench.endpoint {
        Some(endpoint) => (endpoint.received().len(), deleted(&bench.moto)),
        None => (0, 0),
    };
    let app = &bench.app;
    let mut body = json!({ "message": message });
    if let Some(context) = context {
        body["context_id"] = json!(context);
    }
    let path = format!("/v1/agents/{}/tasks?wait=0", callee.id);
    let opened = app.post(&path, &caller.key, body).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let task = opened.field("id");
    match &bench.endpoint {
        Some(endpoint) => delivered(&bench.moto, endpoint, received).await,
        None => answered(app, callee, &task).await,
    }
    let read = app.get_task(&caller.key, &callee.id, &task).await;
    assert_eq!(read.state(), "completed", "{}", read.text);
    bench.roles.name(&task, "task", Spread::OneTask);
    bench
        .roles
        .name(&opened.field("call_id"), "call", Spread::OneTask);
    let conversation = opened.field("context_id");
    if context.is_none() {
        bench.roles.name(&conversation, "context", Spread::OneTask);
    }
    conversation
}

/// The most tasks a conversation holds (docs/api.md, "Opening a task").
const CONVERSATION_TASKS: usize = 100;

/// The message of task `n` of the common-word scenario: the common word, and two of its own.
fn common_word_message(n: usize) -> Value {
    json!({"role": "user", "parts": [{"text": format!("invoice ref{n}a ref{n}b")}]})
}

/// Runs `scenario`: one warm-up task per pair (keys and agents cached, as for busy agents),
/// then `sizes.tasks` tasks (rounded up to a whole number of rounds over the pairs), counted.
pub async fn run(scenario: Scenario, sizes: Sizes) -> Count {
    let mut bench = bench(scenario == Scenario::OneCalleePush).await;
    let (callers, callees) = match scenario {
        Scenario::OneCallee | Scenario::OneCalleePush => (sizes.agents, 1),
        Scenario::OneTenant | Scenario::CommonWord => (sizes.agents, sizes.agents),
        Scenario::OneConversation => (1, 1),
    };
    let party = party(&mut bench, callers, callees).await;
    let pairs: Vec<(&TestAgent, &TestAgent)> = party
        .callers
        .iter()
        .flat_map(|caller| party.callees.iter().map(move |callee| (caller, callee)))
        .collect();
    let message = |n: usize| match scenario {
        Scenario::CommonWord => common_word_message(n),
        _ => small_task::message(),
    };
    let mut conversation = None;
    for (n, (caller, callee)) in pairs.iter().enumerate() {
        let context = one_task(&mut bench, caller, callee, message(n), None).await;
        conversation.get_or_insert(context);
    }
    if scenario == Scenario::OneConversation {
        if let Some(context) = &conversation {
            bench.roles.name(context, "conversation", Spread::Shared);
        }
    } else {
        conversation = None;
    }
    bench.dynamodb.take();
    let tasks = match scenario {
        // The warm-up task opened the conversation, which holds at most 100.
        Scenario::OneConversation => sizes.tasks.min(CONVERSATION_TASKS - 1),
        _ => sizes.tasks.div_ceil(pairs.len()) * pairs.len(),
    };
    for n in 0..tasks {
        let (caller, callee) = pairs[n % pairs.len()];
        let body = message(pairs.len() + n);
        one_task(&mut bench, caller, callee, body, conversation.as_deref()).await;
    }
    Count::new(
        scenario,
        tasks,
        bench.roles,
        &bench.layout,
        bench.dynamodb.take(),
    )
}
