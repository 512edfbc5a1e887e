//! The command line, as clap reads it.

use clap::{Args, Parser, Subcommand, ValueEnum};
use forgebench_sdk::SubjectGrantIn;

/// The Forgebench A2A gateway from the command line: manage a tenant, open tasks on agents,
/// serve an agent's tasks with any command.
#[derive(Debug, Parser)]
#[command(name = "forgebench", version, about)]
pub struct Cli {
    /// The gateway's base URL (no default: for the hosted service, https://api.forgebench.ai).
    #[arg(long, env = "FORGEBENCH_URL", global = true)]
    pub url: Option<String>,
    /// The key to act with (prefer the variable: a flag shows in the process list).
    #[arg(
        long,
        env = "FORGEBENCH_API_KEY",
        hide_env_values = true,
        global = true
    )]
    pub key: Option<String>,
    /// Sign in with OpenID Connect access tokens instead of a key: a shell command whose
    /// stdout is the token (or the token endpoint's JSON, with access_token and expires_in),
    /// run again when the token nears its expiry or is refused.
    #[arg(
        long,
        env = "FORGEBENCH_TOKEN_COMMAND",
        value_name = "CMD",
        hide_env_values = true,
        global = true
    )]
    pub token_command: Option<String>,
    /// The profile of the config file ($XDG_CONFIG_HOME/forgebench/config.toml) to take the URL
    /// and credential from, where no flag or variable gives them (default: `default`, if any).
    #[arg(long, env = "FORGEBENCH_PROFILE", global = true, value_name = "NAME")]
    pub profile: Option<String>,
    /// Print the gateway's JSON on stdout, for scripts.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Tenants (operator key).
    #[command(subcommand)]
    Tenants(TenantCommand),
    /// Members of the tenant (admin key).
    #[command(subcommand)]
    Members(MemberCommand),
    /// Agents of the tenant.
    #[command(subcommand)]
    Agents(AgentCommand),
    /// Agent keys.
    #[command(subcommand)]
    Keys(KeyCommand),
    /// Bindings: which caller may open tasks on which callee.
    #[command(subcommand)]
    Bindings(BindingCommand),
    /// Push endpoints.
    #[command(subcommand)]
    Endpoints(EndpointCommand),
    /// Open a task on an agent and print its result; the exit code says its final state.
    Call(CallArgs),
    /// Read, cancel, answer and search tasks.
    #[command(subcommand)]
    Tasks(TaskCommand),
    /// Agent cards (A2A discovery).
    #[command(subcommand)]
    Cards(CardCommand),
    /// Serve this agent's tasks with a command: the task on its stdin, its stdout the reply.
    Serve(ServeArgs),
    /// OpenID Connect issuers the tenant trusts: whose tokens sign in as which agent or member.
    #[command(subcommand)]
    Issuers(IssuerCommand),
    /// The audit log, newest first: who did what, allowed or refused, and why.
    Audit(AuditArgs),
    /// Call trees: the lineage of calls one root call started.
    #[command(subcommand)]
    Calls(CallsCommand),
    /// Tool bindings of an agent: the skills its card lists.
    #[command(subcommand)]
    Tools(ToolCommand),
    /// The gateway's signing keys (cards, webhooks): list (any key), rotate and retire
    /// (operator key).
    #[command(subcommand)]
    SigningKeys(SigningKeyCommand),
    /// The tenant's settings: word search and the call-tree limits.
    #[command(subcommand)]
    Settings(SettingsCommand),
    /// The tenant's policies (Cedar `forbid` rules), and whether the gate would allow a call.
    #[command(subcommand)]
    Policies(PolicyCommand),
    /// Print the shell's completion script for forgebench (needs no gateway), e.g.
    /// `forgebench completions bash > ~/.local/share/bash-completion/completions/forgebench`.
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    /// An agent (name or id), as the actor or the target.
    #[arg(long)]
    pub agent: Option<String>,
    /// An action or its prefix: `task.open`, `agent.` …
    #[arg(long)]
    pub action: Option<String>,
    #[arg(long, value_enum)]
    pub outcome: Option<OutcomeArg>,
    /// RFC 3339: entries after it.
    #[arg(long)]
    pub since: Option<String>,
    /// Entries per page (1–100).
    #[arg(long)]
    pub limit: Option<u32>,
    /// The next_cursor of a previous page.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Every page, not only the first.
    #[arg(long)]
    pub all: bool,
}

