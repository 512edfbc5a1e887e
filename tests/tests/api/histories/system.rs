//! The system under test: the gateway of a [`Run`], reached over HTTP only, with the ids each
//! history's tenants, agents and tasks were given. Every step is sent as a client would send
//! it; every answer must not be a 5xx and must agree with the model's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use forgebench_tests::{spawn_app_with, Callee, Options, Reply, TestApp};
use proptest_state_machine::StateMachineTest;
use serde_json::{json, Value};

use super::model::{
    Answer, Direction, Expect, Filter, Granter, Limits, Model, Reference, Rule, Status, Step,
    Terms, Via, AGENTS, MEMBERS_AGENT, TENANTS,
};

/// One gateway for every history of a process, and what they sent it.
pub struct Run {
    runtime: tokio::runtime::Runtime,
    app: TestApp,
    /// Every push endpoint and notification config points here; it answers `completed`.
    receiver: Callee,
    pub histories: AtomicUsize,
    pub steps: AtomicUsize,
    pub requests: AtomicUsize,
    pub server_errors: AtomicUsize,
    /// Tells the tasks of all histories apart in word search.
    words: AtomicUsize,
    /// By kind of step: how many ran, and how long they took with their checks.
    pub by_step: std::sync::Mutex<BTreeMap<String, (usize, std::time::Duration)>>,
    /// The refusals the model expected of opens (each one held to the gate's answer), by
    /// reason; and how many opens below a call were opened and refused.
    pub refusals: std::sync::Mutex<BTreeMap<&'static str, usize>>,
}

pub fn run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let app = runtime.block_on(spawn_app_with(Options::local_push()));
        let receiver = runtime.block_on(Callee::start(|_| {
            forgebench_tests::Answer::json(200, json!({"state": "completed"}))
        }));
        Run {
            runtime,
            app,
            receiver,
            histories: AtomicUsize::new(0),
            steps: AtomicUsize::new(0),
            requests: AtomicUsize::new(0),
            server_errors: AtomicUsize::new(0),
            words: AtomicUsize::new(0),
            by_step: std::sync::Mutex::new(BTreeMap::new()),
            refusals: std::sync::Mutex::new(BTreeMap::new()),
        }
    })
}

/// A request: its method, path, key, body and extra headers.
struct Call<'a> {
    method: &'a str,
    path: String,
    key: &'a str,
    body: Option<Value>,
    headers: Vec<(&'static str, String)>,
}

impl<'a> Call<'a> {
    fn new(method: &'a str, path: String, key: &'a str) -> Call<'a> {
        Call {
            method,
            path,
            key,
            body: None,
            headers: Vec::new(),
        }
    }

    fn body(mut self, body: Value) -> Call<'a> {
        self.body = Some(body);
        self
    }

    fn header(mut self, name: &'static str, value: String) -> Call<'a> {
        self.headers.push((name, value));
        self
    }
}

impl Run {
    /// Sends `call`; a 5xx fails the history there and then.
    fn send(&self, call: Call<'_>) -> Reply {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let method = reqwest::Method::from_bytes(call.method.as_bytes()).expect("method");
        let mut request = self
            .app
            .http
            .request(method, format!("{}{}", self.app.base, call.path))
            .bearer_auth(call.key);
        for (name, value) in &call.headers {
            request = request.header(*name, value);
        }
        if let Some(body) = &call.body {
            request = request
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        let reply = self.runtime.block_on(self.app.finish(request));
        if reply.status >= 500 {
            self.server_errors.fetch_add(1, Ordering::Relaxed);
            panic!(
                "{} {} answered {}: {}",
                call.method, call.path, reply.status, reply.text
            );
        }
        reply
    }

    fn get(&self, path: String, key: &str) -> Reply {
        self.send(Call::new("GET", path, key))
    }

    fn post(&self, path: String, key: &str, body: Value) -> Reply {
        self.send(Call::new("POST", path, key).body(body))
    }
}

#[derive(Debug, Clone)]
pub struct AgentIds {
    id: String,
    name: String,
    key: String,
    key_id: String,
}

#[derive(Debug, Clone)]
pub struct TenantIds {
    tenant_id: String,
    admin: String,
    viewer: String,
    /// The viewer's member id, and the id of its key in use.
    viewer_id: String,
    viewer_key_id: String,
    member: String,
    agents: Vec<AgentIds>,
    /// By (caller, callee).
    bindings: BTreeMap<(usize, usize), String>,
}

#[derive(Debug, Clone)]
pub struct TaskIds {
    id: String,
    call_id: String,
    context_id: String,
    word: String,
}

/// One history's tenants and tasks as the gateway named them.
pub struct World {
    run: &'static Run,
    tenants: Vec<TenantIds>,
    tasks: Vec<TaskIds>,
}

fn expect_status(reply: &Reply, status: u16, what: &str) {
    assert_eq!(reply.status, status, "{what}: {}", reply.text);
}

fn new_tenant(run: &Run) -> TenantIds {
    let operator = run.app.operator_key.clone();
    let created = run.post("/v1/tenants".into(), &operator, json!({"name": "lived-in"}));
    expect_status(&created, 201, "a new tenant");
    let admin = created.field("admin_key");
    let member_key = |role: &str| {
        let reply = run.post(
            "/v1/members".into(),
            &admin,
            json!({"name": format!("{role}-pat"), "role": role}),
        );
        expect_status(&reply, 201, "a new member");
        (
            reply.field("member_id"),
            reply.field("key_id"),
            reply.field("key"),
        )
    };
    let (viewer_id, viewer_key_id, viewer) = member_key("viewer");
    let (_, _, member) = member_key("member");
    let agents = (0..AGENTS)
        .map(|agent| {
            let creator = if agent == MEMBERS_AGENT {
                &member
            } else {
                &admin
            };
            let name = format!("agent-{agent}");
            let created = run.post("/v1/agents".into(), creator, json!({"name": name}));
            expect_status(&created, 201, "a new agent");
            let id = created.field("id");
            let issued = run.post(format!("/v1/agents/{id}/keys"), &admin, json!({}));
            expect_status(&issued, 201, "a new key");
            AgentIds {
                id,
                name,
                key: issued.field("key"),
                key_id: issued.field("key_id"),
            }
        })
        .collect();
    TenantIds {
        tenant_id: created.field("tenant_id"),
        admin,
        viewer,
        viewer_id,
        viewer_key_id,
        member,
        agents,
        bindings: BTreeMap::new(),
    }
}

fn items(reply: &Reply, field: &str) -> Vec<Value> {
    reply.body[field].as_array().cloned().unwrap_or_default()
}

impl World {
    fn agent(&self, tenant: usize, agent: usize) -> &AgentIds {
        &self.tenants[tenant].agents[agent]
    }

