//! The reference model of a history: two tenants of three agents each (two owned by the admin,
//! one by a member), their bindings, agents' states and keys, the tenant's word search setting,
//! and every task opened, with what each step should answer. It knows nothing of the gateway's
//! ids: agents and tasks are numbered, and the system under test keeps the ids beside it.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use proptest_state_machine::ReferenceStateMachine;

pub const TENANTS: usize = 2;
pub const AGENTS: usize = 3;
/// The agent the tenant's member owns (the others are the admin's).
pub const MEMBERS_AGENT: usize = 2;
/// The most push notification configs a task holds.
pub const MAX_CONFIGS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Active,
    Paused,
    Retired,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Paused => "paused",
            Status::Retired => "retired",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
}

impl State {
    /// Not completed, failed or canceled: it counts among its tree's open tasks.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            State::Submitted | State::Working | State::InputRequired
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            State::Submitted => "submitted",
            State::Working => "working",
            State::InputRequired => "input_required",
            State::Completed => "completed",
            State::Failed => "failed",
            State::Canceled => "canceled",
        }
    }

    pub fn a2a(self) -> &'static str {
        match self {
            State::Submitted => "TASK_STATE_SUBMITTED",
            State::Working => "TASK_STATE_WORKING",
            State::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            State::Completed => "TASK_STATE_COMPLETED",
            State::Failed => "TASK_STATE_FAILED",
            State::Canceled => "TASK_STATE_CANCELED",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(self, State::Completed | State::Failed | State::Canceled)
    }

    pub const ALL: [State; 6] = [
        State::Submitted,
        State::Working,
        State::InputRequired,
        State::Completed,
        State::Failed,
        State::Canceled,
    ];
}

/// How a task is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Rest,
    JsonRpc,
    HttpJson,
}

/// Who grants a binding: the admin (who speaks for every callee: approved at once) or the
/// member who owns the caller (pending until the callee's side approves).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Granter {
    Admin,
    Member,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Completed,
    Failed,
    Question,
}

/// Which tasks a search asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    None,
    State(State),
    Agent(usize),
    /// The one word only this task's opening message holds.
    Word(usize),
    /// The conversation this task opened.
    Context(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Inbound,
    Outbound,
    Both,
}

/// One step of a history.
#[derive(Debug, Clone)]
pub enum Step {
    Open {
        tenant: usize,
        caller: usize,
        callee: usize,
        via: Via,
        /// A task whose call this open continues (`X-Parent-Call`).
        parent: Option<usize>,
        /// The callee's skill it names (`s0` to `s2`), which a binding's contract may bound.
        skill: Option<u8>,
    },
    /// An open naming an agent of the other tenant, by id.
    OpenAcross {
        tenant: usize,
        caller: usize,
        other: usize,
    },
    Claim {
        tenant: usize,
        callee: usize,
    },
    /// An open on a callee whose claim deadline is one second, claimed, then left past its
    /// deadline: the task expires (failed).
    OpenAndExpire {
        tenant: usize,
        caller: usize,
        callee: usize,
    },
    /// The agent's push endpoint set (to the run's receiver, which answers `completed`) or
    /// cleared.
    SetEndpoint {
        tenant: usize,
        agent: usize,
        on: bool,
    },
    /// An A2A push notification config of the task's caller: created, or replaced (the same id)
    /// with another token.
    PutConfig {
        task: usize,
        config: u8,
        token: u8,
    },
    DeleteConfig {
        task: usize,
        config: u8,
    },
    Progress {
        task: usize,
    },
    Result {
        task: usize,
        answer: Answer,
    },
    Reply {
        task: usize,
    },
    Cancel {
        task: usize,
    },
    Grant {
        tenant: usize,
        caller: usize,
        callee: usize,
        by: Granter,
    },
    Approve {
        tenant: usize,
        caller: usize,
        callee: usize,
    },
    Revoke {
        tenant: usize,
        caller: usize,
        callee: usize,
    },
    SetStatus {
        tenant: usize,
        agent: usize,
        status: Status,
    },
    RotateKey {
        tenant: usize,
        agent: usize,
    },
    /// The viewer's key rotated: a new one issued, the old one revoked.
    RotateViewerKey {
        tenant: usize,
    },
    /// The store throttled a write of the tenant's logs (audit entries, word postings), which
    /// the gateway then spreads over twice as many partitions (`domain/shards.rs`): nothing any
    /// reader sees may change.
    SpreadLogs {
        tenant: usize,
    },
    WordSearch {
        tenant: usize,
        on: bool,
    },
    /// The tenant's call-tree limits set (`PATCH /v1/tenant/settings`).
    Limits {
        tenant: usize,
        limits: Limits,
    },
    /// A binding's own limits and its contract set, every field
    /// (`PATCH /v1/agents/{agent}/agents/{binding_id}`).
    Terms {
        tenant: usize,
        caller: usize,
        callee: usize,
        terms: Terms,
    },
    /// One of the tenant's two policies (`p0`, `p1`) set or removed
    /// (`PATCH /v1/tenant/policies`).
    Policy {
        tenant: usize,
        slot: u8,
        rule: Option<Rule>,
    },
    // Reads, each held to the model.
    ReadTask {
        task: usize,
    },
    Search {
        tenant: usize,
        viewer: bool,
        filter: Filter,
    },
    AgentSearch {
        tenant: usize,
        agent: usize,
        direction: Direction,
    },
    ListTasks {
        tenant: usize,
        caller: usize,
        callee: usize,
    },
    Audit {
        tenant: usize,
    },
    CallTree {
        task: usize,
    },
    Bindings {
        tenant: usize,
        agent: usize,
    },
    Cards {
        tenant: usize,
    },
    ListConfigs {
        task: usize,
    },
}