/// An audit entry's outcome, as a filter.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OutcomeArg {
    Allowed,
    Refused,
    WouldRefuse,
}

impl From<OutcomeArg> for forgebench_sdk::AuditOutcome {
    fn from(outcome: OutcomeArg) -> Self {
        match outcome {
            OutcomeArg::Allowed => forgebench_sdk::AuditOutcome::Allowed,
            OutcomeArg::Refused => forgebench_sdk::AuditOutcome::Refused,
            OutcomeArg::WouldRefuse => forgebench_sdk::AuditOutcome::WouldRefuse,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CallsCommand {
    /// Draw the tree of calls below a root call (admin or viewer key).
    Tree { root_call_id: String },
}

#[derive(Debug, Subcommand)]
pub enum IssuerCommand {
    /// List the issuers the tenant trusts (admin, member or viewer key).
    List,
    /// Trust an issuer for one audience (admin key); the gateway reads its discovery document.
    Trust {
        /// The issuer, exactly as its tokens carry it in `iss` (https; http on loopback only).
        #[arg(long)]
        issuer: String,
        /// The `aud` its tokens must name.
        #[arg(long)]
        audience: String,
        /// A token subject and whom it signs in as; repeat for each.
        #[arg(long = "subject", value_name = SUBJECT_FORM, value_parser = parse_subject)]
        subjects: Vec<SubjectGrantIn>,
    },
    /// Replace the subjects an issuer lists (admin key).
    Update {
        issuer_id: String,
        /// A token subject and whom it signs in as; repeat for each. The list replaces the old.
        #[arg(
            long = "subject",
            value_name = SUBJECT_FORM,
            value_parser = parse_subject,
            required_unless_present = "clear"
        )]
        subjects: Vec<SubjectGrantIn>,
        /// List no subject at all (the issuer stays trusted).
        #[arg(long, conflicts_with = "subjects")]
        clear: bool,
    },
    /// Trust an issuer no more (admin key): its tokens sign in no more.
    Distrust { issuer_id: String },
}

const SUBJECT_FORM: &str = "SUB=agent:NAME|member:ID";

/// `SUB=agent:NAME_OR_ID` or `SUB=member:MEMBER_ID` (the subject may hold `=`: the last one
/// splits).
pub fn parse_subject(value: &str) -> Result<SubjectGrantIn, String> {
    let wrong = || format!("expected {SUBJECT_FORM}, e.g. svc-invoices=agent:invoice-classifier");
    let (subject, principal) = value.rsplit_once('=').ok_or_else(wrong)?;
    if subject.is_empty() {
        return Err(wrong());
    }
    match principal.split_once(':') {
        Some(("agent", agent)) if !agent.is_empty() => Ok(SubjectGrantIn::agent(subject, agent)),
        Some(("member", member)) if !member.is_empty() => {
            Ok(SubjectGrantIn::member(subject, member))
        }
        _ => Err(wrong()),
    }
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant; prints its first admin key, once.
    Create { name: String },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Role {
    Admin,
    Member,
    Viewer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
            Role::Viewer => "viewer",
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum MemberCommand {
    /// Add a member; prints its key, once.
    Create {
        name: String,
        #[arg(long, value_enum, default_value = "member")]
        role: Role,
    },
    /// List the members (never a key).
    List,
    /// Issue a member another key; prints it, once.
    IssueKey { member_id: String },
    /// Revoke one of a member's keys.
    RevokeKey { member_id: String, key_id: String },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AgentStatus {
    Active,
    Paused,
    Retired,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Active => "active",
            AgentStatus::Paused => "paused",
            AgentStatus::Retired => "retired",
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Create an agent.
    Create {
        name: String,
        #[arg(long)]
        description: Option<String>,
        /// The owning member (an admin may name one).
        #[arg(long)]
        owner: Option<String>,
    },
    /// List the tenant's agents.
    List,
    /// Show one agent (name or id).
    Get { agent: String },
    /// Show the agent this key belongs to.
    Me,
    /// Change an agent's status or description.
    Update {
        agent: String,
        #[arg(long, value_enum)]
        status: Option<AgentStatus>,
        #[arg(long)]
        description: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Issue the agent a key; prints it, once.
    Issue { agent: String },
    /// List the agent's keys (never a secret).
    List { agent: String },
    /// Revoke one of the agent's keys.
    Revoke { agent: String, key_id: String },
}

#[derive(Debug, Subcommand)]
pub enum BindingCommand {
    /// Let CALLER open tasks on each CALLEE (names or ids).
    Grant {
        caller: String,
        #[arg(required = true)]
        callees: Vec<String>,
    },
    /// Approve a pending binding; CALLEE is the binding's callee.
    Approve { callee: String, binding_id: String },
    /// Both directions of an agent's bindings.
    List { agent: String },
    /// Revoke a binding, from either side.
    Revoke { agent: String, binding_id: String },
    /// Set a binding's own call-tree limits and its contract (admin key; AGENT is either side).
    /// Each option left out stays as it is; `none` removes it.
    Update(UpdateBindingArgs),
}

#[derive(Debug, Args)]
pub struct UpdateBindingArgs {
    pub agent: String,
    pub binding_id: String,
    /// The most calls on one path of a tree through this binding (1–64), or `none`.
    #[arg(long, value_name = "N|none")]
    pub max_call_depth: Option<Clearable<u32>>,
    /// Refuse a call back to an agent already on the path (`true`, `false`), or `none`.
    #[arg(long, value_name = "true|false|none")]
    pub refuse_cycles: Option<Clearable<bool>>,
    /// The most tasks one call may open (1–10,000), or `none`.
    #[arg(long, value_name = "N|none")]
    pub max_fan_out: Option<Clearable<u32>>,
    /// The most tasks of one tree open at once (1–10,000), or `none`.
    #[arg(long, value_name = "N|none")]
    pub max_open_in_tree: Option<Clearable<u32>>,
    /// The callee's skills the caller may name, comma-separated, or `none` for any.
    #[arg(long, value_name = "SKILL,...|none")]
    pub skills: Option<Clearable<Skills>>,
    /// Tasks the caller may open a minute, or `none`.
    #[arg(long, value_name = "N|none")]
    pub rate_per_minute: Option<Clearable<u32>>,
    /// Tasks the caller may hold open at once, or `none`.
    #[arg(long, value_name = "N|none")]
    pub max_concurrent: Option<Clearable<u32>>,
    /// Tasks the caller may open a UTC day, or `none`.
    #[arg(long, value_name = "N|none")]
    pub daily_quota: Option<Clearable<u32>>,
}

/// A value to set, or `none`: the value removed (sent as `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clearable<T>(pub Option<T>);

impl<T: std::str::FromStr> std::str::FromStr for Clearable<T>
where
    T::Err: std::fmt::Display,
{
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        if value == "none" {
            return Ok(Clearable(None));
        }
        value
            .parse()
            .map(|value| Clearable(Some(value)))
            .map_err(|error| format!("{error} (or `none`)"))
    }
}

/// Skill names, comma-separated on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skills(pub Vec<String>);

impl std::str::FromStr for Skills {
    type Err = String;

    fn from_str(value: &str) -> Result<Self, String> {
        let skills: Vec<String> = value
            .split(',')
            .map(str::trim)
            .filter(|skill| !skill.is_empty())
            .map(str::to_owned)
            .collect();
        if skills.is_empty() {
            return Err("no skill named".into());
        }
        Ok(Skills(skills))
    }
}

#[derive(Debug, Subcommand)]
pub enum ToolCommand {
    /// An agent's tools.
    List { agent: String },
    /// Add or replace one of the agent's tools (its owner or an admin).
    Put {
        agent: String,
        tool: String,
        /// What it does (1–2,000 characters): the card skill's description.
        #[arg(long)]
        description: String,
        /// A tag (repeatable, up to 20).
        #[arg(long = "tag", value_name = "TAG")]
        tags: Vec<String>,
    },
    /// Remove one of the agent's tools.
    Delete { agent: String, tool: String },
}

/// What a signing key signs.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PurposeArg {
    CardSigning,
    WebhookSigning,
}

impl From<PurposeArg> for forgebench_sdk::SigningKeyPurpose {
    fn from(purpose: PurposeArg) -> Self {
        match purpose {
            PurposeArg::CardSigning => forgebench_sdk::SigningKeyPurpose::CardSigning,
            PurposeArg::WebhookSigning => forgebench_sdk::SigningKeyPurpose::WebhookSigning,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum SigningKeyCommand {
    /// The public keys not retired, of both purposes (the JWKS).
    List,
    /// Make a new key of a purpose active (default: card-signing); the old one stays listed.
    Rotate {
        #[arg(long, value_enum)]
        purpose: Option<PurposeArg>,
    },
    /// Drop a replaced key from the JWKS for good.
    Retire { kid: String },
}

#[derive(Debug, Subcommand)]
pub enum SettingsCommand {
    /// The tenant's settings (admin or viewer key).
    Get,
    /// Change them (admin key); each option left out stays as it is.
    Update(UpdateSettingsArgs),
}

#[derive(Debug, Args)]
pub struct UpdateSettingsArgs {
    /// Index task message words for `tasks search --q`.
    #[arg(long, value_name = "true|false")]
    pub word_search: Option<bool>,
    /// The most calls on one path of a call tree, its root counted as 1 (1–64).
    #[arg(long)]
    pub max_call_depth: Option<u32>,
    /// Refuse a call to an agent already on its own path to the root.
    #[arg(long, value_name = "true|false")]
    pub refuse_cycles: Option<bool>,
    /// The most tasks one call may open (1–10,000), or `none`.
    #[arg(long, value_name = "N|none")]
    pub max_fan_out: Option<Clearable<u32>>,
    /// The most tasks of one call tree open at once (1–10,000), or `none`.
    #[arg(long, value_name = "N|none")]
    pub max_open_in_tree: Option<Clearable<u32>>,
}

/// A policy's mode.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ModeArg {
    Enforce,
    DryRun,
}

impl From<ModeArg> for forgebench_sdk::PolicyMode {
    fn from(mode: ModeArg) -> Self {
        match mode {
            ModeArg::Enforce => forgebench_sdk::PolicyMode::Enforce,
            ModeArg::DryRun => forgebench_sdk::PolicyMode::DryRun,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// The tenant's policies and the set's version (admin or viewer key).
    List,
    /// Add or change one policy by name (admin key); a new one is tried (`dry-run`) unless
    /// `--mode` says otherwise.
    Set {
        name: String,
        /// Its Cedar text: one `forbid`.
        #[arg(long, conflicts_with = "policy_file")]
        policy: Option<String>,
        /// A file holding its Cedar text.
        #[arg(long, value_name = "PATH")]
        policy_file: Option<std::path::PathBuf>,
        #[arg(long, value_enum)]
        mode: Option<ModeArg>,
        #[arg(long, conflicts_with = "no_description")]
        description: Option<String>,
        /// Remove its description.
        #[arg(long)]
        no_description: bool,
    },
    /// Remove one policy (admin key).
    Remove { name: String },
    /// Whether the gate would allow CALLER to call CALLEE now, and why (records nothing).
    Check {
        caller: String,
        callee: String,
        #[arg(long)]
        skill: Option<String>,
        /// `open` (default), `answer`, `cancel` or `read`.
        #[arg(long)]
        action: Option<String>,
        /// The call's depth in its tree (default 1).
        #[arg(long)]
        depth: Option<u32>,
        /// The agent at the root of the tree.
        #[arg(long)]
        root_caller: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// Push the agent's tasks to URL.
    Set(SetEndpointArgs),
    /// Revert the agent to pull.
    Clear { agent: String },
    /// The push endpoint's health: its state, its run of failures, its last error (the agent's
    /// owner, an admin or a viewer).
    Health { agent: String },
    /// Switch an endpoint the gateway disabled on again (admin key).
    Enable { agent: String },
    /// Attempt again now the deliveries still waiting for a retry, of the agent's tasks opened
    /// since a moment (at most 100 a run).
    Redrive {
        agent: String,
        /// RFC 3339: tasks opened at or after it (e.g. 2026-12-07T09:00:00Z).
        #[arg(long)]
        since: String,
    },
}

#[derive(Debug, Args)]
pub struct SetEndpointArgs {
    pub agent: String,
    /// The endpoint the gateway POSTs the agent's tasks to. (Not named `url`: that id is the
    /// global `--url`'s, which this positional would otherwise overwrite.)
    #[arg(value_name = "URL")]
    pub endpoint_url: String,
    /// Send `Authorization: Bearer <secret>`, the secret read from this variable.
    #[arg(long, value_name = "VARIABLE", conflicts_with = "header")]
    pub bearer_secret_env: Option<String>,
    /// Send the secret in this header instead (with --header-secret-env).
    #[arg(long, requires = "header_secret_env")]
    pub header: Option<String>,
    /// The variable holding the header's secret.
    #[arg(long, value_name = "VARIABLE", requires = "header")]
    pub header_secret_env: Option<String>,
    /// Drop the current credential.
    #[arg(long, conflicts_with_all = ["bearer_secret_env", "header"])]
    pub clear_auth: bool,
    /// Let the URL resolve to private ranges (admin only).
    #[arg(long)]
    pub allow_private_network: bool,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The callee's name or id.
    pub callee: String,
    /// A text part.
    #[arg(long)]
    pub text: Option<String>,
    /// A data part: any JSON.
    #[arg(long, value_name = "JSON")]
    pub data: Option<String>,
    /// Seconds to wait for a final answer (polled 30 s at a time); 0 returns at once.
    #[arg(long, default_value_t = 30)]
    pub wait: u32,
    /// Continue the conversation of an earlier task.
    #[arg(long)]
    pub context_id: Option<String>,
    /// The governed call that led to this one (X-Parent-Call).
    #[arg(long)]
    pub parent_call_id: Option<String>,
    /// Your own message id, to make the open safe to repeat (default: a fresh UUID).
    #[arg(long)]
    pub message_id: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DirectionArg {
    Inbound,
    Outbound,
    Both,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StateArg {
    Submitted,
    Working,
    InputRequired,
    Completed,
    Failed,
    Canceled,
}

#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Read a task; the exit code says its state, as for `call`.
    Get {
        callee: String,
        task_id: String,
        /// Seconds (0–30) to wait for it to leave submitted/working.
        #[arg(long, default_value_t = 0)]
        wait: u32,
    },
    /// Cancel a task (caller only); a finished task is shown unchanged.
    Cancel { callee: String, task_id: String },
    /// Answer a task's question in place; it goes back to working.
    Answer {
        callee: String,
        task_id: String,
        text: String,
    },
    /// Search this key's tasks, newest change first.
    Search(SearchArgs),
    /// Attempt a push task's waiting delivery now (the callee's owner or an admin).
    Replay { callee: String, task_id: String },
    /// A push task's delivery attempts, oldest first: status (or none), latency, error.
    Attempts { callee: String, task_id: String },
    /// Follow a task's events as they happen, to its end; the exit code says its final state.
    Watch {
        callee: String,
        task_id: String,
        /// Resume after this event id (the first column of a line): nothing before it again.
        #[arg(long)]
        after: Option<u64>,
    },
    /// Send an A2A push notification config of the task the latest event it received, again,
    /// under the same webhook-id (the task's caller or an admin).
    ReplayNotification {
        callee: String,
        task_id: String,
        config_id: String,
    },
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    #[arg(long, value_enum)]
    pub direction: Option<DirectionArg>,
    /// The agent whose tasks to search (required for an admin or viewer).
    #[arg(long)]
    pub agent: Option<String>,
    #[arg(long, value_enum)]
    pub state: Option<StateArg>,
    #[arg(long)]
    pub context_id: Option<String>,
    /// Words every found task holds.
    #[arg(long)]
    pub q: Option<String>,
    /// RFC 3339: tasks changed after it.
    #[arg(long)]
    pub since: Option<String>,
    /// Tasks per page (1–100).
    #[arg(long)]
    pub limit: Option<u32>,
    /// The next_cursor of a previous page.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Every page, not only the first.
    #[arg(long)]
    pub all: bool,
}

#[derive(Debug, Subcommand)]
pub enum CardCommand {
    /// One agent's card.
    Get { agent: String },
    /// One page of the tenant's registry, by name (or every page with --all).
    List {
        /// Agents read a page (1–50).
        #[arg(long)]
        limit: Option<u32>,
        /// The next_cursor of a previous page.
        #[arg(long)]
        cursor: Option<String>,
        /// Every page, not only the first.
        #[arg(long)]
        all: bool,
    },
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The command (run with `sh -c`) that answers one task.
    #[arg(long, value_name = "CMD")]
    pub exec: String,
    /// Tasks handled at once.
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Stop after this many tasks.
    #[arg(long)]
    pub max_tasks: Option<usize>,
    /// Seconds each claim waits (0–30).
    #[arg(long, default_value_t = forgebench_sdk::DEFAULT_SERVE_WAIT_SECONDS)]
    pub wait: u32,
    /// Seconds one task's command may run; past them its processes are killed and the task
    /// fails.
    #[arg(long, default_value_t = 600)]
    pub timeout: u64,
    /// A variable of this environment the command gets too (repeatable); beyond PATH, HOME,
    /// USER, LOGNAME, SHELL, LANG, LC_ALL, LC_CTYPE, TZ and TMPDIR it gets none.
    #[arg(long, value_name = "NAME")]
    pub pass_env: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_s_url_is_not_the_gateway_s() {
        let cli = Cli::try_parse_from([
            "forgebench",
            "--url",
            "https://gateway.example",
            "endpoints",
            "set",
            "invoice-classifier",
            "https://callee.example/a2a",
        ])
        .expect("a command line");
        assert_eq!(cli.url.as_deref(), Some("https://gateway.example"));
        let Command::Endpoints(EndpointCommand::Set(set)) = cli.command else {
            panic!("not endpoints set: {:?}", cli.command);
        };
        assert_eq!(set.endpoint_url, "https://callee.example/a2a");
    }

    #[test]
    fn a_notification_replay_names_the_callee_the_task_and_the_config() {
        let cli = Cli::try_parse_from([
            "forgebench",
            "tasks",
            "replay-notification",
            "invoice-classifier",
            "t-1",
            "hook",
        ])
        .expect("a command line");
        let Command::Tasks(TaskCommand::ReplayNotification {
            callee,
            task_id,
            config_id,
        }) = cli.command
        else {
            panic!("not tasks replay-notification: {:?}", cli.command);
        };
        assert_eq!(
            (callee.as_str(), task_id.as_str(), config_id.as_str()),
            ("invoice-classifier", "t-1", "hook")
        );
        let without_config = ["forgebench", "tasks", "replay-notification", "a", "t-1"];
        assert!(Cli::try_parse_from(without_config).is_err());
    }

    #[test]
    fn a_subject_names_an_agent_or_a_member() {
        assert_eq!(
            parse_subject("svc=agent:invoice-classifier"),
            Ok(SubjectGrantIn::agent("svc", "invoice-classifier"))
        );
        assert_eq!(
            parse_subject("repo:acme/app:ref=main=member:m-1"),
            Ok(SubjectGrantIn::member("repo:acme/app:ref=main", "m-1"))
        );
        for wrong in ["svc", "=agent:a", "svc=agent:", "svc=team:a", "svc=a"] {
            assert!(parse_subject(wrong).is_err(), "{wrong}");
        }
    }
}
