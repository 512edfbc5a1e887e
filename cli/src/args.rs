//! The command line, as clap reads it.

use clap::{Args, Parser, Subcommand, ValueEnum};

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
}

#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// Push the agent's tasks to URL.
    Set {
        agent: String,
        url: String,
        /// Send `Authorization: Bearer <secret>`, the secret read from this variable.
        #[arg(long, value_name = "VARIABLE", conflicts_with = "header")]
        bearer_secret_env: Option<String>,
        /// Send the secret in this header instead (with --header-secret-env).
        #[arg(long, requires = "header_secret_env")]
        header: Option<String>,
        /// The variable holding the header's secret.
        #[arg(long, value_name = "VARIABLE", requires = "header")]
        header_secret_env: Option<String>,
        /// Drop the current credential.
        #[arg(long, conflicts_with_all = ["bearer_secret_env", "header"])]
        clear_auth: bool,
        /// Let the URL resolve to private ranges (admin only).
        #[arg(long)]
        allow_private_network: bool,
    },
    /// Revert the agent to pull.
    Clear { agent: String },
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
}

#[derive(Debug, Subcommand)]
pub enum CardCommand {
    /// One agent's card.
    Get { agent: String },
    /// One page of the tenant's registry.
    List {
        #[arg(long)]
        cursor: Option<String>,
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
}