impl Step {
    /// Whether the step may add a task, change one, or leave a refusal on the audit log, which
    /// the tenant's task search walks.
    pub fn changes_tasks(&self) -> bool {
        matches!(
            self,
            Step::Open { .. }
                | Step::OpenAcross { .. }
                | Step::OpenAndExpire { .. }
                | Step::Claim { .. }
                | Step::Progress { .. }
                | Step::Result { .. }
                | Step::Reply { .. }
                | Step::Cancel { .. }
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding {
    pub approved: bool,
    pub revoked: bool,
    /// Its own limits and its contract: kept through revokes and grants, as its row is.
    pub terms: Terms,
}

/// A binding's own call-tree limits (each `None` the tenant's) and the deterministic parts of
/// its contract: the skills it allows (bits of `s0` to `s2`; `None` any) and its concurrency.
/// (Its rate and daily quota depend on the clock; tests/api/binding_terms.rs holds them.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Terms {
    pub max_call_depth: Option<u32>,
    pub refuse_cycles: Option<bool>,
    pub max_fan_out: Option<u32>,
    pub max_open_in_tree: Option<u32>,
    pub skills: Option<u8>,
    pub max_concurrent: Option<u32>,
}

impl Terms {
    /// Whether these limits need every call of the tenant tracked (paths kept, opens counted).
    pub fn tracks(&self) -> bool {
        self.refuse_cycles == Some(true)
            || self.max_fan_out.is_some()
            || self.max_open_in_tree.is_some()
    }

    /// The tenant's limits with these in their place.
    fn applied_to(&self, tenant: Limits) -> Limits {
        Limits {
            max_call_depth: self.max_call_depth.unwrap_or(tenant.max_call_depth),
            refuse_cycles: self.refuse_cycles.unwrap_or(tenant.refuse_cycles),
            max_fan_out: self.max_fan_out.or(tenant.max_fan_out),
            max_open_in_tree: self.max_open_in_tree.or(tenant.max_open_in_tree),
        }
    }

    fn allows(&self, skill: Option<u8>) -> bool {
        match (self.skills, skill) {
            (None, _) => true,
            (Some(allowed), Some(skill)) => allowed & (1 << skill) != 0,
            (Some(_), None) => false,
        }
    }
}

/// A tenant policy: forbids a caller's `action` on `callee` (and, when set, naming `skill`);
/// enforced, or only tried (`dry_run`: it refuses nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub action: RuleAction,
    pub callee: usize,
    pub skill: Option<u8>,
    pub enforced: bool,
}

/// The caller's actions a [`Rule`] may forbid (reads are held by tests/api/policies.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleAction {
    Open,
    Answer,
    Cancel,
}

impl RuleAction {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleAction::Open => "open",
            RuleAction::Answer => "answer",
            RuleAction::Cancel => "cancel",
        }
    }
}

impl Rule {
    /// Whether this rule refuses `action` on `callee` naming `skill`.
    fn refuses(&self, action: RuleAction, callee: usize, skill: Option<u8>) -> bool {
        self.enforced
            && self.action == action
            && self.callee == callee
            && self.skill.is_none_or(|wanted| skill == Some(wanted))
    }
}

#[derive(Debug, Clone)]
pub struct Agent {
    pub status: Status,
    /// Tasks opened on it are pushed to the run's receiver.
    pub push: bool,
    /// How many times its key was rotated.
    pub rotations: usize,
}

#[derive(Debug, Clone)]
pub struct Tenant {
    pub agents: Vec<Agent>,
    /// By (caller, callee).
    pub bindings: BTreeMap<(usize, usize), Binding>,
    pub word_search: bool,
    pub limits: Limits,
    /// Refused opens by (caller, target, reason): how many. The target is an agent of this
    /// tenant, or `AGENTS + n` for agent n of the other tenant.
    pub refusals: BTreeMap<(usize, usize, &'static str), u64>,
    /// Its policies `p0` and `p1`, each set or not.
    pub policies: [Option<Rule>; 2],
}

/// A tenant's call-tree limits (docs/api.md, "Governance").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_call_depth: u32,
    pub refuse_cycles: bool,
    pub max_fan_out: Option<u32>,
    pub max_open_in_tree: Option<u32>,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_call_depth: 16,
        refuse_cycles: false,
        max_fan_out: None,
        max_open_in_tree: None,
    };
}

#[derive(Debug, Clone)]
pub struct Task {
    pub tenant: usize,
    pub caller: usize,
    pub callee: usize,
    pub state: State,
    /// On its callee's queue (a new task, or one its caller answered).
    pub queued: bool,
    pub parent: Option<usize>,
    pub root: usize,
    /// Its call's depth in its tree, the root's being 1.
    pub depth: u32,
    /// The agents on its call's path from the root's caller, kept while cycles are refused.
    pub path: Option<Vec<usize>>,
    /// Its words were indexed (the tenant had word search on when it opened).
    pub indexed: bool,
    pub push: bool,
    /// Its caller's push notification configs: id → token.
    pub configs: BTreeMap<u8, u8>,
    /// Counted among its binding's open tasks (the contract had a concurrency at its open).
    pub counted: bool,
    pub skill: Option<u8>,
}

/// What the last step should have answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Expect {
    /// A read, or a step whose answer the system checks itself.
    Read,
    /// A new task, numbered.
    Opened(usize),
    /// The gate's one 403; the reason goes to the audit log.
    Refused(&'static str),
    /// A binding's contract passed: 429 `quota_exceeded`, the reason on the audit log.
    OverQuota,
    /// The caller's key does not work: 403 for a paused agent, 401 for a retired one.
    KeyRefused(u16),
    /// A claim: the task it takes, or none (204).
    Claimed(Option<usize>),
    /// The task, now in this state.
    Task(usize, State),
    /// A plain status.
    Status(u16),
}

#[derive(Debug, Clone)]
pub struct Model {
    pub tenants: Vec<Tenant>,
    pub tasks: Vec<Task>,
    /// Each callee's queue, oldest first, by (tenant, callee).
    pub queues: BTreeMap<(usize, usize), Vec<usize>>,
    pub expect: Expect,
}