    /// A message whose one rare word is `word`.
    fn message(word: &str) -> Value {
        json!({"role": "user", "parts": [{"text": format!("please classify {word}")}]})
    }

    fn open(&mut self, model: &Model, step: &Step) {
        let Step::Open {
            tenant,
            caller,
            callee,
            via,
            parent,
            skill,
        } = *step
        else {
            return;
        };
        let skill = skill.map(|skill| format!("s{skill}"));
        let word = format!("kw{}", self.run.words.fetch_add(1, Ordering::Relaxed));
        let key = self.agent(tenant, caller).key.clone();
        let callee_id = self.agent(tenant, callee).id.clone();
        let parent_call = parent.map(|parent| self.tasks[parent].call_id.clone());
        if parent.is_some() {
            let outcome = match model.expect {
                Expect::Opened(_) => "below a call: opened",
                _ => "below a call: refused",
            };
            let mut refusals = self.run.refusals.lock().unwrap_or_else(|e| e.into_inner());
            *refusals.entry(outcome).or_default() += 1;
        }
        let (path, body) = match via {
            Via::Rest => (
                format!("/v1/agents/{callee_id}/tasks"),
                json!({"message": World::message(&word), "skill": skill}),
            ),
            Via::JsonRpc => (
                format!("/v1/agents/{callee_id}/a2a/jsonrpc"),
                json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                       "params": a2a_send(&word, skill.as_deref())}),
            ),
            Via::HttpJson => (
                format!("/v1/agents/{callee_id}/a2a/message:send"),
                a2a_send(&word, skill.as_deref()),
            ),
        };
        let mut call = Call::new("POST", path, &key).body(body);
        if via != Via::Rest {
            call = call.header("a2a-version", "1.0".into());
        }
        if let Some(parent_call) = parent_call {
            call = call.header("x-parent-call", parent_call);
        }
        let reply = self.run.send(call);
        match &model.expect {
            Expect::Opened(index) => {
                let task = match via {
                    Via::Rest => reply.body.clone(),
                    Via::JsonRpc => reply.body["result"]["task"].clone(),
                    Via::HttpJson => reply.body["task"].clone(),
                };
                let id = task["id"].as_str().unwrap_or_else(|| {
                    panic!(
                        "{via:?} open the model admits answered {}: {}",
                        reply.status, reply.text
                    )
                });
                let id = id.to_owned();
                let answered = (via == Via::Rest).then_some(&reply);
                self.opened(model, *index, &id, word, answered);
            }
            Expect::Refused(reason) => {
                refused(&reply);
                let mut refusals = self.run.refusals.lock().unwrap_or_else(|e| e.into_inner());
                *refusals.entry(reason).or_default() += 1;
            }
            Expect::OverQuota => {
                over_quota(&reply);
                let mut refusals = self.run.refusals.lock().unwrap_or_else(|e| e.into_inner());
                *refusals.entry("quota_exceeded").or_default() += 1;
            }
            Expect::KeyRefused(status) => key_refused(&reply, *status),
            other => panic!("an open expects {other:?}"),
        }
    }

    fn open_across(&self, model: &Model, tenant: usize, caller: usize, other: usize) {
        let target = &self.tenants[1 - tenant].agents[other].id;
        let key = &self.agent(tenant, caller).key;
        let reply = self.run.post(
            format!("/v1/agents/{target}/tasks"),
            key,
            json!({"message": World::message("across")}),
        );
        match model.expect {
            Expect::Refused(_) => refused(&reply),
            Expect::KeyRefused(status) => key_refused(&reply, status),
            ref other => panic!("an open across tenants expects {other:?}"),
        }
    }

    /// Task `index`, just opened as `id`: its call and conversation, as the admin reads the
    /// task (once a push task's receiver has answered), kept beside the model's.
    /// A REST open's answer is the task as the admin reads it, and stands for that read when
    /// the task is not pushed (`answered`).
    fn opened(
        &mut self,
        model: &Model,
        index: usize,
        id: &str,
        word: String,
        answered: Option<&Reply>,
    ) {
        let task = &model.tasks[index];
        let callee_id = &self.agent(task.tenant, task.callee).id;
        let wait = if task.push { "?wait=10" } else { "" };
        let read_now = || {
            self.run.get(
                format!("/v1/agents/{callee_id}/tasks/{id}{wait}"),
                &self.tenants[task.tenant].admin,
            )
        };
        let read = match answered {
            Some(answer) if !task.push => Reply {
                status: answer.status,
                headers: answer.headers.clone(),
                body: answer.body.clone(),
                text: answer.text.clone(),
            },
            _ => read_now(),
        };
        expect_status(&read, 200, "the task just opened");
        assert_eq!(index, self.tasks.len());
        self.tasks.push(TaskIds {
            id: id.to_owned(),
            call_id: read.field("call_id"),
            context_id: read.field("context_id"),
            word,
        });
        self.check_task(model, index, &read.body);
        let delivery = if task.push { "push" } else { "pull" };
        assert_eq!(read.body["delivery"], delivery, "task {index}");
    }

    /// An open on a callee whose claim deadline is one second, claimed, then read past it.
    fn open_and_expire(&mut self, model: &Model, tenant: usize, caller: usize, callee: usize) {
        let Expect::Opened(index) = model.expect else {
            panic!("an open to expire expects {:?}", model.expect);
        };
        let admin = self.tenants[tenant].admin.clone();
        let callee_ids = self.agent(tenant, callee).clone();
        let deadline = |seconds: u64| {
            let path = format!("/v1/agents/{}", callee_ids.id);
            let body = json!({"claim_timeout_seconds": seconds});
            let reply = self.run.send(Call::new("PATCH", path, &admin).body(body));
            expect_status(&reply, 200, "a claim deadline set");
        };
        deadline(1);
        let word = format!("kw{}", self.run.words.fetch_add(1, Ordering::Relaxed));
        let opened = self.run.post(
            format!("/v1/agents/{}/tasks", callee_ids.id),
            &self.agent(tenant, caller).key,
            json!({"message": World::message(&word)}),
        );
        expect_status(&opened, 200, "an open to expire");
        deadline(900);
        let claimed = self
            .run
            .get("/v1/agents/me/tasks/next?wait=0".into(), &callee_ids.key);
        expect_status(&claimed, 200, "the claim of a task to expire");
        assert_eq!(claimed.field("id"), opened.field("id"));
        std::thread::sleep(std::time::Duration::from_millis(1_100));
        self.opened(model, index, &opened.field("id"), word, None);
    }

    /// The task as read against the model's: its state, agents and lineage.
    fn check_task(&self, model: &Model, index: usize, read: &Value) {
        let task = &model.tasks[index];
        let ids = &self.tasks[index];
        let agents = &self.tenants[task.tenant].agents;
        let what = format!("task {index} ({})", ids.id);
        assert_eq!(read["id"], ids.id.as_str(), "{what}");
        assert_eq!(
            read["status"]["state"],
            task.state.as_str(),
            "{what}: {read}"
        );
        assert_eq!(
            read["caller_agent_id"],
            agents[task.caller].id.as_str(),
            "{what}"
        );
        assert_eq!(
            read["callee_agent_id"],
            agents[task.callee].id.as_str(),
            "{what}"
        );
        let parent = task
            .parent
            .map(|parent| self.tasks[parent].call_id.as_str());
        assert_eq!(
            read["parent_call_id"].as_str(),
            parent,
            "{what}: parent call"
        );
        let root = &self.tasks[task.root].call_id;
        assert_eq!(read["root_call_id"], root.as_str(), "{what}: root call");
        let skill = task.skill.map(|skill| format!("s{skill}"));
        assert_eq!(read["skill"].as_str(), skill.as_deref(), "{what}: skill");
    }

    /// Reads task `index` as its tenant's admin and holds it to the model.
    fn read_back(&self, model: &Model, index: usize) {
        let task = &model.tasks[index];
        let callee = &self.agent(task.tenant, task.callee).id;
        let id = &self.tasks[index].id;
        let read = self.run.get(
            format!("/v1/agents/{callee}/tasks/{id}"),
            &self.tenants[task.tenant].admin,
        );
        expect_status(&read, 200, "the admin reads a task");
        self.check_task(model, index, &read.body);
    }

    fn claim(&self, model: &Model, tenant: usize, callee: usize) {
        let key = &self.agent(tenant, callee).key;
        let reply = self.run.get("/v1/agents/me/tasks/next?wait=0".into(), key);
        match model.expect {
            Expect::Claimed(Some(index)) => {
                expect_status(&reply, 200, "a claim with a task queued");
                assert_eq!(
                    reply.field("id"),
                    self.tasks[index].id,
                    "the oldest queued task"
                );
                self.check_task(model, index, &reply.body);
            }
            Expect::Claimed(None) => expect_status(&reply, 204, "a claim with nothing queued"),
            Expect::KeyRefused(status) => key_refused(&reply, status),
            ref other => panic!("a claim expects {other:?}"),
        }
    }

    /// A step on one task: its answer held to the model, then the task read back.
    fn on_task(&self, model: &Model, step: &Step) {
        let (index, reply) = match *step {
            Step::Progress { task } => (task, self.callee_call(model, task, "progress", json!({
                "message": {"role": "agent", "parts": [{"text": "still reading"}]}}))),
            Step::Result { task, answer } => (task, self.callee_call(model, task, "result", match answer {
                Answer::Completed => json!({"state": "completed",
                    "artifacts": [{"name": "response", "parts": [{"data": {"category": "software"}}]}]}),
                Answer::Failed => json!({"state": "failed", "error": "could not read it"}),
                Answer::Question => json!({"state": "input_required",
                    "message": {"role": "agent", "parts": [{"text": "which currency?"}]}}),
            })),
            Step::Reply { task } => (task, self.caller_call(model, task, "messages", json!({
                "message": {"role": "user", "parts": [{"text": "euros"}]}}))),
            Step::Cancel { task } => (task, self.caller_call(model, task, "cancel", json!({}))),
            _ => return,
        };
        match model.expect {
            Expect::Task(expected, state) => {
                assert_eq!(expected, index);
                expect_status(&reply, 200, &format!("{step:?}"));
                assert_eq!(reply.state(), state.as_str(), "{step:?}: {}", reply.text);
            }
            Expect::Status(status) => expect_status(&reply, status, &format!("{step:?}")),
            Expect::Refused(_) => refused(&reply),
            Expect::KeyRefused(status) => key_refused(&reply, status),
            ref other => panic!("{step:?} expects {other:?}"),
        }
        self.read_back(model, index);
    }

    fn callee_call(&self, model: &Model, index: usize, route: &str, body: Value) -> Reply {
        let task = &model.tasks[index];
        let id = &self.tasks[index].id;
        self.run.post(
            format!("/v1/agents/me/tasks/{id}/{route}"),
            &self.agent(task.tenant, task.callee).key,
            body,
        )
    }

    fn caller_call(&self, model: &Model, index: usize, route: &str, body: Value) -> Reply {
        let task = &model.tasks[index];
        let id = &self.tasks[index].id;
        let callee_id = &self.agent(task.tenant, task.callee).id;
        self.run.post(
            format!("/v1/agents/{callee_id}/tasks/{id}/{route}"),
            &self.agent(task.tenant, task.caller).key,
            body,
        )
    }
}

