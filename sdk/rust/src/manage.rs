//! Management routes: tenants, members and their keys, agents, agent keys, bindings, push
//! endpoints, tools, cards.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::client::{segment, Client, Request};
use crate::error::{Error, Result};

/// A key shown once, when it is created. Its `Debug` hides it; [`SecretKey::expose`] gives it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretKey(String);

impl SecretKey {
    /// The key itself: store it now, the gateway never shows it again.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(…)")
    }
}

/// `POST /v1/tenants`: the new tenant and its first admin key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CreatedTenant {
    pub tenant_id: String,
    pub name: String,
    pub admin_key: SecretKey,
}

/// `POST /v1/members`: the new member and its key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CreatedMember {
    pub member_id: String,
    pub name: String,
    pub role: String,
    pub key: SecretKey,
    #[serde(default)]
    pub key_id: Option<String>,
}

/// A key issued to an agent or a member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IssuedKey {
    pub key_id: String,
    pub key: SecretKey,
}

/// An agent. Fields the SDK does not model are kept in `extra`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Agent {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub owner_member_id: Option<String>,
    pub status: String,
    /// `{url, auth: {type, configured: true}|null, allow_private_network, disabled?}`, or `null`
    /// (pull); [`Agent::push_endpoint`] reads it typed.
    #[serde(default)]
    pub endpoint: Option<Value>,
    /// How long the agent has to answer a task it claimed (seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_timeout_seconds: Option<u64>,
    /// The media ranges of the parts the agent accepts (its card's `defaultInputModes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_modes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Agent {
    /// The agent's push endpoint, typed; `None` for a pull agent (or an endpoint this SDK
    /// cannot read).
    pub fn push_endpoint(&self) -> Option<AgentEndpoint> {
        self.endpoint
            .clone()
            .filter(|endpoint| !endpoint.is_null())
            .and_then(|endpoint| serde_json::from_value(endpoint).ok())
    }
}

/// An agent's push endpoint as the gateway shows it: never its credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentEndpoint {
    pub url: String,
    /// The kind of credential sent with each push, when one is set.
    #[serde(default)]
    pub auth: Option<EndpointAuthInfo>,
    #[serde(default)]
    pub allow_private_network: bool,
    /// Set while the gateway has the endpoint disabled (after a run of failures), until an
    /// admin enables it ([`Client::enable_endpoint`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<crate::EndpointDisabled>,
}

/// What the gateway says of an endpoint's credential: its kind (and header name), never the
/// secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointAuthInfo {
    /// `bearer` or `header`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The header's name, for `header`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub configured: bool,
}

/// A member of the tenant with every key it ever held (`GET /v1/members`); never a secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Member {
    pub member_id: String,
    pub name: String,
    /// `admin`, `member` or `viewer`.
    pub role: String,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub keys: Vec<KeyInfo>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A key as a listing shows it (an agent's or a member's): never the secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyInfo {
    pub key_id: String,
    #[serde(default)]
    pub created_at: Option<String>,
    /// When the key last authenticated a request, to the hour.
    #[serde(default)]
    pub last_used_at: Option<String>,
    #[serde(default)]
    pub revoked_at: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl KeyInfo {
    /// Whether the key was revoked.
    pub fn is_revoked(&self) -> bool {
        self.revoked_at.is_some()
    }
}

/// A revoked key (an agent's or a member's): `{key_id, revoked: true}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRevoked {
    pub key_id: String,
    pub revoked: bool,
}

/// A tool binding of an agent: one skill of its card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
}

/// What [`Client::put_tool`] sends: a description (1 to 2,000 characters) and up to 20 tags.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ToolSpec {
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}

impl ToolSpec {
    /// A tool described by `description`, without tags (its card skill then shows `tool`).
    pub fn new(description: impl Into<String>) -> ToolSpec {
        ToolSpec {
            description: description.into(),
            tags: None,
        }
    }

    /// The tool's tags (1 to 64 characters each).
    pub fn tags<I, T>(mut self, tags: I) -> ToolSpec
    where
        I: IntoIterator<Item = T>,
        T: Into<String>,
    {
        self.tags = Some(tags.into_iter().map(Into::into).collect());
        self
    }
}

