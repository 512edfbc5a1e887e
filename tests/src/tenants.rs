//! Tenants and their parties: the [`Tenant`], [`TestAgent`] and [`Pair`] a test works with, and
//! the [`TestApp`] helpers for the routes that make and manage them (tenants, members, agents and
//! their keys, bindings, push endpoints, the audit log).

use serde_json::{json, Value};

use crate::{Reply, TestApp};

/// An agent with a key.
#[derive(Debug, Clone)]
pub struct TestAgent {
    pub id: String,
    pub name: String,
    pub key: String,
}

/// A tenant with its admin key.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub id: String,
    pub admin_key: String,
}

/// Two agents of one tenant, the caller bound (approved) to the callee.
#[derive(Debug, Clone)]
pub struct Pair {
    pub tenant: Tenant,
    pub caller: TestAgent,
    pub callee: TestAgent,
    pub binding_id: String,
}

impl TestApp {
    pub async fn create_tenant(&self) -> Tenant {
        let reply = self
            .post(
                "/v1/tenants",
                &self.operator_key.clone(),
                json!({"name": "acme"}),
            )
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        Tenant {
            id: reply.field("tenant_id"),
            admin_key: reply.field("admin_key"),
        }
    }

    /// Adds a member with `role`; returns (member_id, key).
    pub async fn create_member(&self, tenant: &Tenant, role: &str) -> (String, String) {
        let reply = self
            .post(
                "/v1/members",
                &tenant.admin_key,
                json!({"name": "pat", "role": role}),
            )
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        (reply.field("member_id"), reply.field("key"))
    }

    /// Creates an agent as `creator_key` and issues it a key.
    pub async fn create_agent(&self, creator_key: &str, name: &str) -> TestAgent {
        let reply = self
            .post("/v1/agents", creator_key, json!({ "name": name }))
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        let id = reply.field("id");
        let key = self.issue_key(creator_key, &id).await;
        TestAgent {
            id,
            name: name.to_owned(),
            key,
        }
    }

    pub async fn issue_key(&self, manager_key: &str, agent: &str) -> String {
        let reply = self
            .post(&format!("/v1/agents/{agent}/keys"), manager_key, json!({}))
            .await;
        assert_eq!(reply.status, 201, "{}", reply.text);
        reply.field("key")
    }

    pub async fn grant(&self, key: &str, caller: &str, callees: &[&str]) -> Reply {
        self.post(
            &format!("/v1/agents/{caller}/agents"),
            key,
            json!({ "callees": callees }),
        )
        .await
    }

    /// A tenant with a caller bound to a callee by the admin (so approved at once).
    pub async fn pair(&self) -> Pair {
        let tenant = self.create_tenant().await;
        let caller = self
            .create_agent(&tenant.admin_key, "billing-orchestrator")
            .await;
        let callee = self
            .create_agent(&tenant.admin_key, "invoice-classifier")
            .await;
        let reply = self
            .grant(&tenant.admin_key, &caller.id, &[&callee.name])
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        let binding_id = reply.body[0]["id"].as_str().expect("binding id").to_owned();
        Pair {
            tenant,
            caller,
            callee,
            binding_id,
        }
    }

    /// A new tenant's pair (see [`TestApp::pair`]) whose callee pushes to `url`, without a
    /// credential.
    pub async fn push_pair(&self, url: &str) -> Pair {
        let pair = self.pair().await;
        let reply = self
            .set_endpoint(
                &pair.tenant.admin_key,
                &pair.callee.name,
                json!({ "url": url }),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        pair
    }

    /// Revokes the binding of `pair` (an admin, from the caller's side); the reply.
    pub async fn revoke_binding(&self, pair: &Pair) -> Reply {
        self.send(
            "DELETE",
            &format!("/v1/agents/{}/agents/{}", pair.caller.id, pair.binding_id),
            Some(&pair.tenant.admin_key),
            None,
        )
        .await
    }

    /// Points a callee at a push endpoint; returns the reply.
    pub async fn set_endpoint(&self, key: &str, agent: &str, body: Value) -> Reply {
        self.send(
            "PUT",
            &format!("/v1/agents/{agent}/endpoint"),
            Some(key),
            Some(body),
        )
        .await
    }

    /// The audit entries of a tenant, newest first (first page of 100).
    pub async fn audit(&self, admin_key: &str) -> Vec<Value> {
        let reply = self.get("/v1/audit?limit=100", admin_key).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        reply.body["items"].as_array().cloned().unwrap_or_default()
    }
}
