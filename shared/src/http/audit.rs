//! `GET /v1/audit` (admin, viewer): the tenant's audit log, newest first, cursor-paged.

use lambda_http::Request;
use serde_json::json;

use super::{ok, query_param, HandlerResult};
use crate::app::App;
use crate::domain::cursor::{entry_cursor, parse_entry_cursor};
use crate::error::ApiError;

/// Largest page.
const MAX_LIMIT: i32 = 100;

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
            .parse::<i32>()
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
        .is_some_and(|outcome| !matches!(outcome, "allowed" | "refused"))
    {
        return Err(ApiError::InvalidRequest(
            "outcome must be allowed or refused".into(),
        ));
    }
    // Filters apply within each page read, so a filtered page may hold fewer than `limit` entries
    // while `next_cursor` still leads on; paging never skips or repeats an entry.
    let (entries, next) = app
        .store
        .list_audit(&principal.tenant_id, cursor.as_deref(), limit)
        .await?;
    let items: Vec<_> = entries
        .iter()
        .filter(|entry| {
            agent
                .as_ref()
                .is_none_or(|agent| entry.actor_id == *agent || entry.target == *agent)
                && action
                    .as_ref()
                    .is_none_or(|action| entry.action.starts_with(action.as_str()))
                && outcome
                    .as_ref()
                    .is_none_or(|outcome| entry.outcome == *outcome)
                && since
                    .as_ref()
                    .is_none_or(|since| entry.at.as_str() > since.as_str())
        })
        .map(|entry| entry.to_json())
        .collect();
    let next = next.and_then(|sort_key| {
        let (at, id) = sort_key.split_once('#')?;
        Some(entry_cursor(at, id))
    });
    ok(&json!({"items": items, "next_cursor": next}))
}