impl Model {
    pub fn new() -> Model {
        let tenant = Tenant {
            agents: vec![
                Agent {
                    status: Status::Active,
                    push: false,
                    rotations: 0
                };
                AGENTS
            ],
            bindings: BTreeMap::new(),
            word_search: true,
            limits: Limits::DEFAULT,
            refusals: BTreeMap::new(),
            policies: [None; 2],
        };
        Model {
            tenants: vec![tenant; TENANTS],
            tasks: Vec::new(),
            queues: BTreeMap::new(),
            expect: Expect::Read,
        }
    }

    pub fn agent(&self, tenant: usize, agent: usize) -> &Agent {
        &self.tenants[tenant].agents[agent]
    }

    /// The answer a key of `agent` gets before anything else: `None` while it is active.
    fn key_refusal(&self, tenant: usize, agent: usize) -> Option<Expect> {
        match self.agent(tenant, agent).status {
            Status::Active => None,
            Status::Paused => Some(Expect::KeyRefused(403)),
            Status::Retired => Some(Expect::KeyRefused(401)),
        }
    }

    /// Whether the task a claim of `callee` takes is known: a claim takes one of the oldest
    /// queued tasks, not always the oldest (docs/design.md, "The claim"), so a history claims
    /// only where at most one task waits.
    pub fn claim_is_certain(&self, tenant: usize, callee: usize) -> bool {
        self.queues.get(&(tenant, callee)).map_or(0, Vec::len) <= 1
    }

    /// Whether an open of `caller` on `callee` would be admitted and be the one task its
    /// callee's claim takes (a pull callee with nothing queued), so that it can expire.
    pub fn may_expire(&self, tenant: usize, caller: usize, callee: usize) -> bool {
        caller != callee
            && self.key_refusal(tenant, caller).is_none()
            && self.key_refusal(tenant, callee).is_none()
            && self.refusal(tenant, caller, callee).is_none()
            && self.terms(tenant, caller, callee).allows(None)
            && !self.policy_refuses(tenant, RuleAction::Open, callee, None)
            && !self.at_concurrency(tenant, caller, callee)
            && !self.agent(tenant, callee).push
            && self.queues.get(&(tenant, callee)).is_none_or(Vec::is_empty)
    }

    /// The status a key of `agent` is refused with, while it is not active.
    pub fn key_refusal_of(&self, tenant: usize, agent: usize) -> Option<u16> {
        match self.key_refusal(tenant, agent) {
            Some(Expect::KeyRefused(status)) => Some(status),
            _ => None,
        }
    }

