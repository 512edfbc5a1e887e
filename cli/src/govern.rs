//! Governing a tenant: member keys, a binding's limits and contract, tool bindings, the
//! gateway's signing keys, the tenant's settings and policies, and asking the gate about a call.

use std::collections::BTreeMap;

use forgebench_sdk::{
    BindingPatch, CallCheck, CallCheckRequest, Client, ContractPatch, LimitsPatch, PolicyPatch,
    TenantPolicies, TenantSettings, TenantSettingsPatch, Tool, ToolSpec,
};

use crate::args::{
    PolicyCommand, SettingsCommand, SigningKeyCommand, ToolCommand, UpdateBindingArgs,
    UpdateSettingsArgs,
};
use crate::commands::CommandError;
use crate::exit;
use crate::output::{self, Printer};

type Outcome = Result<u8, CommandError>;

/// `members issue-key MEMBER_ID`: prints the new key, once.
pub async fn issue_member_key(client: &Client, printer: Printer, member_id: &str) -> Outcome {
    let issued = client.issue_member_key(member_id).await?;
    printer.print(&issued, || {
        format!(
            "key {}, shown this once: {}",
            issued.key_id,
            issued.key.expose()
        )
    });
    Ok(exit::SUCCESS)
}

/// `members revoke-key MEMBER_ID KEY_ID`.
pub async fn revoke_member_key(
    client: &Client,
    printer: Printer,
    member_id: &str,
    key_id: &str,
) -> Outcome {
    let revoked = client.revoke_member_key(member_id, key_id).await?;
    printer.print(&revoked, || format!("key {} revoked", revoked.key_id));
    Ok(exit::SUCCESS)
}

/// `bindings update AGENT BINDING_ID ...`: the binding as changed, with its limits, contract
/// and usage.
pub async fn update_binding(client: &Client, printer: Printer, args: UpdateBindingArgs) -> Outcome {
    let patch = BindingPatch {
        limits: LimitsPatch {
            max_call_depth: args.max_call_depth.map(|limit| limit.0),
            refuse_cycles: args.refuse_cycles.map(|refuse| refuse.0),
            max_fan_out: args.max_fan_out.map(|limit| limit.0),
            max_open_in_tree: args.max_open_in_tree.map(|limit| limit.0),
        },
        contract: ContractPatch {
            skills: args.skills.map(|skills| skills.0.map(|skills| skills.0)),
            rate_per_minute: args.rate_per_minute.map(|limit| limit.0),
            max_concurrent: args.max_concurrent.map(|limit| limit.0),
            daily_quota: args.daily_quota.map(|limit| limit.0),
        },
    };
    if patch == BindingPatch::default() {
        return Err(CommandError::Usage(
            "bindings update needs at least one limit or contract term to change".into(),
        ));
    }
    let binding = client
        .update_binding(&args.agent, &args.binding_id, &patch)
        .await?;
    printer.print(&binding, || {
        let terms = serde_json::json!({"limits": binding.limits, "contract": binding.contract});
        format!(
            "{}\n{}",
            output::binding_line(&binding),
            output::pretty(&terms)
        )
    });
    Ok(exit::SUCCESS)
}

