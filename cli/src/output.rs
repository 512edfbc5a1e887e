//! What the commands print: the gateway's JSON with `--json`, short human lines otherwise.
//! Results go to stdout; progress and errors to stderr.

use forgebench_sdk::{
    Agent, Binding, EndpointHealth, Part, Redriven, ReplayedNotification, Task, TaskState,
    TrustedIssuer,
};
use serde::Serialize;
use serde_json::Value;

/// Prints each result as JSON or as human text.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub json: bool,
}

impl Printer {
    /// Reports a command's error on stderr: with `--json` one line
    /// `{"error": {"message", "exit_code", "status", "code", "request_id"}}` (`null` for what the
    /// error does not have), else `forgebench: MESSAGE`, with the gateway's request id (the id
    /// its operators search the logs by) when it answered one.
    pub fn error(&self, error: &crate::commands::CommandError) {
        let gateway = error.gateway();
        let request_id = gateway.and_then(forgebench_sdk::Error::request_id);
        if self.json {
            let report = serde_json::json!({"error": {
                "message": error.to_string(),
                "exit_code": error.exit_code(),
                "status": gateway.and_then(forgebench_sdk::Error::status),
                "code": gateway.and_then(forgebench_sdk::Error::code),
                "request_id": request_id,
            }});
            eprintln!("{report}");
        } else if let Some(request_id) = request_id {
            eprintln!("forgebench: {error} (request id {request_id})");
        } else {
            eprintln!("forgebench: {error}");
        }
    }

    /// Prints `value` as one line of JSON, or `human()` as text.
    pub fn print<T: Serialize>(&self, value: &T, human: impl FnOnce() -> String) {
        if self.json {
            match serde_json::to_string(value) {
                Ok(json) => println!("{json}"),
                Err(error) => eprintln!("forgebench: cannot print the answer as JSON: {error}"),
            }
        } else {
            let text = human();
            if !text.is_empty() {
                println!("{text}");
            }
        }
    }
}

/// A task for people: what it answered (the artifacts' text, the question, the error).
pub fn task_result(task: &Task) -> String {
    match task.state() {
        TaskState::Completed => completed_output(task),
        TaskState::InputRequired => task.question().unwrap_or_default(),
        TaskState::Failed => task.error().unwrap_or_default().to_owned(),
        state => format!("task {} is {state}", task.id),
    }
}

/// The artifacts' text parts, then their data parts as JSON, one a line.
fn completed_output(task: &Task) -> String {
    let parts = task.artifacts.iter().flat_map(|artifact| &artifact.parts);
    let lines: Vec<String> = parts
        .map(|part| match part {
            Part::Text(text) => text.clone(),
            Part::Data(data) => data.to_string(),
            Part::File(file) => file.uri.clone(),
        })
        .collect();
    lines.join("\n")
}

pub fn task_line(task: &Task) -> String {
    let updated = task
        .extra
        .get("updated_at")
        .and_then(Value::as_str)
        .unwrap_or("");
    let text: String = task.text().chars().take(60).collect();
    format!(
        "{}  {:<14}  {updated}  {text}",
        task.id,
        task.state().as_str()
    )
}

pub fn agent_line(agent: &Agent) -> String {
    let delivery = match &agent.endpoint {
        Some(Value::Object(endpoint)) => {
            let url = endpoint
                .get("url")
                .and_then(Value::as_str)
                .unwrap_or("push");
            match endpoint.get("disabled") {
                Some(Value::Object(_)) => format!("{url} (disabled)"),
                _ => url.to_owned(),
            }
        }
        _ => "pull".to_owned(),
    };
    format!("{}  {}  {}  {delivery}", agent.id, agent.name, agent.status)
}

/// A push endpoint's health for people: its URL and state, then what went wrong and when, and
/// its deliveries counted since yesterday.
pub fn health_lines(health: &EndpointHealth) -> String {
    let mut lines = vec![format!("{}  {}", health.url, health.state.as_str())];
    if let Some(disabled) = &health.disabled {
        lines.push(format!("disabled at {}: {}", disabled.at, disabled.reason));
    }
    if health.consecutive_failures > 0 {
        let since = health.failing_since.as_deref().unwrap_or("-");
        lines.push(format!(
            "{} failures in a row since {since}",
            health.consecutive_failures
        ));
    }
    if let Some(error) = &health.last_error {
        let at = health.last_failure_at.as_deref().unwrap_or("-");
        lines.push(format!("last error at {at}: {error}"));
    }
    if let Some(at) = &health.last_success_at {
        lines.push(format!("last success at {at}"));
    }
    let counts = &health.attempts;
    let rate = health
        .success_rate
        .map_or_else(|| "-".to_owned(), |rate| format!("{:.0}%", rate * 100.0));
    lines.push(format!(
        "since {}: {} ok, {} failed ({rate} succeeded)",
        counts.since, counts.ok, counts.failed
    ));
    lines.join("\n")
}

/// A redrive for people: how many, each task id, and the next `--since` when more may wait.
pub fn redriven_lines(redriven: &Redriven) -> String {
    let mut lines = vec![format!("redriven {} tasks", redriven.redriven)];
    lines.extend(redriven.task_ids.iter().map(|id| format!("  {id}")));
    if let Some(since) = &redriven.next_since {
        lines.push(format!("more: --since {since}"));
    }
    lines.join("\n")
}

/// A notification's replay for people: which event goes to which config again, and its id.
pub fn replayed_notification_line(replayed: &ReplayedNotification) -> String {
    format!(
        "task {} config {}: event {} is sent again (webhook-id {})",
        replayed.task_id, replayed.config_id, replayed.event, replayed.webhook_id
    )
}

pub fn binding_line(binding: &Binding) -> String {
    let state = match (binding.revoked, &binding.approved_at) {
        (true, _) => "revoked",
        (false, None) => "pending approval",
        (false, Some(_)) => "approved",
    };
    format!(
        "{}  {} -> {}  {state}",
        binding.id, binding.caller_agent_id, binding.callee_agent_id
    )
}

/// A trusted issuer for people: its id, issuer and audience, then one line per subject.
pub fn issuer_lines(trusted: &TrustedIssuer) -> String {
    let head = format!("{}  {}  {}", trusted.id, trusted.issuer, trusted.audience);
    let subjects = trusted.subjects.iter().map(|grant| {
        let signs_in_as = match (&grant.agent_id, &grant.member_id) {
            (Some(agent), _) => format!("agent {agent}"),
            (None, Some(member)) => format!("member {member}"),
            (None, None) => "-".to_owned(),
        };
        format!("  {} -> {signs_in_as}", grant.subject)
    });
    std::iter::once(head)
        .chain(subjects)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line per item of a JSON list, the named fields side by side.
pub fn value_lines(items: &[Value], fields: &[&str]) -> String {
    items
        .iter()
        .map(|item| {
            fields
                .iter()
                .map(|field| match item.get(*field) {
                    Some(Value::String(text)) => text.clone(),
                    Some(Value::Null) | None => "-".to_owned(),
                    Some(other) => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("  ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A JSON document for people: indented.
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// A value the gateway spells as a JSON string (an enum: `dry_run`, `webhook-signing`), as
/// it spells it; empty for anything else.
pub fn spelled<T: Serialize>(value: T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(text)) => text,
        _ => String::new(),
    }
}
