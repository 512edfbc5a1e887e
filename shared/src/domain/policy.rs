//! Tenant policies: rules in Cedar over the caller agent (the principal), the action, the callee
//! (the resource) and the call's context, for what a binding's fields cannot say. A live binding
//! permits a call; a policy can only forbid it. Each policy is enforced or tried (`dry_run`:
//! what it would refuse goes to the audit log, and nothing is refused), and every decision
//! names the policies that made it.

use std::sync::LazyLock;

use cedar_policy::{
    Authorizer, Context, Decision, Effect, Entities, EntityUid, Policy, PolicyId, PolicySet,
    Request, Schema, ValidationMode, Validator,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The schema every tenant policy is validated against when saved (docs/api.md, "Tenant
/// policies"). Agents are named by their names, which never change.
pub const POLICY_SCHEMA: &str = r#"
entity Agent = {
  name: String,
};
type Call = {
  depth: Long,
  tenant: String,
  now: datetime,
  skill?: String,
  root_caller?: Agent,
};
action "open", "answer", "cancel", "read" appliesTo {
  principal: Agent,
  resource: Agent,
  context: Call,
};
"#;

/// The most policies a tenant holds.
pub const MAX_POLICIES: usize = 32;
/// The longest policy text.
pub const MAX_POLICY_CHARS: usize = 8_000;
/// The longest policy name.
pub const MAX_POLICY_NAME_CHARS: usize = 64;
/// The longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 500;

static SCHEMA: LazyLock<Result<Schema, String>> = LazyLock::new(|| {
    Schema::from_cedarschema_str(POLICY_SCHEMA)
        .map(|(schema, _warnings)| schema)
        .map_err(|error| error.to_string())
});

/// Whether a policy refuses what it forbids, or only says it would.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    Enforce,
    DryRun,
}

impl PolicyMode {
    pub fn parse(text: &str) -> Option<PolicyMode> {
        match text {
            "enforce" => Some(PolicyMode::Enforce),
            "dry_run" => Some(PolicyMode::DryRun),
            _ => None,
        }
    }
}

/// One tenant policy as saved: its name, its Cedar text (one `forbid`), its mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantPolicy {
    pub name: String,
    pub policy: String,
    pub mode: PolicyMode,
    #[serde(default)]
    pub description: Option<String>,
    pub updated_at: String,
}

/// Why a policy cannot be saved, said to the admin who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PolicyRejected(pub String);

/// Whether `name` can name a policy: 1 to 64 lowercase letters, digits, `-` and `_`, starting
/// with a letter or a digit.
pub fn is_policy_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_lowercase() || first.is_ascii_digit())
        && name.len() <= MAX_POLICY_NAME_CHARS
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn schema() -> Result<&'static Schema, PolicyRejected> {
    SCHEMA
        .as_ref()
        .map_err(|error| PolicyRejected(format!("the policy schema does not parse: {error}")))
}

/// Parses one policy's text as the policy `name`: exactly one static `forbid`.
fn parse(name: &str, text: &str) -> Result<Policy, PolicyRejected> {
    let policy = Policy::parse(Some(PolicyId::new(name)), text)
        .map_err(|error| PolicyRejected(format!("policy {name} does not parse: {error}")))?;
    if policy.effect() != Effect::Forbid {
        return Err(PolicyRejected(format!(
            "policy {name} is a permit: a live binding permits a call, and a policy may only forbid"
        )));
    }
    Ok(policy)
}

/// A tenant's policies, parsed and checked against the schema, ready to judge calls.
#[derive(Debug, Clone)]
pub struct PolicyBook {
    set: PolicySet,
    modes: Vec<(String, PolicyMode)>,
    reads_the_place: bool,
}

impl PolicyBook {
    /// The book of `policies`, or why one of them cannot be used: its text does not parse, it is
    /// not one `forbid`, or it does not hold to the schema (an unknown action, attribute or
    /// type, an optional attribute read without `has`).
    pub fn new(policies: &[TenantPolicy]) -> Result<PolicyBook, PolicyRejected> {
        let mut set = PolicySet::new();
        let binding = Policy::parse(Some(PolicyId::new(BINDING_PERMIT)), BINDING_PERMIT_TEXT)
            .map_err(|error| PolicyRejected(error.to_string()))?;
        set.add(binding)
            .map_err(|error| PolicyRejected(error.to_string()))?;
        for policy in policies {
            set.add(parse(&policy.name, &policy.policy)?)
                .map_err(|error| PolicyRejected(format!("policy {}: {error}", policy.name)))?;
        }
        let validated = Validator::new(schema()?.clone()).validate(&set, ValidationMode::Strict);
        if let Some(error) = validated.validation_errors().next() {
            return Err(PolicyRejected(format!(
                "policy {} does not hold to the schema: {error}",
                error.policy_id()
            )));
        }
        let modes = policies
            .iter()
            .map(|policy| (policy.name.clone(), policy.mode))
            .collect();
        let reads_the_place = set.policies().any(reads_the_place);
        Ok(PolicyBook {
            set,
            modes,
            reads_the_place,
        })
    }

    /// Whether a policy reads the call's place in its tree (`context.depth`,
    /// `context.root_caller`), which a call on an existing task reads from the ledger: without
    /// one, judging it reads nothing.
    pub fn reads_the_place(&self) -> bool {
        self.reads_the_place
    }

