//! `GET /v1/tasks`: find tasks by direction, state, conversation, words and time, newest change
//! first, a page at a time (see [`crate::search`]).
//!
//! An agent key searches its own tasks (`agent` may name itself); an admin or viewer names the
//! agent whose tasks to search with `agent` (any agent of the tenant), or names none to search
//! every task of the tenant (`direction` is then not read: each task is found once). Items are
//! tasks without their `history`, to keep pages small; `GET …/tasks/{id}` has the whole task.

use lambda_http::Request;
use serde_json::{json, Value};

use super::{full_task, ok, query_param, HandlerResult};
use crate::app::App;
use crate::domain::clock::Timestamp;
use crate::domain::search::{Cursor, Direction, SearchFilters, DEFAULT_LIMIT, MAX_LIMIT};
use crate::domain::task::{Shown, PAGE_BYTES};
use crate::domain::words::QueryWords;
use crate::domain::{clock, AgentId, AgentRef, ContextId, Task, TaskState, TenantPrincipal};
use crate::error::ApiError;

/// The query string, read and checked.
struct SearchParams {
    direction: Direction,
    agent: Option<String>,
    state: Option<TaskState>,
    context_id: Option<String>,
    words: Option<QueryWords>,
    since: Option<Timestamp>,
    limit: usize,
    cursor: Option<Cursor>,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::InvalidRequest(message.into())
}

impl SearchParams {
    fn read(request: &Request) -> Result<SearchParams, ApiError> {
        let param = |name: &str| query_param(request, name);
        let direction = match param("direction") {
            None => Direction::Both,
            Some(text) => Direction::parse(&text)
                .ok_or_else(|| invalid("direction must be inbound, outbound or both"))?,
        };
        let state = param("state")
            .map(|text| {
                TaskState::parse(&text).ok_or_else(|| {
                    invalid("state must be submitted, working, input_required, completed, failed or canceled")
                })
            })
            .transpose()?;
        let context_id = param("context_id")
            .map(|text| match text.chars().count() {
                1..=128 => Ok(text),
                _ => Err(invalid("context_id must be 1 to 128 characters")),
            })
            .transpose()?;
        let words = param("q")
            .map(|q| QueryWords::parse(&q).map_err(invalid))
            .transpose()?;
        let since = param("since")
            .map(|text| {
                clock::parse(&text)
                    .map(clock::format)
                    .ok_or_else(|| invalid("since must be an RFC 3339 time"))
            })
            .transpose()?;
        let limit = match param("limit") {
            None => DEFAULT_LIMIT,
            Some(text) => text
                .parse::<usize>()
                .ok()
                .filter(|limit| (1..=MAX_LIMIT).contains(limit))
                .ok_or_else(|| {
                    invalid(format!("limit must be an integer from 1 to {MAX_LIMIT}"))
                })?,
        };
        Ok(SearchParams {
            direction,
            agent: param("agent"),
            state,
            context_id,
            words,
            since,
            limit,
            cursor: param("cursor")
                .map(|text| {
                    Cursor::decode(&text).ok_or_else(|| {
                        invalid(
                            "cursor must be a next_cursor as issued: \
                             {snapshot}_{created_at}_{task_id}",
                        )
                    })
                })
                .transpose()?,
        })
    }
}

/// Whose tasks the principal searches: an agent its own; an admin or viewer the agent it names,
/// or every task of the tenant (`None`) when it names none.
async fn searched_agent(
    app: &App,
    principal: &TenantPrincipal,
    named: Option<&str>,
) -> Result<Option<AgentId>, ApiError> {
    if let Some(own) = principal.agent_id() {
        let names_another = match named {
            None => false,
            Some(named) => {
                let agent = app
                    .store
                    .find_agent(&principal.tenant_id, &AgentRef::parse(named))
                    .await?;
                agent.is_none_or(|agent| agent.id != *own)
            }
        };
        if names_another {
            return Err(ApiError::Forbidden(
                "an agent key searches its own tasks".into(),
            ));
        }
        return Ok(Some(own.clone()));
    }
    if !principal.reads_all_tasks() {
        return Err(ApiError::Forbidden(
            "searching tasks is for agents, admins and viewers".into(),
        ));
    }
    let Some(named) = named else {
        return Ok(None);
    };
    let agent = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::parse(named))
        .await?
        .filter(|agent| agent.tenant_id == principal.tenant_id)
        .ok_or_else(|| ApiError::NotFound("no such agent".into()))?;
    Ok(Some(agent.id))
}

/// A task as a search item: the task view without its history, bodies resolved.
async fn item(app: &App, task: Task) -> Result<Value, ApiError> {
    let task = full_task(app, task, &[]).await?;
    Ok(item_view(&task))
}

/// The search item of `task` (its history already left out), as far as its bodies are read.
fn item_view(task: &Task) -> Value {
    let mut view = task.to_json();
    if let Value::Object(fields) = &mut view {
        fields.remove("history");
    }
    view
}

/// How many of `tasks` (history left out) one page shows: as many as fit [`PAGE_BYTES`], their
/// stored bodies counted in, and at least one.
fn fitting(tasks: &[Task]) -> usize {
    let shown = Shown {
        history: Some(0),
        ..Shown::ALL
    };
    let mut bytes = 0;
    for (index, task) in tasks.iter().enumerate() {
        bytes += item_view(task).to_string().len() as u64 + task.stored_bytes(shown);
        if index > 0 && bytes > PAGE_BYTES {
            return index;
        }
    }
    tasks.len()
}

pub async fn search_tasks(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let params = SearchParams::read(&request)?;
    let agent = searched_agent(app, &principal, params.agent.as_deref()).await?;
    if params.words.is_some()
        && !app
            .store
            .recent_tenant_settings(&principal.tenant_id)
            .await?
            .word_search
    {
        // A well-formed request the tenant's settings stand against: a conflict with the
        // tenant's state, as a paused agent's would be, not bad input.
        return Err(ApiError::Conflict(
            "q cannot be used: word search is off for this tenant (an admin turns it on with \
             PATCH /v1/tenant/settings); every other filter works"
                .into(),
        ));
    }
    let filters = SearchFilters {
        tenant: principal.tenant_id.clone(),
        agent,
        direction: params.direction,
        state: params.state,
        context_id: params.context_id.map(ContextId::from),
        words: params.words,
        since: params.since,
    };
    let mut page =
        crate::search::search(&app.store, &filters, params.cursor.as_ref(), params.limit).await?;
    page.tasks.iter_mut().for_each(|task| task.history.clear());
    let shown = fitting(&page.tasks);
    let next = if shown < page.tasks.len() {
        page.tasks.truncate(shown);
        page.positions.get(shown - 1).map(|after| Cursor {
            snapshot: page.snapshot.clone().into(),
            after: after.clone(),
        })
    } else {
        page.next
    };
    let items =
        futures::future::try_join_all(page.tasks.into_iter().map(|task| item(app, task))).await?;
    ok(&json!({
        "items": items,
        "next_cursor": next.map(|cursor| cursor.encode()),
    }))
}