/// A removed tool binding: `{name, removed: true}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRemoved {
    pub name: String,
    pub removed: bool,
}

/// One caller → callee binding.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Binding {
    pub id: String,
    pub caller_agent_id: String,
    pub callee_agent_id: String,
    #[serde(default)]
    pub source: Option<String>,
    pub revoked: bool,
    pub approved_at: Option<String>,
    /// Its own call-tree limits (gateways before them send none: the tenant's).
    #[serde(default)]
    pub limits: crate::BindingLimits,
    /// Its contract (gateways before contracts send none: no bound).
    #[serde(default)]
    pub contract: crate::BindingContract,
    /// Its use against its contract: on the list of bindings and an update's answer.
    #[serde(default)]
    pub usage: Option<crate::BindingUsage>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Both directions of one agent's bindings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bindings {
    pub outbound: Vec<Binding>,
    pub inbound: Vec<Binding>,
}

/// `{"items": [...]}` of a listing route.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Items<T> {
    pub items: Vec<T>,
}

impl Items<Value> {
    /// The items read as `T`: [`Member`] for [`Client::list_members`], [`KeyInfo`] for
    /// [`Client::list_keys`] (both return JSON values, as they always did).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        self.items
            .iter()
            .map(|item| {
                serde_json::from_value(item.clone())
                    .map_err(|error| Error::Decode(error.to_string()))
            })
            .collect()
    }
}

/// What `PUT /v1/agents/{agent}/endpoint` sets. `url: None` reverts the agent to pull.
#[derive(Debug, Clone, Default)]
pub struct EndpointConfig {
    pub url: Option<String>,
    pub auth: Option<EndpointAuth>,
    /// Drops the current credential (cannot go with `auth`).
    pub clear_auth: bool,
    /// Lets the URL resolve to private ranges (admin only).
    pub allow_private_network: bool,
}

/// The credential the gateway sends with each push.
#[derive(Clone)]
pub enum EndpointAuth {
    /// `Authorization: Bearer <secret>`.
    Bearer { secret: String },
    /// `<name>: <secret>`.
    Header { name: String, secret: String },
}

impl std::fmt::Debug for EndpointAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndpointAuth::Bearer { .. } => f.write_str("Bearer(…)"),
            EndpointAuth::Header { name, .. } => write!(f, "Header({name}: …)"),
        }
    }
}

impl EndpointConfig {
    fn body(&self) -> Value {
        let mut body = json!({ "url": self.url });
        match &self.auth {
            Some(EndpointAuth::Bearer { secret }) => {
                body["auth"] = json!({"type": "bearer", "secret": secret});
            }
            Some(EndpointAuth::Header { name, secret }) => {
                body["auth"] = json!({"type": "header", "name": name, "secret": secret});
            }
            None => {}
        }
        if self.clear_auth {
            body["clear_auth"] = json!(true);
        }
        if self.allow_private_network {
            body["allow_private_network"] = json!(true);
        }
        body
    }
}

pub(crate) fn agent_path(agent: &str) -> Result<String> {
    Ok(format!("/v1/agents/{}", segment(agent)?))
}

fn member_keys_path(member_id: &str) -> Result<String> {
    Ok(format!("/v1/members/{}/keys", segment(member_id)?))
}

fn tool_path(agent: &str, tool: &str) -> Result<String> {
    Ok(format!("{}/tools/{}", agent_path(agent)?, segment(tool)?))
}

impl Client {
    /// Creates a tenant (operator key); the answer holds its first admin key, shown once.
    pub async fn create_tenant(&self, name: &str) -> Result<CreatedTenant> {
        self.send_json(Request::post("/v1/tenants".into(), json!({ "name": name })))
            .await
    }

    /// Adds a member with `role` (`admin`, `member` or `viewer`); its key is shown once.
    pub async fn create_member(&self, name: &str, role: &str) -> Result<CreatedMember> {
        let body = json!({ "name": name, "role": role });
        self.send_json(Request::post("/v1/members".into(), body))
            .await
    }

    /// Every member of the tenant with every key it ever held (admin), never a secret. The
    /// items are JSON; `.parse::<Member>()` reads them typed.
    pub async fn list_members(&self) -> Result<Items<Value>> {
        self.send_json(Request::get("/v1/members".into())).await
    }