    /// Why the gate refuses `caller` → `callee` now, as `domain::binding::admit` decides.
    fn refusal(&self, tenant: usize, caller: usize, callee: usize) -> Option<&'static str> {
        let binding = self.tenants[tenant].bindings.get(&(caller, callee));
        match binding {
            None => return Some("no_binding"),
            Some(binding) if binding.revoked => return Some("binding_revoked"),
            Some(binding) if !binding.approved => return Some("binding_pending"),
            Some(_) => {}
        }
        match self.agent(tenant, callee).status {
            Status::Active => None,
            Status::Paused => Some("callee_paused"),
            Status::Retired => Some("callee_retired"),
        }
    }

    /// Whether an enforced policy of the tenant refuses `action` on `callee` naming `skill`.
    fn policy_refuses(
        &self,
        tenant: usize,
        action: RuleAction,
        callee: usize,
        skill: Option<u8>,
    ) -> bool {
        self.tenants[tenant]
            .policies
            .iter()
            .flatten()
            .any(|rule| rule.refuses(action, callee, skill))
    }

    /// Whether a binding of the tenant has limits that need every call tracked.
    fn tracked(&self, tenant: usize) -> bool {
        self.tenants[tenant]
            .bindings
            .values()
            .any(|binding| binding.terms.tracks())
    }

    /// The terms of the binding from `caller` to `callee` (none when there is no binding).
    fn terms(&self, tenant: usize, caller: usize, callee: usize) -> Terms {
        self.tenants[tenant]
            .bindings
            .get(&(caller, callee))
            .map(|binding| binding.terms)
            .unwrap_or_default()
    }

    /// The place of a call from `caller` to `callee` below `parent` under the tenant's
    /// call-tree limits with the binding's in their place (its depth and path), or the limit
    /// that refuses it. The path is kept while cycles are refused or a binding tracks calls.
    fn tree_place(
        &self,
        tenant: usize,
        caller: usize,
        callee: usize,
        parent: Option<usize>,
    ) -> Result<(u32, Option<Vec<usize>>), &'static str> {
        let terms = self.terms(tenant, caller, callee);
        let limits = terms.applied_to(self.tenants[tenant].limits);
        let above = parent.map(|parent| &self.tasks[parent]);
        let depth = above.map_or(0, |parent| parent.depth) + 1;
        if depth > limits.max_call_depth {
            return Err("depth_exceeded");
        }
        let path = match limits.refuse_cycles || self.tracked(tenant) {
            false => None,
            true => {
                let mut path = above
                    .and_then(|parent| parent.path.clone())
                    .unwrap_or_default();
                if path.last() != Some(&caller) {
                    path.push(caller);
                }
                if limits.refuse_cycles && path.contains(&callee) {
                    return Err("cycle");
                }
                path.push(callee);
                Some(path)
            }
        };
        if let (Some(max), Some(parent)) = (limits.max_fan_out, parent) {
            let opened = self.tasks.iter().filter(|task| task.parent == Some(parent));
            if opened.count() >= max as usize {
                return Err("fan_out_exceeded");
            }
        }
        if let (Some(max), Some(parent)) = (limits.max_open_in_tree, above) {
            let open = self
                .tasks
                .iter()
                .filter(|task| task.root == parent.root && task.state.is_open());
            if open.count() >= max as usize {
                return Err("tree_open_limit");
            }
        }
        Ok((depth, path))
    }

    /// Whether the binding's contract is at its concurrency: its counted tasks still open.
    fn at_concurrency(&self, tenant: usize, caller: usize, callee: usize) -> bool {
        let Some(max) = self.terms(tenant, caller, callee).max_concurrent else {
            return false;
        };
        self.counted_open(tenant, caller, callee) >= max as usize
    }

    /// The binding's open tasks as its contract counts them.
    pub fn counted_open(&self, tenant: usize, caller: usize, callee: usize) -> usize {
        self.tasks
            .iter()
            .filter(|task| {
                (task.tenant, task.caller, task.callee) == (tenant, caller, callee)
                    && task.counted
                    && task.state.is_open()
            })
            .count()
    }

    /// The tasks of `tenant`, newest first.
    pub fn tasks_of(&self, tenant: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.tasks.len())
            .rev()
            .filter(move |index| self.tasks[*index].tenant == tenant)
    }

    fn dequeue(&mut self, task: usize) {
        let Task { tenant, callee, .. } = self.tasks[task];
        if let Some(queue) = self.queues.get_mut(&(tenant, callee)) {
            queue.retain(|queued| *queued != task);
        }
        self.tasks[task].queued = false;
    }

    fn enqueue(&mut self, task: usize) {
        let Task { tenant, callee, .. } = self.tasks[task];
        self.queues.entry((tenant, callee)).or_default().push(task);
        self.tasks[task].queued = true;
    }

    fn open(
        &mut self,
        tenant: usize,
        caller: usize,
        callee: usize,
        parent: Option<usize>,
        skill: Option<u8>,
    ) -> Expect {
        if let Some(refused) = self.key_refusal(tenant, caller) {
            return refused;
        }
        let terms = self.terms(tenant, caller, callee);
        let place = match self.refusal(tenant, caller, callee) {
            Some(reason) => Err(reason),
            None if !terms.allows(skill) => Err("skill_not_allowed"),
            None if self.policy_refuses(tenant, RuleAction::Open, callee, skill) => Err("policy"),
            None => self.tree_place(tenant, caller, callee, parent),
        };
        let place = place.and_then(|place| match self.at_concurrency(tenant, caller, callee) {
            true => Err("quota_exceeded"),
            false => Ok(place),
        });
        let (depth, path) = match place {
            Ok(place) => place,
            Err(reason) => {
                *self.tenants[tenant]
                    .refusals
                    .entry((caller, callee, reason))
                    .or_default() += 1;
                return match reason {
                    "quota_exceeded" => Expect::OverQuota,
                    reason => Expect::Refused(reason),
                };
            }
        };
        let index = self.tasks.len();
        let root = parent.map_or(index, |parent| self.tasks[parent].root);
        self.tasks.push(Task {
            tenant,
            caller,
            callee,
            state: State::Submitted,
            queued: false,
            parent,
            root,
            depth,
            path,
            indexed: self.tenants[tenant].word_search,
            push: self.agent(tenant, callee).push,
            configs: BTreeMap::new(),
            counted: terms.max_concurrent.is_some(),
            skill,
        });
        if self.tasks[index].push {
            // The receiver answers at once, and the step waits for its answer.
            self.tasks[index].state = State::Completed;
        } else {
            self.enqueue(index);
        }
        Expect::Opened(index)
    }

    fn claim(&mut self, tenant: usize, callee: usize) -> Expect {
        if let Some(refused) = self.key_refusal(tenant, callee) {
            return refused;
        }
        let next = self
            .queues
            .get(&(tenant, callee))
            .and_then(|queue| queue.first().copied());
        if let Some(task) = next {
            self.dequeue(task);
            self.tasks[task].state = State::Working;
        }
        Expect::Claimed(next)
    }

    /// A callee's write on a task it holds (`working`, claimed): `change` applied, or the 409.
    fn held(&mut self, task: usize, change: impl FnOnce(&mut Model)) -> Expect {
        let Task {
            tenant,
            callee,
            state,
            ..
        } = self.tasks[task];
        if let Some(refused) = self.key_refusal(tenant, callee) {
            return refused;
        }
        if state != State::Working {
            return Expect::Status(409);
        }
        change(self);
        Expect::Task(task, self.tasks[task].state)
    }

    fn reply(&mut self, task: usize) -> Expect {
        let Task {
            tenant,
            caller,
            callee,
            state,
            ..
        } = self.tasks[task];
        if let Some(refused) = self.key_refusal(tenant, caller) {
            return refused;
        }
        // Judged on the task as it is, before its state.
        if self.policy_refuses(tenant, RuleAction::Answer, callee, self.tasks[task].skill) {
            return Expect::Refused("policy");
        }
        if state != State::InputRequired {
            return Expect::Status(409);
        }
        if let Some(reason) = self.refusal(tenant, caller, callee) {
            return Expect::Refused(reason);
        }
        self.tasks[task].state = State::Working;
        self.enqueue(task);
        Expect::Task(task, State::Working)
    }

    fn cancel(&mut self, task: usize) -> Expect {
        let Task {
            tenant,
            caller,
            callee,
            state,
            skill,
            ..
        } = self.tasks[task];
        if let Some(refused) = self.key_refusal(tenant, caller) {
            return refused;
        }
        if self.policy_refuses(tenant, RuleAction::Cancel, callee, skill) {
            return Expect::Refused("policy");
        }
        if !state.is_final() {
            self.dequeue(task);
            self.tasks[task].state = State::Canceled;
        }
        Expect::Task(task, self.tasks[task].state)
    }

    /// An open whose claim deadline passes: opened, claimed, failed.
    fn open_and_expire(&mut self, tenant: usize, caller: usize, callee: usize) -> Expect {
        let expect = self.open(tenant, caller, callee, None, None);
        if let Expect::Opened(task) = expect {
            self.dequeue(task);
            self.tasks[task].state = State::Failed;
        }
        expect
    }

    fn put_config(&mut self, task: usize, config: u8, token: u8) -> Expect {
        let Task { tenant, caller, .. } = self.tasks[task];
        if let Some(refused) = self.key_refusal(tenant, caller) {
            return refused;
        }
        let configs = &mut self.tasks[task].configs;
        if !configs.contains_key(&config) && configs.len() >= MAX_CONFIGS {
            return Expect::Status(400);
        }
        configs.insert(config, token);
        Expect::Status(200)
    }

    fn delete_config(&mut self, task: usize, config: u8) -> Expect {
        let Task { tenant, caller, .. } = self.tasks[task];
        if let Some(refused) = self.key_refusal(tenant, caller) {
            return refused;
        }
        // Deleting a config that is already gone succeeds (docs/a2a.md).
        self.tasks[task].configs.remove(&config);
        Expect::Status(200)
    }

    fn grant(&mut self, tenant: usize, caller: usize, callee: usize, by: Granter) -> Expect {
        let approve_now = by == Granter::Admin || callee == MEMBERS_AGENT;
        let bindings = &mut self.tenants[tenant].bindings;
        match bindings.get_mut(&(caller, callee)) {
            None => {
                bindings.insert(
                    (caller, callee),
                    Binding {
                        approved: approve_now,
                        revoked: false,
                        terms: Terms::default(),
                    },
                );
            }
            Some(binding) if binding.revoked => {
                binding.revoked = false;
                binding.approved = approve_now;
            }
            Some(binding) if !binding.approved && approve_now => binding.approved = true,
            Some(_) => {}
        }
        Expect::Status(200)
    }

    fn set_status(&mut self, tenant: usize, agent: usize, status: Status) -> Expect {
        let current = &mut self.tenants[tenant].agents[agent].status;
        if *current == Status::Retired && status != Status::Retired {
            return Expect::Status(409);
        }
        *current = status;
        Expect::Status(200)
    }
}

