//! The tenant's policies (docs/api.md, "Tenant policies"): Cedar `forbid` rules over the caller
//! agent, the action, the callee and the call's context, read with
//! [`Client::tenant_policies`], changed by an admin with [`Client::update_tenant_policies`],
//! and asked about with [`Client::check_call`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::client::{Client, Request};
use crate::error::{Error, Result};

/// Whether a policy refuses what it forbids, or only logs that it would (`would_refuse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyMode {
    Enforce,
    DryRun,
    /// A mode this SDK does not know yet.
    #[serde(other)]
    Unknown,
}

/// One of the tenant's policies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantPolicy {
    pub name: String,
    /// One Cedar `forbid`.
    pub policy: String,
    pub mode: PolicyMode,
    #[serde(default)]
    pub description: Option<String>,
    pub updated_at: String,
}

/// The tenant's policies by name, and the version of the set (0 before any was saved).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TenantPolicies {
    pub version: u64,
    pub items: Vec<TenantPolicy>,
}

/// A merge patch of one policy for [`Client::update_tenant_policies`]: a field `Some` replaces
/// its value (`description: Some(None)` removes it), `None` keeps it. A new policy needs its
/// `policy`, and is tried (`dry_run`) unless `mode` says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PolicyPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<PolicyMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Option<String>>,
}

/// A call to ask about with [`Client::check_call`]: agents by name or id; the action defaults to
/// `open`, the depth to 1.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CallCheckRequest {
    pub caller: String,
    pub callee: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    /// `open`, `answer`, `cancel` or `read`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_caller: Option<String>,
}

/// Whether the gate would allow a call now, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallCheck {
    pub allowed: bool,
    /// The reason the audit log would give (`no_binding`, `skill_not_allowed`, `policy`, …).
    #[serde(default)]
    pub reason: Option<String>,
    /// The enforced policies that forbid it.
    #[serde(default)]
    pub policies: Vec<String>,
    /// The tried (`dry_run`) policies that would forbid it.
    #[serde(default)]
    pub would_refuse: Vec<String>,
}

impl Client {
    /// The tenant's policies (admin, viewer): `GET /v1/tenant/policies`.
    pub async fn tenant_policies(&self) -> Result<TenantPolicies> {
        self.send_json(Request::get("/v1/tenant/policies".into()))
            .await
    }

    /// Sets, changes or removes (`None`) the tenant's policies by name (admin; each audited as
    /// `tenant.policy.set` or `.remove`): `PATCH /v1/tenant/policies`. A policy that does not
    /// parse, is not one `forbid`, or does not hold to the schema is [`Error::BadRequest`], and
    /// nothing is saved. Returns the set as saved.
    pub async fn update_tenant_policies(
        &self,
        policies: &BTreeMap<String, Option<PolicyPatch>>,
    ) -> Result<TenantPolicies> {
        let body = serde_json::to_value(PoliciesBody { policies })
            .map_err(|error| Error::Decode(error.to_string()))?;
        let request = Request::new(reqwest::Method::PATCH, "/v1/tenant/policies".into()).body(body);
        self.send_json(request).await
    }

    /// Whether the gate would allow `call` now, and why (admin, viewer; records nothing):
    /// `POST /v1/tenant/policies/check`.
    pub async fn check_call(&self, call: &CallCheckRequest) -> Result<CallCheck> {
        let body = serde_json::to_value(call).map_err(|error| Error::Decode(error.to_string()))?;
        let request =
            Request::new(reqwest::Method::POST, "/v1/tenant/policies/check".into()).body(body);
        self.send_json(request).await
    }
}

#[derive(Serialize)]
struct PoliciesBody<'a> {
    policies: &'a BTreeMap<String, Option<PolicyPatch>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_sends_what_it_changes_and_null_for_a_removed_policy() {
        let mut policies = BTreeMap::new();
        policies.insert(
            "no-refunds".to_owned(),
            Some(PolicyPatch {
                mode: Some(PolicyMode::Enforce),
                description: Some(None),
                ..PolicyPatch::default()
            }),
        );
        policies.insert("old".to_owned(), None);
        let body = serde_json::to_value(PoliciesBody {
            policies: &policies,
        })
        .unwrap();
        assert_eq!(
            body,
            json!({"policies": {"no-refunds": {"mode": "enforce", "description": null}, "old": null}})
        );
    }
}