/// A2A `SendMessage` params that return at once.
fn a2a_send(word: &str, skill: Option<&str>) -> Value {
    let mut send = json!({
        "message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                    "parts": [{"text": format!("please classify {word}")}]},
        "configuration": {"returnImmediately": true},
    });
    if let Some(skill) = skill {
        send["message"]["metadata"] = json!({ "skill": skill });
    }
    send
}

/// A binding's terms as the list shows them, with its open tasks as its contract counts them
/// (`null` without a concurrency).
fn terms_shown(terms: &Terms, open: usize) -> Value {
    let skills = terms.skills.map(|mask| {
        (0..3u8)
            .filter(|skill| mask & (1 << skill) != 0)
            .map(|skill| format!("s{skill}"))
            .collect::<Vec<_>>()
    });
    json!({
        "limits": {
            "max_call_depth": terms.max_call_depth,
            "refuse_cycles": terms.refuse_cycles,
            "max_fan_out": terms.max_fan_out,
            "max_open_in_tree": terms.max_open_in_tree,
        },
        "contract": {"skills": skills, "rate_per_minute": null,
                     "max_concurrent": terms.max_concurrent, "daily_quota": null},
        "open": terms.max_concurrent.map(|_| open),
    })
}

/// A binding's contract passed: 429 `quota_exceeded` with a `Retry-After`, on every binding
/// alike (a transport error on A2A).
fn over_quota(reply: &Reply) {
    expect_status(reply, 429, "an open past its binding's contract");
    assert_eq!(
        reply.body["detail"]["code"], "quota_exceeded",
        "{}",
        reply.text
    );
    assert!(
        reply.headers.contains_key("retry-after"),
        "{:?}",
        reply.headers
    );
}