fn select<T: Clone + std::fmt::Debug + 'static>(items: Vec<T>) -> BoxedStrategy<T> {
    proptest::sample::select(items).boxed()
}

fn pair() -> BoxedStrategy<(usize, usize, usize)> {
    (0..TENANTS, 0..AGENTS, 1..AGENTS)
        .prop_map(|(tenant, caller, offset)| (tenant, caller, (caller + offset) % AGENTS))
        .boxed()
}

/// A binding's terms, tight, so that histories reach them: each limit and the skills set about
/// half the time, the concurrency most of the time (the limits are judged first, so a contract's
/// count is reached only by the opens they let through).
fn terms() -> BoxedStrategy<Terms> {
    fn some<S: Strategy>(strategy: S) -> impl Strategy<Value = Option<S::Value>> {
        proptest::option::weighted(0.5, strategy)
    }
    (
        some(1..=3u32),
        some(any::<bool>()),
        some(1..=2u32),
        some(1..=3u32),
        some(1..8u8),
        proptest::option::weighted(0.85, 1..=2u32),
    )
        .prop_map(|(depth, cycles, fan_out, open, skills, concurrent)| Terms {
            max_call_depth: depth,
            refuse_cycles: cycles,
            max_fan_out: fan_out,
            max_open_in_tree: open,
            skills,
            max_concurrent: concurrent,
        })
        .boxed()
}

/// A tenant policy set (mostly on opens, most of them enforced) or removed.
fn policy_step() -> BoxedStrategy<Step> {
    let action = select(vec![
        RuleAction::Open,
        RuleAction::Open,
        RuleAction::Answer,
        RuleAction::Cancel,
    ]);
    let rule = (
        action,
        0..AGENTS,
        proptest::option::of(0..3u8),
        proptest::bool::weighted(0.7),
    )
        .prop_map(|(action, callee, skill, enforced)| Rule {
            action,
            callee,
            skill,
            enforced,
        });
    (0..TENANTS, 0..2u8, proptest::option::weighted(0.75, rule))
        .prop_map(|(tenant, slot, rule)| Step::Policy { tenant, slot, rule })
        .boxed()
}

/// The skill an open names: mostly one of `s0` to `s2`, sometimes none.
fn skill() -> BoxedStrategy<Option<u8>> {
    proptest::option::weighted(0.8, 0..3u8).boxed()
}

fn via() -> BoxedStrategy<Via> {
    select(vec![Via::Rest, Via::JsonRpc, Via::HttpJson])
}