/// `tools list|put|delete`.
pub async fn tools(client: &Client, printer: Printer, command: ToolCommand) -> Outcome {
    match command {
        ToolCommand::List { agent } => {
            let tools = client.tools(&agent).await?;
            printer.print(&tools, || {
                tools
                    .items
                    .iter()
                    .map(tool_line)
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        ToolCommand::Put {
            agent,
            tool,
            description,
            tags,
        } => {
            let mut spec = ToolSpec::new(description);
            if !tags.is_empty() {
                spec = spec.tags(tags);
            }
            let put = client.put_tool(&agent, &tool, &spec).await?;
            printer.print(&put, || tool_line(&put));
        }
        ToolCommand::Delete { agent, tool } => {
            let removed = client.delete_tool(&agent, &tool).await?;
            printer.print(&removed, || format!("tool {} removed", removed.name));
        }
    }
    Ok(exit::SUCCESS)
}

/// `NAME  DESCRIPTION  [TAG, ...]`.
fn tool_line(tool: &Tool) -> String {
    let mut line = format!("{}  {}", tool.name, tool.description);
    if !tool.tags.is_empty() {
        line.push_str(&format!("  [{}]", tool.tags.join(", ")));
    }
    line
}

/// `signing-keys list|rotate|retire`.
pub async fn signing_keys(
    client: &Client,
    printer: Printer,
    command: SigningKeyCommand,
) -> Outcome {
    match command {
        SigningKeyCommand::List => {
            let jwks = client.signing_keys().await?;
            printer.print(&jwks, || {
                jwks.keys
                    .iter()
                    .map(|key| {
                        let purpose = key.purpose.map_or_else(|| "-".to_owned(), output::spelled);
                        format!("{}  {purpose}  {}", key.kid, key.alg)
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        SigningKeyCommand::Rotate { purpose } => {
            let active = client.rotate_signing_key(purpose.map(Into::into)).await?;
            printer.print(&active, || {
                format!(
                    "{}  {}  active",
                    active.kid,
                    output::spelled(active.purpose)
                )
            });
        }
        SigningKeyCommand::Retire { kid } => {
            let retired = client.retire_signing_key(&kid).await?;
            printer.print(&retired, || {
                format!(
                    "{}  {}  retired",
                    retired.kid,
                    output::spelled(retired.purpose)
                )
            });
        }
    }
    Ok(exit::SUCCESS)
}

/// `settings get|update`.
pub async fn settings(client: &Client, printer: Printer, command: SettingsCommand) -> Outcome {
    let settings = match command {
        SettingsCommand::Get => client.tenant_settings().await?,
        SettingsCommand::Update(args) => {
            let patch = settings_patch(args)?;
            client.update_tenant_settings(&patch).await?
        }
    };
    printer.print(&settings, || settings_lines(&settings));
    Ok(exit::SUCCESS)
}

fn settings_patch(args: UpdateSettingsArgs) -> Result<TenantSettingsPatch, CommandError> {
    let patch = TenantSettingsPatch {
        word_search: args.word_search,
        max_call_depth: args.max_call_depth,
        refuse_cycles: args.refuse_cycles,
        max_fan_out: args.max_fan_out.map(|limit| limit.0),
        max_open_in_tree: args.max_open_in_tree.map(|limit| limit.0),
    };
    if patch == TenantSettingsPatch::default() {
        return Err(CommandError::Usage(
            "settings update needs at least one setting to change".into(),
        ));
    }
    Ok(patch)
}

/// One `NAME  VALUE` line per setting (`none` for a count limit not set).
fn settings_lines(settings: &TenantSettings) -> String {
    let limit = |limit: Option<u32>| limit.map_or_else(|| "none".to_owned(), |n| n.to_string());
    [
        format!("tenant            {}", settings.tenant_id),
        format!("word_search       {}", settings.word_search),
        format!("max_call_depth    {}", settings.max_call_depth),
        format!("refuse_cycles     {}", settings.refuse_cycles),
        format!("max_fan_out       {}", limit(settings.max_fan_out)),
        format!("max_open_in_tree  {}", limit(settings.max_open_in_tree)),
    ]
    .join("\n")
}

/// `policies list|set|remove|check`.
pub async fn policies(client: &Client, printer: Printer, command: PolicyCommand) -> Outcome {
    let changes = match command {
        PolicyCommand::List => {
            let policies = client.tenant_policies().await?;
            printer.print(&policies, || policy_lines(&policies));
            return Ok(exit::SUCCESS);
        }
        PolicyCommand::Check {
            caller,
            callee,
            skill,
            action,
            depth,
            root_caller,
        } => {
            let request = CallCheckRequest {
                caller,
                callee,
                skill,
                action,
                depth,
                root_caller,
            };
            let check = client.check_call(&request).await?;
            printer.print(&check, || check_line(&check));
            return Ok(exit::SUCCESS);
        }
        PolicyCommand::Remove { name } => BTreeMap::from([(name, None)]),
        PolicyCommand::Set {
            name,
            policy,
            policy_file,
            mode,
            description,
            no_description,
        } => {
            let policy = match policy_file {
                Some(path) => Some(std::fs::read_to_string(&path).map_err(|error| {
                    CommandError::Usage(format!("cannot read {}: {error}", path.display()))
                })?),
                None => policy,
            };
            let description = if no_description {
                Some(None)
            } else {
                description.map(Some)
            };
            let patch = PolicyPatch {
                policy,
                mode: mode.map(Into::into),
                description,
            };
            BTreeMap::from([(name, Some(patch))])
        }
    };
    let saved = client.update_tenant_policies(&changes).await?;
    printer.print(&saved, || policy_lines(&saved));
    Ok(exit::SUCCESS)
}

/// `version N`, then per policy `NAME  MODE  UPDATED_AT  DESCRIPTION` and its text indented.
fn policy_lines(policies: &TenantPolicies) -> String {
    let mut lines = vec![format!("version {}", policies.version)];
    for policy in &policies.items {
        let mode = output::spelled(policy.mode);
        let description = policy.description.as_deref().unwrap_or("");
        lines.push(
            format!(
                "{}  {mode}  {}  {description}",
                policy.name, policy.updated_at
            )
            .trim_end()
            .to_owned(),
        );
        lines.extend(policy.policy.lines().map(|line| format!("    {line}")));
    }
    lines.join("\n")
}

/// `allowed`, or `refused: REASON` with the policies that forbid it; then the tried policies
/// that would.
fn check_line(check: &CallCheck) -> String {
    let mut line = if check.allowed {
        "allowed".to_owned()
    } else {
        format!("refused: {}", check.reason.as_deref().unwrap_or("-"))
    };
    if !check.policies.is_empty() {
        line.push_str(&format!("  policies {}", check.policies.join(", ")));
    }
    if !check.would_refuse.is_empty() {
        line.push_str(&format!("  would refuse {}", check.would_refuse.join(", ")));
    }
    line
}
