//! Management routes: tenants, members, agents, keys, bindings, push endpoints, cards.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::client::{segment, Client, Request};
use crate::error::Result;

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
    /// `{url, auth: {type, configured: true}|null, allow_private_network}`, or `null` (pull).
    #[serde(default)]
    pub endpoint: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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

fn agent_path(agent: &str) -> Result<String> {
    Ok(format!("/v1/agents/{}", segment(agent)?))
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

    /// Every member of the tenant (admin), never a secret.
    pub async fn list_members(&self) -> Result<Items<Value>> {
        self.send_json(Request::get("/v1/members".into())).await
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

    /// Every key the agent ever held, never a secret.
    pub async fn list_keys(&self, agent: &str) -> Result<Items<Value>> {
        self.send_json(Request::get(format!("{}/keys", agent_path(agent)?)))
            .await
    }

    pub async fn revoke_key(&self, agent: &str, key_id: &str) -> Result<Value> {
        let path = format!("{}/keys/{}", agent_path(agent)?, segment(key_id)?);
        self.send_json(Request::new(reqwest::Method::DELETE, path))
            .await
    }

    /// Grants `caller` bindings to `callees` (names or ids); one entry per callee.
    pub async fn grant(&self, caller: &str, callees: &[&str]) -> Result<Vec<Binding>> {
        let path = format!("{}/agents", agent_path(caller)?);
        self.send_json(Request::post(path, json!({ "callees": callees })))
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

    /// The agent's A2A card.
    pub async fn card(&self, agent: &str) -> Result<Value> {
        let path = format!("{}/.well-known/agent-card.json", agent_path(agent)?);
        self.send_json(Request::get(path)).await
    }

    /// One page of the tenant's registry: `{"cards": [...], "next_cursor"}`.
    pub async fn cards(&self, cursor: Option<&str>) -> Result<Value> {
        let mut request = Request::get("/v1/agents/cards".into());
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
