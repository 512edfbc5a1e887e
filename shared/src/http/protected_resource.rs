//! OAuth 2.0 Protected Resource Metadata (RFC 9728): what a client reads to learn where to get
//! a token for the gateway, and the `WWW-Authenticate` challenge of every 401 that points to it.
//!
//! An agent is a protected resource of its own (`{base}/v1/agents/{id}`), whose authorization
//! servers are the issuers its tenant trusts; the gateway as a whole (`{base}`) names none, since
//! which issuers count depends on the tenant. A 401 on a route under `/v1/agents/{id}` points to
//! that agent's metadata, any other to the gateway's.

use lambda_http::http::{HeaderValue, Response};
use lambda_http::Request;
use serde_json::json;

use super::cards::base_url;
use super::{ok, HandlerResult};
use crate::app::App;
use crate::config::Config;
use crate::domain::{AgentId, AgentRef, AgentStatus};
use crate::error::ApiError;

/// The path, after the gateway's base, of the gateway's metadata.
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// `GET /.well-known/oauth-protected-resource`: the gateway as a protected resource.
pub async fn gateway(app: &App, request: Request) -> HandlerResult {
    let base = base_url(&app.config, &request)?;
    ok(&json!({
        "resource": base,
        "authorization_servers": [],
        "bearer_methods_supported": ["header"],
        "resource_name": "Forgebench gateway",
    }))
}

/// `GET /v1/agents/{agent}/.well-known/oauth-protected-resource` (`{agent}` an id): the agent
/// as a protected resource, whose authorization servers are the issuers its tenant trusts.
/// Public, as RFC 9728 means it to be: it tells nothing a caller with a binding cannot read on
/// the agent's card.
pub async fn agent(app: &App, request: Request) -> HandlerResult {
    let base = base_url(&app.config, &request)?;
    let not_found = || ApiError::NotFound("no such agent".into());
    let AgentRef::Id(id) = AgentRef::parse(&super::path_param(&request, "agent")?) else {
        return Err(not_found());
    };
    let agent = app
        .store
        .recent_agent(&AgentId::from(id.to_string()), app.config.key_cache_ttl)
        .await?
        .filter(|agent| agent.status != AgentStatus::Retired)
        .ok_or_else(not_found)?;
    let issuers = app.store.tenant_issuers(&agent.tenant_id).await?.issuers;
    let mut servers: Vec<&str> = issuers
        .iter()
        .map(|issuer| issuer.issuer.as_str())
        .collect();
    servers.sort_unstable();
    servers.dedup();
    ok(&json!({
        "resource": format!("{}/v1/agents/{}", base.trim_end_matches('/'), agent.id),
        "authorization_servers": servers,
        "bearer_methods_supported": ["header"],
        "resource_name": agent.name,
    }))
}

/// The URL of the metadata a 401 to `request` points to: the agent's, under
/// `/v1/agents/{id}`, else the gateway's. `None` where the gateway's public URL is not known.
pub(crate) fn metadata_url(config: &Config, request: &Request) -> Option<String> {
    let base = base_url(config, request).ok()?;
    let base = base.trim_end_matches('/');
    let agent = super::path_param(request, "agent")
        .ok()
        .and_then(|segment| match AgentRef::parse(&segment) {
            AgentRef::Id(id) => Some(id),
            _ => None,
        });
    Some(match agent {
        Some(id) => format!("{base}/v1/agents/{id}{WELL_KNOWN}"),
        None => format!("{base}{WELL_KNOWN}"),
    })
}

/// Adds to a 401 `response` its `WWW-Authenticate` challenge: `Bearer`, the metadata that says
/// where to get a token, and `error="invalid_token"` when a token was refused (RFC 6750 §3).
pub(crate) fn add_challenge<B>(
    response: &mut Response<B>,
    metadata: Option<&str>,
    invalid_token: bool,
) {
    let header = lambda_http::http::header::WWW_AUTHENTICATE;
    if response.status() != 401 || response.headers().contains_key(&header) {
        return;
    }
    let Some(metadata) = metadata else {
        return;
    };
    let value = if invalid_token {
        format!("Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\"")
    } else {
        format!("Bearer resource_metadata=\"{metadata}\"")
    };
    if let Ok(value) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header, value);
    }
}