/// The gate's one refusal: the seed's 403 `not_permitted`, on every binding alike (a refusal is
/// the transport's, not a JSON-RPC error: docs/a2a.md).
fn refused(reply: &Reply) {
    expect_status(reply, 403, "a refused open");
    assert_eq!(
        reply.body["detail"]["code"], "not_permitted",
        "{}",
        reply.text
    );
}

/// A key that does not work: the agent's paused (403) or retired (401), on every binding.
fn key_refused(reply: &Reply, status: u16) {
    expect_status(reply, status, "a key of an agent not active");
}

/// The management steps.
impl World {
    fn set_endpoint(&self, tenant: usize, agent: usize, on: bool) {
        let ids = &self.tenants[tenant];
        let url = on.then(|| self.run.receiver.url.clone());
        let reply = self.run.send(
            Call::new(
                "PUT",
                format!("/v1/agents/{}/endpoint", ids.agents[agent].id),
                &ids.admin,
            )
            .body(json!({ "url": url })),
        );
        expect_status(&reply, 200, "an endpoint set or cleared");
    }

    /// A JSON-RPC call of a push notification config method, as the task's caller.
    fn config_call(&self, model: &Model, index: usize, method: &str, params: Value) -> Reply {
        let task = &model.tasks[index];
        let call = Call::new(
            "POST",
            format!(
                "/v1/agents/{}/a2a/jsonrpc",
                self.agent(task.tenant, task.callee).id
            ),
            &self.agent(task.tenant, task.caller).key,
        )
        .header("a2a-version", "1.0".into())
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
        self.run.send(call)
    }

    fn put_config(&self, model: &Model, index: usize, config: u8, token: u8) {
        let params = json!({"taskId": self.tasks[index].id, "id": format!("hook-{config}"),
                            "url": self.run.receiver.url, "token": format!("tok-{token}")});
        let reply = self.config_call(model, index, "CreateTaskPushNotificationConfig", params);
        match model.expect {
            Expect::Status(200) => {
                let token = format!("tok-{token}");
                assert_eq!(
                    reply.body["result"]["token"],
                    token.as_str(),
                    "{}",
                    reply.text
                );
            }
            Expect::Status(_) => {
                expect_status(&reply, 200, "a JSON-RPC error");
                assert!(
                    reply.body["error"].is_object(),
                    "a sixth config: {}",
                    reply.text
                );
            }
            Expect::KeyRefused(status) => key_refused(&reply, status),
            ref other => panic!("a config put expects {other:?}"),
        }
        self.list_configs(model, index);
    }

    fn delete_config(&self, model: &Model, index: usize, config: u8) {
        let params = json!({"taskId": self.tasks[index].id, "id": format!("hook-{config}")});
        let reply = self.config_call(model, index, "DeleteTaskPushNotificationConfig", params);
        match model.expect {
            Expect::Status(200) => assert!(reply.body.get("error").is_none(), "{}", reply.text),
            Expect::Status(_) => assert!(reply.body["error"].is_object(), "{}", reply.text),
            Expect::KeyRefused(status) => key_refused(&reply, status),
            ref other => panic!("a config delete expects {other:?}"),
        }
        self.list_configs(model, index);
    }

    /// The task's configs, as its caller lists them: each id with its latest token.
    fn list_configs(&self, model: &Model, index: usize) {
        let task = &model.tasks[index];
        let params = json!({"taskId": self.tasks[index].id});
        let reply = self.config_call(model, index, "ListTaskPushNotificationConfigs", params);
        if let Some(status) = model.key_refusal_of(task.tenant, task.caller) {
            key_refused(&reply, status);
            return;
        }
        let found: BTreeMap<String, String> = reply.body["result"]["configs"]
            .as_array()
            .unwrap_or_else(|| panic!("ListTaskPushNotificationConfigs: {}", reply.text))
            .iter()
            .map(|config| {
                let id = config["id"].as_str().unwrap_or_default().to_owned();
                (id, config["token"].as_str().unwrap_or_default().to_owned())
            })
            .collect();
        let expected: BTreeMap<String, String> = task
            .configs
            .iter()
            .map(|(config, token)| (format!("hook-{config}"), format!("tok-{token}")))
            .collect();
        assert_eq!(found, expected, "the configs of task {index}");
    }

