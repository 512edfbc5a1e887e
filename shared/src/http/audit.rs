//! `GET /v1/audit` (admin, viewer): the tenant's audit log, newest first, cursor-paged. The
//! filters apply in the store, and a page reads on until it holds `limit` matching entries
//! (`store/audit.rs`); `agent` takes a name or an id.

use std::collections::HashMap;

use lambda_http::Request;
use serde_json::json;

use super::{ok, query_param, HandlerResult};
use crate::app::App;
use crate::domain::cursor::{entry_cursor, parse_entry_cursor};
use crate::domain::{AgentRef, TenantPrincipal};
use crate::error::ApiError;
use crate::store::{AuditEntry, AuditSearch};

/// Largest page.
const MAX_LIMIT: usize = 100;

pub async fn list(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.reads_all_tasks() {
        return Err(ApiError::Forbidden(
            "the audit log is for admins and viewers".into(),
        ));
    }
    let limit = match query_param(&request, "limit") {
        None => 50,
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|limit| (1..=MAX_LIMIT).contains(limit))
            .ok_or_else(|| {
                ApiError::InvalidRequest("limit must be an integer from 1 to 100".into())
            })?,
    };
    // A cursor is the place of the last entry a page covered (`{at}_{id}`); the log's sort key
    // is that place, so any cursor of the shape is a place to page on from.
    let cursor = query_param(&request, "cursor")
        .map(|text| {
            parse_entry_cursor(&text)
                .map(|(at, id)| format!("{at}#{id}"))
                .ok_or_else(|| {
                    ApiError::InvalidRequest(
                        "cursor must be a next_cursor as issued: {at}_{id}".into(),
                    )
                })
        })
        .transpose()?;
    let filters = ["agent", "action", "outcome", "since"].map(|name| query_param(&request, name));
    let [agent, action, outcome, since] = filters;
    if outcome
        .as_deref()
        .is_some_and(|outcome| !matches!(outcome, "allowed" | "refused" | "would_refuse"))
    {
        return Err(ApiError::InvalidRequest(
            "outcome must be allowed, refused or would_refuse".into(),
        ));
    }
    let agent_id = match agent.as_deref() {
        Some(named) => Some(agent_of_tenant(app, &principal, named).await?),
        None => None,
    };
    let search = AuditSearch {
        tenant_id: &principal.tenant_id,
        after: cursor.as_deref(),
        limit,
        agent: agent_id.as_deref(),
        action: action.as_deref(),
        outcome: outcome.as_deref(),
        since: since.as_deref(),
    };
    let page = app.store.list_audit(&search).await?;
    let names = member_names(app, &principal, &page.entries).await?;
    let items: Vec<_> = page
        .entries
        .iter()
        .map(|entry| entry.to_json(names.get(&entry.actor_id).map(String::as_str)))
        .collect();
    let next = page.next.and_then(|sort_key| {
        let (at, id) = sort_key.split_once('#')?;
        Some(entry_cursor(at, id))
    });
    ok(&json!({"items": items, "next_cursor": next}))
}

/// The id of the tenant's agent that `named` names (a name or an id); `404` when none does.
async fn agent_of_tenant(
    app: &App,
    principal: &TenantPrincipal,
    named: &str,
) -> Result<String, ApiError> {
    let agent = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::parse(named))
        .await?
        .filter(|agent| agent.tenant_id == principal.tenant_id)
        .ok_or_else(|| ApiError::NotFound("no such agent".into()))?;
    Ok(agent.id.to_string())
}

/// The names of the members who acted in `entries`, by member id: read only when a person
/// acted on the page.
async fn member_names(
    app: &App,
    principal: &TenantPrincipal,
    entries: &[AuditEntry],
) -> Result<HashMap<String, String>, ApiError> {
    let people = ["admin", "member", "viewer"];
    if !entries
        .iter()
        .any(|entry| people.contains(&entry.actor_kind.as_str()))
    {
        return Ok(HashMap::new());
    }
    let members = app.store.list_members(&principal.tenant_id).await?;
    Ok(members
        .into_iter()
        .map(|member| (member.member_id.to_string(), member.name))
        .collect())
}
