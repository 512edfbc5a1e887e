//! Bindings: the one permission on the agent-to-agent edge ("may this caller open a task on this
//! callee"), and the precise reasons a task open is refused.

use serde::Serialize;
use uuid::Uuid;

use super::ids::{AgentId, TenantId};
use super::{Agent, AgentStatus};

/// Namespace for binding ids. A binding's id is derived from its (caller, callee) pair, so the
/// pair has exactly one row for its whole history and the open path can address it directly.
const BINDING_NAMESPACE: Uuid = Uuid::from_u128(0x6f1b_52a4_3e0c_4f0e_9a57_b1d2_0c4e_8a11);

/// The id of the binding from `caller_id` to `callee_id`.
pub fn binding_id(caller_id: &str, callee_id: &str) -> String {
    Uuid::new_v5(
        &BINDING_NAMESPACE,
        format!("{caller_id}->{callee_id}").as_bytes(),
    )
    .to_string()
}

/// A binding as stored and returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Binding {
    pub id: String,
    #[serde(skip)]
    pub tenant_id: TenantId,
    pub caller_agent_id: AgentId,
    pub callee_agent_id: AgentId,
    /// How the binding came to be: `api` for every grant through the API.
    pub source: String,
    pub revoked: bool,
    /// When the callee's side approved; `null` while pending.
    pub approved_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl Binding {
    pub fn is_live(&self) -> bool {
        !self.revoked && self.approved_at.is_some()
    }
}

/// Why a task open was refused. The caller only ever sees `403 not_permitted`; this goes to the
/// audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalReason {
    UnknownCallee,
    OtherTenant,
    NoBinding,
    BindingPending,
    BindingRevoked,
    CalleePaused,
    CalleeRetired,
}

impl RefusalReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RefusalReason::UnknownCallee => "unknown_callee",
            RefusalReason::OtherTenant => "other_tenant",
            RefusalReason::NoBinding => "no_binding",
            RefusalReason::BindingPending => "binding_pending",
            RefusalReason::BindingRevoked => "binding_revoked",
            RefusalReason::CalleePaused => "callee_paused",
            RefusalReason::CalleeRetired => "callee_retired",
        }
    }
}

/// Decides whether `caller_tenant` may open a task on `callee` through `binding`.
pub fn admit(
    caller_tenant: &str,
    callee: Option<&Agent>,
    binding: Option<&Binding>,
) -> Result<(), RefusalReason> {
    let callee = callee.ok_or(RefusalReason::UnknownCallee)?;
    if callee.tenant_id != caller_tenant {
        return Err(RefusalReason::OtherTenant);
    }
    match binding {
        None => return Err(RefusalReason::NoBinding),
        Some(binding) if binding.revoked => return Err(RefusalReason::BindingRevoked),
        Some(binding) if binding.approved_at.is_none() => {
            return Err(RefusalReason::BindingPending)
        }
        Some(_) => {}
    }
    match callee.status {
        AgentStatus::Active => Ok(()),
        AgentStatus::Paused => Err(RefusalReason::CalleePaused),
        AgentStatus::Retired => Err(RefusalReason::CalleeRetired),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn callee(status: AgentStatus) -> Agent {
        Agent {
            id: "callee".into(),
            tenant_id: "t1".into(),
            name: "callee".into(),
            description: None,
            owner_member_id: None,
            status,
            endpoint: None,
            sealed_secret: None,
            claim_timeout_seconds: 900,
            created_at: String::new(),
            updated_at: String::new(),
            version: 1,
        }
    }

    fn binding(revoked: bool, approved: bool) -> Binding {
        Binding {
            id: binding_id("caller", "callee"),
            tenant_id: "t1".into(),
            caller_agent_id: "caller".into(),
            callee_agent_id: "callee".into(),
            source: "api".into(),
            revoked,
            approved_at: approved.then(|| "2026-01-01T00:00:00.000000Z".into()),
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn each_refusal_has_its_own_reason() {
        let active = callee(AgentStatus::Active);
        let live = binding(false, true);
        assert_eq!(admit("t1", Some(&active), Some(&live)), Ok(()));
        let cases = [
            (admit("t1", None, Some(&live)), RefusalReason::UnknownCallee),
            (
                admit("t2", Some(&active), Some(&live)),
                RefusalReason::OtherTenant,
            ),
            (admit("t1", Some(&active), None), RefusalReason::NoBinding),
            (
                admit("t1", Some(&active), Some(&binding(false, false))),
                RefusalReason::BindingPending,
            ),
            (
                admit("t1", Some(&active), Some(&binding(true, true))),
                RefusalReason::BindingRevoked,
            ),
            (
                admit("t1", Some(&callee(AgentStatus::Paused)), Some(&live)),
                RefusalReason::CalleePaused,
            ),
            (
                admit("t1", Some(&callee(AgentStatus::Retired)), Some(&live)),
                RefusalReason::CalleeRetired,
            ),
        ];
        for (outcome, reason) in cases {
            assert_eq!(outcome, Err(reason));
        }
    }

    #[test]
    fn a_pair_always_maps_to_the_same_binding_and_direction_matters() {
        assert_eq!(binding_id("a", "b"), binding_id("a", "b"));
        assert_ne!(binding_id("a", "b"), binding_id("b", "a"));
    }
}