    fn grant(&mut self, tenant: usize, caller: usize, callee: usize, by: Granter) {
        let ids = &self.tenants[tenant];
        let key = match by {
            Granter::Admin => &ids.admin,
            Granter::Member => &ids.member,
        };
        let reply = self.run.post(
            format!("/v1/agents/{}/agents", ids.agents[caller].id),
            key,
            json!({"callees": [ids.agents[callee].id]}),
        );
        expect_status(&reply, 200, "a grant");
        let binding = reply.body[0]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{}", reply.text));
        self.tenants[tenant]
            .bindings
            .insert((caller, callee), binding.to_owned());
    }

    fn binding_call(&self, tenant: usize, caller: usize, callee: usize, approve: bool) -> Reply {
        let ids = &self.tenants[tenant];
        let binding = &ids.bindings[&(caller, callee)];
        match approve {
            true => self.run.post(
                format!(
                    "/v1/agents/{}/agents/{binding}/approve",
                    ids.agents[callee].id
                ),
                &ids.admin,
                json!({}),
            ),
            false => self.run.send(Call::new(
                "DELETE",
                format!("/v1/agents/{}/agents/{binding}", ids.agents[caller].id),
                &ids.admin,
            )),
        }
    }

    fn set_status(&self, model: &Model, tenant: usize, agent: usize, status: &str) {
        let ids = &self.tenants[tenant];
        let reply = self.run.send(
            Call::new(
                "PATCH",
                format!("/v1/agents/{}", ids.agents[agent].id),
                &ids.admin,
            )
            .body(json!({"status": status})),
        );
        let Expect::Status(expected) = model.expect else {
            panic!("a status change expects {:?}", model.expect);
        };
        expect_status(&reply, expected, "a status change");
    }

    /// A new key, then the old one revoked: the old one no longer works, the new one does.
    fn rotate_key(&mut self, tenant: usize, agent: usize) {
        let admin = self.tenants[tenant].admin.clone();
        let old = self.agent(tenant, agent).clone();
        let issued = self
            .run
            .post(format!("/v1/agents/{}/keys", old.id), &admin, json!({}));
        expect_status(&issued, 201, "a new key");
        let revoked = self.run.send(Call::new(
            "DELETE",
            format!("/v1/agents/{}/keys/{}", old.id, old.key_id),
            &admin,
        ));
        assert!(revoked.status < 300, "a key revoked: {}", revoked.text);
        let fresh = &mut self.tenants[tenant].agents[agent];
        fresh.key = issued.field("key");
        fresh.key_id = issued.field("key_id");
        // The new key is used by every later step of the agent's.
        let old_key = self.run.get("/v1/agents/me".into(), &old.key);
        expect_status(&old_key, 401, "a revoked key");
    }

    /// A person's key rotated: the old one no longer reads, the new one does.
    fn rotate_viewer_key(&mut self, tenant: usize) {
        let ids = self.tenants[tenant].clone();
        let path = format!("/v1/members/{}/keys", ids.viewer_id);
        let issued = self.run.post(path.clone(), &ids.admin, json!({}));
        expect_status(&issued, 201, "a person's new key");
        let old = format!("{path}/{}", ids.viewer_key_id);
        let revoked = self.run.send(Call::new("DELETE", old, &ids.admin));
        expect_status(&revoked, 200, "a person's key revoked");
        let fresh = &mut self.tenants[tenant];
        fresh.viewer = issued.field("key");
        fresh.viewer_key_id = issued.field("key_id");
        // The new key is used by every later read of the viewer's.
        let old_key = self.run.get("/v1/tasks?limit=1".into(), &ids.viewer);
        expect_status(&old_key, 401, "a person's revoked key");
    }

    /// Spreads the tenant's logs over twice as many partitions, as a throttled write of them
    /// does: every later read is held to the same model as before.
    fn spread_logs(&self, tenant: usize) {
        let store = &self.run.app.app.store;
        let tenant_id = forgebench::domain::TenantId::from(self.tenants[tenant].tenant_id.clone());
        self.run.runtime.block_on(async {
            let settings = store.tenant_settings(&tenant_id).await.expect("settings");
            let from = settings.expect("the tenant").log_shards;
            let to = store.spread_logs(&tenant_id, from).await.expect("spread");
            assert_eq!(Some(to), from.doubled().or(Some(from)), "the log spread");
        });
    }

    fn word_search(&self, tenant: usize, on: bool) {
        let reply = self.run.send(
            Call::new(
                "PATCH",
                "/v1/tenant/settings".into(),
                &self.tenants[tenant].admin,
            )
            .body(json!({"word_search": on})),
        );
        expect_status(&reply, 200, "word search turned on or off");
    }

    fn limits(&self, tenant: usize, limits: Limits) {
        let body = json!({
            "max_call_depth": limits.max_call_depth,
            "refuse_cycles": limits.refuse_cycles,
            "max_fan_out": limits.max_fan_out,
            "max_open_in_tree": limits.max_open_in_tree,
        });
        let reply = self.run.send(
            Call::new(
                "PATCH",
                "/v1/tenant/settings".into(),
                &self.tenants[tenant].admin,
            )
            .body(body),
        );
        expect_status(&reply, 200, "call-tree limits set");
    }

    /// Sets every field of a binding's terms, from its caller's side.
    fn terms(&self, tenant: usize, caller: usize, callee: usize, terms: Terms) {
        let (caller_id, callee_id) = (
            &self.agent(tenant, caller).id,
            &self.agent(tenant, callee).id,
        );
        let binding = forgebench::domain::binding::binding_id(caller_id, callee_id);
        let shown = terms_shown(&terms, 0);
        let body = json!({
            "limits": shown["limits"],
            "contract": {"skills": shown["contract"]["skills"], "max_concurrent": terms.max_concurrent},
        });
        let path = format!("/v1/agents/{caller_id}/agents/{binding}");
        let reply = self
            .run
            .send(Call::new("PATCH", path, &self.tenants[tenant].admin).body(body));
        expect_status(&reply, 200, "a binding's terms set");
    }
}