/// The steps a history may take next from `state`, weighted; each drawn among the tasks,
/// bindings and agents it can apply to, so generation rejects nothing.
fn steps(state: &Model) -> BoxedStrategy<Step> {
    let mut arms: Vec<(u32, BoxedStrategy<Step>)> = vec![
        (
            5,
            (pair(), via(), skill())
                .prop_map(|((tenant, caller, callee), via, skill)| Step::Open {
                    tenant,
                    caller,
                    callee,
                    via,
                    parent: None,
                    skill,
                })
                .boxed(),
        ),
        (
            1,
            (0..TENANTS, 0..AGENTS, 0..AGENTS)
                .prop_map(|(tenant, caller, other)| Step::OpenAcross {
                    tenant,
                    caller,
                    other,
                })
                .boxed(),
        ),
        (
            3,
            pair()
                .prop_map(|(tenant, caller, callee)| Step::Grant {
                    tenant,
                    caller,
                    callee,
                    by: Granter::Admin,
                })
                .boxed(),
        ),
        (
            2,
            (0..TENANTS, 0..MEMBERS_AGENT)
                .prop_map(|(tenant, callee)| Step::Grant {
                    tenant,
                    caller: MEMBERS_AGENT,
                    callee,
                    by: Granter::Member,
                })
                .boxed(),
        ),
        (
            3,
            (
                0..TENANTS,
                0..AGENTS,
                select(vec![
                    Status::Active,
                    Status::Active,
                    Status::Paused,
                    Status::Retired,
                ]),
            )
                .prop_map(|(tenant, agent, status)| Step::SetStatus {
                    tenant,
                    agent,
                    status,
                })
                .boxed(),
        ),
        (
            1,
            (0..TENANTS, any::<bool>())
                .prop_map(|(tenant, on)| Step::WordSearch { tenant, on })
                .boxed(),
        ),
        (2, policy_step()),
        // Tight limits, so that histories of a few dozen steps reach each of them.
        (
            2,
            (
                0..TENANTS,
                1..=3u32,
                any::<bool>(),
                proptest::option::of(1..=2u32),
                proptest::option::of(1..=3u32),
            )
                .prop_map(|(tenant, depth, cycles, fan_out, open)| Step::Limits {
                    tenant,
                    limits: Limits {
                        max_call_depth: depth,
                        refuse_cycles: cycles,
                        max_fan_out: fan_out,
                        max_open_in_tree: open,
                    },
                })
                .boxed(),
        ),
        (
            1,
            (0..TENANTS, 0..AGENTS, any::<bool>())
                .prop_map(|(tenant, agent, on)| Step::SetEndpoint { tenant, agent, on })
                .boxed(),
        ),
        (
            3,
            (
                0..TENANTS,
                any::<bool>(),
                prop_oneof![
                    Just(Filter::None),
                    select(State::ALL.to_vec()).prop_map(Filter::State),
                    (0..AGENTS).prop_map(Filter::Agent),
                ],
            )
                .prop_map(|(tenant, viewer, filter)| Step::Search {
                    tenant,
                    viewer,
                    filter,
                })
                .boxed(),
        ),
        (
            2,
            (
                0..TENANTS,
                0..AGENTS,
                select(vec![
                    Direction::Inbound,
                    Direction::Outbound,
                    Direction::Both,
                ]),
            )
                .prop_map(|(tenant, agent, direction)| Step::AgentSearch {
                    tenant,
                    agent,
                    direction,
                })
                .boxed(),
        ),
        (
            1,
            pair()
                .prop_map(|(tenant, caller, callee)| Step::ListTasks {
                    tenant,
                    caller,
                    callee,
                })
                .boxed(),
        ),
        (
            1,
            (0..TENANTS)
                .prop_map(|tenant| Step::Audit { tenant })
                .boxed(),
        ),
        (
            1,
            (0..TENANTS, 0..AGENTS)
                .prop_map(|(tenant, agent)| Step::Bindings { tenant, agent })
                .boxed(),
        ),
        (
            1,
            (0..TENANTS)
                .prop_map(|tenant| Step::Cards { tenant })
                .boxed(),
        ),
    ];
    let claimable: Vec<(usize, usize)> = (0..TENANTS)
        .flat_map(|tenant| (0..AGENTS).map(move |callee| (tenant, callee)))
        .filter(|&(tenant, callee)| state.claim_is_certain(tenant, callee))
        .collect();
    // Expiries wait out a one-second deadline: only the first tenant's first agent's tasks
    // expire, which keeps them a few a history.
    let expirable: Vec<(usize, usize, usize)> = (1..AGENTS)
        .map(|caller| (0, caller, 0))
        .filter(|&(tenant, caller, callee)| state.may_expire(tenant, caller, callee))
        .collect();
    if !expirable.is_empty() {
        arms.push((
            1,
            select(expirable)
                .prop_map(|(tenant, caller, callee)| Step::OpenAndExpire {
                    tenant,
                    caller,
                    callee,
                })
                .boxed(),
        ));
    }
    if !claimable.is_empty() {
        arms.push((
            8,
            select(claimable)
                .prop_map(|(tenant, callee)| Step::Claim { tenant, callee })
                .boxed(),
        ));
    }
    let bindings: Vec<(usize, usize, usize, bool)> = (0..TENANTS)
        .flat_map(|tenant| {
            state.tenants[tenant]
                .bindings
                .iter()
                .map(move |(&(caller, callee), binding)| (tenant, caller, callee, binding.revoked))
        })
        .collect();
    if !bindings.is_empty() {
        let all: Vec<(usize, usize, usize)> = bindings
            .iter()
            .map(|&(tenant, caller, callee, _)| (tenant, caller, callee))
            .collect();
        arms.push((
            2,
            (select(all), terms())
                .prop_map(|((tenant, caller, callee), terms)| Step::Terms {
                    tenant,
                    caller,
                    callee,
                    terms,
                })
                .boxed(),
        ));
    }
    // Most opens go over a binding that admits them, so tasks live long enough to be claimed,
    // asked, answered and canceled; the opens drawn at random above meet the refusals.
    let admitted: Vec<(usize, usize, usize)> = (0..TENANTS)
        .flat_map(|tenant| {
            state.tenants[tenant]
                .bindings
                .iter()
                .filter(|(_, binding)| binding.approved && !binding.revoked)
                .map(move |(&(caller, callee), _)| (tenant, caller, callee))
        })
        .collect();
    if !admitted.is_empty() {
        arms.push((
            10,
            (select(admitted), via(), skill())
                .prop_map(|((tenant, caller, callee), via, skill)| Step::Open {
                    tenant,
                    caller,
                    callee,
                    via,
                    parent: None,
                    skill,
                })
                .boxed(),
        ));
    }
    let live: Vec<(usize, usize, usize)> = bindings
        .iter()
        .filter(|binding| !binding.3)
        .map(|&(tenant, caller, callee, _)| (tenant, caller, callee))
        .collect();
    if !live.is_empty() {
        arms.push((
            2,
            select(live)
                .prop_map(|(tenant, caller, callee)| Step::Approve {
                    tenant,
                    caller,
                    callee,
                })
                .boxed(),
        ));
    }
    if !bindings.is_empty() {
        let pairs = bindings
            .iter()
            .map(|&(tenant, caller, callee, _)| (tenant, caller, callee))
            .collect();
        arms.push((
            2,
            select(pairs)
                .prop_map(|(tenant, caller, callee)| Step::Revoke {
                    tenant,
                    caller,
                    callee,
                })
                .boxed(),
        ));
    }
    let active: Vec<(usize, usize)> = (0..TENANTS)
        .flat_map(|tenant| (0..AGENTS).map(move |agent| (tenant, agent)))
        .filter(|&(tenant, agent)| state.agent(tenant, agent).status == Status::Active)
        .collect();
    arms.push((
        1,
        (0..TENANTS)
            .prop_map(|tenant| Step::RotateViewerKey { tenant })
            .boxed(),
    ));
    arms.push((
        1,
        (0..TENANTS)
            .prop_map(|tenant| Step::SpreadLogs { tenant })
            .boxed(),
    ));
    if !active.is_empty() {
        arms.push((
            1,
            select(active)
                .prop_map(|(tenant, agent)| Step::RotateKey { tenant, agent })
                .boxed(),
        ));
    }
    let tasks = state.tasks.len();
    if tasks > 0 {
        let task = || (0..tasks).boxed();
        let held: Vec<usize> = (0..tasks).filter(|task| is_held(state, *task)).collect();
        if !held.is_empty() {
            arms.push((
                3,
                select(held.clone())
                    .prop_map(|task| Step::Progress { task })
                    .boxed(),
            ));
            arms.push((
                9,
                (
                    select(held),
                    select(vec![Answer::Completed, Answer::Failed, Answer::Question]),
                )
                    .prop_map(|(task, answer)| Step::Result { task, answer })
                    .boxed(),
            ));
        }
        let not_held: Vec<usize> = (0..tasks)
            .filter(|task| !is_held(state, *task) && !is_requeued(state, *task))
            .collect();
        if !not_held.is_empty() {
            arms.push((
                1,
                select(not_held)
                    .prop_map(|task| Step::Result {
                        task,
                        answer: Answer::Completed,
                    })
                    .boxed(),
            ));
        }
        let asking: Vec<usize> = (0..tasks)
            .filter(|task| state.tasks[*task].state == State::InputRequired)
            .collect();
        if !asking.is_empty() {
            arms.push((
                4,
                select(asking).prop_map(|task| Step::Reply { task }).boxed(),
            ));
        }
        arms.push((1, task().prop_map(|task| Step::Reply { task }).boxed()));
        arms.push((2, task().prop_map(|task| Step::Cancel { task }).boxed()));
        arms.push((2, task().prop_map(|task| Step::ReadTask { task }).boxed()));
        arms.push((1, task().prop_map(|task| Step::CallTree { task }).boxed()));
        let config = (task(), 0..6u8, 0..3u8);
        arms.push((
            2,
            config
                .prop_map(|(task, config, token)| Step::PutConfig {
                    task,
                    config,
                    token,
                })
                .boxed(),
        ));
        arms.push((
            1,
            (task(), 0..6u8)
                .prop_map(|(task, config)| Step::DeleteConfig { task, config })
                .boxed(),
        ));
        arms.push((
            1,
            task().prop_map(|task| Step::ListConfigs { task }).boxed(),
        ));
        let parents: Vec<(usize, usize, usize)> = (0..tasks)
            .map(|task| (task, state.tasks[task].tenant, state.tasks[task].callee))
            .collect();
        arms.push((
            4,
            (select(parents), 1..AGENTS, via(), skill())
                .prop_map(
                    |((parent, tenant, caller), offset, via, skill)| Step::Open {
                        tenant,
                        caller,
                        callee: (caller + offset) % AGENTS,
                        via,
                        parent: Some(parent),
                        skill,
                    },
                )
                .boxed(),
        ));
        // Calls down a tree along bindings that admit them, so that trees grow deep and wide
        // enough for the call-tree limits to be reached.
        let bound: Vec<(usize, usize, usize, usize)> = (0..tasks)
            .flat_map(|task| {
                let Task { tenant, callee, .. } = state.tasks[task];
                state.tenants[tenant]
                    .bindings
                    .iter()
                    .filter(move |((caller, _), binding)| {
                        *caller == callee && binding.approved && !binding.revoked
                    })
                    .map(move |((caller, next), _)| (task, tenant, *caller, *next))
            })
            .collect();
        if !bound.is_empty() {
            arms.push((
                4,
                (select(bound), via(), skill())
                    .prop_map(
                        |((parent, tenant, caller, callee), via, skill)| Step::Open {
                            tenant,
                            caller,
                            callee,
                            via,
                            parent: Some(parent),
                            skill,
                        },
                    )
                    .boxed(),
            ));
        }
        let words: Vec<(usize, usize)> = (0..tasks)
            .map(|task| (task, state.tasks[task].tenant))
            .collect();
        arms.push((
            2,
            (select(words), 0..4usize)
                .prop_map(|((task, tenant), kind)| Step::Search {
                    tenant,
                    viewer: kind == 3,
                    filter: match kind {
                        0 | 3 => Filter::Word(task),
                        _ => Filter::Context(task),
                    },
                })
                .boxed(),
        ));
    }
    proptest::strategy::Union::new_weighted(arms).boxed()
}