    /// Issues a member another key (admin; at most 20 live), shown once:
    /// `POST /v1/members/{member_id}/keys`. Not retried after a broken connection (a repeat
    /// would issue a second key).
    pub async fn issue_member_key(&self, member_id: &str) -> Result<IssuedKey> {
        self.send_json(Request::post(member_keys_path(member_id)?, json!({})))
            .await
    }

    /// Revokes a member's key (admin): `DELETE /v1/members/{member_id}/keys/{key_id}`. The
    /// tenant's last live admin key cannot be revoked (`409`); an unknown or already revoked
    /// key is `404`.
    pub async fn revoke_member_key(&self, member_id: &str, key_id: &str) -> Result<KeyRevoked> {
        let path = format!("{}/{}", member_keys_path(member_id)?, segment(key_id)?);
        self.send_json(Request::new(reqwest::Method::DELETE, path))
            .await
    }

    /// Creates an agent, owned by the creating member (or `owner_member_id`, by an admin).
    pub async fn create_agent(
        &self,
        name: &str,
        description: Option<&str>,
        owner_member_id: Option<&str>,
    ) -> Result<Agent> {
        let mut body = json!({ "name": name });
        if let Some(description) = description {
            body["description"] = json!(description);
        }
        if let Some(owner) = owner_member_id {
            body["owner_member_id"] = json!(owner);
        }
        self.send_json(Request::post("/v1/agents".into(), body))
            .await
    }

    pub async fn list_agents(&self) -> Result<Items<Agent>> {
        self.send_json(Request::get("/v1/agents".into())).await
    }

    /// An agent by name or id.
    pub async fn agent(&self, agent: &str) -> Result<Agent> {
        self.send_json(Request::get(agent_path(agent)?)).await
    }

    /// The agent this key belongs to.
    pub async fn me(&self) -> Result<Agent> {
        self.send_json(Request::get("/v1/agents/me".into())).await
    }

    /// Changes an agent's `status` (`active`, `paused`, `retired`) and/or description.
    pub async fn update_agent(
        &self,
        agent: &str,
        status: Option<&str>,
        description: Option<&str>,
    ) -> Result<Agent> {
        let mut body = json!({});
        if let Some(status) = status {
            body["status"] = json!(status);
        }
        if let Some(description) = description {
            body["description"] = json!(description);
        }
        let request = Request::new(reqwest::Method::PATCH, agent_path(agent)?).body(body);
        self.send_json(request).await
    }

    /// Issues the agent a key, shown once.
    pub async fn issue_key(&self, agent: &str) -> Result<IssuedKey> {
        let path = format!("{}/keys", agent_path(agent)?);
        self.send_json(Request::post(path, json!({}))).await
    }

    /// Every key the agent ever held, never a secret. The items are JSON;
    /// `.parse::<KeyInfo>()` reads them typed.
    pub async fn list_keys(&self, agent: &str) -> Result<Items<Value>> {
        self.send_json(Request::get(format!("{}/keys", agent_path(agent)?)))
            .await
    }

    /// Revokes one of the agent's keys; an unknown or already revoked key is `404`.
    pub async fn revoke_key(&self, agent: &str, key_id: &str) -> Result<KeyRevoked> {
        let path = format!("{}/keys/{}", agent_path(agent)?, segment(key_id)?);
        self.send_json(Request::new(reqwest::Method::DELETE, path))
            .await
    }

    /// Grants `caller` bindings to `callees` (names or ids); one entry per callee. Sent again
    /// after a broken connection: re-granting a pair the first attempt granted changes nothing.
    pub async fn grant(&self, caller: &str, callees: &[&str]) -> Result<Vec<Binding>> {
        let path = format!("{}/agents", agent_path(caller)?);
        self.send_json(Request::post(path, json!({ "callees": callees })).repeatable(true))
            .await
    }

    /// Approves a pending binding; `callee` is the binding's callee.
    pub async fn approve(&self, callee: &str, binding_id: &str) -> Result<Binding> {
        let path = format!(
            "{}/agents/{}/approve",
            agent_path(callee)?,
            segment(binding_id)?
        );
        self.send_json(Request::post(path, json!({})).repeatable(true))
            .await
    }

