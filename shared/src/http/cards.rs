//! Agent cards (per agent and the tenant registry), the signing JWKS, key rotation and
//! retirement, tool bindings (which become card skills) and lineage reads.

use lambda_http::http::{HeaderValue, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::agents::managed_agent;
use super::{json_object, ok, only_fields, path_param, query_param, HandlerResult};
use crate::app::App;
use crate::config::Config;
use crate::domain::card::{
    card, execute_api_url, jwk, parse_tool_name, sign, Tool, MAX_TOOLS_PER_AGENT,
};
use crate::domain::jcs::canonicalize;
use crate::domain::signing::{may_retire, KeyPurpose, RetireRefusal};
use crate::domain::{Agent, AgentName, AgentRef, AgentStatus, Principal, TenantPrincipal};
use crate::error::{json_response, ApiError};
use crate::store::{AuditEntry, SigningKeyRecord};

/// The gateway's public base URL, which every card names and signs: `FORGEBENCH_PUBLIC_URL`,
/// else the deployed API's own execute-api URL from the API id and stage in the request context
/// (set by API Gateway). Never a request header (`Host`, `X-Forwarded-*`): a client chooses
/// those, and a signed card naming a host the client chose would send its readers there.
/// Neither configured nor behind API Gateway (a local gateway without the setting): a 500, and
/// the logs say what to set.
fn base_url(config: &Config, request: &Request) -> Result<String, ApiError> {
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

async fn signed_card(app: &App, request: &Request, agent: &Agent) -> Result<Value, ApiError> {
    let tools = app.store.list_tools(&agent.id).await?;
    let base = base_url(&app.config, request)?;
    let (kid, key) = app.signing.active(&app.store, &app.vault).await?;
    Ok(sign(card(agent, &tools, &base), &kid, &key))
}

/// A JSON response with a strong ETag over the canonical body, answering a matching
/// `If-None-Match` with 304. Cards change whenever the agent or its tools do, so clients
/// revalidate on every use (`no-cache`) instead of trusting an age.
fn cacheable(request: &Request, body: &Value) -> Response<Body> {
    let etag = format!(
        "\"{}\"",
        hex::encode(&Sha256::digest(canonicalize(body).as_bytes())[..16])
    );
    let matches = request
        .headers()
        .get("if-none-match")
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
        response.headers_mut().insert("etag", value);
    }
    response.headers_mut().insert(
        "cache-control",
        HeaderValue::from_static("private, no-cache"),
    );
    response
}

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
    let card = signed_card(app, &request, &agent).await?;
    Ok(cacheable(&request, &card))
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

/// The opaque cursor of the registry: the name of the last agent a page covered.
fn encode_cursor(after: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("cards:{after}"))
}

/// `?cursor=`: a `next_cursor` this route issued (anything else is a 400).
fn cards_cursor(request: &Request) -> Result<Option<String>, ApiError> {
    use base64::Engine;
    let Some(text) = query_param(request, "cursor") else {
        return Ok(None);
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.as_bytes())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.strip_prefix("cards:").map(str::to_owned))
        .filter(|name| AgentName::parse(name).is_ok())
        .map(Some)
        .ok_or_else(|| ApiError::InvalidRequest("cursor is not one this API issued".into()))
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
    let mut cards = Vec::new();
    let mut bytes = 0;
    let mut next = more;
    for (index, agent) in agents.iter().enumerate() {
        if agent.status == AgentStatus::Retired {
            continue;
        }
        let card = signed_card(app, &request, agent).await?;
        let size = card.to_string().len();
        if !cards.is_empty() && bytes + size > MAX_PAGE_BYTES {
            // The page is full: the next one starts after the last card on this one.
            next = index.checked_sub(1).map(|last| agents[last].name.clone());
            break;
        }
        bytes += size;
        cards.push(card);
    }
    let page = json!({ "cards": cards, "next_cursor": next.as_deref().map(encode_cursor) });
    Ok(cacheable(&request, &page))
}

/// `GET /v1/billing/export/pubkey` (any key): the JWKS of every signing key not retired, card
/// and webhook keys alike, each with its `purpose`.
pub async fn pubkey(app: &App, request: Request) -> HandlerResult {
    app.authenticate(request.headers()).await?;
    let mut keys = Vec::new();
    for purpose in KeyPurpose::ALL {
        // Makes the first key of each purpose if there is none yet, so a receiver that reads
        // the set before the first card or delivery already holds the key that will sign it.
        app.signing_cache(purpose)
            .ensure(&app.store, &app.vault)
            .await?;
        for record in app.store.signing_keys(purpose).await? {
            if record.retired_at.is_none() {
                keys.push(jwk(&record.kid, &public_key(&record)?, purpose.name()));
            }
        }
    }
    Ok(cacheable(&request, &json!({ "keys": keys })))
}

fn public_key(record: &SigningKeyRecord) -> Result<ed25519_dalek::VerifyingKey, ApiError> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&record.public_x)
        .map_err(ApiError::internal)?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|_| ApiError::internal("a stored public key is not 32 bytes"))?;
    ed25519_dalek::VerifyingKey::from_bytes(&bytes).map_err(ApiError::internal)
}

