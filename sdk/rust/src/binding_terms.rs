//! A binding's own call-tree limits and its contract (docs/api.md, "Limits and contracts on a
//! binding"): read on every [`Binding`], changed by an admin with
//! [`Client::update_binding`].

use serde::{Deserialize, Serialize};

use crate::client::{segment, Client, Request};
use crate::error::{Error, Result};
use crate::manage::agent_path;
use crate::manage::Binding;

/// A binding's own call-tree limits; each `None` is the tenant's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingLimits {
    pub max_call_depth: Option<u32>,
    pub refuse_cycles: Option<bool>,
    pub max_fan_out: Option<u32>,
    pub max_open_in_tree: Option<u32>,
}

/// What the caller may do on the callee through the binding; each `None` is no bound. Past
/// `skills` an open is refused (`403 not_permitted`); past a rate, a concurrency or the daily
/// quota it is a `429` ([`Error::RateLimited`], code `quota_exceeded`, with its `Retry-After`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingContract {
    /// The callee's skills (its tools' names) the caller may name; `None` is any.
    pub skills: Option<Vec<String>>,
    pub rate_per_minute: Option<u32>,
    pub max_concurrent: Option<u32>,
    pub daily_quota: Option<u32>,
}

/// A binding's use against its contract: tasks opened in the current UTC minute and day, and
/// its open tasks; `None` where the contract counts nothing of the kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingUsage {
    pub minute: Option<u64>,
    pub day: Option<u64>,
    pub open: Option<u64>,
}

/// What [`Client::update_binding`] changes: each field `Some(Some(v))` sets a value,
/// `Some(None)` removes it (sent as `null`), `None` leaves it as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BindingPatch {
    #[serde(skip_serializing_if = "LimitsPatch::is_empty")]
    pub limits: LimitsPatch,
    #[serde(skip_serializing_if = "ContractPatch::is_empty")]
    pub contract: ContractPatch,
}

/// The limits a [`BindingPatch`] changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LimitsPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_call_depth: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refuse_cycles: Option<Option<bool>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_fan_out: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_open_in_tree: Option<Option<u32>>,
}

impl LimitsPatch {
    fn is_empty(&self) -> bool {
        *self == LimitsPatch::default()
    }
}

/// The contract terms a [`BindingPatch`] changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ContractPatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Option<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_per_minute: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrent: Option<Option<u32>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_quota: Option<Option<u32>>,
}

impl ContractPatch {
    fn is_empty(&self) -> bool {
        *self == ContractPatch::default()
    }
}

impl Client {
    /// Sets a binding's own limits and its contract (an admin; `agent` is either side):
    /// `PATCH /v1/agents/{agent}/agents/{binding_id}`. The answer carries its `usage`.
    pub async fn update_binding(
        &self,
        agent: &str,
        binding_id: &str,
        patch: &BindingPatch,
    ) -> Result<Binding> {
        let path = format!("{}/agents/{}", agent_path(agent)?, segment(binding_id)?);
        let body = serde_json::to_value(patch).map_err(|error| Error::Decode(error.to_string()))?;
        self.send_json(Request::new(reqwest::Method::PATCH, path).body(body))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_patch_sends_what_it_changes_and_null_for_what_it_removes() {
        let patch = BindingPatch {
            limits: LimitsPatch {
                max_call_depth: Some(Some(3)),
                ..LimitsPatch::default()
            },
            contract: ContractPatch {
                skills: Some(Some(vec!["lookup".into()])),
                daily_quota: Some(None),
                ..ContractPatch::default()
            },
        };
        assert_eq!(
            serde_json::to_value(&patch).unwrap(),
            json!({"limits": {"max_call_depth": 3},
                   "contract": {"skills": ["lookup"], "daily_quota": null}})
        );
        assert_eq!(
            serde_json::to_value(BindingPatch::default()).unwrap(),
            json!({})
        );
    }
}
