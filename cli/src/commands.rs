//! Each command: one SDK call (or a loop of them) and what it prints.

use std::time::{Duration, Instant};

use forgebench_sdk::{
    CallOptions, Client, EndpointAuth, EndpointConfig, ServeOptions, StopSignal, Task, TaskState,
    MAX_WAIT_SECONDS,
};
use serde_json::{json, Value};

use crate::args::{
    AgentCommand, BindingCommand, CallArgs, CallsCommand, CardCommand, Command, EndpointCommand,
    IssuerCommand, KeyCommand, MemberCommand, ServeArgs, SetEndpointArgs, TaskCommand,
    TenantCommand,
};
use crate::exec::{answer_with_command, ExecLimits};
use crate::exit;
use crate::govern;
use crate::ledger;
use crate::output::{self, Printer};
use crate::pages;
use crate::watch;

/// Why a command could not do its work.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Gateway(#[from] forgebench_sdk::Error),
    #[error("{0}")]
    Usage(String),
    /// The profile named, or the config file, cannot be used.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
}

impl CommandError {
    /// The gateway's refusal behind this error, if it answered one.
    pub fn gateway(&self) -> Option<&forgebench_sdk::Error> {
        match self {
            CommandError::Gateway(error) => Some(error),
            CommandError::Usage(_) | CommandError::Profile(_) => None,
        }
    }

    /// The exit code of this error; see [`crate::exit`].
    pub fn exit_code(&self) -> u8 {
        match self {
            CommandError::Gateway(forgebench_sdk::Error::PermissionDenied(_)) => exit::REFUSED,
            CommandError::Gateway(
                forgebench_sdk::Error::Unauthenticated(_) | forgebench_sdk::Error::TokenProvider(_),
            ) => exit::UNAUTHENTICATED,
            CommandError::Gateway(_) => exit::ERROR,
            CommandError::Usage(_) | CommandError::Profile(_) => exit::USAGE,
        }
    }
}

type Outcome = Result<u8, CommandError>;

/// Runs `command` as `client`, printing with `printer`; the exit code.
pub async fn run(client: &Client, printer: Printer, command: Command) -> Outcome {
    match command {
        Command::Tenants(command) => tenants(client, printer, command).await,
        Command::Members(command) => members(client, printer, command).await,
        Command::Agents(command) => agents(client, printer, command).await,
        Command::Keys(command) => keys(client, printer, command).await,
        Command::Bindings(command) => bindings(client, printer, command).await,
        Command::Endpoints(command) => endpoints(client, printer, command).await,
        Command::Call(args) => call(client, printer, args).await,
        Command::Tasks(command) => tasks(client, printer, command).await,
        Command::Cards(command) => cards(client, printer, command).await,
        Command::Serve(args) => serve(client, printer, args).await,
        Command::Issuers(command) => issuers(client, printer, command).await,
        Command::Audit(args) => ledger::audit(client, printer, args).await,
        Command::Calls(CallsCommand::Tree { root_call_id }) => {
            ledger::calls_tree(client, printer, &root_call_id).await
        }
        Command::Tools(command) => govern::tools(client, printer, command).await,
        Command::SigningKeys(command) => govern::signing_keys(client, printer, command).await,
        Command::Settings(command) => govern::settings(client, printer, command).await,
        Command::Policies(command) => govern::policies(client, printer, command).await,
        // Answered before a client is built (main.rs): it needs no gateway.
        Command::Completions { .. } => Ok(exit::SUCCESS),
    }
}

