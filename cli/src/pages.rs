//! The listings that page with a cursor besides the audit log (`tasks search`, `cards list`):
//! one page, or with `--all` every page, following `next_cursor` to the end.

use forgebench_sdk::{Client, Direction, TaskSearch, TaskState};
use serde_json::Value;

use crate::args::{DirectionArg, SearchArgs, StateArg};
use crate::commands::CommandError;
use crate::exit;
use crate::output::{self, Printer};

type Outcome = Result<u8, CommandError>;

/// `tasks search`: one page (as the gateway answers it with `--json`; human lines end with
/// `more: --cursor …`), or with `--all` every task of every page, one line (one JSON task)
/// each.
pub async fn search(client: &Client, printer: Printer, args: SearchArgs) -> Outcome {
    let all = args.all;
    let mut search = search_of(args);
    if !all {
        let page = client.search_tasks(&search).await?;
        printer.print(&page, || {
            let mut lines: Vec<String> = page.items.iter().map(output::task_line).collect();
            if let Some(cursor) = &page.next_cursor {
                lines.push(format!("more: --cursor {cursor}"));
            }
            lines.join("\n")
        });
        return Ok(exit::SUCCESS);
    }
    loop {
        let page = client.search_tasks(&search).await?;
        for task in &page.items {
            printer.print(task, || output::task_line(task));
        }
        match page.next_cursor {
            Some(cursor) => search.cursor = Some(cursor),
            None => return Ok(exit::SUCCESS),
        }
    }
}

fn search_of(args: SearchArgs) -> TaskSearch {
    TaskSearch {
        direction: args.direction.map(|direction| match direction {
            DirectionArg::Inbound => Direction::Inbound,
            DirectionArg::Outbound => Direction::Outbound,
            DirectionArg::Both => Direction::Both,
        }),
        agent: args.agent,
        state: args.state.map(|state| match state {
            StateArg::Submitted => TaskState::Submitted,
            StateArg::Working => TaskState::Working,
            StateArg::InputRequired => TaskState::InputRequired,
            StateArg::Completed => TaskState::Completed,
            StateArg::Failed => TaskState::Failed,
            StateArg::Canceled => TaskState::Canceled,
        }),
        context_id: args.context_id,
        q: args.q,
        since: args.since,
        limit: args.limit,
        cursor: args.cursor,
    }
}

/// `cards list`: one page as the gateway answers it (`{"cards", "next_cursor"}`), or with
/// `--all` every card of every page, one line (`NAME  DESCRIPTION`; one JSON card) each.
pub async fn cards(
    client: &Client,
    printer: Printer,
    limit: Option<u32>,
    mut cursor: Option<String>,
    all: bool,
) -> Outcome {
    if !all {
        let page = client.cards_page(limit, cursor.as_deref()).await?;
        printer.print(&page, || output::pretty(&page));
        return Ok(exit::SUCCESS);
    }
    loop {
        let page = client.cards_page(limit, cursor.as_deref()).await?;
        let cards = page.get("cards").and_then(Value::as_array);
        for card in cards.into_iter().flatten() {
            printer.print(card, || card_line(card));
        }
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_owned()),
            None => return Ok(exit::SUCCESS),
        }
    }
}

fn card_line(card: &Value) -> String {
    let field = |name: &str| card.get(name).and_then(Value::as_str).unwrap_or("-");
    format!("{}  {}", field("name"), field("description"))
}
