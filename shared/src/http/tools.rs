//! An agent's tool bindings (`PUT`/`DELETE`/`GET /v1/agents/{agent}/tools`), which its card
//! lists as skills.

use lambda_http::Request;
use serde_json::{json, Value};

use super::agents::managed_agent;
use super::{json_object, ok, only_fields, path_param, HandlerResult};
use crate::app::App;
use crate::domain::card::{parse_tool_name, Tool, MAX_TOOLS_PER_AGENT};
use crate::error::ApiError;
use crate::store::AuditEntry;

fn tool_json(tool: &Tool) -> Value {
    json!({"name": tool.name, "description": tool.description, "tags": tool.tags})
}

/// `PUT /v1/agents/{agent}/tools/{tool}` `{description, tags?}` (owner or admin).
pub async fn put_tool(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let name = parse_tool_name(&path_param(&request, "tool")?)?;
    let body = json_object(&request)?;
    only_fields(&body, &["description", "tags"])?;
    let description = super::text_field(&body, "description", 2000)?;
    let tags = match body.get("tags") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(tags)) if tags.len() <= 20 => tags
            .iter()
            .map(|tag| {
                tag.as_str()
                    .filter(|t| !t.is_empty() && t.chars().count() <= 64)
                    .map(str::to_owned)
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| ApiError::InvalidRequest("tags are 1 to 64 character strings".into()))?,
        Some(_) => {
            return Err(ApiError::InvalidRequest(
                "tags must be a list of at most 20 strings".into(),
            ))
        }
    };
    let tool = Tool {
        name,
        description,
        tags,
    };
    let audit = AuditEntry::new(
        &principal,
        "agent.tool.grant",
        &format!("{}/{}", agent.id, tool.name),
    );
    for _ in 0..TOOL_WRITE_ATTEMPTS {
        let existing = app.store.list_tools(&agent.id).await?;
        let adding = !existing.iter().any(|known| known.name == tool.name);
        if adding && existing.len() >= MAX_TOOLS_PER_AGENT {
            return Err(ApiError::LimitReached(format!(
                "an agent has at most {MAX_TOOLS_PER_AGENT} tools; remove one first"
            )));
        }
        if app
            .store
            .put_tool(&agent.id, &tool, &existing, &audit)
            .await?
        {
            return ok(&tool_json(&tool));
        }
        // Another grant or revoke of this agent's tools landed meanwhile: read them again.
    }
    Err(tools_changed())
}

/// How often a tool write reads the tools again after losing to a concurrent one (each round one
/// writer wins, so this many concurrent writers all get a definite answer).
const TOOL_WRITE_ATTEMPTS: usize = 8;

fn tools_changed() -> ApiError {
    ApiError::Conflict("the agent's tools changed meanwhile; retry".into())
}

/// `DELETE /v1/agents/{agent}/tools/{tool}` (owner or admin).
pub async fn delete_tool(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent = managed_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let name = parse_tool_name(&path_param(&request, "tool")?)?;
    let audit = AuditEntry::new(
        &principal,
        "agent.tool.revoke",
        &format!("{}/{name}", agent.id),
    );
    for _ in 0..TOOL_WRITE_ATTEMPTS {
        let existing = app.store.list_tools(&agent.id).await?;
        if !existing.iter().any(|known| known.name == name) {
            return Err(ApiError::NotFound("the agent has no such tool".into()));
        }
        if app
            .store
            .delete_tool(&agent.id, &name, &existing, &audit)
            .await?
        {
            return ok(&json!({"name": name, "removed": true}));
        }
    }
    Err(tools_changed())
}

/// `GET /v1/agents/{agent}/tools`.
pub async fn list_tools(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    let agent =
        super::agents::visible_agent(app, &principal, &path_param(&request, "agent")?).await?;
    let tools = app.store.list_tools(&agent.id).await?;
    ok(&json!({"items": tools.iter().map(tool_json).collect::<Vec<_>>()}))
}