impl World {
    /// Sets (or removes) the tenant's policy `p{slot}`: Cedar written from the rule.
    fn policy(&self, tenant: usize, slot: u8, rule: Option<Rule>) {
        let body = rule.map_or(Value::Null, |rule| {
            let callee = format!("agent-{}", rule.callee);
            let skill = rule.skill.map_or(String::new(), |skill| {
                format!(r#" && context has skill && context.skill == "s{skill}""#)
            });
            let policy = format!(
                r#"forbid(principal, action == Action::"{}", resource) when {{ resource.name == "{callee}"{skill} }};"#,
                rule.action.as_str()
            );
            let mode = if rule.enforced { "enforce" } else { "dry_run" };
            json!({"policy": policy, "mode": mode})
        });
        let body = json!({"policies": {format!("p{slot}"): body}});
        let reply = self.run.send(
            Call::new(
                "PATCH",
                "/v1/tenant/policies".into(),
                &self.tenants[tenant].admin,
            )
            .body(body),
        );
        expect_status(&reply, 200, "a tenant policy set");
    }
}

/// The reads, each held to the model.
impl World {
    /// Every page of a task search at `path` (which has its query), 4 a page: the ids in order.
    fn search_pages(&self, path: &str, key: &str) -> Result<Vec<String>, Box<Reply>> {
        let mut ids = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let page_path = match &cursor {
                Some(cursor) => format!("{path}&limit=4&cursor={cursor}"),
                None => format!("{path}&limit=4"),
            };
            let reply = self.run.get(page_path, key);
            if reply.status != 200 {
                return Err(Box::new(reply));
            }
            ids.extend(
                items(&reply, "items")
                    .iter()
                    .map(|item| item["id"].as_str().unwrap_or_default().to_owned()),
            );
            match reply.body["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(ids),
            }
        }
        panic!("{path}: a search that never ends");
    }

    fn ids_of(&self, tasks: impl Iterator<Item = usize>) -> Vec<String> {
        tasks.map(|task| self.tasks[task].id.clone()).collect()
    }

    fn search(&self, model: &Model, tenant: usize, viewer: bool, filter: Filter) {
        let ids = &self.tenants[tenant];
        let key = if viewer { &ids.viewer } else { &ids.admin };
        let keep = |task: usize| -> bool {
            let task = &model.tasks[task];
            match filter {
                Filter::None => true,
                Filter::State(state) => task.state == state,
                Filter::Agent(agent) => task.caller == agent || task.callee == agent,
                Filter::Word(_) | Filter::Context(_) => false,
            }
        };
        let (path, expected) = match filter {
            Filter::None => ("/v1/tasks?".to_owned(), None),
            Filter::State(state) => (format!("/v1/tasks?state={}", state.as_str()), None),
            Filter::Agent(agent) => (format!("/v1/tasks?agent={}", ids.agents[agent].name), None),
            Filter::Word(task) => {
                let found = model.tasks[task].indexed.then_some(task);
                (
                    format!("/v1/tasks?q={}", self.tasks[task].word),
                    Some(found.into_iter().collect()),
                )
            }
            Filter::Context(task) => (
                format!("/v1/tasks?context_id={}", self.tasks[task].context_id),
                Some(vec![task]),
            ),
        };
        let expected: Vec<usize> =
            expected.unwrap_or_else(|| model.tasks_of(tenant).filter(|task| keep(*task)).collect());
        let found = self.search_pages(&path, key);
        if matches!(filter, Filter::Word(_)) && !model.tenants[tenant].word_search {
            let refused = found.expect_err("a word search with word search off");
            expect_status(&refused, 409, "a word search with word search off");
            return;
        }
        let found = found.unwrap_or_else(|reply| panic!("{path}: {} {}", reply.status, reply.text));
        assert_eq!(
            found,
            self.ids_of(expected.into_iter()),
            "{path} (viewer: {viewer})"
        );
    }

    fn agent_search(&self, model: &Model, tenant: usize, agent: usize, direction: Direction) {
        let name = match direction {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
            Direction::Both => "both",
        };
        let keep = |caller: usize, callee: usize| match direction {
            Direction::Inbound => agent == callee,
            Direction::Outbound => agent == caller,
            Direction::Both => agent == caller || agent == callee,
        };
        let path = format!("/v1/tasks?direction={name}");
        let found = self.search_pages(&path, &self.agent(tenant, agent).key);
        match model.key_refusal_of(tenant, agent) {
            Some(status) => {
                let refused = found.expect_err("a search with a key that does not work");
                expect_status(&refused, status, "a search with a key that does not work");
            }
            None => {
                let expected = model.tasks_of(tenant).filter(|task| {
                    let task = &model.tasks[*task];
                    keep(task.caller, task.callee)
                });
                let found = found.unwrap_or_else(|reply| panic!("{path}: {}", reply.text));
                assert_eq!(found, self.ids_of(expected), "{path} as agent {agent}");
            }
        }
    }