/// A task its callee holds: claimed and `working`.
fn is_held(state: &Model, task: usize) -> bool {
    state.tasks[task].state == State::Working && !state.tasks[task].queued
}

/// A task waiting on its callee's queue again, `working`, after its caller's answer.
fn is_requeued(state: &Model, task: usize) -> bool {
    state.tasks[task].state == State::Working && state.tasks[task].queued
}

pub struct Reference;

impl ReferenceStateMachine for Reference {
    type State = Model;
    type Transition = Step;

    /// Tenant 0 starts bare, with the default limits; tenant 1 with every agent bound to every
    /// other (approved) and tight call-tree limits, so that every history has a tenant whose
    /// trees grow and reach them.
    fn init_state() -> BoxedStrategy<Model> {
        (
            2..=3u32,
            any::<bool>(),
            proptest::option::of(1..=2u32),
            proptest::option::of(2..=3u32),
        )
            .prop_map(|(depth, cycles, fan_out, open)| {
                let mut model = Model::new();
                for caller in 0..AGENTS {
                    for callee in (0..AGENTS).filter(|callee| *callee != caller) {
                        let live = Binding {
                            approved: true,
                            revoked: false,
                            terms: Terms::default(),
                        };
                        model.tenants[1].bindings.insert((caller, callee), live);
                    }
                }
                model.tenants[1].limits = Limits {
                    max_call_depth: depth,
                    refuse_cycles: cycles,
                    max_fan_out: fan_out,
                    max_open_in_tree: open,
                };
                model
            })
            .boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Step> {
        steps(state)
    }

    fn preconditions(state: &Model, step: &Step) -> bool {
        let task_exists = |task: &usize| *task < state.tasks.len();
        match step {
            Step::Open {
                tenant,
                caller,
                callee,
                parent,
                ..
            } => {
                caller != callee
                    && parent.is_none_or(|parent| {
                        task_exists(&parent)
                            && state.tasks[parent].tenant == *tenant
                            && state.tasks[parent].callee == *caller
                    })
            }
            // A callee's writes on a task it holds, or (for a result) on one it does not, which
            // is the seed's 409; not on a task waiting on the queue again after its caller's
            // answer, which no callee holds.
            Step::Progress { task } => task_exists(task) && is_held(state, *task),
            Step::Result { task, .. } => task_exists(task) && !is_requeued(state, *task),
            Step::Reply { task }
            | Step::Cancel { task }
            | Step::ReadTask { task }
            | Step::CallTree { task } => task_exists(task),
            Step::Search {
                tenant,
                filter: Filter::Word(task) | Filter::Context(task),
                ..
            } => task_exists(task) && state.tasks[*task].tenant == *tenant,
            Step::Grant {
                by: Granter::Member,
                caller,
                ..
            } => *caller == MEMBERS_AGENT,
            Step::Approve {
                tenant,
                caller,
                callee,
            } => state.tenants[*tenant]
                .bindings
                .get(&(*caller, *callee))
                .is_some_and(|binding| !binding.revoked),
            Step::Revoke {
                tenant,
                caller,
                callee,
            }
            | Step::Terms {
                tenant,
                caller,
                callee,
                ..
            } => state.tenants[*tenant]
                .bindings
                .contains_key(&(*caller, *callee)),
            Step::RotateKey { tenant, agent } => {
                state.agent(*tenant, *agent).status == Status::Active
            }
            Step::Claim { tenant, callee } => state.claim_is_certain(*tenant, *callee),
            Step::OpenAndExpire {
                tenant,
                caller,
                callee,
            } => state.may_expire(*tenant, *caller, *callee),
            Step::PutConfig { task, .. }
            | Step::DeleteConfig { task, .. }
            | Step::ListConfigs { task } => task_exists(task),
            Step::Grant { caller, callee, .. } => caller != callee,
            _ => true,
        }
    }

    fn apply(mut state: Model, step: &Step) -> Model {
        state.expect = match *step {
            Step::Open {
                tenant,
                caller,
                callee,
                parent,
                skill,
                ..
            } => state.open(tenant, caller, callee, parent, skill),
            Step::OpenAcross {
                tenant,
                caller,
                other,
            } => match state.key_refusal(tenant, caller) {
                Some(refused) => refused,
                None => {
                    *state.tenants[tenant]
                        .refusals
                        .entry((caller, AGENTS + other, "other_tenant"))
                        .or_default() += 1;
                    Expect::Refused("other_tenant")
                }
            },
            Step::Claim { tenant, callee } => state.claim(tenant, callee),
            Step::OpenAndExpire {
                tenant,
                caller,
                callee,
            } => state.open_and_expire(tenant, caller, callee),
            Step::SetEndpoint { tenant, agent, on } => {
                state.tenants[tenant].agents[agent].push = on;
                Expect::Status(200)
            }
            Step::PutConfig {
                task,
                config,
                token,
            } => state.put_config(task, config, token),
            Step::DeleteConfig { task, config } => state.delete_config(task, config),
            Step::Progress { task } => state.held(task, |_| {}),
            Step::Result { task, answer } => state.held(task, |model| {
                model.tasks[task].state = match answer {
                    Answer::Completed => State::Completed,
                    Answer::Failed => State::Failed,
                    Answer::Question => State::InputRequired,
                }
            }),
            Step::Reply { task } => state.reply(task),
            Step::Cancel { task } => state.cancel(task),
            Step::Grant {
                tenant,
                caller,
                callee,
                by,
            } => state.grant(tenant, caller, callee, by),
            Step::Approve {
                tenant,
                caller,
                callee,
            } => {
                if let Some(binding) = state.tenants[tenant].bindings.get_mut(&(caller, callee)) {
                    binding.approved = true;
                }
                Expect::Status(200)
            }
            Step::Revoke {
                tenant,
                caller,
                callee,
            } => {
                if let Some(binding) = state.tenants[tenant].bindings.get_mut(&(caller, callee)) {
                    binding.revoked = true;
                }
                Expect::Status(200)
            }
            Step::SetStatus {
                tenant,
                agent,
                status,
            } => state.set_status(tenant, agent, status),
            Step::RotateKey { tenant, agent } => {
                state.tenants[tenant].agents[agent].rotations += 1;
                Expect::Status(200)
            }
            Step::RotateViewerKey { .. } => Expect::Status(200),
            Step::SpreadLogs { .. } => Expect::Read,
            Step::WordSearch { tenant, on } => {
                state.tenants[tenant].word_search = on;
                Expect::Status(200)
            }
            Step::Limits { tenant, limits } => {
                state.tenants[tenant].limits = limits;
                Expect::Status(200)
            }
            Step::Policy { tenant, slot, rule } => {
                state.tenants[tenant].policies[usize::from(slot)] = rule;
                Expect::Status(200)
            }
            Step::Terms {
                tenant,
                caller,
                callee,
                terms,
            } => {
                if let Some(binding) = state.tenants[tenant].bindings.get_mut(&(caller, callee)) {
                    binding.terms = terms;
                }
                Expect::Status(200)
            }
            _ => Expect::Read,
        };
        state
    }
}