fn operator_only(principal: &Principal) -> Result<(), ApiError> {
    if *principal != Principal::Operator {
        return Err(ApiError::Forbidden(
            "only the operator manages signing keys".into(),
        ));
    }
    Ok(())
}

/// The `purpose` of a rotate request: `card-signing` when the body is empty or omits it.
fn rotate_purpose(request: &Request) -> Result<KeyPurpose, ApiError> {
    let empty = match request.body() {
        Body::Empty => true,
        Body::Text(text) => text.trim().is_empty(),
        Body::Binary(bytes) => bytes.iter().all(u8::is_ascii_whitespace),
        _ => true,
    };
    if empty {
        return Ok(KeyPurpose::Cards);
    }
    let body = json_object(request)?;
    only_fields(&body, &["purpose"])?;
    match body.get("purpose") {
        None | Some(Value::Null) => Ok(KeyPurpose::Cards),
        Some(Value::String(text)) => KeyPurpose::parse(text).ok_or_else(|| {
            ApiError::InvalidRequest("purpose is card-signing or webhook-signing".into())
        }),
        Some(_) => Err(ApiError::InvalidRequest(
            "purpose is card-signing or webhook-signing".into(),
        )),
    }
}

/// `POST /v1/signing-keys/rotate` `{purpose?}` (operator): a new active key of that purpose
/// (cards by default); old public keys stay listed until retired.
pub async fn rotate(app: &App, request: Request) -> HandlerResult {
    operator_only(&app.authenticate(request.headers()).await?)?;
    let purpose = rotate_purpose(&request)?;
    let kid = app
        .signing_cache(purpose)
        .rotate(&app.store, &app.vault)
        .await?;
    ok(&json!({ "kid": kid, "purpose": purpose.name() }))
}

/// The purpose of key `kid` and every key of that purpose (oldest first), if it exists.
async fn find_key(
    app: &App,
    kid: &str,
) -> Result<Option<(KeyPurpose, Vec<SigningKeyRecord>)>, ApiError> {
    for purpose in KeyPurpose::ALL {
        let records = app.store.signing_keys(purpose).await?;
        if records.iter().any(|record| record.kid == kid) {
            return Ok(Some((purpose, records)));
        }
    }
    Ok(None)
}

/// `POST /v1/signing-keys/{kid}/retire` (operator): drops a replaced key from the JWKS, once no
/// warm process can still sign with it. The active key cannot be retired; retiring a retired
/// key changes nothing.
pub async fn retire(app: &App, request: Request) -> HandlerResult {
    operator_only(&app.authenticate(request.headers()).await?)?;
    let kid = path_param(&request, "kid")?;
    let (purpose, records) = find_key(app, &kid)
        .await?
        .ok_or_else(|| ApiError::NotFound("no signing key has this kid".into()))?;
    let position = records.iter().position(|record| record.kid == kid);
    let record = position
        .map(|at| &records[at])
        .ok_or_else(|| ApiError::internal(format!("signing key {kid} listed but not found")))?;
    let done = json!({"kid": kid, "purpose": purpose.name(), "retired": true});
    if record.retired_at.is_some() {
        return ok(&done);
    }
    let replaced_at = position
        .and_then(|at| records.get(at + 1))
        .map(|successor| successor.created_at.as_str());
    let lifetime = app.config.signing_key_lifetime;
    may_retire(replaced_at, time::OffsetDateTime::now_utc(), lifetime).map_err(|refusal| {
        ApiError::Conflict(match refusal {
            RetireRefusal::Active => "the active key cannot be retired; rotate first".into(),
            RetireRefusal::StillCached { until } => {
                format!("warm functions may sign with this key until {until}; retire it after that")
            }
        })
    })?;
    if !app.store.retire_signing_key(purpose, &kid).await? {
        return Err(ApiError::Conflict(
            "the signing keys changed meanwhile; retry".into(),
        ));
    }
    tracing::info!(kid = %kid, purpose = purpose.name(), "signing key retired");
    ok(&done)
}

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
                    .filter(|t| !t.is_empty() && t.len() <= 64)
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

/// `GET /v1/calls?root_call_id=` (admin, viewer): every call of one lineage tree.
pub async fn list_calls(app: &App, request: Request) -> HandlerResult {
    let principal = app.authenticate_in_tenant(request.headers()).await?;
    if !principal.reads_all_tasks() {
        return Err(ApiError::Forbidden(
            "the ledger is for admins and viewers".into(),
        ));
    }
    let root = query_param(&request, "root_call_id")
        .and_then(|root| uuid::Uuid::parse_str(&root).ok())
        .ok_or_else(|| ApiError::InvalidRequest("root_call_id is required: a call_id".into()))?;
    let items = app
        .store
        .calls_of_root(&principal.tenant_id, &root.to_string())
        .await?;
    ok(&json!({ "items": items }))
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
