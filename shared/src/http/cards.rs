//! Agent cards: one agent's signed card and the tenant's registry of cards, each a signed A2A
//! discovery document. Tools (`tools.rs`) become card skills; the keys that sign cards are
//! managed in `signing_keys.rs`.

use lambda_http::http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::{path_param, query_param, HandlerResult};
use crate::app::App;
use crate::config::Config;
use crate::domain::card::{card, declare_sign_in, execute_api_url, sign};
use crate::domain::issuer::TrustedIssuer;
use crate::domain::jcs::canonicalize;
use crate::domain::{Agent, AgentName, AgentRef, AgentStatus, Principal, TenantPrincipal};
use crate::error::{json_response, ApiError};

/// The gateway's public base URL, which every card names and signs: `FORGEBENCH_PUBLIC_URL`,
/// else the deployed API's own execute-api URL from the API id and stage in the request context
/// (set by API Gateway). Never a request header (`Host`, `X-Forwarded-*`): a client chooses
/// those, and a signed card naming a host the client chose would send its readers there.
/// Neither configured nor behind API Gateway (a local gateway without the setting): a 500, and
/// the logs say what to set.
pub(crate) fn base_url(config: &Config, request: &Request) -> Result<String, ApiError> {
    if let Some(url) = &config.public_url {
        return Ok(url.clone());
    }
    let from_context = match request.request_context_ref() {
        Some(lambda_http::request::RequestContext::ApiGatewayV1(context)) => {
            match (&context.apiid, &config.region, &context.stage) {
                (Some(api), Some(region), Some(stage)) => execute_api_url(api, region, stage),
                _ => None,
            }
        }
        _ => None,
    };
    from_context.ok_or_else(|| {
        ApiError::internal("cards need FORGEBENCH_PUBLIC_URL outside API Gateway; none is set")
    })
}

async fn card_reader(app: &App, request: &Request) -> Result<TenantPrincipal, ApiError> {
    match app.authenticate(request.headers()).await? {
        Principal::Tenant(principal) => Ok(principal),
        Principal::Operator => Err(ApiError::Forbidden(
            "cards are read with a key of the tenant".into(),
        )),
    }
}

/// The agent's signed card, which declares how a caller signs in: with a key, or with a token
/// of an issuer of `issuers` (its tenant's).
async fn signed_card(
    app: &App,
    request: &Request,
    agent: &Agent,
    issuers: &[TrustedIssuer],
) -> Result<Value, ApiError> {
    let tools = app.store.list_tools(&agent.id).await?;
    let base = base_url(&app.config, request)?;
    let (kid, key) = app.signing.active(&app.store, &app.vault).await?;
    let mut unsigned = card(agent, &tools, &base);
    declare_sign_in(&mut unsigned, issuers);
    Ok(sign(unsigned, &kid, &key))
}

/// A JSON response with a strong ETag over the canonical body, answering a matching
/// `If-None-Match` with 304, and a `max-age` (A2A 1.0 §8.6.1: endpoints SHOULD send one): a
/// client may use a card for a minute ([`CARD_CACHE_CONTROL`]), then revalidates it.
pub(super) fn cacheable(request: &Request, body: &Value) -> Response<Body> {
    cacheable_as(request, body, CARD_CACHE_CONTROL)
}

/// A JSON response with a strong ETag over the canonical body, answering a matching
/// `If-None-Match` with 304, sent with `cache_control` as its `Cache-Control`.
pub(super) fn cacheable_as(
    request: &Request,
    body: &Value,
    cache_control: &'static str,
) -> Response<Body> {
    let etag = format!(
        "\"{}\"",
        hex::encode(&Sha256::digest(canonicalize(body).as_bytes())[..16])
    );
    let matches = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        });
    let mut response = if matches {
        let mut response = Response::new(Body::Empty);
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        json_response(StatusCode::OK, body)
    };
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response.headers_mut().insert(header::ETAG, value);
    }
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    response
}

/// The `Cache-Control` of a card: private (a card is read with a tenant's key), and used for a
/// minute without asking again, so a change of the agent or its tools reaches every client
/// within a minute.
const CARD_CACHE_CONTROL: &str = "private, max-age=60";

/// `GET /v1/agents/{agent}/.well-known/agent-card.json`.
pub async fn get_card(app: &App, request: Request) -> HandlerResult {
    let principal = card_reader(app, &request).await?;
    let segment = path_param(&request, "agent")?;
    let agent = app
        .store
        .find_agent(&principal.tenant_id, &AgentRef::parse(&segment))
        .await?
        .filter(|agent| {
            agent.tenant_id == principal.tenant_id && agent.status != AgentStatus::Retired
        })
        .ok_or_else(|| ApiError::NotFound("agent not found".into()))?;
    let issuers = app.store.tenant_issuers(&agent.tenant_id).await?.issuers;
    let card = signed_card(app, &request, &agent, &issuers).await?;
    let mut response = cacheable(&request, &card);
    // When the agent last changed (A2A 1.0 §8.6.1: MAY): what a card shows follows the agent;
    // revalidation goes by the ETag, which also follows the signature.
    if let Some(value) = crate::domain::clock::http_date(&agent.updated_at)
        .and_then(|date| HeaderValue::from_str(&date).ok())
    {
        response.headers_mut().insert(header::LAST_MODIFIED, value);
    }
    Ok(response)
}