async fn issuers(client: &Client, printer: Printer, command: IssuerCommand) -> Outcome {
    let trusted = match command {
        IssuerCommand::List => {
            let listed = client.list_issuers().await?;
            printer.print(&listed, || {
                listed
                    .items
                    .iter()
                    .map(output::issuer_lines)
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            return Ok(exit::SUCCESS);
        }
        IssuerCommand::Trust {
            issuer,
            audience,
            subjects,
        } => client.trust_issuer(&issuer, &audience, &subjects).await?,
        IssuerCommand::Update {
            issuer_id,
            subjects,
            clear: _,
        } => client.update_issuer(&issuer_id, &subjects).await?,
        IssuerCommand::Distrust { issuer_id } => {
            let removed = client.distrust_issuer(&issuer_id).await?;
            printer.print(&removed, || format!("issuer {} distrusted", removed.id));
            return Ok(exit::SUCCESS);
        }
    };
    printer.print(&trusted, || output::issuer_lines(&trusted));
    Ok(exit::SUCCESS)
}

async fn tenants(client: &Client, printer: Printer, command: TenantCommand) -> Outcome {
    let TenantCommand::Create { name } = command;
    let tenant = client.create_tenant(&name).await?;
    printer.print(&tenant, || {
        format!(
            "tenant {} ({})\nadmin key, shown this once: {}",
            tenant.tenant_id,
            tenant.name,
            tenant.admin_key.expose()
        )
    });
    Ok(exit::SUCCESS)
}

async fn members(client: &Client, printer: Printer, command: MemberCommand) -> Outcome {
    match command {
        MemberCommand::Create { name, role } => {
            let member = client.create_member(&name, role.as_str()).await?;
            printer.print(&member, || {
                format!(
                    "member {} ({}, {})\nkey, shown this once: {}",
                    member.member_id,
                    member.name,
                    member.role,
                    member.key.expose()
                )
            });
        }
        MemberCommand::List => {
            let members = client.list_members().await?;
            printer.print(&members, || {
                output::value_lines(&members.items, &["member_id", "name", "role", "created_at"])
            });
        }
        MemberCommand::IssueKey { member_id } => {
            return govern::issue_member_key(client, printer, &member_id).await;
        }
        MemberCommand::RevokeKey { member_id, key_id } => {
            return govern::revoke_member_key(client, printer, &member_id, &key_id).await;
        }
    }
    Ok(exit::SUCCESS)
}

async fn agents(client: &Client, printer: Printer, command: AgentCommand) -> Outcome {
    let agent = match command {
        AgentCommand::Create {
            name,
            description,
            owner,
        } => {
            client
                .create_agent(&name, description.as_deref(), owner.as_deref())
                .await?
        }
        AgentCommand::List => {
            let agents = client.list_agents().await?;
            printer.print(&agents, || {
                agents
                    .items
                    .iter()
                    .map(output::agent_line)
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            return Ok(exit::SUCCESS);
        }
        AgentCommand::Get { agent } => client.agent(&agent).await?,
        AgentCommand::Me => client.me().await?,
        AgentCommand::Update {
            agent,
            status,
            description,
        } => {
            let status = status.map(|status| status.as_str());
            client
                .update_agent(&agent, status, description.as_deref())
                .await?
        }
    };
    printer.print(&agent, || output::agent_line(&agent));
    Ok(exit::SUCCESS)
}

async fn keys(client: &Client, printer: Printer, command: KeyCommand) -> Outcome {
    match command {
        KeyCommand::Issue { agent } => {
            let issued = client.issue_key(&agent).await?;
            printer.print(&issued, || {
                format!(
                    "key {}, shown this once: {}",
                    issued.key_id,
                    issued.key.expose()
                )
            });
        }
        KeyCommand::List { agent } => {
            let keys = client.list_keys(&agent).await?;
            printer.print(&keys, || {
                output::value_lines(
                    &keys.items,
                    &["key_id", "created_at", "last_used_at", "revoked_at"],
                )
            });
        }
        KeyCommand::Revoke { agent, key_id } => {
            let revoked = client.revoke_key(&agent, &key_id).await?;
            printer.print(&revoked, || format!("key {key_id} revoked"));
        }
    }
    Ok(exit::SUCCESS)
}

async fn bindings(client: &Client, printer: Printer, command: BindingCommand) -> Outcome {
    let binding = match command {
        BindingCommand::Grant { caller, callees } => {
            let callees: Vec<&str> = callees.iter().map(String::as_str).collect();
            let granted = client.grant(&caller, &callees).await?;
            printer.print(&granted, || {
                granted
                    .iter()
                    .map(output::binding_line)
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            return Ok(exit::SUCCESS);
        }
        BindingCommand::List { agent } => {
            let listed = client.bindings(&agent).await?;
            printer.print(&listed, || {
                let outbound = listed
                    .outbound
                    .iter()
                    .map(|b| format!("outbound  {}", output::binding_line(b)));
                let inbound = listed
                    .inbound
                    .iter()
                    .map(|b| format!("inbound   {}", output::binding_line(b)));
                outbound.chain(inbound).collect::<Vec<_>>().join("\n")
            });
            return Ok(exit::SUCCESS);
        }
        BindingCommand::Approve { callee, binding_id } => {
            client.approve(&callee, &binding_id).await?
        }
        BindingCommand::Revoke { agent, binding_id } => {
            client.revoke_binding(&agent, &binding_id).await?
        }
        BindingCommand::Update(args) => return govern::update_binding(client, printer, args).await,
    };
    printer.print(&binding, || output::binding_line(&binding));
    Ok(exit::SUCCESS)
}

/// The secret in the variable `name`; never taken from the command line.
fn secret_from(name: &str) -> Result<String, CommandError> {
    std::env::var(name)
        .ok()
        .filter(|secret| !secret.is_empty())
        .ok_or_else(|| CommandError::Usage(format!("the variable {name} holds no secret")))
}

async fn endpoints(client: &Client, printer: Printer, command: EndpointCommand) -> Outcome {
    let health = match command {
        EndpointCommand::Set(args) => {
            let agent = args.agent.clone();
            return set_endpoint(client, printer, &agent, endpoint_config(args)?).await;
        }
        EndpointCommand::Clear { agent } => {
            return set_endpoint(client, printer, &agent, EndpointConfig::default()).await;
        }
        EndpointCommand::Redrive { agent, since } => {
            let redriven = client.redrive_deliveries(&agent, &since).await?;
            printer.print(&redriven, || output::redriven_lines(&redriven));
            return Ok(exit::SUCCESS);
        }
        EndpointCommand::Health { agent } => client.endpoint_health(&agent).await?,
        EndpointCommand::Enable { agent } => client.enable_endpoint(&agent).await?,
    };
    printer.print(&health, || output::health_lines(&health));
    Ok(exit::SUCCESS)
}

async fn set_endpoint(
    client: &Client,
    printer: Printer,
    agent: &str,
    config: EndpointConfig,
) -> Outcome {
    let updated = client.set_endpoint(agent, &config).await?;
    printer.print(&updated, || output::agent_line(&updated));
    Ok(exit::SUCCESS)
}

/// What `endpoints set` asks for; a secret comes from the variable named, never the line.
fn endpoint_config(args: SetEndpointArgs) -> Result<EndpointConfig, CommandError> {
    let auth = match (args.bearer_secret_env, args.header, args.header_secret_env) {
        (Some(variable), _, _) => Some(EndpointAuth::Bearer {
            secret: secret_from(&variable)?,
        }),
        (None, Some(name), Some(variable)) => Some(EndpointAuth::Header {
            name,
            secret: secret_from(&variable)?,
        }),
        _ => None,
    };
    Ok(EndpointConfig {
        url: Some(args.endpoint_url),
        auth,
        clear_auth: args.clear_auth,
        allow_private_network: args.allow_private_network,
    })
}

fn call_options(args: &CallArgs) -> Result<CallOptions, CommandError> {
    let mut options = CallOptions::new().wait(args.wait.min(MAX_WAIT_SECONDS));
    if let Some(text) = &args.text {
        options = options.text(text);
    }
    if let Some(data) = &args.data {
        let data: Value = serde_json::from_str(data)
            .map_err(|error| CommandError::Usage(format!("--data is not JSON: {error}")))?;
        options = options.data(data);
    }
    if args.text.is_none() && args.data.is_none() {
        return Err(CommandError::Usage("call needs --text or --data".into()));
    }
    if let Some(context_id) = &args.context_id {
        options = options.context_id(context_id);
    }
    if let Some(parent) = &args.parent_call_id {
        options = options.parent_call_id(parent);
    }
    if let Some(message_id) = &args.message_id {
        options = options.message_id(message_id);
    }
    Ok(options)
}

async fn call(client: &Client, printer: Printer, args: CallArgs) -> Outcome {
    let started = Instant::now();
    if args.wait > 0 {
        eprintln!(
            "forgebench: calling {}; waiting up to {} s for the answer",
            args.callee, args.wait
        );
    }
    let task = client.call(&args.callee, call_options(&args)?).await?;
    eprintln!("forgebench: opened task {} on {}", task.id, args.callee);
    let deadline = started + Duration::from_secs(u64::from(args.wait));
    let task = wait_for_answer(client, &args.callee, task, deadline).await?;
    print_task(printer, &task);
    Ok(exit::for_state(task.state()))
}

/// Polls `task` (30 s at a time) until it leaves submitted/working or `deadline` passes,
/// saying on stderr what it waits for.
async fn wait_for_answer(
    client: &Client,
    callee: &str,
    mut task: Task,
    deadline: Instant,
) -> Result<Task, CommandError> {
    while matches!(task.state(), TaskState::Submitted | TaskState::Working) {
        let left = deadline.saturating_duration_since(Instant::now()).as_secs();
        if left == 0 {
            break;
        }
        eprintln!(
            "forgebench: task {} is {}; waiting up to {left} s more",
            task.id,
            task.state()
        );
        let wait = u32::try_from(left)
            .unwrap_or(MAX_WAIT_SECONDS)
            .min(MAX_WAIT_SECONDS);
        task = client.task(callee, &task.id, wait).await?;
    }
    Ok(task)
}

fn print_task(printer: Printer, task: &Task) {
    eprintln!("forgebench: task {} {}", task.id, task.state());
    printer.print(task, || output::task_result(task));
}

async fn tasks(client: &Client, printer: Printer, command: TaskCommand) -> Outcome {
    match command {
        TaskCommand::Get {
            callee,
            task_id,
            wait,
        } => {
            let task = client
                .task(&callee, &task_id, wait.min(MAX_WAIT_SECONDS))
                .await?;
            print_task(printer, &task);
            Ok(exit::for_state(task.state()))
        }
        TaskCommand::Cancel { callee, task_id } => {
            let task = client.cancel(&callee, &task_id).await?;
            print_task(printer, &task);
            Ok(exit::SUCCESS)
        }
        TaskCommand::Answer {
            callee,
            task_id,
            text,
        } => {
            let task = client.answer(&callee, &task_id, text).await?;
            print_task(printer, &task);
            Ok(exit::SUCCESS)
        }
        TaskCommand::Watch {
            callee,
            task_id,
            after,
        } => watch::watch(client, printer, (&callee, &task_id), after).await,
        TaskCommand::Attempts { callee, task_id } => {
            ledger::attempts(client, printer, &callee, &task_id).await
        }
        TaskCommand::Replay { callee, task_id } => {
            let replayed = client.replay_delivery(&callee, &task_id).await?;
            printer.print(&replayed, || {
                format!(
                    "task {} replayed: its delivery (webhook-id {}) is attempted now",
                    replayed.task_id, replayed.webhook_id
                )
            });
            Ok(exit::SUCCESS)
        }
        TaskCommand::ReplayNotification {
            callee,
            task_id,
            config_id,
        } => {
            let replayed = client
                .replay_notification(&callee, &task_id, &config_id)
                .await?;
            printer.print(&replayed, || output::replayed_notification_line(&replayed));
            Ok(exit::SUCCESS)
        }
        TaskCommand::Search(args) => pages::search(client, printer, args).await,
    }
}

async fn cards(client: &Client, printer: Printer, command: CardCommand) -> Outcome {
    match command {
        CardCommand::Get { agent } => {
            let card = client.card(&agent).await?;
            printer.print(&card, || output::pretty(&card));
            Ok(exit::SUCCESS)
        }
        CardCommand::List { limit, cursor, all } => {
            pages::cards(client, printer, limit, cursor, all).await
        }
    }
}

async fn serve(client: &Client, printer: Printer, args: ServeArgs) -> Outcome {
    let stop = StopSignal::new();
    tokio::spawn(stop_on_signal(stop.clone()));
    let command = args.exec.as_str();
    let limits = ExecLimits {
        timeout: Duration::from_secs(args.timeout.max(1)),
        pass_env: args.pass_env,
    };
    let limits = &limits;
    let handler = |task: Task| async move {
        let reply = answer_with_command(client, command, &task, limits).await;
        eprintln!("forgebench: task {} -> {}", task.id, reply.state);
        reply
    };
    let options = ServeOptions {
        concurrency: args.concurrency,
        max_tasks: args.max_tasks,
        wait: args.wait.min(MAX_WAIT_SECONDS),
        stop: Some(stop),
    };
    eprintln!(
        "forgebench: serving with `{command}`; Ctrl-C or SIGTERM stops after the tasks in hand"
    );
    let handled = client.serve(handler, options).await?;
    eprintln!("forgebench: served {handled} tasks");
    printer.print(&json!({ "handled": handled }), String::new);
    Ok(exit::SUCCESS)
}

/// Sets `stop` on Ctrl-C or SIGTERM.
async fn stop_on_signal(stop: StopSignal) {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
    eprintln!("forgebench: stopping; finishing the tasks in hand");
    stop.stop();
}