    fn list_tasks(&self, model: &Model, tenant: usize, caller: usize, callee: usize) {
        let call = Call::new(
            "POST",
            format!("/v1/agents/{}/a2a/jsonrpc", self.agent(tenant, callee).id),
            &self.agent(tenant, caller).key,
        )
        .header("a2a-version", "1.0".into())
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                     "params": {"pageSize": 100}}));
        let reply = self.run.send(call);
        if let Some(status) = model.key_refusal_of(tenant, caller) {
            key_refused(&reply, status);
            return;
        }
        let listed = reply.body["result"]["tasks"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| panic!("ListTasks: {}", reply.text));
        let found: Vec<(String, String)> = listed
            .iter()
            .map(|task| {
                let id = task["id"].as_str().unwrap_or_default().to_owned();
                let state = task["status"]["state"].as_str().unwrap_or_default();
                (id, state.to_owned())
            })
            .collect();
        let expected: Vec<(String, String)> = model
            .tasks_of(tenant)
            .filter(|task| {
                model.tasks[*task].caller == caller && model.tasks[*task].callee == callee
            })
            .map(|task| {
                let state = model.tasks[task].state.a2a();
                (self.tasks[task].id.clone(), state.to_owned())
            })
            .collect();
        assert_eq!(found, expected, "ListTasks of {caller} on {callee}");
    }

    /// Every entry of an audit query, page after page.
    fn audit_pages(&self, path: &str, key: &str) -> Vec<Value> {
        let mut entries = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..200 {
            let page_path = match &cursor {
                Some(cursor) => format!("{path}&cursor={cursor}"),
                None => path.to_owned(),
            };
            let reply = self.run.get(page_path, key);
            expect_status(&reply, 200, path);
            entries.extend(items(&reply, "items"));
            match reply.body["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return entries,
            }
        }
        panic!("{path}: an audit log that never ends");
    }

    /// The refused opens on the log, counted by caller, target and reason, and the opened
    /// tasks, each once.
    fn audit(&self, model: &Model, tenant: usize) {
        let ids = &self.tenants[tenant];
        let path = "/v1/audit?action=task.open&outcome=refused&limit=3";
        let refusals = self.audit_pages(path, &ids.admin);
        let mut found: BTreeMap<(String, String, String), u64> = BTreeMap::new();
        for entry in &refusals {
            let key = (
                entry["actor"]["id"].as_str().unwrap_or_default().to_owned(),
                entry["target"].as_str().unwrap_or_default().to_owned(),
                entry["reason"].as_str().unwrap_or_default().to_owned(),
            );
            *found.entry(key).or_default() += entry["count"].as_u64().unwrap_or(0);
        }
        let target = |target: usize| match target < AGENTS {
            true => ids.agents[target].id.clone(),
            false => self.tenants[1 - tenant].agents[target - AGENTS].id.clone(),
        };
        let expected: BTreeMap<(String, String, String), u64> = model.tenants[tenant]
            .refusals
            .iter()
            .map(|(&(caller, to, reason), count)| {
                let key = (ids.agents[caller].id.clone(), target(to), reason.to_owned());
                (key, *count)
            })
            .collect();
        assert_eq!(found, expected, "refused opens on the audit log");
        let path = "/v1/audit?action=task.open&outcome=allowed&limit=7";
        let opens = self.audit_pages(path, &ids.viewer);
        let found: BTreeSet<String> = opens
            .iter()
            .map(|entry| entry["task_id"].as_str().unwrap_or_default().to_owned())
            .collect();
        let expected: BTreeSet<String> = self.ids_of(model.tasks_of(tenant)).into_iter().collect();
        assert_eq!(found, expected, "allowed opens on the audit log");
        assert_eq!(opens.len(), expected.len(), "one open entry per task");
    }

    fn call_tree(&self, model: &Model, index: usize) {
        let task = &model.tasks[index];
        let root = &self.tasks[task.root].call_id;
        let reply = self.run.get(
            format!("/v1/calls?root_call_id={root}"),
            &self.tenants[task.tenant].viewer,
        );
        expect_status(&reply, 200, "a call tree");
        let found: BTreeSet<String> = items(&reply, "items")
            .iter()
            .map(|call| call["task_id"].as_str().unwrap_or_default().to_owned())
            .collect();
        let expected: BTreeSet<String> = (0..model.tasks.len())
            .filter(|other| model.tasks[*other].root == task.root)
            .map(|other| self.tasks[other].id.clone())
            .collect();
        assert_eq!(found, expected, "the call tree of task {index}");
    }

    fn bindings(&self, model: &Model, tenant: usize, agent: usize) {
        let ids = &self.tenants[tenant];
        let path = format!("/v1/agents/{}/agents", ids.agents[agent].id);
        let reply = self.run.get(path, &ids.viewer);
        expect_status(&reply, 200, "an agent's bindings");
        let side = |name: &str, other: &str| -> BTreeSet<(String, bool, bool, String)> {
            items(&reply, name)
                .iter()
                .map(|binding| {
                    let terms = json!({"limits": binding["limits"], "contract": binding["contract"],
                                       "open": binding["usage"]["open"]});
                    (
                        binding[other].as_str().unwrap_or_default().to_owned(),
                        !binding["approved_at"].is_null(),
                        binding["revoked"].as_bool().unwrap_or(false),
                        terms.to_string(),
                    )
                })
                .collect()
        };
        let expected = |outbound: bool| -> BTreeSet<(String, bool, bool, String)> {
            model.tenants[tenant]
                .bindings
                .iter()
                .filter_map(|(&(caller, callee), binding)| {
                    let other = match outbound {
                        true => (caller == agent).then_some(callee),
                        false => (callee == agent).then_some(caller),
                    }?;
                    let id = ids.agents[other].id.clone();
                    let open = model.counted_open(tenant, caller, callee);
                    let terms = terms_shown(&binding.terms, open);
                    Some((id, binding.approved, binding.revoked, terms.to_string()))
                })
                .collect()
        };
        let outbound = side("outbound", "callee_agent_id");
        assert_eq!(outbound, expected(true), "outbound of {agent}");
        let inbound = side("inbound", "caller_agent_id");
        assert_eq!(inbound, expected(false), "inbound of {agent}");
    }

    fn cards(&self, model: &Model, tenant: usize) {
        let ids = &self.tenants[tenant];
        let reply = self.run.get("/v1/agents/cards".into(), &ids.viewer);
        expect_status(&reply, 200, "the registry");
        let cards = items(&reply, "cards");
        let found: BTreeSet<String> = cards
            .iter()
            .map(|card| card["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        let expected: BTreeSet<String> = (0..AGENTS)
            .filter(|agent| model.agent(tenant, *agent).status != Status::Retired)
            .map(|agent| ids.agents[agent].name.clone())
            .collect();
        assert_eq!(found, expected, "the registry's cards");
        for card in &cards {
            let skills = card["skills"].as_array().map_or(0, Vec::len);
            assert!(skills > 0, "a card without skills: {card}");
        }
    }

    /// After every step: the tenant's first page of tasks, as its admin searches it.
    fn tenant_page(&self, model: &Model, tenant: usize) {
        let reply = self
            .run
            .get("/v1/tasks?limit=20".into(), &self.tenants[tenant].admin);
        expect_status(&reply, 200, "the tenant's tasks");
        let found: Vec<String> = items(&reply, "items")
            .iter()
            .map(|item| item["id"].as_str().unwrap_or_default().to_owned())
            .collect();
        let expected = self.ids_of(model.tasks_of(tenant).take(20));
        assert_eq!(found, expected, "the tenant's first page");
    }
}

/// The tenant a step is about.
fn tenant_of(model: &Model, step: &Step) -> usize {
    match *step {
        Step::Open { tenant, .. }
        | Step::OpenAcross { tenant, .. }
        | Step::Claim { tenant, .. }
        | Step::OpenAndExpire { tenant, .. }
        | Step::SetEndpoint { tenant, .. }
        | Step::Grant { tenant, .. }
        | Step::Approve { tenant, .. }
        | Step::Revoke { tenant, .. }
        | Step::SetStatus { tenant, .. }
        | Step::RotateKey { tenant, .. }
        | Step::RotateViewerKey { tenant }
        | Step::SpreadLogs { tenant }
        | Step::WordSearch { tenant, .. }
        | Step::Limits { tenant, .. }
        | Step::Terms { tenant, .. }
        | Step::Policy { tenant, .. }
        | Step::Search { tenant, .. }
        | Step::AgentSearch { tenant, .. }
        | Step::ListTasks { tenant, .. }
        | Step::Audit { tenant }
        | Step::Bindings { tenant, .. }
        | Step::Cards { tenant } => tenant,
        Step::Progress { task }
        | Step::Result { task, .. }
        | Step::Reply { task }
        | Step::Cancel { task }
        | Step::ReadTask { task }
        | Step::CallTree { task }
        | Step::PutConfig { task, .. }
        | Step::DeleteConfig { task, .. }
        | Step::ListConfigs { task } => model.tasks[task].tenant,
    }
}

/// The system under test of `proptest-state-machine`: each history a [`World`] of its own.
pub struct Histories;

impl StateMachineTest for Histories {
    type SystemUnderTest = World;
    type Reference = Reference;

    fn init_test(model: &Model) -> World {
        let run = run();
        run.histories.fetch_add(1, Ordering::Relaxed);
        run.receiver.forget();
        let mut world = World {
            run,
            tenants: (0..TENANTS).map(|_| new_tenant(run)).collect(),
            tasks: Vec::new(),
        };
        for (tenant, state) in model.tenants.iter().enumerate() {
            for &(caller, callee) in state.bindings.keys() {
                world.grant(tenant, caller, callee, Granter::Admin);
            }
            if state.limits != Limits::DEFAULT {
                world.limits(tenant, state.limits);
            }
        }
        world
    }

    fn apply(mut world: World, model: &Model, step: Step) -> World {
        world.run.steps.fetch_add(1, Ordering::Relaxed);
        let began = std::time::Instant::now();
        let kind: String = format!("{step:?}")
            .chars()
            .take_while(char::is_ascii_alphabetic)
            .collect();
        match step {
            Step::Open { .. } => world.open(model, &step),
            Step::OpenAcross {
                tenant,
                caller,
                other,
            } => world.open_across(model, tenant, caller, other),
            Step::Claim { tenant, callee } => world.claim(model, tenant, callee),
            Step::Progress { .. }
            | Step::Result { .. }
            | Step::Reply { .. }
            | Step::Cancel { .. } => world.on_task(model, &step),
            Step::Grant {
                tenant,
                caller,
                callee,
                by,
            } => world.grant(tenant, caller, callee, by),
            Step::Approve {
                tenant,
                caller,
                callee,
            } => {
                let reply = world.binding_call(tenant, caller, callee, true);
                expect_status(&reply, 200, "an approval");
            }
            Step::Revoke {
                tenant,
                caller,
                callee,
            } => {
                let reply = world.binding_call(tenant, caller, callee, false);
                expect_status(&reply, 200, "a revocation");
            }
            Step::SetStatus {
                tenant,
                agent,
                status,
            } => world.set_status(model, tenant, agent, status.as_str()),
            Step::RotateKey { tenant, agent } => world.rotate_key(tenant, agent),
            Step::RotateViewerKey { tenant } => world.rotate_viewer_key(tenant),
            Step::SpreadLogs { tenant } => world.spread_logs(tenant),
            Step::WordSearch { tenant, on } => world.word_search(tenant, on),
            Step::Limits { tenant, limits } => world.limits(tenant, limits),
            Step::Terms {
                tenant,
                caller,
                callee,
                terms,
            } => world.terms(tenant, caller, callee, terms),
            Step::Policy { tenant, slot, rule } => world.policy(tenant, slot, rule),
            Step::ReadTask { task } => world.read_back(model, task),
            Step::Search {
                tenant,
                viewer,
                filter,
            } => world.search(model, tenant, viewer, filter),
            Step::AgentSearch {
                tenant,
                agent,
                direction,
            } => world.agent_search(model, tenant, agent, direction),
            Step::ListTasks {
                tenant,
                caller,
                callee,
            } => world.list_tasks(model, tenant, caller, callee),
            Step::Audit { tenant } => world.audit(model, tenant),
            Step::CallTree { task } => world.call_tree(model, task),
            Step::Bindings { tenant, agent } => world.bindings(model, tenant, agent),
            Step::Cards { tenant } => world.cards(model, tenant),
            Step::OpenAndExpire {
                tenant,
                caller,
                callee,
            } => world.open_and_expire(model, tenant, caller, callee),
            Step::SetEndpoint { tenant, agent, on } => world.set_endpoint(tenant, agent, on),
            Step::PutConfig {
                task,
                config,
                token,
            } => world.put_config(model, task, config, token),
            Step::DeleteConfig { task, config } => world.delete_config(model, task, config),
            Step::ListConfigs { task } => world.list_configs(model, task),
        }
        if step.changes_tasks() {
            world.tenant_page(model, tenant_of(model, &step));
        }
        let mut by_step = world.run.by_step.lock().unwrap_or_else(|e| e.into_inner());
        let tally = by_step.entry(kind).or_default();
        tally.0 += 1;
        tally.1 += began.elapsed();
        drop(by_step);
        world
    }
}