    /// Both directions of `agent`'s bindings.
    pub async fn bindings(&self, agent: &str) -> Result<Bindings> {
        self.send_json(Request::get(format!("{}/agents", agent_path(agent)?)))
            .await
    }

    /// Revokes a binding from either side; the row is kept, marked revoked.
    pub async fn revoke_binding(&self, agent: &str, binding_id: &str) -> Result<Binding> {
        let path = format!("{}/agents/{}", agent_path(agent)?, segment(binding_id)?);
        self.send_json(Request::new(reqwest::Method::DELETE, path))
            .await
    }

    /// Sets (or, with `url: None`, clears) the agent's push endpoint.
    pub async fn set_endpoint(&self, agent: &str, config: &EndpointConfig) -> Result<Agent> {
        let path = format!("{}/endpoint", agent_path(agent)?);
        self.send_json(Request::new(reqwest::Method::PUT, path).body(config.body()))
            .await
    }

    /// The agent's tool bindings: `GET /v1/agents/{agent}/tools`.
    pub async fn tools(&self, agent: &str) -> Result<Items<Tool>> {
        self.send_json(Request::get(format!("{}/tools", agent_path(agent)?)))
            .await
    }

    /// Binds (or replaces) the tool `tool` of `agent`, shown on its card as a skill (the
    /// agent's owner or an admin; at most 64 tools): `PUT /v1/agents/{agent}/tools/{tool}`.
    pub async fn put_tool(&self, agent: &str, tool: &str, spec: &ToolSpec) -> Result<Tool> {
        let body = serde_json::to_value(spec).map_err(|error| Error::Decode(error.to_string()))?;
        let request = Request::new(reqwest::Method::PUT, tool_path(agent, tool)?).body(body);
        self.send_json(request).await
    }

    /// Removes a tool binding (`404` when there is none): `DELETE
    /// /v1/agents/{agent}/tools/{tool}`.
    pub async fn delete_tool(&self, agent: &str, tool: &str) -> Result<ToolRemoved> {
        let request = Request::new(reqwest::Method::DELETE, tool_path(agent, tool)?);
        self.send_json(request).await
    }

    /// The agent's A2A card.
    pub async fn card(&self, agent: &str) -> Result<Value> {
        let path = format!("{}/.well-known/agent-card.json", agent_path(agent)?);
        self.send_json(Request::get(path)).await
    }

    /// One page of the tenant's registry: `{"cards": [...], "next_cursor"}`.
    pub async fn cards(&self, cursor: Option<&str>) -> Result<Value> {
        self.cards_page(None, cursor).await
    }

    /// One page of the tenant's registry of at most `limit` agents (1–50, the gateway's
    /// default 20 when `None`): `GET /v1/agents/cards`.
    pub async fn cards_page(&self, limit: Option<u32>, cursor: Option<&str>) -> Result<Value> {
        let mut request = Request::get("/v1/agents/cards".into());
        if let Some(limit) = limit {
            request = request.query("limit", limit);
        }
        if let Some(cursor) = cursor {
            request = request.query("cursor", cursor);
        }
        self.send_json(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_key_is_hidden_from_debug_but_serialized() {
        let issued: IssuedKey =
            serde_json::from_value(json!({"key_id": "k1", "key": "fb_agt_abc"})).expect("a key");
        assert!(!format!("{issued:?}").contains("fb_agt_abc"));
        assert_eq!(issued.key.expose(), "fb_agt_abc");
        assert_eq!(
            serde_json::to_value(&issued).expect("json")["key"],
            "fb_agt_abc"
        );
    }

    #[test]
    fn an_endpoint_body_holds_only_what_is_set() {
        let config = EndpointConfig {
            url: Some("https://callee.example.com/a2a".into()),
            auth: Some(EndpointAuth::Bearer {
                secret: "s3cret".into(),
            }),
            ..EndpointConfig::default()
        };
        assert_eq!(
            config.body(),
            json!({"url": "https://callee.example.com/a2a",
                   "auth": {"type": "bearer", "secret": "s3cret"}})
        );
        assert_eq!(EndpointConfig::default().body(), json!({"url": null}));
    }
}