    /// The policies' judgement of `call`: the enforced policies that refuse it and the tried
    /// ones that would, each by name.
    pub fn judge(&self, call: &PolicyCall) -> Result<Judgement, PolicyRejected> {
        let request = call.request()?;
        let entities = call.entities()?;
        let answer = Authorizer::new().is_authorized(&request, &self.set, &entities);
        let mut judgement = Judgement::default();
        for error in answer.diagnostics().errors() {
            tracing::warn!(error = %error, "a tenant policy failed to evaluate; it refuses nothing");
        }
        if answer.decision() == Decision::Allow {
            return Ok(judgement);
        }
        for id in answer.diagnostics().reason() {
            let name = id.to_string();
            match self.mode_of(&name) {
                Some(PolicyMode::Enforce) => judgement.refused_by.push(name),
                Some(PolicyMode::DryRun) => judgement.would_refuse.push(name),
                None => {}
            }
        }
        judgement.refused_by.sort();
        judgement.would_refuse.sort();
        Ok(judgement)
    }

    fn mode_of(&self, name: &str) -> Option<PolicyMode> {
        self.modes
            .iter()
            .find(|(policy, _)| policy == name)
            .map(|(_, mode)| *mode)
    }
}

/// Whether `policy` reads an attribute of the call's place. Under the schema only the context has
/// attributes named `depth` and `root_caller`, so any access to one (`.`, `has`) is the
/// context's. A policy whose form cannot be read counts as reading it.
fn reads_the_place(policy: &Policy) -> bool {
    fn reads(value: &Value) -> bool {
        match value {
            Value::Object(fields) => fields.iter().any(|(key, field)| {
                (key == "attr" && matches!(field.as_str(), Some("depth" | "root_caller")))
                    || reads(field)
            }),
            Value::Array(items) => items.iter().any(reads),
            _ => false,
        }
    }
    policy.to_json().map_or(true, |form| reads(&form))
}

/// The permit every book holds: the binding's, which admitted the call before the policies see
/// it. Not a name a tenant policy may take (names have no `:`).
const BINDING_PERMIT: &str = "gate:binding";
const BINDING_PERMIT_TEXT: &str = "permit(principal, action, resource);";

/// What the policies decided about one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judgement {
    /// The enforced policies that forbid it: it is refused when there is one.
    pub refused_by: Vec<String>,
    /// The tried (`dry_run`) policies that would forbid it.
    pub would_refuse: Vec<String>,
}

/// A governed action of a caller on a callee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyAction {
    Open,
    Answer,
    Cancel,
    Read,
}

impl PolicyAction {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyAction::Open => "open",
            PolicyAction::Answer => "answer",
            PolicyAction::Cancel => "cancel",
            PolicyAction::Read => "read",
        }
    }

    pub fn parse(text: &str) -> Option<PolicyAction> {
        [Self::Open, Self::Answer, Self::Cancel, Self::Read]
            .into_iter()
            .find(|action| action.as_str() == text)
    }
}

/// One call as the policies see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyCall {
    pub action: PolicyAction,
    /// The caller agent's name.
    pub caller: String,
    /// The callee agent's name.
    pub callee: String,
    pub skill: Option<String>,
    /// The call's depth in its tree, the root call being 1.
    pub depth: u32,
    /// The name of the agent that made the tree's root call, when the ledger knows it.
    pub root_caller: Option<String>,
    pub tenant: String,
    /// Seconds since the epoch.
    pub now_unix: i64,
}

impl PolicyCall {
    fn request(&self) -> Result<Request, PolicyRejected> {
        let action = EntityUid::from_json(json!({"type": "Action", "id": self.action.as_str()}))
            .map_err(rejected)?;
        let mut context = json!({
            "depth": i64::from(self.depth),
            "tenant": self.tenant,
            "now": {"__extn": {"fn": "datetime", "arg": datetime_text(self.now_unix)}},
        });
        if let Some(skill) = &self.skill {
            context["skill"] = json!(skill);
        }
        if let Some(root) = &self.root_caller {
            context["root_caller"] = json!({"__entity": {"type": "Agent", "id": root}});
        }
        let schema = schema()?;
        let context =
            Context::from_json_value(context, Some((schema, &action))).map_err(rejected)?;
        Request::new(
            agent_uid(&self.caller)?,
            action,
            agent_uid(&self.callee)?,
            context,
            Some(schema),
        )
        .map_err(rejected)
    }

    fn entities(&self) -> Result<Entities, PolicyRejected> {
        let mut names = vec![&self.caller, &self.callee];
        names.extend(self.root_caller.as_ref());
        names.sort();
        names.dedup();
        let entities: Vec<Value> = names
            .into_iter()
            .map(|name| {
                json!({"uid": {"type": "Agent", "id": name}, "attrs": {"name": name}, "parents": []})
            })
            .collect();
        Entities::from_json_value(Value::Array(entities), Some(schema()?)).map_err(rejected)
    }
}

fn agent_uid(name: &str) -> Result<EntityUid, PolicyRejected> {
    EntityUid::from_json(json!({"type": "Agent", "id": name})).map_err(rejected)
}

fn rejected(error: impl std::fmt::Display) -> PolicyRejected {
    PolicyRejected(error.to_string())
}

/// `unix` seconds as Cedar's `datetime` reads them (UTC, to the second).
fn datetime_text(unix: i64) -> String {
    let at =
        time::OffsetDateTime::from_unix_timestamp(unix).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