/// The registry's default and largest page, in agents read.
const DEFAULT_CARDS_LIMIT: i32 = 20;
const MAX_CARDS_LIMIT: i32 = 50;
/// A page ends before its cards pass this many bytes, so any page fits a Lambda response
/// (6 MB): one card, at most 64 tools with every field at its limit, stays under 1.5 MB.
const MAX_PAGE_BYTES: usize = 4 * 1024 * 1024;

/// `?limit=`: 1 to [`MAX_CARDS_LIMIT`].
fn cards_limit(request: &Request) -> Result<i32, ApiError> {
    match query_param(request, "limit") {
        None => Ok(DEFAULT_CARDS_LIMIT),
        Some(text) => text
            .parse::<i32>()
            .ok()
            .filter(|limit| (1..=MAX_CARDS_LIMIT).contains(limit))
            .ok_or_else(|| {
                ApiError::InvalidRequest(format!(
                    "limit must be an integer from 1 to {MAX_CARDS_LIMIT}"
                ))
            }),
    }
}

/// `?cursor=`: the name of the last agent a page covered (its `next_cursor`). Cards go by
/// name, so any name is a place to page on from, whether an agent has it or not.
fn cards_cursor(request: &Request) -> Result<Option<String>, ApiError> {
    query_param(request, "cursor")
        .map(|text| {
            AgentName::shaped(&text).map(str::to_owned).ok_or_else(|| {
                ApiError::InvalidRequest(
                    "cursor must be a next_cursor as issued: an agent's name".into(),
                )
            })
        })
        .transpose()
}

/// `GET /v1/agents/cards?limit=&cursor=`: the tenant's non-retired agents' cards by name, a page
/// at a time (`{cards, next_cursor}`). Retired agents are skipped within a page, so a page may
/// be short while `next_cursor` still leads on.
pub async fn list_cards(app: &App, request: Request) -> HandlerResult {
    let principal = card_reader(app, &request).await?;
    let (limit, after) = (cards_limit(&request)?, cards_cursor(&request)?);
    let (agents, more) = app
        .store
        .list_agents_page(&principal.tenant_id, after.as_deref(), limit)
        .await?;
    let issuers = app
        .store
        .tenant_issuers(&principal.tenant_id)
        .await?
        .issuers;
    let mut cards = Vec::new();
    let mut bytes = 0;
    let mut next = more;
    for (index, agent) in agents.iter().enumerate() {
        if agent.status == AgentStatus::Retired {
            continue;
        }
        let card = signed_card(app, &request, agent, &issuers).await?;
        let size = card.to_string().len();
        if !cards.is_empty() && bytes + size > MAX_PAGE_BYTES {
            // The page is full: the next one starts after the last card on this one.
            next = index.checked_sub(1).map(|last| agents[last].name.clone());
            break;
        }
        bytes += size;
        cards.push(card);
    }
    let page = json!({ "cards": cards, "next_cursor": next });
    Ok(cacheable(&request, &page))
}

#[cfg(test)]
mod tests {
    use lambda_http::aws_lambda_events::apigw::ApiGatewayProxyRequestContext;
    use lambda_http::request::RequestContext;

    use super::*;

    /// A request as API Gateway hands it over, with a hostile `Host` and `X-Forwarded-*`.
    fn hostile_request(context: Option<ApiGatewayProxyRequestContext>) -> Request {
        let request = lambda_http::http::Request::builder()
            .uri("https://evil.test/prod/v1/agents/cards")
            .header("host", "evil.test")
            .header("x-forwarded-host", "evil.test")
            .header("x-forwarded-proto", "https")
            .body(Body::Empty)
            .unwrap();
        match context {
            Some(context) => request.with_request_context(RequestContext::ApiGatewayV1(context)),
            None => request,
        }
    }

    #[test]
    fn the_base_url_is_configured_or_the_apis_own_and_never_a_header() {
        let mut config = Config::for_table("t", None);
        config.region = Some("eu-west-1".into());
        let mut context = ApiGatewayProxyRequestContext::default();
        context.apiid = Some("a1b2c3d4e5".into());
        context.stage = Some("prod".into());
        let deployed = hostile_request(Some(context));
        assert_eq!(
            base_url(&config, &deployed).unwrap(),
            "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/prod"
        );
        config.public_url = Some("https://api.forgebench.ai".into());
        assert_eq!(
            base_url(&config, &deployed).unwrap(),
            "https://api.forgebench.ai"
        );
        config.public_url = None;
        assert!(base_url(&config, &hostile_request(None)).is_err());
    }
}
