//! Reading the ledger: the audit log (`audit`, every page with `--all`), a call tree drawn in
//! the terminal (`calls tree`) and a push task's delivery attempts (`tasks attempts`).

use std::collections::BTreeMap;

use forgebench_sdk::{AuditEntry, AuditQuery, Call, Client, DeliveryAttempt};
use futures::TryStreamExt;

use crate::args::AuditArgs;
use crate::commands::CommandError;
use crate::exit;
use crate::output::Printer;

/// `audit`: one page of the entries the filters select, newest first, or every page (`--all`),
/// one line each (one JSON document each with `--json`).
pub async fn audit(client: &Client, printer: Printer, args: AuditArgs) -> Result<u8, CommandError> {
    let query = AuditQuery {
        agent: args.agent,
        action: args.action,
        outcome: args.outcome.map(Into::into),
        since: args.since,
        limit: args.limit,
        cursor: args.cursor,
    };
    if args.all {
        let mut entries = std::pin::pin!(client.audit_entries(&query));
        while let Some(entry) = entries.try_next().await? {
            printer.print(&entry, || audit_line(&entry));
        }
        return Ok(exit::SUCCESS);
    }
    let page = client.audit(&query).await?;
    for entry in &page.items {
        printer.print(entry, || audit_line(entry));
    }
    if let Some(cursor) = &page.next_cursor {
        eprintln!("forgebench: more entries: --cursor {cursor} (or --all)");
    }
    Ok(exit::SUCCESS)
}

fn audit_line(entry: &AuditEntry) -> String {
    let actor = entry.actor.id.as_deref().unwrap_or("-");
    let mut line = format!(
        "{}  {}  {}  {}  by {actor}",
        entry.at,
        entry.action,
        entry.outcome.as_str(),
        entry.target
    );
    for (name, value) in [
        ("reason", &entry.reason),
        ("policy", &entry.policy),
        ("call", &entry.call_id),
    ] {
        if let Some(value) = value {
            line.push_str(&format!("  {name} {value}"));
        }
    }
    line
}

/// `calls tree ROOT_CALL_ID`: the tree's calls, each under the call that made it.
pub async fn calls_tree(
    client: &Client,
    printer: Printer,
    root_call_id: &str,
) -> Result<u8, CommandError> {
    let calls = client.calls(root_call_id).await?;
    printer.print(&calls, || drawn(&calls.items));
    Ok(exit::SUCCESS)
}

/// The calls as a tree, oldest first among siblings: `caller -> callee  task T  call C  at`,
/// each child indented under its parent with box-drawing lines. A call whose parent is not in
/// the tree (or is itself) starts a line of its own.
pub fn drawn(calls: &[Call]) -> String {
    let known: std::collections::HashSet<&str> =
        calls.iter().map(|call| call.call_id.as_str()).collect();
    let mut children: BTreeMap<Option<&str>, Vec<&Call>> = BTreeMap::new();
    for call in calls {
        let parent = call
            .parent_call_id
            .as_deref()
            .filter(|parent| known.contains(parent) && *parent != call.call_id);
        children.entry(parent).or_default().push(call);
    }
    let mut lines = Vec::new();
    for top in children.get(&None).map(Vec::as_slice).unwrap_or_default() {
        lines.push(call_line(top));
        draw_below(&children, &top.call_id, "", &mut lines);
    }
    lines.join("\n")
}

fn draw_below<'a>(
    children: &BTreeMap<Option<&'a str>, Vec<&'a Call>>,
    parent: &str,
    indent: &str,
    lines: &mut Vec<String>,
) {
    let Some(below) = children.get(&Some(parent)) else {
        return;
    };
    for (n, call) in below.iter().enumerate() {
        let last = n + 1 == below.len();
        let (branch, more) = if last {
            ("└─ ", "   ")
        } else {
            ("├─ ", "│  ")
        };
        lines.push(format!("{indent}{branch}{}", call_line(call)));
        draw_below(children, &call.call_id, &format!("{indent}{more}"), lines);
    }
}

fn call_line(call: &Call) -> String {
    format!(
        "{} -> {}  task {}  call {}  {}",
        call.caller_agent_id, call.callee_agent_id, call.task_id, call.call_id, call.at
    )
}

/// `tasks attempts CALLEE TASK_ID`: a push task's delivery attempts, oldest first.
pub async fn attempts(
    client: &Client,
    printer: Printer,
    callee: &str,
    task_id: &str,
) -> Result<u8, CommandError> {
    let attempts = client.attempts(callee, task_id).await?;
    printer.print(&attempts, || {
        attempts
            .items
            .iter()
            .map(attempt_line)
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(exit::SUCCESS)
}

fn attempt_line(attempt: &DeliveryAttempt) -> String {
    let status = attempt
        .status
        .map_or_else(|| "no answer".to_owned(), |status| status.to_string());
    let mut line = format!(
        "#{}  {}  {status}  {} ms",
        attempt.attempt, attempt.at, attempt.latency_ms
    );
    if let Some(error) = &attempt.error {
        line.push_str(&format!("  {error}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, parent: Option<&str>, caller: &str, callee: &str) -> Call {
        Call {
            call_id: id.into(),
            parent_call_id: parent.map(Into::into),
            root_call_id: "r".into(),
            task_id: format!("t-{id}"),
            caller_agent_id: caller.into(),
            callee_agent_id: callee.into(),
            at: "2026-12-07T00:00:00Z".into(),
        }
    }

    #[test]
    fn a_tree_is_drawn_each_call_under_its_parent() {
        let calls = [
            call("r", None, "a", "b"),
            call("x", Some("r"), "b", "c"),
            call("y", Some("x"), "c", "d"),
            call("z", Some("r"), "b", "d"),
            call("lost", Some("elsewhere"), "e", "f"),
        ];
        let lines: Vec<String> = drawn(&calls)
            .lines()
            .map(|line| line.split("  task").next().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(
            lines,
            ["a -> b", "├─ b -> c", "│  └─ c -> d", "└─ b -> d", "e -> f"]
        );
    }
}
